#include "models/qwen25_vit/qwen25_vit.h"

#include <algorithm>
#include <cstring>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "models/layers/attention_dense.h"
#include "models/layers/mlp.h"
#include "models/layers/norm.h"
#include "models/layers/patch_embed.h"
#include "models/layers/weights.h"
#include "ops/attention.h"
#include "ops/rope.h"

namespace omni::models {

struct Qwen25Vit::Weights {
  struct Block {
    layers::RmsNorm norm1, norm2;
    layers::DenseAttention attn;
    layers::GatedMlp mlp;
    bool full_attention = false;
  };
  layers::PatchEmbedding patch_embed;
  std::vector<Block> blocks;
  layers::RmsNorm merger_norm;
  layers::Mlp merger;  // mlp.0, exact GELU, mlp.2
  ops::Linear projector;
  ops::RopeParams rope;  // inv_freq [head_dim / 2]: the row's 20 frequencies, then the column's
};

Qwen25Vit::Qwen25Vit(Qwen25VitConfig config, std::unique_ptr<Weights> weights, int64_t output_width)
    : config_(std::move(config)), w_(std::move(weights)), output_width_(output_width) {}
Qwen25Vit::~Qwen25Vit() = default;

StatusOr<Qwen25VitConfig> ParseQwen25VitConfig(std::string_view json, std::string_view source) {
  nlohmann::json root = nlohmann::json::parse(json, nullptr, false);
  if (root.is_discarded() || !root.is_object()) return InvalidArgument(fmt::format("{}: not a JSON object", source));
  const nlohmann::json& j = root.contains("vision_config") ? root["vision_config"] : root;
  if (!j.is_object()) return InvalidArgument(fmt::format("{}: vision_config must be an object", source));
  Qwen25VitConfig c;
  auto get = [&](const char* key, int64_t* out) -> Status {
    if (!j.contains(key)) return Status::Ok();
    if (!j[key].is_number_integer() || j[key].get<int64_t>() <= 0) {
      return InvalidArgument(fmt::format("{}: {} must be a positive integer", source, key));
    }
    *out = j[key].get<int64_t>();
    return Status::Ok();
  };
  OMNI_RETURN_IF_ERROR(get("depth", &c.depth));
  OMNI_RETURN_IF_ERROR(get("hidden_size", &c.hidden_size));
  OMNI_RETURN_IF_ERROR(get("intermediate_size", &c.intermediate_size));
  OMNI_RETURN_IF_ERROR(get("num_heads", &c.num_heads));
  OMNI_RETURN_IF_ERROR(get("out_hidden_size", &c.out_hidden_size));
  OMNI_RETURN_IF_ERROR(get("in_chans", &c.in_channels));
  OMNI_RETURN_IF_ERROR(get("in_channels", &c.in_channels));
  OMNI_RETURN_IF_ERROR(get("patch_size", &c.patch_size));
  OMNI_RETURN_IF_ERROR(get("temporal_patch_size", &c.temporal_patch_size));
  OMNI_RETURN_IF_ERROR(get("spatial_merge_size", &c.spatial_merge_size));
  OMNI_RETURN_IF_ERROR(get("window_size", &c.window_size));
  if (j.contains("fullatt_block_indexes")) {
    if (!j["fullatt_block_indexes"].is_array()) {
      return InvalidArgument(fmt::format("{}: fullatt_block_indexes must be a list of block numbers", source));
    }
    c.fullatt_block_indexes.clear();
    for (const auto& v : j["fullatt_block_indexes"]) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= c.depth) {
        return InvalidArgument(fmt::format("{}: fullatt_block_indexes holds a number outside [0, depth)", source));
      }
      c.fullatt_block_indexes.push_back(v.get<int64_t>());
    }
  }
  if (j.contains("hidden_act") && j["hidden_act"] != "silu") {
    return InvalidArgument(fmt::format("{}: hidden_act {} is not supported (silu only)", source, j["hidden_act"].dump()));
  }
  if (c.hidden_size % c.num_heads != 0 || (c.hidden_size / c.num_heads) % 4 != 0) {
    return InvalidArgument(fmt::format("{}: hidden_size / num_heads must be a multiple of 4 (2-D rotary)", source));
  }
  if (c.window_size % (c.patch_size * c.spatial_merge_size) != 0) {
    return InvalidArgument(fmt::format("{}: window_size must be a multiple of patch_size * spatial_merge_size", source));
  }
  return c;
}

StatusOr<std::unique_ptr<Qwen25Vit>> Qwen25Vit::Load(const Checkpoint& ckpt, const Qwen25VitConfig& c,
                                                     const Names& names) {
  auto w = std::make_unique<Weights>();
  const int64_t hidden = c.hidden_size, head_dim = c.hidden_size / c.num_heads;
  const float eps = static_cast<float>(c.rms_norm_eps);
  const std::string& v = names.vision;
  OMNI_ASSIGN_OR_RETURN(w->patch_embed,
                        layers::PatchEmbedding::Load(ckpt, layers::WeightName(v, "patch_embed"),
                                                     {.in_channels = c.in_channels, .patch_size = c.patch_size,
                                                      .temporal_patch = c.temporal_patch_size, .hidden = hidden,
                                                      .bias = false, .name = "proj"}));
  for (int64_t i = 0; i < c.depth; ++i) {
    const std::string p = layers::WeightName(v, "blocks." + std::to_string(i));
    Weights::Block b;
    OMNI_ASSIGN_OR_RETURN(b.norm1, layers::RmsNorm::Load(ckpt, layers::WeightName(p, "norm1"), hidden, eps));
    OMNI_ASSIGN_OR_RETURN(b.norm2, layers::RmsNorm::Load(ckpt, layers::WeightName(p, "norm2"), hidden, eps));
    OMNI_ASSIGN_OR_RETURN(b.attn, layers::DenseAttention::Load(ckpt, layers::WeightName(p, "attn"),
                                                               {.hidden = hidden, .num_heads = c.num_heads,
                                                                .head_dim = head_dim, .bias = true,
                                                                .qkv_names = {"qkv"}, .o_name = "proj"}));
    OMNI_ASSIGN_OR_RETURN(b.mlp, layers::GatedMlp::Load(ckpt, layers::WeightName(p, "mlp"),
                                                        {.hidden = hidden, .intermediate = c.intermediate_size,
                                                         .bias = true}));
    b.full_attention = std::find(c.fullatt_block_indexes.begin(), c.fullatt_block_indexes.end(), i) !=
                       c.fullatt_block_indexes.end();
    w->blocks.push_back(std::move(b));
  }
  const int64_t merged = hidden * c.spatial_merge_size * c.spatial_merge_size;
  OMNI_ASSIGN_OR_RETURN(w->merger_norm, layers::RmsNorm::Load(ckpt, layers::WeightName(v, "merger.ln_q"), hidden, eps));
  OMNI_ASSIGN_OR_RETURN(w->merger, layers::Mlp::Load(ckpt, layers::WeightName(v, "merger"),
                                                     {.hidden = merged, .intermediate = merged,
                                                      .out = c.out_hidden_size, .bias = true,
                                                      .activation = layers::Activation::kGelu,
                                                      .fc1_name = "mlp.0", .fc2_name = "mlp.2"}));
  // The projector's output width is the LLM's, read from the weight itself.
  const std::string projector = layers::WeightName(names.projector, "weight");
  const SafetensorsTensorInfo* info = ckpt.Info(projector);
  if (info == nullptr) return NotFound(fmt::format("{}: no tensor {}", ckpt.dir(), projector));
  if (info->shape.size() != 2) return InvalidArgument(fmt::format("{} must be 2-D", projector));
  const int64_t output_width = info->shape[0];
  OMNI_ASSIGN_OR_RETURN(w->projector, layers::LoadLinear(ckpt, names.projector, output_width,
                                                         c.out_hidden_size, /*bias=*/true));
  // 2-D rotary: VisionRotaryEmbedding(head_dim / 2) has head_dim / 4
  // frequencies; rows use them for the first quarter-pairs, columns for the next.
  Tensor half = ops::RopeInvFreq(head_dim / 2, c.rope_theta);  // [head_dim / 4]
  Tensor inv = Tensor::Empty({head_dim / 2}, DType::kF32);
  std::memcpy(inv.data<float>(), half.data<float>(), half.nbytes());
  std::memcpy(inv.data<float>() + head_dim / 4, half.data<float>(), half.nbytes());
  w->rope = {.inv_freq = inv, .style = ops::RopeStyle::kNeox};
  return std::unique_ptr<Qwen25Vit>(new Qwen25Vit(c, std::move(w), output_width));
}

StatusOr<Tensor> Qwen25Vit::Forward(const Tensor& pixel_values, std::span<const PatchGrid> grids,
                                    const ActivationCallback* on_activation) const {
  const Qwen25VitConfig& c = config_;
  const int64_t m = c.spatial_merge_size, unit = m * m;
  int64_t total = 0;
  for (const PatchGrid& g : grids) {
    if (g.t <= 0 || g.h <= 0 || g.w <= 0 || g.h % m != 0 || g.w % m != 0) {
      return InvalidArgument(fmt::format("patch grid {}x{}x{} is not a positive multiple of the merge size {}", g.t,
                                         g.h, g.w, m));
    }
    total += g.t * g.h * g.w;
  }
  if (pixel_values.rank() != 2 || pixel_values.dim(0) != total || pixel_values.dim(1) != w_->patch_embed.patch_dim) {
    return InvalidArgument(fmt::format("pixel_values must be [{}, {}] for these grids, got {}", total,
                                       w_->patch_embed.patch_dim, pixel_values.DebugString()));
  }
  auto emit = [&](const std::string& name, const Tensor& t) {
    if (on_activation != nullptr) (*on_activation)(name, t);
  };
  const VisionWindowPlan plan = PlanVisionWindows(grids, m, c.window_size / c.patch_size / m);
  const int64_t units = total / unit;
  // Rows (and their (row, column) positions) regrouped by window, a merge
  // unit of `unit` consecutive rows at a time.
  Tensor embedded = w_->patch_embed.Forward(pixel_values);  // [N, hidden] f32
  emit("patch_embed", embedded);
  const int64_t hidden = c.hidden_size;
  Tensor h = Tensor::Empty({total, hidden}, DType::kF32);
  Tensor positions = Tensor::Empty({2, total}, DType::kI32);
  std::vector<int32_t> row_of(total), col_of(total);
  {
    int64_t r = 0;
    for (const PatchGrid& g : grids)
      for (int64_t t = 0; t < g.t; ++t)
        for (int64_t bh = 0; bh < g.h / m; ++bh)
          for (int64_t bw = 0; bw < g.w / m; ++bw)
            for (int64_t sh = 0; sh < m; ++sh)
              for (int64_t sw = 0; sw < m; ++sw, ++r) {
                row_of[r] = static_cast<int32_t>(bh * m + sh);
                col_of[r] = static_cast<int32_t>(bw * m + sw);
              }
  }
  const size_t unit_bytes = static_cast<size_t>(unit * hidden) * sizeof(float);
  for (int64_t i = 0; i < units; ++i) {
    const int64_t src = plan.window_order[i];
    std::memcpy(h.data<float>() + i * unit * hidden, embedded.data<float>() + src * unit * hidden, unit_bytes);
    for (int64_t k = 0; k < unit; ++k) {
      positions.data<int32_t>()[i * unit + k] = row_of[src * unit + k];
      positions.data<int32_t>()[total + i * unit + k] = col_of[src * unit + k];
    }
  }
  const std::vector<int32_t> window_segments = ops::SegmentIdsFromCuSeqlens(plan.cu_window_seqlens);
  const std::vector<int32_t> frame_segments = ops::SegmentIdsFromCuSeqlens(plan.cu_seqlens);
  const int64_t quarter = hidden / c.num_heads / 4;
  const std::vector<int64_t> sections = {quarter, quarter};
  layers::QkHook rope = [&](Tensor* q, Tensor* k) {
    *q = ops::ApplyMultiAxisRope(*q, positions, sections, w_->rope);
    *k = ops::ApplyMultiAxisRope(*k, positions, sections, w_->rope);
  };
  for (size_t i = 0; i < w_->blocks.size(); ++i) {
    const Weights::Block& b = w_->blocks[i];
    layers::DenseAttentionCall call;
    call.mask.q_segments = b.full_attention ? frame_segments : window_segments;
    call.qk_hook = rope;
    Tensor attn = b.attn.Forward(b.norm1.Forward(h), call);
    Tensor mlp = b.mlp.Forward(b.norm2.AddResidualAndNorm(&h, attn));
    h = layers::ResidualAdd(h, mlp);
    emit("blocks." + std::to_string(i), h);
  }
  Tensor merged = w_->merger.Forward(w_->merger_norm.Forward(h).Reshape({units, hidden * unit}));  // [units, out]
  // Back to each image's merge-block order.
  const int64_t out = c.out_hidden_size;
  Tensor restored = Tensor::Empty({units, out}, DType::kF32);
  for (int64_t i = 0; i < units; ++i) {
    std::memcpy(restored.data<float>() + plan.window_order[i] * out, merged.data<float>() + i * out,
                out * sizeof(float));
  }
  emit("merger", restored);
  Tensor projected = w_->projector.Forward(restored, DType::kF32);
  emit("projector", projected);
  return projected;
}

}  // namespace omni::models
