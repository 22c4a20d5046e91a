#include "cli/bench_command.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "core/clock.h"
#include "net/http_client.h"
#include "services/loadgen/calibrate.h"
#include "services/loadgen/report.h"
#include "services/loadgen/runner.h"
#include "services/loadgen/stats.h"
#include "services/loadgen/workload.h"

namespace omni::cli {
namespace {

int BadFlags(const Status& s) {
  std::fprintf(stderr, "omniserve bench: %s\n", s.message().c_str());
  return 2;
}

StatusOr<loadgen::BenchConfig> ToConfig(const BenchFlags& f) {
  loadgen::BenchConfig c;
  OMNI_ASSIGN_OR_RETURN(c.base_url, loadgen::NormalizeBaseUrl(f.base_url));
  c.label = f.label;
  OMNI_ASSIGN_OR_RETURN(c.workload.kind, loadgen::ParseWorkloadKind(f.workload));
  c.workload.num_requests = f.num_requests;
  c.workload.input_len = f.input_len;
  c.workload.num_prefixes = f.num_prefixes;
  c.workload.prefix_len = f.prefix_len;
  c.workload.turns = f.turns;
  c.workload.seed = f.seed;
  OMNI_RETURN_IF_ERROR(loadgen::ValidateWorkloadOptions(c.workload));

  if (f.concurrency > 0 && f.request_rate > 0) {
    return InvalidArgument("--concurrency and --request-rate are alternatives; give one");
  }
  loadgen::LoadOptions& l = c.load;
  OMNI_ASSIGN_OR_RETURN(l.endpoint, loadgen::ParseEndpoint(f.endpoint));
  l.model = f.model;
  l.sampling.max_tokens = f.output_len;
  l.sampling.ignore_eos = !f.no_ignore_eos;
  if (f.temperature >= 0) l.sampling.temperature = f.temperature;
  l.concurrency = f.concurrency > 0 ? f.concurrency : 1;
  l.request_rate = f.request_rate;
  l.max_concurrency = f.max_concurrency;
  l.seed = f.seed;
  for (const std::string& h : f.headers) {
    size_t colon = h.find(':');
    if (colon == std::string::npos || colon == 0) return InvalidArgument("--header wants 'Name: value', got " + h);
    size_t v = h.find_first_not_of(' ', colon + 1);
    l.headers.emplace_back(h.substr(0, colon), v == std::string::npos ? "" : h.substr(v));
  }
  OMNI_RETURN_IF_ERROR(loadgen::ValidateLoadOptions(l));
  return c;
}

// --calibrate: lengths were given in tokens; turn them into words for the
// target's tokenizer.
Status Calibrate(loadgen::BenchConfig* config) {
  HttpClient client;
  OMNI_ASSIGN_OR_RETURN(double ratio, loadgen::MeasureTokensPerWord(client, config->base_url, config->load.model));
  config->tokens_per_word = ratio;
  config->workload.input_len = loadgen::WordsForTokens(config->workload.input_len, ratio);
  config->workload.prefix_len = loadgen::WordsForTokens(config->workload.prefix_len, ratio);
  std::fprintf(stderr, "omniserve bench: %.3f tokens per word; sending %d-word inputs and %d-word prefixes\n", ratio,
               config->workload.input_len, config->workload.prefix_len);
  return Status::Ok();
}

int InFlightLimit(const loadgen::LoadOptions& l) { return l.request_rate > 0 ? l.max_concurrency : l.concurrency; }

}  // namespace

CLI::App* AddBenchCommand(CLI::App& app, BenchFlags* flags) {
  BenchFlags& f = *flags;
  CLI::App* b = app.add_subcommand("bench", "load generator for OpenAI-compatible endpoints (docs/BENCH.md)");
  // Required unless a subcommand (`bench simulate`) is given; RunBenchCommand checks.
  b->add_option("--base-url", f.base_url, "target, http://host:port (a trailing /v1 is fine) (required)");
  b->add_option("--model", f.model, "the `model` field of every request (required)");
  b->add_option("--endpoint", f.endpoint, "chat (/v1/chat/completions) or completions (/v1/completions)")
      ->check(CLI::IsMember({"chat", "completions"}))
      ->capture_default_str();
  b->add_option("--workload", f.workload, "synthetic|shared-prefix|multi-turn")
      ->check(CLI::IsMember({"synthetic", "shared-prefix", "multi-turn"}))
      ->capture_default_str();
  b->add_option("--num-requests", f.num_requests, "requests in all, every turn counted")->capture_default_str();
  b->add_option("--concurrency", f.concurrency, "closed loop: conversations in flight (default 1)");
  b->add_option("--request-rate", f.request_rate, "open loop: Poisson arrivals of conversations per second");
  b->add_option("--max-concurrency", f.max_concurrency, "open loop: in-flight cap")->capture_default_str();
  b->add_option("--input-len", f.input_len, "words per prompt, question or user turn (~tokens)")
      ->capture_default_str();
  b->add_option("--output-len", f.output_len, "max_tokens of every request")->capture_default_str();
  b->add_option("--num-prefixes", f.num_prefixes, "distinct shared system prompts")->capture_default_str();
  b->add_option("--prefix-len", f.prefix_len, "words per system prompt (shared-prefix, multi-turn)")
      ->capture_default_str();
  b->add_option("--turns", f.turns, "multi-turn: user turns per conversation")->capture_default_str();
  b->add_option("--seed", f.seed, "prompts and arrival times")->capture_default_str();
  b->add_option("--temperature", f.temperature, "sent when given; otherwise the server's default");
  b->add_flag("--no-ignore-eos", f.no_ignore_eos, "do not send vLLM's ignore_eos (servers that reject it)");
  b->add_option("--timeout", f.timeout_s, "seconds allowed per request")->capture_default_str();
  b->add_option("--header", f.headers, "extra request header 'Name: value' (repeatable)");
  b->add_option("--label", f.label, "names the run in the table and JSON (e.g. a routing policy)");
  b->add_option("--json", f.json_path, "write the JSON report here");
  b->add_flag("--calibrate", f.calibrate,
              "read --input-len/--prefix-len as tokens: measure the server's tokens per word with POST /tokenize");
  b->add_flag("--save-requests", f.save_requests, "add every request's measurements to the JSON report");
  return b;
}

int RunBenchCommand(const BenchFlags& flags) {
  if (flags.base_url.empty()) return BadFlags(InvalidArgument("--base-url is required (or run `bench simulate`)"));
  if (flags.model.empty()) return BadFlags(InvalidArgument("--model is required"));
  auto config = ToConfig(flags);
  if (!config.ok()) return BadFlags(config.status());
  if (!(flags.timeout_s > 0) || !std::isfinite(flags.timeout_s)) return BadFlags(InvalidArgument("--timeout must be > 0"));
  auto timeout = std::chrono::milliseconds(static_cast<int64_t>(flags.timeout_s * 1000));
  if (flags.calibrate) {
    if (Status s = Calibrate(&*config); !s.ok()) {
      std::fprintf(stderr, "omniserve bench: --calibrate: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  auto workload = loadgen::GenerateWorkload(config->workload);
  if (!workload.ok()) return BadFlags(workload.status());
  auto transport = loadgen::HttpTransport::Create(config->base_url, InFlightLimit(config->load), timeout);
  if (!transport.ok()) return BadFlags(transport.status());

  loadgen::BenchRunner runner(transport->get(), &Clock::Real(), config->load);
  loadgen::RunResult run = runner.Run(*workload);
  loadgen::BenchSummary summary = loadgen::Summarize(run.records, run.duration_s);
  std::fputs(loadgen::FormatSummaryTable(*config, summary).c_str(), stdout);
  std::fflush(stdout);
  for (const auto& r : run.records) {
    if (!r.ok && r.error_kind != "skipped") {
      std::fprintf(stderr, "omniserve bench: first error (%s): %s\n", r.error_kind.c_str(),
                   r.error_message.substr(0, 500).c_str());
      break;
    }
  }

  if (!flags.json_path.empty()) {
    std::span<const loadgen::RequestRecord> requests;
    if (flags.save_requests) requests = run.records;
    std::ofstream out(flags.json_path, std::ios::trunc);
    out << loadgen::BenchReportJson(*config, summary, requests);
    out.close();
    if (!out) {
      std::fprintf(stderr, "omniserve bench: cannot write %s\n", flags.json_path.c_str());
      return 1;
    }
  }
  return summary.completed > 0 ? 0 : 1;
}

}  // namespace omni::cli
