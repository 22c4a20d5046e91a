// The engine's ModelRunner over a HyperClovaxModel and a KvCache it owns:
// turns a StepBatch (block tables, chunks, injected media rows) into one
// ForwardBatch. Continuous media rows ([n, hidden]) are injected as they are;
// discrete media ids ([n] I32) go through the model's own embedding table
// (EmbedTokens) first.
//
// Thread-safety: engine thread only (ModelRunner's contract).
#pragma once

#include <memory>
#include <vector>

#include "engine/kv_cache.h"
#include "engine/model_runner.h"
#include "models/hyperclovax.h"
#include "models/kv_cache_view.h"

namespace omni::llm {

// The KV layout the model needs, for sizing the pool.
KvCacheSpec KvSpecForModel(const models::HyperClovaxModel& model, DType kv_dtype);

class HyperClovaxRunner final : public ModelRunner {
 public:
  // `model` must outlive the runner.
  HyperClovaxRunner(const models::HyperClovaxModel& model, const KvCacheSpec& spec, int num_blocks);

  int vocab_size() const override { return static_cast<int>(model_.vocab_size()); }
  StatusOr<StepOutput> Step(const StepBatch& batch) override;

 private:
  const models::HyperClovaxModel& model_;
  KvCache cache_;
  models::KvCacheView view_;     // views of cache_'s tensors
  std::vector<int32_t> ids_;     // [batch.num_tokens] scratch, reused across steps
};

}  // namespace omni::llm
