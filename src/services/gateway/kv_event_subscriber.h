// Subscribes to the LLM servers' KV-cache events (vLLM's ZeroMQ + msgpack
// format, spec/routing.md) and feeds them into the pools' precise prefix
// indexes. A pool's `kvEvents[i]` is the publisher of its `endpoints[i]`;
// one SUB socket per publisher, so a message's source is the socket it came
// on (not its topic, which a server started with --port 0 cannot fill in).
//
// A gap in a publisher's sequence numbers means events were dropped (the
// PUB socket's high-water mark): that endpoint's index entries may be stale
// until its blocks are stored again; the gap is logged and counted.
// Undecodable messages are counted and dropped.
//
// One thread. Thread-safety: Start/Stop from one thread.
#pragma once

#include <atomic>
#include <memory>
#include <thread>

#include "net/metrics.h"
#include "services/gateway/gateway_service.h"

namespace omni::gateway {

class KvEventSubscriber {
 public:
  KvEventSubscriber(GatewayService& service, MetricsRegistry& metrics);
  ~KvEventSubscriber();  // Stop()

  // Fails if a kvEvents address is invalid. Does nothing without any.
  Status Start();
  void Stop();

 private:
  struct Sockets;

  void Run();

  GatewayService& service_;
  Counter* batches_ = nullptr;
  Counter* bad_messages_ = nullptr;
  Counter* gaps_ = nullptr;
  std::unique_ptr<Sockets> sockets_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace omni::gateway
