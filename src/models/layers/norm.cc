#include "models/layers/norm.h"

#include <string>

#include "models/layers/weights.h"
#include "ops/elementwise.h"
#include "ops/norm.h"

namespace omni::models::layers {

Tensor ResidualAdd(const Tensor& h, const Tensor& delta, double multiplier) {
  return ops::Add(h, multiplier == 1.0 ? delta : ops::Scale(delta, static_cast<float>(multiplier)));
}

StatusOr<RmsNorm> RmsNorm::Load(const Checkpoint& ckpt, std::string_view prefix, int64_t dim, float eps,
                                float weight_offset) {
  RmsNorm norm;
  OMNI_ASSIGN_OR_RETURN(norm.weight, LoadVector(ckpt, WeightName(prefix, "weight"), dim));
  norm.eps = eps;
  norm.weight_offset = weight_offset;
  return norm;
}

Tensor RmsNorm::Forward(const Tensor& x) const { return ops::RmsNorm(x, weight, eps, weight_offset); }

Tensor RmsNorm::AddResidualAndNorm(Tensor* h, const Tensor& delta, double multiplier) const {
  *h = ResidualAdd(*h, delta, multiplier);
  return Forward(*h);
}

StatusOr<LayerNorm> LayerNorm::Load(const Checkpoint& ckpt, std::string_view prefix, int64_t dim, float eps,
                                    const Options& options) {
  LayerNorm norm;
  norm.eps = eps;
  if (!options.affine) return norm;
  OMNI_ASSIGN_OR_RETURN(norm.weight, LoadVector(ckpt, WeightName(prefix, "weight"), dim));
  if (options.bias) {
    OMNI_ASSIGN_OR_RETURN(norm.bias, LoadVector(ckpt, WeightName(prefix, "bias"), dim));
  }
  return norm;
}

Tensor LayerNorm::Forward(const Tensor& x) const { return ops::LayerNorm(x, weight, bias, eps); }

Tensor LayerNorm::AddResidualAndNorm(Tensor* h, const Tensor& delta, double multiplier) const {
  *h = ResidualAdd(*h, delta, multiplier);
  return Forward(*h);
}

}  // namespace omni::models::layers
