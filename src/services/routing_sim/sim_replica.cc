#include "services/routing_sim/sim_replica.h"

#include <algorithm>

#include "core/check.h"
#include "engine/prefix_cache.h"

namespace omni::routing_sim {

double ServiceTimeModel::DecodeStepSeconds(int batch) const {
  return (1.0 / decode_tokens_per_s) * (1.0 + (batch - 1) * decode_batch_slope);
}

double ServiceTimeModel::StepSeconds(int prefill_tokens, int decode_batch) const {
  double s = step_overhead_s + prefill_tokens / prefill_tokens_per_s;
  if (decode_batch > 0) s += DecodeStepSeconds(decode_batch);
  return s;
}

SimReplica::SimReplica(const ReplicaOptions& options) : options_(options), cache_(options.kv_blocks) {}

int SimReplica::BlocksFor(int prompt_len, int output_len) {
  // The last output token is sampled but its KV is never computed.
  const int kv_tokens = prompt_len + output_len - 1;
  return std::max(1, (kv_tokens + kSimBlockSize - 1) / kSimBlockSize);
}

void SimReplica::Enqueue(SimRequest&& request) {
  OMNI_CHECK_GE(request.prompt_len, 1);
  OMNI_CHECK_GE(request.output_len, 1);
  OMNI_CHECK_GE(request.tokens.size(), static_cast<size_t>(request.prompt_len + request.output_len - 1));
  OMNI_CHECK_LE(BlocksFor(request.prompt_len, request.output_len), cache_.num_blocks())
      << "a request larger than the replica's KV budget";
  waiting_.push_back(std::move(request));
}

bool SimReplica::Admit() {
  SimRequest& head = waiting_.front();
  Running r;
  const int kv_tokens = head.prompt_len + head.output_len - 1;
  ExtendBlockHashes(std::span<const int32_t>(head.tokens).first(kv_tokens), {}, "", &r.hashes);
  const int hit = std::min(cache_.LongestCachedPrefix(r.hashes), (head.prompt_len - 1) / kSimBlockSize);
  if (!cache_.Allocate(r.hashes, hit, BlocksFor(head.prompt_len, head.output_len), &r.blocks)) return false;
  r.registered = hit;
  r.cached = r.computed = hit * kSimBlockSize;
  r.request = std::move(head);
  waiting_.pop_front();
  running_.push_back(std::move(r));
  return true;
}

std::optional<double> SimReplica::StartStep() {
  OMNI_CHECK(!in_step_);
  int budget = options_.max_num_batched_tokens;
  int decode = 0;
  int prefill = 0;
  for (Running& r : running_) {
    r.step_tokens = 0;
    if (r.computed >= r.request.prompt_len && budget > 0) {
      r.step_tokens = 1;
      --budget;
      ++decode;
    }
  }
  auto chunk = [&](Running& r) {
    if (r.computed >= r.request.prompt_len || budget == 0) return;
    r.step_tokens = std::min(r.request.prompt_len - r.computed, budget);
    budget -= r.step_tokens;
    prefill += r.step_tokens;
  };
  for (Running& r : running_) chunk(r);
  while (budget > 0 && !waiting_.empty() && static_cast<int>(running_.size()) < options_.max_num_seqs) {
    if (!Admit()) break;
    running_.back().step_tokens = 0;
    chunk(running_.back());
  }
  if (decode + prefill == 0) return std::nullopt;
  in_step_ = true;
  return options_.time.StepSeconds(prefill, decode);
}

StepOutcome SimReplica::FinishStep() {
  OMNI_CHECK(in_step_);
  in_step_ = false;
  StepOutcome out;
  for (Running& r : running_) {
    if (r.step_tokens == 0) continue;
    const bool prefill = r.computed < r.request.prompt_len;
    r.computed += r.step_tokens;
    r.step_tokens = 0;
    if (!prefill) {
      ++r.generated;
    } else if (r.computed == r.request.prompt_len) {
      r.generated = 1;
      out.first_tokens.push_back({r.request.id, r.cached});
    }
    RegisterFullBlocks(r);
    if (r.generated == r.request.output_len) {
      out.finished.push_back(r.request.id);
      cache_.Release(r.blocks);
    }
  }
  std::erase_if(running_, [](const Running& r) { return r.generated == r.request.output_len; });
  return out;
}

void SimReplica::RegisterFullBlocks(Running& r) {
  const int full = std::min(r.computed / kSimBlockSize, static_cast<int>(r.hashes.size()));
  const std::span<const int32_t> tokens(r.request.tokens);
  for (int i = r.registered; i < full; ++i) {
    std::optional<uint64_t> parent;
    if (i > 0) parent = r.hashes[i - 1];
    cache_.Register(r.blocks[i], r.hashes[i], parent, tokens.subspan(i * kSimBlockSize, kSimBlockSize));
  }
  r.registered = std::max(r.registered, full);
}

}  // namespace omni::routing_sim
