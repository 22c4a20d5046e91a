#include "cli/llm_command.h"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <memory>
#include <thread>

#include "cli/process_info.h"
#include "core/log.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "ops/threading.h"
#include "services/llm/llm_http.h"
#include "services/llm/llm_service.h"
#include "engine/kv_event_publisher.h"
#include "storage/fetch_policy.h"
#include "storage/open_store.h"
#include "storage/s3/s3_store.h"

namespace omni::cli {
namespace {

// vLLM's topic names the server as host:port; with --port 0 the port is not
// known when the publisher starts, so the topic then says the requested port.
std::string ServedName(const LlmFlags& f) {
  if (!f.served_model_name.empty()) return f.served_model_name;
  return std::filesystem::path(f.model).lexically_normal().filename().string();
}

}  // namespace

CLI::App* AddLlmCommand(CLI::App& app, LlmFlags* f) {
  CLI::App* sub = app.add_subcommand("llm", "OpenAI-compatible LLM server (paged KV cache, prefix caching, batching)");
  sub->add_option("--model", f->model, "model folder (config.json, *.safetensors, tokenizer.json)")->required();
  sub->add_option("--host", f->host, "listen address")->capture_default_str();
  sub->add_option("--port", f->port, "listen port (0: the OS picks)")->capture_default_str();
  sub->add_option("--served-model-name", f->served_model_name, "model name in the API (default: the folder's name)");
  auto* mem = sub->add_option("--kv-cache-memory", f->kv_cache_memory, "KV pool budget in bytes")->capture_default_str();
  sub->add_option("--num-kv-blocks", f->num_kv_blocks, "KV pool size in 16-token blocks")->excludes(mem);
  sub->add_option("--max-model-len", f->max_model_len, "context length (default: the model's, capped by the pool)");
  sub->add_option("--max-num-batched-tokens", f->max_num_batched_tokens, "token budget per engine step")
      ->capture_default_str();
  sub->add_option("--max-num-seqs", f->max_num_seqs, "running sequences at most")->capture_default_str();
  sub->add_flag("--no-prefix-caching", f->no_prefix_caching, "turn automatic prefix caching off (for comparisons)");
  sub->add_option("--store", f->store, "object store for s3:// and file:// media (file:///dir or s3://bucket...)");
  sub->add_flag("--fetch-allow-loopback", f->fetch_allow_loopback,
                "let http:// media URLs reach loopback addresses (127/8, ::1); refused by default");
  sub->add_flag("--fetch-allow-private", f->fetch_allow_private,
                "let http:// media URLs reach private addresses (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7)");
  sub->add_option("--fetch-allow", f->fetch_allow,
                  "let http:// media URLs reach this CIDR whatever its kind, e.g. 169.254.10.0/24 (repeatable)");
  sub->add_option("--fetch-ca-file", f->fetch_ca_file,
                  "https media URLs: CA certificates (PEM) servers are verified against (default: the system's)");
  sub->add_option("--fetch-timeout-ms", f->fetch_timeout_ms, "time limit of one media fetch, redirects included")
      ->capture_default_str()
      ->check(CLI::Range(1, 3'600'000));
  sub->add_option("--fetch-max-bytes", f->fetch_max_bytes, "largest media object fetched")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  sub->add_option("--embedding-cache-bytes", f->embedding_cache_bytes, "LRU cache of fetched embedding objects")
      ->capture_default_str();
  sub->add_option("--kv-events", f->kv_events, "publish KV-cache events (vLLM ZeroMQ format) on tcp://HOST:PORT");
  sub->add_option("--seed", f->seed, "seed for requests without one")->capture_default_str();
  sub->add_option("--threads", f->threads,
                  "compute threads for the model (0: OMP_NUM_THREADS if set, else every core); several "
                  "replicas on one machine should split the cores between them")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  sub->add_option("--max-pending-requests", f->max_pending_requests,
                  "generation requests held at once (preparing, waiting, running); more get 429 with Retry-After")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
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

int RunLlmCommand(const LlmFlags& f) {
  if (f.threads > 0) ops::SetNumThreads(f.threads);
  OMNI_LOG(kInfo, "llm: {} compute threads", ops::NumThreads());
  std::unique_ptr<KvEventPublisher> kv_events;
  if (!f.kv_events.empty()) {
    KvEventPublisherOptions kv;
    kv.endpoint = f.kv_events;
    kv.topic = KvEventTopic(f.host + ":" + std::to_string(f.port), ServedName(f));
    auto publisher = KvEventPublisher::Create(std::move(kv));
    if (!publisher.ok()) {
      OMNI_LOG(kError, "llm: --kv-events: {}", publisher.status().ToString());
      return 2;
    }
    kv_events = std::move(publisher).value();
    OMNI_LOG(kInfo, "llm: publishing KV events on {}", kv_events->bound_endpoint());
  }
  std::unique_ptr<ObjectStore> store;
  if (!f.store.empty()) {
    auto opened = OpenObjectStore(f.store, S3CredentialsFromEnv());
    if (!opened.ok()) {
      OMNI_LOG(kError, "llm: {}", opened.status().ToString());
      return 2;
    }
    store = std::move(opened).value();
  }
  FetchPolicy fetch_policy{.allow_loopback = f.fetch_allow_loopback, .allow_private = f.fetch_allow_private};
  for (const std::string& cidr : f.fetch_allow) {
    auto parsed = IpCidr::Parse(cidr);
    if (!parsed.ok()) {
      OMNI_LOG(kError, "llm: --fetch-allow: {}", parsed.status().message());
      return 2;
    }
    fetch_policy.allow.push_back(*parsed);
  }
  HttpClient http_client(HttpClientOptions{.ca_file = f.fetch_ca_file});
  if (Status tls = http_client.tls_status(); !tls.ok()) {
    OMNI_LOG(kError, "llm: --fetch-ca-file: {}", tls.message());
    return 2;
  }
  LogProcessInfo();
  MetricsRegistry registry;
  AddProcessInfoMetrics(registry);
  llm::LlmServiceOptions options;
  options.model_dir = f.model;
  options.served_model_name = f.served_model_name;
  options.kv_cache_memory_bytes = f.kv_cache_memory;
  options.num_kv_blocks = f.num_kv_blocks;
  options.max_model_len = f.max_model_len;
  options.max_num_batched_tokens = f.max_num_batched_tokens;
  options.max_num_seqs = f.max_num_seqs;
  options.enable_prefix_caching = !f.no_prefix_caching;
  options.default_seed = static_cast<uint64_t>(f.seed);
  options.store = store.get();
  options.store_uri = f.store;
  options.http_client = &http_client;
  options.embedding_cache_bytes = static_cast<size_t>(f.embedding_cache_bytes);
  options.fetch_policy = std::move(fetch_policy);
  options.fetch_timeout = std::chrono::milliseconds(f.fetch_timeout_ms);
  options.fetch_max_bytes = static_cast<size_t>(f.fetch_max_bytes);
  options.metrics = &registry;
  options.kv_events = kv_events.get();
  auto created = llm::LlmService::Create(std::move(options));
  if (!created.ok()) {
    OMNI_LOG(kError, "llm: {}", created.status().ToString());
    return 2;
  }
  std::unique_ptr<llm::LlmService> service = std::move(created).value();
  llm::LlmHttpAdapter adapter(*service, registry, {.max_pending_requests = f.max_pending_requests});

  HttpServerOptions http;
  http.host = f.host;
  http.port = static_cast<uint16_t>(f.port);
  http.io_threads = 2;
  http.metrics = &registry;
  http.max_inflight_body_bytes = static_cast<size_t>(f.max_inflight_body_bytes);
  http.drain_timeout = std::chrono::milliseconds(f.drain_timeout_ms);
  HttpServer server(http);
  adapter.RegisterRoutes(server);
  if (Status s = server.Start(); !s.ok()) {
    OMNI_LOG(kError, "llm: cannot serve {}:{}: {}", f.host, f.port, s.ToString());
    return 1;
  }
  OMNI_LOG(kInfo, "llm: listening on http://{}:{}; loading {}", f.host, server.port(), f.model);
  std::thread loader([&] {
    if (Status s = service->Load(); !s.ok()) OMNI_LOG(kError, "llm: {}", s.ToString());
  });
  // SIGTERM: stop accepting, drain for --drain-timeout-ms, then abort what
  // still runs (streams end with an error event and [DONE]); a second
  // signal exits at once.
  server.RunUntilSignal();
  loader.join();
  service->Shutdown();
  adapter.WaitIdle();
  OMNI_LOG(kInfo, "llm: stopped");
  return 0;
}

}  // namespace omni::cli
