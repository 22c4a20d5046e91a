#include "services/gateway/endpoint_poller.h"

#include "core/log.h"
#include "services/gateway/prometheus_text.h"

namespace omni::gateway {

EndpointPoller::EndpointPoller(GatewayService& service, HttpClient& client, MetricsRegistry& metrics)
    : service_(service), client_(client) {
  auto& healthy = metrics.AddGauge("gateway_endpoint_healthy", "1 while the endpoint is admitted.",
                                   {"pool", "endpoint"});
  scrape_errors_ = &metrics.AddCounter("gateway_scrape_errors_total", "Failed /metrics scrapes.", {}).Get();
  for (const auto& pool : service.pools()) {
    for (int e = 0; e < pool->router->size(); ++e) {
      auto t = std::make_unique<Target>();
      t->pool = pool.get();
      t->endpoint = e;
      t->base_url = "http://" + pool->router->address(e);
      t->healthy_gauge = &healthy.WithLabels({pool->config.name, pool->router->address(e)});
      t->healthy_gauge->Set(1);
      targets_.push_back(std::move(t));
    }
  }
}

EndpointPoller::~EndpointPoller() { Stop(); }

void EndpointPoller::Start() { thread_ = std::thread([this] { Run(); }); }

void EndpointPoller::Stop() {
  {
    std::unique_lock lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return in_flight_ == 0; });
}

void EndpointPoller::Run() {
  const auto& o = service_.options();
  auto next_scrape = std::chrono::steady_clock::now();
  auto next_health = next_scrape;
  std::unique_lock lock(mu_);
  while (!stop_) {
    const auto now = std::chrono::steady_clock::now();
    const bool scrape = now >= next_scrape;
    const bool health = now >= next_health;
    if (scrape) next_scrape = now + o.metrics_interval;
    if (health) next_health = now + o.health_interval;
    lock.unlock();
    for (auto& t : targets_) {
      if (scrape && !t->scrape_in_flight.exchange(true)) Scrape(*t);
      if (health && !t->health_in_flight.exchange(true)) CheckHealth(*t);
    }
    lock.lock();
    cv_.wait_until(lock, std::min(next_scrape, next_health), [&] { return stop_; });
  }
}

void EndpointPoller::Scrape(Target& t) {
  {
    std::lock_guard lock(mu_);
    ++in_flight_;
  }
  auto body = std::make_shared<std::string>();
  HttpStreamCallbacks cb;
  cb.on_body = [body](std::string_view chunk) {
    body->append(chunk);
    return body->size() < (8u << 20);
  };
  client_.StreamAsync(
      HttpClientRequest{.url = t.base_url + "/metrics", .timeout = service_.options().scrape_timeout},
      std::move(cb), [this, &t, body](StatusOr<int> status) {
        bool ok = status.ok() && *status == 200;
        if (ok) {
          auto samples = ParsePrometheusText(*body);
          ok = samples.ok();
          if (ok) {
            VllmLoadMetrics m = ExtractVllmLoadMetrics(*samples);
            t.pool->router->ReportLoad(t.endpoint, EndpointLoad{.waiting = m.num_requests_waiting.value_or(0),
                                                                .running = m.num_requests_running.value_or(0),
                                                                .kv_usage = m.kv_cache_usage_perc.value_or(0),
                                                                .num_blocks = m.num_gpu_blocks.value_or(0),
                                                                .block_size = m.block_size.value_or(0),
                                                                .prompt_tokens_total =
                                                                    m.prefix_cache_queries_total.value_or(-1)});
          }
        }
        if (!ok) scrape_errors_->Inc();
        t.scrape_in_flight = false;
        RequestDone();
      });
}

void EndpointPoller::CheckHealth(Target& t) {
  {
    std::lock_guard lock(mu_);
    ++in_flight_;
  }
  client_.StreamAsync(
      HttpClientRequest{.url = t.base_url + "/health", .timeout = service_.options().scrape_timeout}, {},
      [this, &t](StatusOr<int> status) {
        if (status.ok() && *status == 200) {
          t.failed_checks = 0;
          MarkHealthy(t, true, "health check passed");
        } else if (++t.failed_checks >= service_.options().unhealthy_after) {
          MarkHealthy(t, false, status.ok() ? "health check answered " + std::to_string(*status)
                                            : status.status().message());
        }
        t.health_in_flight = false;
        RequestDone();
      });
}

void EndpointPoller::ReportConnectFailure(PoolState& pool, int endpoint) {
  for (auto& t : targets_) {
    if (t->pool == &pool && t->endpoint == endpoint) MarkHealthy(*t, false, "proxy could not reach it");
  }
}

void EndpointPoller::MarkHealthy(Target& t, bool healthy, std::string_view why) {
  PoolRouter& router = *t.pool->router;
  if (!router.SetHealthy(t.endpoint, healthy)) return;
  t.healthy_gauge->Set(healthy ? 1 : 0);
  OMNI_LOG(kWarn, "gateway: {} endpoint {} of pool {}: {}", healthy ? "readmitted" : "ejected",
           router.address(t.endpoint), t.pool->config.name, why);
}

void EndpointPoller::RequestDone() {
  std::lock_guard lock(mu_);
  --in_flight_;
  cv_.notify_all();
}

}  // namespace omni::gateway
