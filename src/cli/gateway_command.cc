#include "cli/gateway_command.h"

#include <CLI/CLI.hpp>

#include "cli/process_info.h"
#include "core/log.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "services/gateway/endpoint_poller.h"
#include "services/gateway/gateway_http.h"
#include "services/gateway/gateway_service.h"
#include "services/gateway/kv_event_subscriber.h"
#include "storage/open_store.h"
#include "storage/s3/s3_store.h"

namespace omni::cli {

CLI::App* AddGatewayCommand(CLI::App& app, GatewayFlags* f) {
  CLI::App* sub = app.add_subcommand("gateway", "one entry for every model server; cache-aware endpoint picking");
  sub->add_option("--config", f->config, "pools and EndpointPickerConfig (YAML; docs/GATEWAY.md)")->required();
  sub->add_option("--host", f->host, "listen address")->capture_default_str();
  sub->add_option("--port", f->port, "listen port (0: the OS picks)")->capture_default_str();
  sub->add_option("--io-threads", f->io_threads, "event-loop threads")->capture_default_str()->check(CLI::Range(1, 64));
  sub->add_option("--metrics-interval-ms", f->metrics_interval_ms, "how often each endpoint's /metrics is scraped")
      ->capture_default_str()
      ->check(CLI::Range(5, 60'000));
  sub->add_option("--health-interval-ms", f->health_interval_ms, "how often each endpoint's /health is checked")
      ->capture_default_str()
      ->check(CLI::Range(10, 600'000));
  sub->add_option("--unhealthy-after", f->unhealthy_after, "failed health checks in a row that eject an endpoint")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  sub->add_option("--connect-timeout-ms", f->connect_timeout_ms, "timeout for connecting to an endpoint")
      ->capture_default_str()
      ->check(CLI::Range(1, 600'000));
  sub->add_option("--request-timeout-s", f->request_timeout_s, "total time allowed for one proxied request")
      ->capture_default_str()
      ->check(CLI::Range(1, 86'400));
  sub->add_option("--max-attempts", f->max_attempts, "endpoints tried per request when connections fail")
      ->capture_default_str()
      ->check(CLI::Range(1, 16));
  sub->add_option("--seed", f->seed, "seed for random tie-breaks (0: from the clock)")->capture_default_str();
  sub->add_option("--max-inflight-body-bytes", f->max_inflight_body_bytes,
                  "request body bytes buffered at once across connections; more get 503 with Retry-After")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1} << 20, int64_t{1} << 40));
  sub->add_option("--drain-timeout-ms", f->drain_timeout_ms,
                  "on SIGTERM, how long proxied requests may finish before their connections are closed")
      ->capture_default_str()
      ->check(CLI::Range(0, 3'600'000));
  return sub;
}

int RunGatewayCommand(const GatewayFlags& f) {
  auto config = LoadGatewayConfig(f.config);
  if (!config.ok()) {
    OMNI_LOG(kError, "gateway: {}", config.status().message());
    return 2;
  }
  gateway::GatewayOptions options;
  options.metrics_interval = std::chrono::milliseconds(f.metrics_interval_ms);
  options.health_interval = std::chrono::milliseconds(f.health_interval_ms);
  options.connect_timeout = std::chrono::milliseconds(f.connect_timeout_ms);
  options.request_timeout = std::chrono::seconds(f.request_timeout_s);
  options.unhealthy_after = f.unhealthy_after;
  options.max_attempts = f.max_attempts;
  options.seed = static_cast<uint64_t>(f.seed);
  // The store media parts' objects are HEADed in, to score prompts past
  // them: one attempt within storeTimeoutMs, since routing must not wait on
  // a hint (a failed HEAD only ends the scored prefix).
  std::unique_ptr<ObjectStore> store;
  if (!config->store.empty()) {
    S3StoreOptions s3{.request_timeout = std::chrono::milliseconds(config->store_timeout_ms)};
    s3.retry.max_attempts = 1;
    auto opened = OpenObjectStore(config->store, S3CredentialsFromEnv(), s3);
    if (!opened.ok()) {
      OMNI_LOG(kError, "gateway: {}: store: {}", f.config, opened.status().message());
      return 2;
    }
    store = std::move(opened).value();
    options.store = store.get();
  }
  MetricsRegistry registry;
  AddProcessInfoMetrics(registry);
  options.metrics = &registry;
  auto created = gateway::GatewayService::Create(*config, options, Clock::Real());
  if (!created.ok()) {
    OMNI_LOG(kError, "gateway: {}: {}", f.config, created.status().message());
    return 2;
  }
  std::unique_ptr<gateway::GatewayService> service = std::move(created).value();

  LogProcessInfo();
  // Scrapes and health checks on a client thread of their own, so they go
  // on however busy the proxy is.
  HttpClient poll_client(HttpClientOptions{.connect_timeout = options.connect_timeout});
  gateway::EndpointPoller poller(*service, poll_client, registry);
  gateway::KvEventSubscriber kv_events(*service, registry);
  if (Status s = kv_events.Start(); !s.ok()) {
    OMNI_LOG(kError, "gateway: {}", s.message());
    return 2;
  }

  HttpServerOptions http;
  http.host = f.host;
  http.port = static_cast<uint16_t>(f.port);
  http.io_threads = f.io_threads;
  http.metrics = &registry;
  http.access_log = false;  // the gateway's counters and the servers' own logs carry the request ids
  http.max_inflight_body_bytes = static_cast<size_t>(f.max_inflight_body_bytes);
  http.drain_timeout = std::chrono::milliseconds(f.drain_timeout_ms);
  HttpServer server(http);
  // Upstream exchanges run on the server's io threads: no thread hand-off
  // between a client's request, its upstream call and the reply.
  HttpClient proxy_client(server, HttpClientOptions{.connect_timeout = options.connect_timeout,
                                                    .max_idle_per_host = 1024,
                                                    .trust_idle_for = std::chrono::milliseconds(250)});
  gateway::GatewayHttpAdapter adapter(*service, proxy_client, poller, registry);
  adapter.RegisterRoutes(server);
  if (Status s = server.Start(); !s.ok()) {
    OMNI_LOG(kError, "gateway: cannot serve {}:{}: {}", f.host, f.port, s.ToString());
    return 1;
  }
  poller.Start();
  size_t endpoints = 0;
  for (const auto& p : service->pools()) endpoints += p->config.endpoints.size();
  OMNI_LOG(kInfo, "gateway: listening on http://{}:{}; {} pools, {} endpoints", f.host, server.port(),
           service->pools().size(), endpoints);
  server.RunUntilSignal();  // SIGTERM: drain in-flight proxied requests
  poller.Stop();
  kv_events.Stop();
  return 0;
}

}  // namespace omni::cli
