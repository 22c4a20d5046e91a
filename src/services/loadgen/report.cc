#include "services/loadgen/report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace omni::loadgen {
namespace {

using nlohmann::json;

json DistributionJson(const Distribution& d) {
  return {{"count", d.count}, {"mean", d.mean}, {"min", d.min}, {"p50", d.p50},
          {"p90", d.p90},     {"p99", d.p99},   {"max", d.max}};
}

json ConfigJson(const BenchConfig& c) {
  const LoadOptions& l = c.load;
  const WorkloadOptions& w = c.workload;
  json load = {{"concurrency", l.request_rate > 0 ? json(nullptr) : json(l.concurrency)},
               {"request_rate", l.request_rate > 0 ? json(l.request_rate) : json(nullptr)},
               {"max_concurrency", l.request_rate > 0 ? json(l.max_concurrency) : json(nullptr)}};
  json out = {{"base_url", c.base_url},
              {"label", c.label},
              {"model", l.model},
              {"endpoint", EndpointName(l.endpoint)},
              {"workload", WorkloadKindName(w.kind)},
              {"num_requests", w.num_requests},
              {"input_len", w.input_len},
              {"output_len", l.sampling.max_tokens},
              {"num_prefixes", w.num_prefixes},
              {"prefix_len", w.prefix_len},
              {"turns", w.turns},
              {"tokens_per_word", c.tokens_per_word ? json(*c.tokens_per_word) : json(nullptr)},
              {"seed", w.seed},
              {"ignore_eos", l.sampling.ignore_eos},
              {"temperature", l.sampling.temperature ? json(*l.sampling.temperature) : json(nullptr)}};
  out.update(load);
  return out;
}

json RequestJson(const RequestRecord& r) {
  json j = {{"conversation", r.conversation_id},
            {"turn", r.turn},
            {"start_s", r.start_s},
            {"ok", r.ok},
            {"ttft_s", r.ttft_s},
            {"e2e_s", r.e2e_s},
            {"itl_s", r.itl_s},
            {"prompt_tokens", r.prompt_tokens},
            {"completion_tokens", r.completion_tokens},
            {"cached_tokens", r.cached_tokens_reported ? json(r.cached_tokens) : json(nullptr)}};
  if (!r.ok) {
    j["error_kind"] = r.error_kind;
    j["error_message"] = r.error_message;
  }
  return j;
}

double Mean(int64_t total, int64_t n) { return n > 0 ? static_cast<double>(total) / static_cast<double>(n) : 0; }

}  // namespace

std::string BenchReportJson(const BenchConfig& config, const BenchSummary& s, std::span<const RequestRecord> requests) {
  json errors = json::object();
  for (const auto& [kind, n] : s.errors) errors[kind] = n;
  json results = {{"requests", s.requests},
                  {"completed", s.completed},
                  {"failed", s.failed},
                  {"errors", errors},
                  {"duration_s", s.duration_s},
                  {"prompt_tokens", s.prompt_tokens},
                  {"completion_tokens", s.completion_tokens},
                  {"cached_tokens", s.cached_tokens},
                  {"mean_prompt_tokens", Mean(s.prompt_tokens, s.completed)},
                  {"mean_completion_tokens", Mean(s.completion_tokens, s.completed)},
                  {"request_throughput", s.request_throughput},
                  {"output_tokens_per_s", s.output_tokens_per_s},
                  {"total_tokens_per_s", s.total_tokens_per_s},
                  {"prefill_tokens_per_s", s.prefill_tokens_per_s},
                  {"prefix_cache_hit_rate", s.prefix_cache_hit_rate >= 0 ? json(s.prefix_cache_hit_rate) : json(nullptr)},
                  {"ttft_ms", DistributionJson(s.ttft_ms)},
                  {"tpot_ms", DistributionJson(s.tpot_ms)},
                  {"itl_ms", DistributionJson(s.itl_ms)},
                  {"e2e_ms", DistributionJson(s.e2e_ms)}};
  json doc = {{"schema_version", kReportSchemaVersion}, {"config", ConfigJson(config)}, {"results", results}};
  if (!requests.empty()) {
    json list = json::array();
    for (const auto& r : requests) list.push_back(RequestJson(r));
    doc["requests"] = std::move(list);
  }
  return doc.dump(2) + "\n";
}

std::string FormatSummaryTable(const BenchConfig& config, const BenchSummary& s) {
  const LoadOptions& l = config.load;
  std::string out;
  auto line = [&](std::string_view name, const std::string& value) { out += fmt::format("{:<34}{}\n", name, value); };
  std::string load = l.request_rate > 0 ? fmt::format("{:g} req/s Poisson (max {} in flight)", l.request_rate, l.max_concurrency)
                                        : fmt::format("concurrency {}", l.concurrency);
  out += fmt::format("============ omniserve bench {}============\n", config.label.empty() ? "" : config.label + " ");
  line("Target:", fmt::format("{} {} model={}", config.base_url, EndpointPath(l.endpoint), l.model));
  line("Workload:", fmt::format("{} ({}), {}", WorkloadKindName(config.workload.kind),
                                config.workload.kind == WorkloadKind::kMultiTurn
                                    ? fmt::format("{} turns", config.workload.turns)
                                    : std::string("1 turn"),
                                load));
  line("Requests completed / failed:", fmt::format("{} / {}", s.completed, s.failed));
  for (const auto& [kind, n] : s.errors) line(fmt::format("  errors {}:", kind), std::to_string(n));
  line("Duration (s):", fmt::format("{:.2f}", s.duration_s));
  line("Prompt tokens (mean):", fmt::format("{} ({:.1f})", s.prompt_tokens, Mean(s.prompt_tokens, s.completed)));
  line("Completion tokens (mean):",
       fmt::format("{} ({:.1f})", s.completion_tokens, Mean(s.completion_tokens, s.completed)));
  line("Cached prompt tokens:", std::to_string(s.cached_tokens));
  line("Prefix-cache hit rate:",
       s.prefix_cache_hit_rate >= 0 ? fmt::format("{:.1f}%", 100 * s.prefix_cache_hit_rate) : "not reported");
  line("Request throughput (req/s):", fmt::format("{:.2f}", s.request_throughput));
  line("Output token throughput (tok/s):", fmt::format("{:.2f}", s.output_tokens_per_s));
  line("Total token throughput (tok/s):", fmt::format("{:.2f}", s.total_tokens_per_s));
  line("Prefill rate (uncached tok/s):", fmt::format("{:.2f}", s.prefill_tokens_per_s));
  out += fmt::format("{:<12}{:>10}{:>10}{:>10}{:>10}{:>10}\n", "(ms)", "mean", "p50", "p90", "p99", "max");
  auto row = [&](std::string_view name, const Distribution& d) {
    out += fmt::format("{:<12}{:>10.2f}{:>10.2f}{:>10.2f}{:>10.2f}{:>10.2f}\n", name, d.mean, d.p50, d.p90, d.p99,
                       d.max);
  };
  row("TTFT", s.ttft_ms);
  row("TPOT", s.tpot_ms);
  row("ITL", s.itl_ms);
  row("E2E", s.e2e_ms);
  out += "==================================================\n";
  return out;
}

}  // namespace omni::loadgen
