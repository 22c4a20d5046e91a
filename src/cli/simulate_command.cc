#include "cli/simulate_command.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <vector>

#include "services/loadgen/workload.h"
#include "services/routing_sim/routing_sim.h"
#include "services/routing_sim/sim_report.h"

namespace omni::cli {
namespace {

// Conversations in flight per replica when neither loop is given: enough to
// reach the batch sizes where the default service-time model saturates.
constexpr int kDefaultConcurrencyPerReplica = 16;

StatusOr<routing_sim::SimOptions> ToOptions(const SimulateFlags& f) {
  routing_sim::SimOptions o;
  OMNI_ASSIGN_OR_RETURN(o.workload.kind, loadgen::ParseWorkloadKind(f.workload));
  o.workload.num_requests = f.num_requests;
  o.workload.input_len = f.input_len;
  o.workload.num_prefixes = f.num_prefixes;
  o.workload.prefix_len = f.prefix_len;
  o.workload.turns = o.workload.kind == loadgen::WorkloadKind::kMultiTurn ? f.turns : 1;
  o.workload.seed = f.seed;
  o.output_len = f.output_len;
  o.replicas = f.replicas;
  if (f.concurrency > 0 && f.request_rate > 0) {
    return InvalidArgument("--concurrency and --request-rate are alternatives; give one");
  }
  o.request_rate = f.request_rate;
  o.concurrency = f.request_rate > 0 ? 0 : (f.concurrency > 0 ? f.concurrency : kDefaultConcurrencyPerReplica * f.replicas);
  o.scrape_interval_s = f.scrape_interval_ms / 1000;
  o.seed = f.seed;
  routing_sim::ReplicaOptions& r = o.replica;
  r.kv_blocks = f.kv_blocks;
  r.max_num_seqs = f.max_num_seqs;
  r.max_num_batched_tokens = f.max_batched_tokens;
  r.time = {.step_overhead_s = f.step_overhead_ms / 1000,
            .prefill_tokens_per_s = f.prefill_rate,
            .decode_tokens_per_s = f.decode_rate,
            .decode_batch_slope = f.decode_batch_slope};
  OMNI_RETURN_IF_ERROR(routing_sim::ValidateSimOptions(o));
  return o;
}

}  // namespace

CLI::App* AddSimulateCommand(CLI::App& bench, SimulateFlags* flags) {
  SimulateFlags& f = *flags;
  CLI::App* s = bench.add_subcommand(
      "simulate", "routing simulator: the gateway's scoring against simulated replicas (docs/BENCH.md)");
  s->add_option("--replicas", f.replicas, "simulated LLM replicas")->capture_default_str();
  s->add_option("--policies", f.policies,
                "comma list of round-robin, random, load-only, approx-prefix, precise-prefix, single-replica; "
                "or all")
      ->capture_default_str();
  s->add_option("--workload", f.workload, "synthetic|shared-prefix|multi-turn")
      ->check(CLI::IsMember({"synthetic", "shared-prefix", "multi-turn"}))
      ->capture_default_str();
  s->add_option("--num-requests", f.num_requests, "requests in all, every turn counted")->capture_default_str();
  s->add_option("--input-len", f.input_len, "words (= tokens) per question or user turn")->capture_default_str();
  s->add_option("--output-len", f.output_len, "tokens of every answer")->capture_default_str();
  s->add_option("--num-prefixes", f.num_prefixes, "distinct shared system prompts")->capture_default_str();
  s->add_option("--prefix-len", f.prefix_len, "words per system prompt (shared-prefix, multi-turn)")
      ->capture_default_str();
  s->add_option("--turns", f.turns, "multi-turn: user turns per conversation")->capture_default_str();
  s->add_option("--concurrency", f.concurrency, "closed loop: conversations in flight (default 16 per replica)");
  s->add_option("--request-rate", f.request_rate, "open loop: Poisson conversation arrivals per virtual second");
  s->add_option("--kv-blocks", f.kv_blocks, "KV blocks of 16 tokens per replica")->capture_default_str();
  s->add_option("--max-num-seqs", f.max_num_seqs, "running requests per replica at most")->capture_default_str();
  s->add_option("--max-batched-tokens", f.max_batched_tokens, "token budget per engine step")->capture_default_str();
  s->add_option("--prefill-rate", f.prefill_rate, "prefill tokens per second")->capture_default_str();
  s->add_option("--decode-rate", f.decode_rate, "single-stream decode tokens per second")->capture_default_str();
  s->add_option("--decode-batch-slope", f.decode_batch_slope,
                "decode step time x (1 + (batch - 1) x slope); 13/45: 16 streams = 3x one")
      ->capture_default_str();
  s->add_option("--step-overhead-ms", f.step_overhead_ms, "fixed time per engine step")->capture_default_str();
  s->add_option("--scrape-interval-ms", f.scrape_interval_ms, "virtual ms between load reports to the router")
      ->capture_default_str();
  s->add_option("--seed", f.seed, "prompts, arrival times and the router's tie-breaks")->capture_default_str();
  s->add_option("--json", f.json_path, "write the JSON report here");
  return s;
}

int RunSimulateCommand(const SimulateFlags& flags) {
  auto options = ToOptions(flags);
  auto policies = routing_sim::ParsePolicies(flags.policies);
  if (!options.ok() || !policies.ok()) {
    const Status& s = options.ok() ? policies.status() : options.status();
    std::fprintf(stderr, "omniserve bench simulate: %s\n", s.message().c_str());
    return 2;
  }
  auto workload = loadgen::GenerateWorkload(options->workload);
  if (!workload.ok()) {
    std::fprintf(stderr, "omniserve bench simulate: %s\n", workload.status().message().c_str());
    return 2;
  }
  std::vector<routing_sim::PolicyResult> results;
  for (routing_sim::Policy p : *policies) {
    results.push_back(routing_sim::SimulatePolicy(*options, *workload, p));
    const routing_sim::PolicyResult& r = results.back();
    std::fprintf(stderr, "omniserve bench simulate: %-15s hit rate %.3f, %.1f s\n",
                 std::string(routing_sim::PolicyName(p)).c_str(), r.hit_rate, r.wall_s);
  }
  std::fputs(routing_sim::FormatSimTable(*options, results).c_str(), stdout);
  std::fflush(stdout);
  if (!flags.json_path.empty()) {
    std::ofstream out(flags.json_path, std::ios::trunc);
    out << routing_sim::SimReportJson(*options, results);
    out.close();
    if (!out) {
      std::fprintf(stderr, "omniserve bench simulate: cannot write %s\n", flags.json_path.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace omni::cli
