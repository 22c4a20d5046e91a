#include "engine/scheduler.h"

#include <algorithm>

#include "core/check.h"

namespace omni {

std::string_view FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kNone: return "";
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAbort: return "abort";
    case FinishReason::kError: return "error";
  }
  return "";
}

struct Scheduler::StepState {
  SchedulerOutput out;
  int32_t budget = 0;
};

Scheduler::Scheduler(const SchedulerConfig& config, PrefixCache* cache)
    : config_(config), cache_(cache) {
  OMNI_CHECK_GT(config.max_num_batched_tokens, 0);
  OMNI_CHECK_GT(config.max_num_seqs, 0);
}

void Scheduler::Add(std::unique_ptr<Sequence> seq) {
  seq->state = SequenceState::kWaiting;
  waiting_.push_back(std::move(seq));
}

SchedulerOutput Scheduler::Schedule() {
  StepState step;
  step.budget = config_.max_num_batched_tokens;
  ScheduleRunning(/*decodes=*/true, &step);
  ScheduleRunning(/*decodes=*/false, &step);
  // Admitting right after a preemption would only hand the freed blocks to a
  // newer sequence and thrash; vLLM holds admissions for that step too.
  if (step.out.preempted.empty()) AdmitWaiting(&step);
  step.out.num_tokens = config_.max_num_batched_tokens - step.budget;
  return std::move(step.out);
}

void Scheduler::ScheduleRunning(bool decodes, StepState* step) {
  // Index loop: preemption pops from the back, never before index i.
  for (size_t i = 0; i < running_.size() && step->budget > 0; ++i) {
    Sequence* seq = running_[i].get();
    const int32_t remaining = seq->num_tokens() - seq->num_computed_tokens;
    OMNI_CHECK_GT(remaining, 0);
    if ((remaining == 1) != decodes) continue;
    const int32_t n = std::min(remaining, step->budget);
    if (!EnsureBlocks(seq, seq->num_computed_tokens + n, step)) break;
    step->out.chunks.push_back({seq, n});
    step->budget -= n;
  }
}

bool Scheduler::EnsureBlocks(Sequence* seq, int32_t num_tokens, StepState* step) {
  const int32_t need = BlocksFor(num_tokens) - static_cast<int32_t>(seq->block_table.size());
  if (need <= 0) return true;
  while (!cache_->Allocate(need, &seq->block_table)) {
    OMNI_CHECK(!running_.empty());
    const bool self = running_.back().get() == seq;
    PreemptLast(step);
    if (self) return false;
  }
  return true;
}

void Scheduler::PreemptLast(StepState* step) {
  std::unique_ptr<Sequence> victim = std::move(running_.back());
  running_.pop_back();
  auto& chunks = step->out.chunks;
  auto it = std::find_if(chunks.begin(), chunks.end(),
                         [&](const ScheduledChunk& c) { return c.seq == victim.get(); });
  if (it != chunks.end()) {
    step->budget += it->num_tokens;
    chunks.erase(it);
  }
  cache_->Free(&victim->block_table);
  victim->num_computed_tokens = 0;
  victim->num_committed_blocks = 0;
  victim->num_preemptions++;
  victim->state = SequenceState::kWaiting;
  ++num_preemptions_;
  step->out.preempted.push_back(victim.get());
  waiting_.push_front(std::move(victim));
}

void Scheduler::AdmitWaiting(StepState* step) {
  while (!waiting_.empty() && step->budget > 0 &&
         static_cast<int>(running_.size()) < config_.max_num_seqs) {
    Sequence* seq = waiting_.front().get();
    ExtendBlockHashes(seq->tokens, seq->media, seq->cache_salt, &seq->block_hashes);
    const int32_t total = seq->num_tokens();
    // At least the last token is computed, so the match stops a block short
    // of covering the whole sequence.
    const int32_t hit = cache_->MatchPrefix(seq->block_hashes, (total - 1) / kBlockSize);
    const int32_t hit_tokens = hit * kBlockSize;
    const int32_t n = std::min(total - hit_tokens, step->budget);
    const int32_t need = BlocksFor(hit_tokens + n) - hit;
    if (!cache_->CanTake(seq->block_hashes, hit, need)) break;  // FCFS: no overtaking
    cache_->TakeCached(seq->block_hashes, hit, &seq->block_table);
    OMNI_CHECK(cache_->Allocate(need, &seq->block_table));
    if (seq->num_preemptions == 0) {
      cache_->RecordQuery(total, hit_tokens);
      seq->num_cached_tokens = hit_tokens;
    }
    seq->num_computed_tokens = hit_tokens;
    seq->num_committed_blocks = hit;
    seq->state = SequenceState::kRunning;
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
    step->out.chunks.push_back({seq, n});
    step->budget -= n;
  }
}

void Scheduler::OnChunkComputed(const ScheduledChunk& chunk) {
  Sequence* seq = chunk.seq;
  seq->num_computed_tokens += chunk.num_tokens;
  OMNI_CHECK_LE(seq->num_computed_tokens, seq->num_tokens());
  const int32_t full = seq->num_computed_tokens / kBlockSize;
  if (full <= seq->num_committed_blocks) return;
  ExtendBlockHashes(seq->tokens, seq->media, seq->cache_salt, &seq->block_hashes);
  cache_->Commit(seq->block_table, seq->block_hashes, seq->num_committed_blocks, full, seq->tokens, seq->media);
  seq->num_committed_blocks = full;
}

Sequence* Scheduler::Finish(std::string_view request_id, FinishReason reason) {
  auto match = [&](const std::unique_ptr<Sequence>& s) { return s->request_id == request_id; };
  if (auto it = std::find_if(running_.begin(), running_.end(), match); it != running_.end()) {
    Sequence* seq = it->get();
    Finish(seq, reason);
    return seq;
  }
  if (auto it = std::find_if(waiting_.begin(), waiting_.end(), match); it != waiting_.end()) {
    Sequence* seq = it->get();
    Finish(seq, reason);
    return seq;
  }
  return nullptr;
}

void Scheduler::Finish(Sequence* seq, FinishReason reason) {
  OMNI_CHECK(seq->state != SequenceState::kFinished);
  auto is_seq = [&](const std::unique_ptr<Sequence>& s) { return s.get() == seq; };
  std::unique_ptr<Sequence> owned;
  if (auto it = std::find_if(running_.begin(), running_.end(), is_seq); it != running_.end()) {
    owned = std::move(*it);
    running_.erase(it);
  } else if (auto wit = std::find_if(waiting_.begin(), waiting_.end(), is_seq); wit != waiting_.end()) {
    owned = std::move(*wit);
    waiting_.erase(wit);
  }
  OMNI_CHECK(owned != nullptr) << "sequence " << seq->request_id << " is not scheduled";
  cache_->Free(&owned->block_table);
  owned->state = SequenceState::kFinished;
  owned->finish_reason = reason;
  finished_.push_back(std::move(owned));
}

std::vector<std::unique_ptr<Sequence>> Scheduler::TakeFinished() {
  return std::exchange(finished_, {});
}

}  // namespace omni
