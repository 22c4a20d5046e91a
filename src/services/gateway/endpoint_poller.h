// Keeps every pool's endpoint state fresh: scrapes each endpoint's
// Prometheus /metrics every `metrics_interval` (vLLM names, spec/routing.md)
// and checks GET /health every `health_interval`. `unhealthy_after`
// consecutive failed checks eject an endpoint (the health filter drops it);
// one passing check readmits it. The proxy reports connection failures,
// which eject at once.
//
// One thread; requests go out asynchronously on the shared HttpClient, at
// most one scrape and one health check in flight per endpoint.
// Thread-safety: thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "net/http_client.h"
#include "net/metrics.h"
#include "services/gateway/gateway_service.h"

namespace omni::gateway {

class EndpointPoller {
 public:
  // `service`, `client` and `metrics` must outlive the poller.
  EndpointPoller(GatewayService& service, HttpClient& client, MetricsRegistry& metrics);
  ~EndpointPoller();  // Stop()

  void Start();
  // Stops the thread and waits for requests in flight.
  void Stop();
  // The proxy could not connect to or talk with the endpoint.
  void ReportConnectFailure(PoolState& pool, int endpoint);

 private:
  struct Target {
    PoolState* pool;
    int endpoint;
    std::string base_url;  // "http://host:port"
    std::atomic<bool> scrape_in_flight{false};
    std::atomic<bool> health_in_flight{false};
    std::atomic<int> failed_checks{0};
    Gauge* healthy_gauge = nullptr;
  };

  void Run();
  void Scrape(Target& t);
  void CheckHealth(Target& t);
  void MarkHealthy(Target& t, bool healthy, std::string_view why);
  void RequestDone();

  GatewayService& service_;
  HttpClient& client_;
  std::vector<std::unique_ptr<Target>> targets_;
  Counter* scrape_errors_ = nullptr;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  int in_flight_ = 0;  // guarded by mu_
  std::thread thread_;
};

}  // namespace omni::gateway
