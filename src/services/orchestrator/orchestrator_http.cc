#include "services/orchestrator/orchestrator_http.h"

#include "services/orchestrator/object_route.h"

namespace omni::orchestrator {

void OrchestratorHttpAdapter::RegisterRoutes(HttpServer& server) {
  for (const char* path : {"/v1/chat/completions", "/b/v1/chat/completions"}) {
    server.RouteStreaming(HttpMethod::kPost, path, [this](HttpRequest r, std::shared_ptr<ResponseWriter> w) {
      service_.Chat(std::move(r), std::move(w));
    });
  }
  server.RouteStreaming(HttpMethod::kPost, "/v1/images/generations",
                        [this](HttpRequest r, std::shared_ptr<ResponseWriter> w) {
                          service_.Images(std::move(r), std::move(w), /*edit=*/false);
                        });
  server.RouteStreaming(HttpMethod::kPost, "/v1/images/edits", [this](HttpRequest r, std::shared_ptr<ResponseWriter> w) {
    service_.Images(std::move(r), std::move(w), /*edit=*/true);
  });
  server.RouteStreaming(HttpMethod::kPost, "/v1/audio/speech", [this](HttpRequest r, std::shared_ptr<ResponseWriter> w) {
    service_.Speech(std::move(r), std::move(w));
  });
  server.RouteStreaming(HttpMethod::kPost, "/v1/audio/transcriptions",
                        [this](HttpRequest r, std::shared_ptr<ResponseWriter> w) {
                          service_.Transcriptions(std::move(r), std::move(w));
                        });
  // Blocks on the gateway: on the worker pool.
  server.Route(HttpMethod::kGet, "/v1/models", [this](const HttpRequest& r) { return service_.Models(r); });
  if (store_ != nullptr && signer_ != nullptr) {
    // Store reads block: on the worker pool.
    server.Route(HttpMethod::kGet, std::string(ObjectUrlSigner::kPathPrefix) + "*", [this](const HttpRequest& r) {
      return ServeSignedObject(r, *store_, *signer_, Clock::Real());
    });
  }
  server.SetHealthReport([this] { return service_.Health(); });
  server.SetDrainDeadlineHook([this] { service_.StopForShutdown(); });
}

void OrchestratorHttpAdapter::StartProbes() {
  service_.ProbeComponents();
  prober_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!wake_.wait_for(lock, service_.config().probe_interval, [this] { return stop_; })) {
      lock.unlock();
      service_.ProbeComponents();
      lock.lock();
    }
  });
}

void OrchestratorHttpAdapter::StopProbes() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (prober_.joinable()) prober_.join();
}

}  // namespace omni::orchestrator
