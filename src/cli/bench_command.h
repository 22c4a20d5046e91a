// `omniserve bench`: a load generator for OpenAI-compatible endpoints
// (docs/BENCH.md). The work is in services/loadgen; this is the flag parsing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace omni::cli {

struct BenchFlags {
  std::string base_url;
  std::string model;
  std::string endpoint = "chat";
  std::string workload = "synthetic";
  int num_requests = 100;
  int concurrency = 0;        // 0: not given (1 unless --request-rate)
  double request_rate = 0;    // 0: not given
  int max_concurrency = 256;
  int input_len = 128;
  int output_len = 128;
  int num_prefixes = 1;
  int prefix_len = 0;
  int turns = 1;
  uint64_t seed = 0;
  double temperature = -1;    // < 0: not sent
  bool no_ignore_eos = false;
  double timeout_s = 600;
  std::vector<std::string> headers;  // "Name: value"
  std::string label;
  std::string json_path;
  bool save_requests = false;
  bool calibrate = false;
};

// Adds the `bench` subcommand to `app`, binding its flags to `*flags`
// (which must outlive parsing); returns it.
CLI::App* AddBenchCommand(CLI::App& app, BenchFlags* flags);
// Runs the benchmark; returns the process exit code (0 even when some
// requests failed: failures are results; 1 when every request failed or the
// report cannot be written; 2 for bad flags).
int RunBenchCommand(const BenchFlags& flags);

}  // namespace omni::cli
