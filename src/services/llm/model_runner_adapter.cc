#include "services/llm/model_runner_adapter.h"

#include <utility>

namespace omni::llm {

KvCacheSpec KvSpecForModel(const models::HyperClovaxModel& model, DType kv_dtype) {
  return KvCacheSpec{.num_layers = static_cast<int>(model.num_layers()),
                     .num_kv_heads = static_cast<int>(model.num_kv_heads()),
                     .head_dim = static_cast<int>(model.head_dim()),
                     .dtype = kv_dtype};
}

HyperClovaxRunner::HyperClovaxRunner(const models::HyperClovaxModel& model, const KvCacheSpec& spec,
                                     int num_blocks)
    : model_(model), cache_(spec, num_blocks) {
  for (int l = 0; l < spec.num_layers; ++l) {
    view_.k.push_back(cache_.key(l));
    view_.v.push_back(cache_.value(l));
  }
}

StatusOr<StepOutput> HyperClovaxRunner::Step(const StepBatch& batch) {
  ids_.clear();
  ids_.reserve(batch.num_tokens);
  models::ForwardBatch fb;
  int64_t offset = 0;
  for (const StepSequence& s : batch.sequences) {
    ids_.insert(ids_.end(), s.token_ids.begin(), s.token_ids.end());
    fb.sequences.push_back(models::BatchSequence{.num_tokens = static_cast<int64_t>(s.token_ids.size()),
                                                 .start_position = s.start_position,
                                                 .block_table = s.block_table});
    for (const InjectedRows& inj : s.injected) {
      const Tensor& rows = inj.media->rows;
      if (!rows.defined() || inj.num_rows <= 0) continue;
      Tensor part = rows.Slice(0, inj.media_row, inj.media_row + inj.num_rows);
      if (rows.rank() == 1) {
        // Discrete ids: embedded through the model's own table.
        Tensor ids = part.Contiguous();
        std::span<const int32_t> span(ids.data<int32_t>(), static_cast<size_t>(ids.numel()));
        OMNI_ASSIGN_OR_RETURN(part, model_.EmbedTokens(span));
      }
      fb.injected.push_back(models::InjectedRows{.token_index = offset + inj.chunk_offset, .rows = std::move(part)});
    }
    offset += static_cast<int64_t>(s.token_ids.size());
    if (s.needs_logits) fb.logit_rows.push_back(offset - 1);
  }
  fb.token_ids = ids_;
  StepOutput out;
  // Out of memory (a tensor, or oneDNN's scratchpad) fails this step's
  // sequences; the engine and the process go on.
  try {
    OMNI_RETURN_IF_ERROR(model_.Forward(fb, view_, &out.logits));
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("out of memory running the model step");
  } catch (const std::exception& e) {
    return Internal(std::string("the model step failed: ") + e.what());
  }
  return out;
}

namespace {

class HyperClovaxLoaded final : public LoadedModel {
 public:
  explicit HyperClovaxLoaded(std::unique_ptr<models::HyperClovaxModel> model) : model_(std::move(model)) {}
  int vocab_size() const override { return static_cast<int>(model_->vocab_size()); }
  int64_t hidden_size() const override { return model_->hidden_size(); }
  int64_t max_position_embeddings() const override { return model_->config().max_position_embeddings; }
  std::vector<int64_t> eos_token_ids() const override {
    return {model_->config().eos_token_ids.begin(), model_->config().eos_token_ids.end()};
  }
  KvCacheSpec kv_spec(DType kv_dtype) const override { return KvSpecForModel(*model_, kv_dtype); }
  std::unique_ptr<ModelRunner> MakeRunner(const KvCacheSpec& spec, int num_blocks) override {
    return std::make_unique<HyperClovaxRunner>(*model_, spec, num_blocks);
  }

 private:
  std::unique_ptr<models::HyperClovaxModel> model_;
};

}  // namespace

StatusOr<std::unique_ptr<LoadedModel>> LoadHyperClovax(const std::string& model_dir) {
  OMNI_ASSIGN_OR_RETURN(std::unique_ptr<models::HyperClovaxModel> model, models::HyperClovaxModel::Load(model_dir));
  return std::unique_ptr<LoadedModel>(std::make_unique<HyperClovaxLoaded>(std::move(model)));
}

}  // namespace omni::llm
