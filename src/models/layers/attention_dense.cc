#include "models/layers/attention_dense.h"

#include <cmath>

#include "models/layers/heads.h"
#include "models/layers/weights.h"
#include "ops/norm.h"

namespace omni::models::layers {
namespace {

Tensor NormHeads(const Tensor& x, QkNorm kind, const Tensor& weight, const Tensor& bias, float eps) {
  switch (kind) {
    case QkNorm::kNone:
      return x;
    case QkNorm::kRmsNorm:
      return ops::RmsNorm(x, weight, eps);
    case QkNorm::kLayerNorm:
      return ops::LayerNorm(x, weight, bias, eps);
  }
  return x;
}

}  // namespace

StatusOr<DenseAttention> DenseAttention::Load(const Checkpoint& ckpt, std::string_view prefix,
                                              const DenseAttentionConfig& c) {
  const int64_t hkv = c.num_kv_heads > 0 ? c.num_kv_heads : c.num_heads;
  if (c.num_heads <= 0 || c.num_heads % hkv != 0 || c.head_dim <= 0) {
    return InvalidArgument("dense attention: num_heads must be a positive multiple of num_kv_heads");
  }
  if (c.qkv_names.size() != 1 && c.qkv_names.size() != 3) {
    return InvalidArgument("dense attention: qkv_names must name one fused or three projections");
  }
  DenseAttention attn;
  attn.num_heads = c.num_heads;
  attn.num_kv_heads = hkv;
  attn.head_dim = c.head_dim;
  attn.scale = c.scale != 0.f ? c.scale : 1.f / std::sqrt(static_cast<float>(c.head_dim));
  attn.qk_norm = c.qk_norm;
  attn.qk_norm_eps = c.qk_norm_eps;
  const int64_t q_out = c.num_heads * c.head_dim, kv_out = hkv * c.head_dim;
  std::vector<std::string> names;
  for (const std::string& n : c.qkv_names) names.push_back(WeightName(prefix, n));
  std::vector<int64_t> sizes = names.size() == 1 ? std::vector<int64_t>{q_out + 2 * kv_out}
                                                 : std::vector<int64_t>{q_out, kv_out, kv_out};
  if (names.size() == 3 && c.bias && !c.k_bias) {
    const bool has_bias[] = {true, false, true};
    OMNI_ASSIGN_OR_RETURN(attn.qkv_proj,
                          LoadStackedLinearSomeBiases(ckpt, names, sizes, c.hidden, has_bias));
  } else {
    OMNI_ASSIGN_OR_RETURN(attn.qkv_proj, LoadStackedLinear(ckpt, names, sizes, c.hidden, c.bias));
  }
  OMNI_ASSIGN_OR_RETURN(attn.o_proj, LoadLinear(ckpt, WeightName(prefix, c.o_name), c.hidden, q_out, c.bias));
  if (c.qk_norm != QkNorm::kNone) {
    const std::string q = WeightName(prefix, c.q_norm_name), k = WeightName(prefix, c.k_norm_name);
    OMNI_ASSIGN_OR_RETURN(attn.q_norm_weight, LoadVector(ckpt, q + ".weight", c.head_dim));
    OMNI_ASSIGN_OR_RETURN(attn.k_norm_weight, LoadVector(ckpt, k + ".weight", c.head_dim));
    if (c.qk_norm == QkNorm::kLayerNorm) {
      OMNI_ASSIGN_OR_RETURN(attn.q_norm_bias, LoadVector(ckpt, q + ".bias", c.head_dim));
      OMNI_ASSIGN_OR_RETURN(attn.k_norm_bias, LoadVector(ckpt, k + ".bias", c.head_dim));
    }
  }
  return attn;
}

Tensor DenseAttention::Forward(const Tensor& x, const DenseAttentionCall& call) const {
  const int64_t d = head_dim, hq = num_heads, hkv = num_kv_heads;
  const int64_t total = x.dim(0);
  Tensor qkv = qkv_proj.Forward(x);  // [T, (hq + 2 hkv) * d]; the views below borrow it
  Tensor q = NormHeads(HeadsView(qkv, 0, hq * d, d), qk_norm, q_norm_weight, q_norm_bias, qk_norm_eps);
  Tensor k = NormHeads(HeadsView(qkv, hq * d, hkv * d, d), qk_norm, k_norm_weight, k_norm_bias, qk_norm_eps);
  Tensor v = HeadsView(qkv, (hq + hkv) * d, hkv * d, d);
  if (call.qk_hook) call.qk_hook(&q, &k);
  if (call.v_hook) call.v_hook(v);
  ops::AttentionParams params;
  params.scale = scale;
  params.mask = call.mask;
  Tensor out = ops::Attention(q, k, v, params);  // [T, hq, d] in x's dtype
  return o_proj.Forward(out.Reshape({total, hq * d}), x.dtype());
}

}  // namespace omni::models::layers
