// A deterministic stand-in for the model, for engine tests. It really uses
// the paged KV cache: each step writes every computed position's input (the
// token id, or a media marker for injected rows) and position into the
// sequence's blocks, and a logits row is a function of the whole context it
// reads back through the block table. So a wrong block table, a wrong prefix
// hit or a block overwritten while in use changes the output.
//
// Greedy next token = ReferenceNext(context); other logits are in [-1, 1).
//
// Thread-safety: engine thread only (tests read the stats after the run).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/kv_cache.h"
#include "engine/model_runner.h"

namespace omni::testing {

class FakeModelRunner final : public ModelRunner {
 public:
  FakeModelRunner(int vocab_size, int num_blocks)
      : vocab_size_(vocab_size), kv_(KvCacheSpec{1, 1, 1, DType::kF32}, num_blocks) {
    float* k = kv_.key(0).data<float>();
    float* v = kv_.value(0).data<float>();
    for (int64_t i = 0; i < kv_.key(0).numel(); ++i) k[i] = v[i] = -1.0f;
  }

  int vocab_size() const override { return vocab_size_; }

  // The input value stored for a position: the token, or for an injected
  // row a marker derived from the media's hash and row.
  static int64_t InputValue(int32_t token, const MediaSpan* media, int32_t row) {
    if (media == nullptr) return token;
    return 1'000'000 + int64_t{media->sha256[0]} * 1000 + row;
  }
  static uint64_t ContextHash(std::span<const int64_t> context) {
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : context) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    return h;
  }
  static int32_t ReferenceNext(std::span<const int64_t> context, int vocab_size) {
    return static_cast<int32_t>(ContextHash(context) % static_cast<uint64_t>(vocab_size));
  }
  // Greedy continuation computed without any cache.
  static std::vector<int32_t> ReferenceGreedy(std::span<const int32_t> prompt,
                                              std::span<const MediaSpan> media, int max_tokens,
                                              int vocab_size) {
    std::vector<int64_t> ctx;
    for (int32_t p = 0; p < static_cast<int32_t>(prompt.size()); ++p) {
      const MediaSpan* m = nullptr;
      for (const MediaSpan& s : media) {
        if (p >= s.start && p < s.start + s.length) m = &s;
      }
      ctx.push_back(InputValue(prompt[p], m, m ? p - m->start : 0));
    }
    std::vector<int32_t> out;
    for (int i = 0; i < max_tokens; ++i) {
      out.push_back(ReferenceNext(ctx, vocab_size));
      ctx.push_back(out.back());
    }
    return out;
  }

  StatusOr<StepOutput> Step(const StepBatch& batch) override {
    if (fail_next_step) {
      fail_next_step = false;
      return Internal("fake model failure");
    }
    step_token_counts.push_back(batch.num_tokens);
    std::vector<int32_t> sizes;
    int rows = 0;
    for (const StepSequence& s : batch.sequences) {
      sizes.push_back(static_cast<int32_t>(s.token_ids.size()));
      rows += s.needs_logits ? 1 : 0;
    }
    step_chunk_sizes.push_back(std::move(sizes));
    StepOutput out;
    out.logits = Tensor::Zeros({rows, vocab_size_}, DType::kF32);  // [rows, vocab]
    int row = 0;
    for (const StepSequence& s : batch.sequences) {
      if (Status st = WriteKv(s); !st.ok()) return st;
      if (!s.needs_logits) continue;
      std::vector<int64_t> ctx;
      if (Status st = ReadContext(s, &ctx); !st.ok()) return st;
      FillRow(ctx, out.logits.data<float>() + int64_t{row++} * vocab_size_);
    }
    return out;
  }

  std::vector<int32_t> step_token_counts;                // per step
  std::vector<std::vector<int32_t>> step_chunk_sizes;    // per step, per sequence
  bool fail_next_step = false;

 private:
  float* Slot(const float* base, BlockId block, int32_t pos) const {
    return const_cast<float*>(base) + int64_t{block} * kBlockSize + pos % kBlockSize;
  }

  Status WriteKv(const StepSequence& s) {
    const int32_t end = s.start_position + static_cast<int32_t>(s.token_ids.size());
    if (static_cast<int64_t>(s.block_table.size()) * kBlockSize < end) {
      return Internal("block table too short");
    }
    float* k = kv_.key(0).data<float>();
    float* v = kv_.value(0).data<float>();
    for (int32_t i = 0; i < static_cast<int32_t>(s.token_ids.size()); ++i) {
      const int32_t pos = s.start_position + i;
      const MediaSpan* media = nullptr;
      int32_t row = 0;
      for (const InjectedRows& inj : s.injected) {
        if (i >= inj.chunk_offset && i < inj.chunk_offset + inj.num_rows) {
          media = inj.media;
          row = inj.media_row + (i - inj.chunk_offset);
        }
      }
      const BlockId b = s.block_table[pos / kBlockSize];
      *Slot(k, b, pos) = static_cast<float>(InputValue(s.token_ids[i], media, row));
      *Slot(v, b, pos) = static_cast<float>(pos);
    }
    return Status::Ok();
  }

  Status ReadContext(const StepSequence& s, std::vector<int64_t>* ctx) {
    const int32_t end = s.start_position + static_cast<int32_t>(s.token_ids.size());
    const float* k = kv_.key(0).data<float>();
    const float* v = kv_.value(0).data<float>();
    for (int32_t pos = 0; pos < end; ++pos) {
      const BlockId b = s.block_table[pos / kBlockSize];
      if (*Slot(v, b, pos) != static_cast<float>(pos)) {
        return Internal("stale KV at position " + std::to_string(pos));
      }
      ctx->push_back(static_cast<int64_t>(*Slot(k, b, pos)));
    }
    return Status::Ok();
  }

  void FillRow(std::span<const int64_t> ctx, float* row) const {
    const uint64_t h = ContextHash(ctx);
    for (int v = 0; v < vocab_size_; ++v) {
      const uint64_t x = (h ^ (static_cast<uint64_t>(v) * 0x9E3779B97F4A7C15ull)) * 0xBF58476D1CE4E5B9ull;
      row[v] = static_cast<float>((x >> 40) % 2000) / 1000.0f - 1.0f;
    }
    row[ReferenceNext(ctx, vocab_size_)] = 3.0f;
  }

  int vocab_size_;
  KvCache kv_;  // 1 layer, 1 head, head_dim 1: K holds the input value, V the position
};

}  // namespace omni::testing
