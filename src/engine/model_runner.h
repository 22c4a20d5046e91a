// The interface the engine calls to run the model for one step. The engine
// decides which tokens of which sequences are computed and where their KV
// lives (block ids); the runner embeds, runs attention over the paged KV
// cache it owns (KvCache), writes the new K/V rows into the given blocks and
// returns logits for the sequences that need them.
//
// Thread-safety: called from the engine thread only.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "engine/block_pool.h"
#include "engine/media_span.h"
#include "tensor/tensor.h"

namespace omni {

// Rows of one MediaSpan that replace the token embeddings of part of a chunk.
struct InjectedRows {
  int32_t chunk_offset = 0;  // first index into StepSequence::token_ids
  int32_t num_rows = 0;
  int32_t media_row = 0;      // first row of `media` used
  const MediaSpan* media = nullptr;  // owned by the sequence; valid during Step
};

struct StepSequence {
  uint64_t seq_id = 0;
  // [num_tokens] ids to compute this step, at positions start_position + i.
  std::span<const int32_t> token_ids;
  int32_t start_position = 0;
  // Block ids for positions [0, start_position + num_tokens): position p
  // lives in block block_table[p / kBlockSize], slot p % kBlockSize. Earlier
  // positions hold KV computed in earlier steps or shared by a prefix hit.
  std::span<const BlockId> block_table;
  std::vector<InjectedRows> injected;  // in chunk order
  // The chunk ends at the sequence's last token: return a logits row for it.
  bool needs_logits = false;
};

struct StepBatch {
  std::vector<StepSequence> sequences;  // decodes first, then prefill chunks
  int32_t num_tokens = 0;               // sum of token_ids sizes, <= the step budget
};

struct StepOutput {
  // [num sequences with needs_logits, vocab] F32, rows in batch order.
  Tensor logits;
};

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  virtual int vocab_size() const = 0;
  // Computes one step. An error fails the batch's sequences (finish reason
  // "error"); the engine keeps serving others.
  virtual StatusOr<StepOutput> Step(const StepBatch& batch) = 0;
};

}  // namespace omni
