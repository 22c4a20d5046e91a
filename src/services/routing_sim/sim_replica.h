// One simulated LLM replica: continuous batching with chunked prefill over a
// SimKvCache, timed by a service-time model instead of running a model.
//
// Each engine step (the scheduling of engine/scheduler.h, simplified):
//   1. every running request past its prompt decodes one token;
//   2. running requests still in prefill get chunks of the step's token
//      budget, oldest first;
//   3. waiting requests are admitted in arrival order while the budget lasts,
//      fewer than max_num_seqs run and their blocks fit; an admitted request
//      skips the prompt tokens its longest cached prefix covers (at most
//      prompt_len - 1: the last prompt token is always computed, as in vLLM).
// A request reserves the blocks for its whole sequence at admission, so
// nothing is ever preempted; one that does not fit waits at the head of the
// queue (head-of-line, as vLLM's FCFS policy).
// The step takes StepSeconds(prefill tokens, decode batch). The step that
// computes a request's last prompt token also samples its first output
// token; each later step computes one more token's KV and samples the next.
// Full blocks are registered in the prefix cache as their KV is computed, so
// a finished request of P prompt and O output tokens leaves its first
// (P + O - 1) / 16 blocks cached.
//
// Thread-safety: none; the simulator is single-threaded.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "services/routing_sim/sim_kv_cache.h"

namespace omni::routing_sim {

// Seconds per engine step: step_overhead_s + prefill_tokens / prefill_tokens_per_s
// + (decode_batch > 0 ? DecodeStepSeconds(decode_batch) : 0), where
// DecodeStepSeconds(b) = (1 / decode_tokens_per_s) * (1 + (b - 1) * decode_batch_slope).
// Defaults: the CPU server of docs/PERFORMANCE.md in round numbers
// (prefill about 2000 tokens/s, one stream about 60 tokens/s, 16 streams
// about 3x one): 16 / (1 + 15 s) = 3 gives s = 13/45.
struct ServiceTimeModel {
  double step_overhead_s = 0;
  double prefill_tokens_per_s = 2000;
  double decode_tokens_per_s = 60;
  double decode_batch_slope = 13.0 / 45.0;

  double DecodeStepSeconds(int batch) const;
  double StepSeconds(int prefill_tokens, int decode_batch) const;
};

struct ReplicaOptions {
  int kv_blocks = 1024;                // of kSimBlockSize tokens
  int max_num_batched_tokens = 2048;   // token budget per step
  int max_num_seqs = 256;              // running requests at most
  ServiceTimeModel time;
};

// A request as the replica sees it.
struct SimRequest {
  int64_t id = 0;
  std::vector<int32_t> tokens;  // the prompt, then the answer the replica will produce
  int prompt_len = 0;
  int output_len = 1;  // >= 1
};

// What a finished step did.
struct StepOutcome {
  struct FirstToken {
    int64_t id;
    int cached_tokens;  // prompt tokens the prefix cache supplied
  };
  std::vector<FirstToken> first_tokens;
  std::vector<int64_t> finished;
};

class SimReplica {
 public:
  explicit SimReplica(const ReplicaOptions& options);

  void Enqueue(SimRequest&& request);
  // Plans the next step (admission, chunks); its length in seconds, or
  // nullopt when there is nothing to do. Needs !in_step().
  std::optional<double> StartStep();
  // Applies the planned step.
  StepOutcome FinishStep();
  bool in_step() const { return in_step_; }

  int waiting() const { return static_cast<int>(waiting_.size()); }
  int running() const { return static_cast<int>(running_.size()); }
  const SimKvCache& cache() const { return cache_; }
  double kv_usage() const { return static_cast<double>(cache_.used_blocks()) / cache_.num_blocks(); }
  // KV events since the last call (BlockStored, BlockRemoved).
  std::vector<WireKvEvent> TakeKvEvents() { return cache_.TakeEvents(); }

  // Blocks a request of `total_tokens` (prompt + output) reserves.
  static int BlocksFor(int prompt_len, int output_len);

 private:
  struct Running {
    SimRequest request;
    std::vector<uint64_t> hashes;  // chain over the full blocks of the computed sequence
    std::vector<int> blocks;
    int computed = 0;    // tokens whose KV is computed
    int registered = 0;  // leading blocks already offered to the cache
    int generated = 0;   // output tokens sampled
    int cached = 0;      // prompt tokens from the prefix cache
    int step_tokens = 0; // tokens planned in the current step
  };

  bool Admit();  // the head of the queue; false if it does not fit
  void RegisterFullBlocks(Running& r);

  ReplicaOptions options_;
  SimKvCache cache_;
  std::deque<SimRequest> waiting_;
  std::vector<Running> running_;  // admission order
  bool in_step_ = false;
};

}  // namespace omni::routing_sim
