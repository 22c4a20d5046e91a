#include "services/routing_sim/sim_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

namespace omni::routing_sim {
namespace {

using nlohmann::json;

std::optional<double> Ceiling(std::span<const PolicyResult> results) {
  for (const PolicyResult& r : results) {
    if (r.policy == Policy::kSingleReplica) return r.hit_rate;
  }
  return std::nullopt;
}

std::string LoadText(const SimOptions& o) {
  return o.request_rate > 0 ? fmt::format("{:g} conversations/s Poisson", o.request_rate)
                            : fmt::format("{} conversations in flight", o.concurrency);
}

json ConfigJson(const SimOptions& o) {
  const loadgen::WorkloadOptions& w = o.workload;
  const ReplicaOptions& r = o.replica;
  return {{"replicas", o.replicas},
          {"kv_blocks", r.kv_blocks},
          {"block_size", kSimBlockSize},
          {"max_num_batched_tokens", r.max_num_batched_tokens},
          {"max_num_seqs", r.max_num_seqs},
          {"prefill_rate", r.time.prefill_tokens_per_s},
          {"decode_rate", r.time.decode_tokens_per_s},
          {"decode_batch_slope", r.time.decode_batch_slope},
          {"step_overhead_s", r.time.step_overhead_s},
          {"scrape_interval_s", o.scrape_interval_s},
          {"workload", loadgen::WorkloadKindName(w.kind)},
          {"num_requests", w.num_requests},
          {"input_len", w.input_len},
          {"output_len", o.output_len},
          {"num_prefixes", w.num_prefixes},
          {"prefix_len", w.prefix_len},
          {"turns", w.turns},
          {"concurrency", o.request_rate > 0 ? json(nullptr) : json(o.concurrency)},
          {"request_rate", o.request_rate > 0 ? json(o.request_rate) : json(nullptr)},
          {"seed", o.seed}};
}

json ResultJson(const PolicyResult& r, std::optional<double> ceiling) {
  // The single replica's times are not a fleet's (routing_sim.h): null.
  const bool timed = r.policy != Policy::kSingleReplica;
  auto timed_value = [&](double v) { return timed ? json(v) : json(nullptr); };
  json ttft = timed ? json{{"mean", r.ttft_s.mean}, {"p50", r.ttft_s.p50}, {"p90", r.ttft_s.p90},
                           {"p99", r.ttft_s.p99}, {"max", r.ttft_s.max}}
                    : json(nullptr);
  auto [lo, hi] = std::minmax_element(r.requests_per_replica.begin(), r.requests_per_replica.end());
  return {{"policy", PolicyName(r.policy)},
          {"replicas", r.replicas},
          {"kv_blocks_per_replica", r.kv_blocks_per_replica},
          {"requests", r.requests},
          {"prompt_tokens", r.prompt_tokens},
          {"cached_tokens", r.cached_tokens},
          {"output_tokens", r.output_tokens},
          {"prefix_cache_hit_rate", r.hit_rate},
          {"hit_rate_vs_single_replica", ceiling && *ceiling > 0 ? json(r.hit_rate / *ceiling) : json(nullptr)},
          {"load_imbalance", timed_value(r.load_imbalance)},
          {"ttft_s", ttft},
          {"duration_s", timed_value(r.duration_s)},
          {"output_tokens_per_s", timed_value(r.output_tokens_per_s)},
          {"requests_per_replica", {{"min", *lo}, {"max", *hi}}},
          {"wall_s", r.wall_s}};
}

}  // namespace

std::string FormatSimTable(const SimOptions& o, std::span<const PolicyResult> results) {
  const loadgen::WorkloadOptions& w = o.workload;
  const ServiceTimeModel& t = o.replica.time;
  std::string out = "============ omniserve bench simulate ============\n";
  out += fmt::format("Fleet:     {} replicas x {} KV blocks of {} tokens, {} batched tokens/step, {} seqs max\n",
                     o.replicas, o.replica.kv_blocks, kSimBlockSize, o.replica.max_num_batched_tokens,
                     o.replica.max_num_seqs);
  out += fmt::format("Model:     prefill {:g} tok/s, decode {:g} tok/s x (1 + (b-1) x {:.4g}), overhead {:g} ms/step\n",
                     t.prefill_tokens_per_s, t.decode_tokens_per_s, t.decode_batch_slope, t.step_overhead_s * 1e3);
  out += fmt::format("Workload:  {} x {} requests, input {}, output {}, {} prefixes of {}, {} turns; {}\n",
                     loadgen::WorkloadKindName(w.kind), w.num_requests, w.input_len, o.output_len, w.num_prefixes,
                     w.prefix_len, w.turns, LoadText(o));
  const std::optional<double> ceiling = Ceiling(results);
  out += fmt::format("{:<15} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>7}\n", "policy", "hit rate",
                     "vs single", "imbalance", "TTFT p50", "TTFT p90", "TTFT p99", "out tok/s", "virtual s",
                     "wall s");
  for (const PolicyResult& r : results) {
    const std::string vs = ceiling && *ceiling > 0 ? fmt::format("{:.3f}", r.hit_rate / *ceiling) : "-";
    if (r.policy == Policy::kSingleReplica) {
      out += fmt::format("{:<15} {:>8.3f} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>7.1f}\n", PolicyName(r.policy),
                         r.hit_rate, vs, "-", "-", "-", "-", "-", "-", r.wall_s);
      continue;
    }
    out += fmt::format("{:<15} {:>8.3f} {:>9} {:>9.2f} {:>9.3f} {:>9.3f} {:>9.3f} {:>10.1f} {:>10.1f} {:>7.1f}\n",
                       PolicyName(r.policy), r.hit_rate, vs, r.load_imbalance, r.ttft_s.p50, r.ttft_s.p90,
                       r.ttft_s.p99, r.output_tokens_per_s, r.duration_s, r.wall_s);
  }
  out += "(hit rate: cached / prompt tokens; imbalance: mean over scrapes of max/mean active requests per replica;\n"
         " TTFT in virtual seconds; single-replica: one replica with the fleet's KV blocks, hit-rate ceiling only)\n";
  return out;
}

std::string SimReportJson(const SimOptions& o, std::span<const PolicyResult> results) {
  const std::optional<double> ceiling = Ceiling(results);
  json rows = json::array();
  for (const PolicyResult& r : results) rows.push_back(ResultJson(r, ceiling));
  json report = {{"schema_version", 1}, {"tool", "omniserve bench simulate"}, {"config", ConfigJson(o)},
                 {"results", rows}};
  return report.dump(2) + "\n";
}

}  // namespace omni::routing_sim
