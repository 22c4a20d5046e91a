// `omniserve bench simulate`: the routing simulator (docs/BENCH.md, "Routing
// simulator"). The work is in services/routing_sim; this is the flag parsing.
#pragma once

#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace omni::cli {

struct SimulateFlags {
  int replicas = 8;
  std::string policies = "all";
  std::string workload = "multi-turn";
  int num_requests = 10'000;
  int input_len = 60;
  int output_len = 40;
  int num_prefixes = 8;
  int prefix_len = 400;
  int turns = 5;
  int concurrency = 0;       // 0: not given (16 per replica unless --request-rate)
  double request_rate = 0;   // 0: not given
  int kv_blocks = 1024;
  int max_num_seqs = 256;
  int max_batched_tokens = 2048;
  double prefill_rate = 2000;
  double decode_rate = 60;
  double decode_batch_slope = 13.0 / 45.0;
  double step_overhead_ms = 0;
  double scrape_interval_ms = 50;
  uint64_t seed = 0;
  std::string json_path;
};

// Adds `simulate` under `bench` (which must outlive parsing, as `*flags`).
CLI::App* AddSimulateCommand(CLI::App& bench, SimulateFlags* flags);
// Runs every selected policy; 0 on success, 1 when the report cannot be
// written, 2 for bad flags.
int RunSimulateCommand(const SimulateFlags& flags);

}  // namespace omni::cli
