#include "engine/engine_core.h"

#include <algorithm>
#include <string>

#include "ops/threading.h"

namespace omni {
namespace {

uint64_t MixSeed(uint64_t seed, uint64_t n) {
  uint64_t x = seed ^ (n * 0x9E3779B97F4A7C15ull);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

Status RequestError(const char* field, const std::string& message) {
  return InvalidArgument(message).WithParam(field);
}

Status ValidateMedia(const EngineRequest& r) {
  int64_t prev_end = 0;
  for (const MediaSpan& m : r.media) {
    if (m.length <= 0 || m.start < prev_end ||
        int64_t{m.start} + m.length > static_cast<int64_t>(r.prompt_token_ids.size())) {
      return RequestError("media", "media spans must be non-empty, sorted, non-overlapping and inside the prompt");
    }
    prev_end = int64_t{m.start} + m.length;
  }
  return Status::Ok();
}

}  // namespace

Status EngineConfig::Validate() const {
  if (num_kv_blocks < 1) return InvalidArgument("engine: num_kv_blocks must be >= 1");
  if (max_model_len < 2) return InvalidArgument("engine: max_model_len must be >= 2");
  if (static_cast<int64_t>(max_model_len) > int64_t{num_kv_blocks} * kBlockSize) {
    return InvalidArgument("engine: max_model_len " + std::to_string(max_model_len) +
                           " does not fit in " + std::to_string(num_kv_blocks) +
                           " KV blocks; a single sequence must always fit");
  }
  if (max_num_batched_tokens < 1) return InvalidArgument("engine: max_num_batched_tokens must be >= 1");
  if (max_num_seqs < 1) return InvalidArgument("engine: max_num_seqs must be >= 1");
  return Status::Ok();
}

StatusOr<std::unique_ptr<EngineCore>> EngineCore::Create(const EngineConfig& config,
                                                         std::unique_ptr<ModelRunner> runner,
                                                         KvEventSink* sink) {
  OMNI_RETURN_IF_ERROR(config.Validate());
  if (runner == nullptr || runner->vocab_size() < 1) {
    return InvalidArgument("engine: a model runner with a vocabulary is required");
  }
  return std::unique_ptr<EngineCore>(new EngineCore(config, std::move(runner), sink));
}

EngineCore::EngineCore(const EngineConfig& config, std::unique_ptr<ModelRunner> runner,
                       KvEventSink* sink)
    : config_(config),
      runner_(std::move(runner)),
      vocab_size_(runner_->vocab_size()),
      cache_(config.num_kv_blocks, config.enable_prefix_caching, sink),
      scheduler_(SchedulerConfig{config.max_num_batched_tokens, config.max_num_seqs}, &cache_) {}

Status EngineCore::ValidateRequest(const EngineRequest& r) const {
  if (r.request_id.empty()) return RequestError("request_id", "request_id must not be empty");
  OMNI_RETURN_IF_ERROR(r.sampling.Validate());
  const auto& prompt = r.prompt_token_ids;
  if (prompt.empty()) return RequestError("prompt", "prompt must not be empty");
  if (static_cast<int64_t>(prompt.size()) >= config_.max_model_len) {
    return RequestError("prompt", "prompt is " + std::to_string(prompt.size()) +
                                      " tokens; the context length is " +
                                      std::to_string(config_.max_model_len) +
                                      " and at least one token must be generated");
  }
  for (int32_t t : prompt) {
    if (t < 0 || t >= vocab_size_) {
      return RequestError("prompt", "token id " + std::to_string(t) + " is outside the vocabulary");
    }
  }
  for (int32_t id : r.sampling.stop_token_ids) {
    if (id >= vocab_size_) {
      return RequestError("stop_token_ids", "stop token id " + std::to_string(id) + " is outside the vocabulary");
    }
  }
  for (const auto& [id, bias] : r.sampling.logit_bias) {
    if (id >= vocab_size_) {
      return RequestError("logit_bias", "token id " + std::to_string(id) + " is outside the vocabulary");
    }
  }
  return ValidateMedia(r);
}

Status EngineCore::AddRequest(EngineRequest&& r, OutputCallback on_output) {
  OMNI_RETURN_IF_ERROR(ValidateRequest(r));
  return AddValidatedRequest(std::move(r), std::move(on_output));
}

Status EngineCore::AddValidatedRequest(EngineRequest&& r, OutputCallback on_output) {
  if (active_ids_.contains(r.request_id)) {
    return Status(StatusCode::kAlreadyExists, "request id " + r.request_id + " is in use")
        .WithParam("request_id");
  }
  auto seq = std::make_unique<Sequence>();
  seq->seq_id = next_seq_id_++;
  seq->request_id = std::move(r.request_id);
  seq->num_prompt_tokens = static_cast<int32_t>(r.prompt_token_ids.size());
  seq->tokens = std::move(r.prompt_token_ids);
  seq->media = std::move(r.media);
  seq->cache_salt = std::move(r.cache_salt);
  seq->params = std::move(r.sampling);
  seq->constraint = std::move(r.constraint);
  seq->seed = seq->params.seed.value_or(MixSeed(config_.default_seed, seq->seq_id));
  seq->max_total_tokens = static_cast<int32_t>(
      std::min<int64_t>(int64_t{seq->num_prompt_tokens} + seq->params.max_tokens, config_.max_model_len));
  active_ids_.emplace(seq->request_id, seq->seq_id);
  callbacks_.emplace(seq->seq_id, std::move(on_output));
  scheduler_.Add(std::move(seq));
  return Status::Ok();
}

bool EngineCore::FinishRequest(std::string_view request_id, FinishReason reason) {
  Sequence* seq = scheduler_.Finish(request_id, reason);
  if (seq == nullptr) return false;
  Emit(*seq, std::nullopt);
  ReapFinished();
  return true;
}

void EngineCore::AbortAll() {
  std::vector<std::string> ids;
  for (const auto& [id, seq_id] : active_ids_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (const std::string& id : ids) FinishRequest(id, FinishReason::kAbort);
}

StepBatch EngineCore::BuildBatch(const SchedulerOutput& sched) const {
  StepBatch batch;
  batch.num_tokens = sched.num_tokens;
  batch.sequences.reserve(sched.chunks.size());
  for (const ScheduledChunk& c : sched.chunks) {
    const Sequence& seq = *c.seq;
    const int32_t start = seq.num_computed_tokens;
    const int32_t end = start + c.num_tokens;
    StepSequence s;
    s.seq_id = seq.seq_id;
    s.token_ids = std::span<const int32_t>(seq.tokens).subspan(start, c.num_tokens);
    s.start_position = start;
    s.block_table = seq.block_table;
    s.needs_logits = end == seq.num_tokens();
    for (const MediaSpan& m : seq.media) {
      if (m.key_only) continue;  // ordinary token ids: nothing to inject
      const int32_t lo = std::max(m.start, start);
      const int32_t hi = std::min(m.start + m.length, end);
      if (lo < hi) s.injected.push_back({lo - start, hi - lo, lo - m.start, &m});
    }
    batch.sequences.push_back(std::move(s));
  }
  return batch;
}

Status EngineCore::Step() {
  SchedulerOutput sched = scheduler_.Schedule();
  if (sched.chunks.empty()) return Status::Ok();
  ++num_steps_;
  const StepBatch batch = BuildBatch(sched);
  int64_t rows = 0;
  for (const StepSequence& s : batch.sequences) rows += s.needs_logits ? 1 : 0;
  // A decode step is some 60 short parallel loops: on the spin team they
  // skip OpenMP's barriers; a step with a prompt chunk has oneDNN's OpenMP
  // matmuls, and its loops stay on OpenMP beside them (docs/OPS.md, "Threads").
  ops::EnableSpinTeam(ops::SpinTeamSuits(sched.num_tokens));
  StatusOr<StepOutput> result = runner_->Step(batch);
  Status status = result.status();
  if (status.ok()) {
    const Tensor& logits = result->logits;
    if (logits.dtype() != DType::kF32 || logits.rank() != 2 || logits.dim(0) != rows ||
        logits.dim(1) != vocab_size_ || !logits.is_contiguous()) {
      status = Internal("model runner returned logits " + logits.DebugString() + ", expected [" +
                        std::to_string(rows) + ", " + std::to_string(vocab_size_) + "] F32");
    }
  }
  if (!status.ok()) {
    for (const ScheduledChunk& c : sched.chunks) {
      scheduler_.Finish(c.seq, FinishReason::kError);
      Emit(*c.seq, std::nullopt);
    }
    ReapFinished();
    return std::move(status).Annotate("model step");
  }
  ProcessLogits(sched, result->logits);
  ReapFinished();
  return Status::Ok();
}

void EngineCore::ProcessLogits(const SchedulerOutput& sched, const Tensor& logits) {
  const float* data = logits.data<float>();
  // Rows to sample: one per chunk that finished its sequence's prompt or
  // decoded a token (a mid-prefill chunk has no row).
  std::vector<Sequence*> sampled;
  for (const ScheduledChunk& c : sched.chunks) {
    scheduler_.OnChunkComputed(c);
    if (c.seq->num_computed_tokens == c.seq->num_tokens()) sampled.push_back(c.seq);
  }
  // A draw is a pure function of its row, its sequence's history and seed,
  // so rows are sampled in parallel (a whole vocabulary each; serial, this
  // was a third of a 16-sequence decode step); tokens are appended in order.
  std::vector<SampledToken> tokens(sampled.size());
  const int64_t n = static_cast<int64_t>(sampled.size());
  ops::ParallelFor(n, [&](int64_t i) {
    const Sequence* seq = sampled[i];
    std::span<const float> row_logits(data + i * vocab_size_, vocab_size_);
    std::vector<TokenRange> allowed;
    std::vector<int32_t> banned;
    const bool constrained = seq->constraint != nullptr && seq->constraint->AllowedNext(&allowed);
    if (!constrained && seq->num_output_tokens() < seq->params.min_tokens) {
      banned = seq->params.stop_token_ids;
      if (config_.eos_token_id && !seq->params.ignore_eos) banned.push_back(*config_.eos_token_id);
    }
    tokens[i] = SampleToken(row_logits, seq->params, SamplingHistory{seq->prompt(), seq->output()}, seq->seed,
                            TokenMask{allowed, banned});
  });
  for (int64_t i = 0; i < n; ++i) AppendToken(sampled[i], std::move(tokens[i]));
}

void EngineCore::AppendToken(Sequence* seq, SampledToken&& token) {
  seq->tokens.push_back(token.token_id);
  if (seq->constraint) seq->constraint->Accept(token.token_id);
  ++generation_tokens_total_;
  if (seq->num_output_tokens() == 1) prompt_tokens_total_ += seq->num_prompt_tokens;
  const auto& stops = seq->params.stop_token_ids;
  FinishReason reason = FinishReason::kNone;
  if (std::find(stops.begin(), stops.end(), token.token_id) != stops.end() ||
      (!seq->params.ignore_eos && config_.eos_token_id == token.token_id)) {
    reason = FinishReason::kStop;
  } else if (seq->num_tokens() >= seq->max_total_tokens) {
    reason = FinishReason::kLength;
  }
  if (reason != FinishReason::kNone) scheduler_.Finish(seq, reason);
  Emit(*seq, std::move(token));
}

void EngineCore::Emit(const Sequence& seq, std::optional<SampledToken> token) {
  TokenOutput out;
  out.request_id = seq.request_id;
  out.token = std::move(token);
  out.finish_reason = seq.finish_reason;
  out.num_prompt_tokens = seq.num_prompt_tokens;
  out.num_cached_tokens = seq.num_cached_tokens;
  out.num_output_tokens = seq.num_output_tokens();
  auto it = callbacks_.find(seq.seq_id);
  if (it != callbacks_.end() && it->second) it->second(out);
}

void EngineCore::ReapFinished() {
  for (const std::unique_ptr<Sequence>& seq : scheduler_.TakeFinished()) {
    callbacks_.erase(seq->seq_id);
    active_ids_.erase(seq->request_id);
  }
}

EngineMetrics EngineCore::Metrics() const {
  EngineMetrics m;
  m.num_running = scheduler_.num_running();
  m.num_waiting = scheduler_.num_waiting();
  m.kv_cache_usage = cache_.pool().Usage();
  m.num_blocks = cache_.pool().num_blocks();
  m.prefix_cache_queries = cache_.query_tokens();
  m.prefix_cache_hits = cache_.hit_tokens();
  m.prompt_tokens_total = prompt_tokens_total_;
  m.generation_tokens_total = generation_tokens_total_;
  m.num_preemptions_total = scheduler_.num_preemptions();
  m.num_steps = num_steps_;
  return m;
}

}  // namespace omni
