// The engine's ModelRunner over a HyperClovaxModel and a KvCache it owns:
// turns a StepBatch (block tables, chunks, injected media rows) into one
// ForwardBatch. Continuous media rows ([n, hidden]) are injected as they are;
// discrete media ids ([n] I32) go through the model's own embedding table
// (EmbedTokens) first.
//
// Thread-safety: engine thread only (ModelRunner's contract).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/kv_cache.h"
#include "engine/model_runner.h"
#include "models/hyperclovax/hyperclovax.h"
#include "models/kv_cache_view.h"

namespace omni::llm {

// A loaded model as LlmService needs it: a few facts and the engine's
// runner over a KV pool. The service takes a loader for one (an injected
// factory), so its logic is tested on engine/fake_model_runner.h.
class LoadedModel {
 public:
  virtual ~LoadedModel() = default;
  virtual int vocab_size() const = 0;
  virtual int64_t hidden_size() const = 0;  // the width continuous media rows must have
  virtual int64_t max_position_embeddings() const = 0;
  virtual std::vector<int64_t> eos_token_ids() const = 0;
  // The KV layout the model needs, for sizing the pool.
  virtual KvCacheSpec kv_spec(DType kv_dtype) const = 0;
  // The runner over a pool of `num_blocks`; it may refer to this object,
  // which outlives it.
  virtual std::unique_ptr<ModelRunner> MakeRunner(const KvCacheSpec& spec, int num_blocks) = 0;
};

using ModelLoader = std::function<StatusOr<std::unique_ptr<LoadedModel>>(const std::string& model_dir)>;

// HyperClovaxForCausalLM / LLaMA weights from a Hugging Face folder: the
// service's default loader.
StatusOr<std::unique_ptr<LoadedModel>> LoadHyperClovax(const std::string& model_dir);

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
