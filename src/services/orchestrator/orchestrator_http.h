// The HTTP face of the orchestrator: its routes on an HttpServer, and the
// thread that probes the components' health. The logic is in
// OrchestratorService.
//
// Routes: POST /v1/chat/completions and /b/v1/chat/completions (OmniServe's
// path), GET /v1/models, GET /health (the components' report), GET /metrics,
// and with a store GET /v1/objects/* (signed object URLs, object_route.h).
//
// Thread-safety: Start and Stop from one thread; the routes run on the
// server's threads.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

#include "net/http_server.h"
#include "services/orchestrator/orchestrator_service.h"
#include "storage/signed_url.h"

namespace omni::orchestrator {

class OrchestratorHttpAdapter {
 public:
  // `store` (may be null: no object route) and `signer` outlive the adapter.
  explicit OrchestratorHttpAdapter(OrchestratorService& service, ObjectStore* store = nullptr,
                                   const ObjectUrlSigner* signer = nullptr)
      : service_(service), store_(store), signer_(signer) {}
  ~OrchestratorHttpAdapter() { StopProbes(); }

  void RegisterRoutes(HttpServer& server);
  // Probes the components once now (so the first /health is true), then
  // every probe_interval on a thread of its own.
  void StartProbes();
  void StopProbes();

 private:
  OrchestratorService& service_;
  ObjectStore* store_;
  const ObjectUrlSigner* signer_;
  std::thread prober_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;  // guarded by mu_
};

}  // namespace omni::orchestrator
