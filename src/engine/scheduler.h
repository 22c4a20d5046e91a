// Scheduler: continuous batching over a waiting queue (FCFS by arrival) and
// a running list (admission order), with a per-step token budget.
//
// One Schedule() call picks the work of one step:
//   1. running sequences that decode (one token left to compute), oldest first;
//   2. running sequences still prefilling, oldest first, each a chunk of at
//      most the remaining budget (chunked prefill);
//   3. if nothing was preempted in this step, waiting sequences from the
//      front while max_num_seqs, the budget and the free blocks allow; each
//      starts after its longest cached prefix (never the whole sequence: the
//      last token is always computed so there are logits to sample from).
// When a running sequence needs a block and none is free, the most recently
// admitted running sequence is preempted (by recompute): its blocks are
// released (full ones stay in the prefix cache), its computed count resets
// and it goes back to the front of the waiting queue with its prompt and
// generated tokens, to be recomputed when admitted again. A single sequence
// always fits (the engine checks max_model_len against the pool), so this
// always makes progress.
//
// Thread-safety: none; engine thread only.
#pragma once

#include <deque>
#include <memory>
#include <string_view>
#include <vector>

#include "engine/prefix_cache.h"
#include "engine/sequence.h"

namespace omni {

struct SchedulerConfig {
  int max_num_batched_tokens = 2048;  // token budget per step
  int max_num_seqs = 256;             // running sequences at most
};

struct ScheduledChunk {
  Sequence* seq = nullptr;
  int32_t num_tokens = 0;  // computes tokens [seq->num_computed_tokens, + num_tokens)
};

struct SchedulerOutput {
  std::vector<ScheduledChunk> chunks;  // decodes first, then prefill chunks
  int32_t num_tokens = 0;
  std::vector<Sequence*> preempted;    // in this step, now waiting
};

class Scheduler {
 public:
  // `cache` must outlive the scheduler.
  Scheduler(const SchedulerConfig& config, PrefixCache* cache);

  // Queues a new sequence at the back of the waiting queue.
  void Add(std::unique_ptr<Sequence> seq);
  SchedulerOutput Schedule();
  // After the model computed `chunk`: advances the sequence and registers
  // its newly full blocks in the prefix cache.
  void OnChunkComputed(const ScheduledChunk& chunk);
  // Ends a waiting or running sequence now: its blocks are released and it
  // moves to the finished list. Null if no unfinished sequence has the id.
  Sequence* Finish(std::string_view request_id, FinishReason reason);
  void Finish(Sequence* seq, FinishReason reason);
  // Hands over the sequences finished since the last call.
  std::vector<std::unique_ptr<Sequence>> TakeFinished();

  bool HasUnfinished() const { return !waiting_.empty() || !running_.empty(); }
  int num_running() const { return static_cast<int>(running_.size()); }
  int num_waiting() const { return static_cast<int>(waiting_.size()); }
  int64_t num_preemptions() const { return num_preemptions_; }
  const std::vector<std::unique_ptr<Sequence>>& running() const { return running_; }

 private:
  struct StepState;

  void ScheduleRunning(bool decodes, StepState* step);
  void AdmitWaiting(StepState* step);
  // Grows seq's block table to hold `num_tokens`, preempting from the back
  // of running_ as needed. False if `seq` itself had to be preempted.
  bool EnsureBlocks(Sequence* seq, int32_t num_tokens, StepState* step);
  void PreemptLast(StepState* step);

  SchedulerConfig config_;
  PrefixCache* cache_;
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;  // admission order, newest last
  std::vector<std::unique_ptr<Sequence>> finished_;
  int64_t num_preemptions_ = 0;
};

// Blocks needed to hold `num_tokens` tokens.
inline int32_t BlocksFor(int32_t num_tokens) { return (num_tokens + kBlockSize - 1) / kBlockSize; }

}  // namespace omni
