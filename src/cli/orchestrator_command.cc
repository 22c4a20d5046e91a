#include "cli/orchestrator_command.h"

#include <CLI/CLI.hpp>

#include "cli/process_info.h"
#include "core/log.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "services/orchestrator/orchestrator_http.h"
#include "services/orchestrator/orchestrator_service.h"
#include "storage/open_store.h"
#include "storage/s3/s3_store.h"

namespace omni::cli {

CLI::App* AddOrchestratorCommand(CLI::App& app, OrchestratorFlags* f) {
  CLI::App* sub =
      app.add_subcommand("orchestrator", "OpenAI Chat Completions front: calls encoders, LLM, decoders via the gateway");
  sub->add_option("--config", f->config, "the gateway, the store, timeouts, health (YAML; docs/ORCHESTRATOR.md)")
      ->required();
  sub->add_option("--host", f->host, "listen address")->capture_default_str();
  sub->add_option("--port", f->port, "listen port (0: the OS picks)")->capture_default_str()->check(CLI::Range(0, 65535));
  sub->add_option("--io-threads", f->io_threads, "event-loop threads (requests are parsed on them)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  sub->add_option("--max-body-bytes", f->max_body_bytes, "largest request body; larger ones get 413")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1} << 10, int64_t{1} << 34));
  sub->add_option("--max-inflight-body-bytes", f->max_inflight_body_bytes,
                  "request body bytes buffered at once across connections; more get 503 with Retry-After")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1} << 20, int64_t{1} << 40));
  sub->add_option("--drain-timeout-ms", f->drain_timeout_ms,
                  "on SIGTERM, how long running requests may finish before their streams are ended")
      ->capture_default_str()
      ->check(CLI::Range(0, 3'600'000));
  return sub;
}

int RunOrchestratorCommand(const OrchestratorFlags& f) {
  auto config = orchestrator::LoadOrchestratorConfig(f.config);
  if (!config.ok()) {
    OMNI_LOG(kError, "orchestrator: {}", config.status().message());
    return 2;
  }
  std::unique_ptr<ObjectStore> store;
  if (!config->store.empty()) {
    auto opened = OpenObjectStore(config->store, S3CredentialsFromEnv());
    if (!opened.ok()) {
      OMNI_LOG(kError, "orchestrator: {}: store: {}", f.config, opened.status().message());
      return 2;
    }
    store = std::move(opened).value();
  }

  LogProcessInfo();
  MetricsRegistry registry;
  AddProcessInfoMetrics(registry);
  HttpServerOptions http;
  http.host = f.host;
  http.port = static_cast<uint16_t>(f.port);
  http.io_threads = f.io_threads;
  http.metrics = &registry;
  http.max_body_bytes = static_cast<size_t>(f.max_body_bytes);
  http.max_inflight_body_bytes = static_cast<size_t>(f.max_inflight_body_bytes);
  http.drain_timeout = std::chrono::milliseconds(f.drain_timeout_ms);
  HttpServer server(http);
  // Proxied calls run on the server's io threads (no thread hand-off between
  // a client's request, its upstream call and the reply); the model list and
  // the health probes block, on a client thread of their own.
  HttpClient proxy_client(server, HttpClientOptions{.connect_timeout = config->timeouts.connect,
                                                    .max_idle_per_host = 1024,
                                                    .trust_idle_for = std::chrono::milliseconds(250)});
  HttpClient blocking_client(HttpClientOptions{.connect_timeout = config->timeouts.connect});
  // Clients' media URLs, http and https (verified against media.fetch_ca_file
  // or the system's CAs).
  HttpClient media_client(
      HttpClientOptions{.connect_timeout = config->timeouts.connect, .ca_file = config->media.fetch_ca_file});
  if (Status tls = media_client.tls_status(); !tls.ok()) {
    OMNI_LOG(kError, "orchestrator: media.fetch_ca_file: {}", tls.message());
    return 2;
  }
  orchestrator::HttpUpstream upstream(proxy_client, blocking_client);
  // Signed URLs of the store's objects on this port (generated media): the
  // secret lives as long as the process, so do its URLs.
  const ObjectUrlSigner signer = ObjectUrlSigner::WithRandomSecret();
  orchestrator::OrchestratorService service(*config, upstream, store.get(), Clock::Real(), registry,
                                            &media_client, &signer);
  orchestrator::OrchestratorHttpAdapter adapter(service, store.get(), &signer);
  adapter.RegisterRoutes(server);
  if (Status s = server.Start(); !s.ok()) {
    OMNI_LOG(kError, "orchestrator: cannot serve {}:{}: {}", f.host, f.port, s.ToString());
    return 1;
  }
  adapter.StartProbes();
  OMNI_LOG(kInfo, "orchestrator: listening on http://{}:{}; gateway {}, store {}, {} more components on /health",
           f.host, server.port(), config->gateway, config->store.empty() ? "none" : config->store,
           config->components.size());
  server.RunUntilSignal();  // SIGTERM: drain in-flight chat requests
  adapter.StopProbes();
  return 0;
}

}  // namespace omni::cli
