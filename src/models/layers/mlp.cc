#include "models/layers/mlp.h"

#include "models/layers/weights.h"
#include "ops/elementwise.h"

namespace omni::models::layers {

StatusOr<GatedMlp> GatedMlp::Load(const Checkpoint& ckpt, std::string_view prefix, const GatedMlpConfig& c) {
  GatedMlp mlp;
  mlp.intermediate = c.intermediate;
  const std::string gate_up[] = {WeightName(prefix, c.gate_name), WeightName(prefix, c.up_name)};
  const int64_t sizes[] = {c.intermediate, c.intermediate};
  OMNI_ASSIGN_OR_RETURN(mlp.gate_up_proj, LoadStackedLinear(ckpt, gate_up, sizes, c.hidden, c.bias));
  OMNI_ASSIGN_OR_RETURN(mlp.down_proj,
                        LoadLinear(ckpt, WeightName(prefix, c.down_name), c.hidden, c.intermediate, c.bias));
  return mlp;
}

Tensor GatedMlp::Forward(const Tensor& x) const {
  const int64_t f = intermediate;
  Tensor gate_up = gate_up_proj.Forward(x);  // [T, 2f]
  // Written in down_proj's compute dtype, which it would round to anyway.
  Tensor act = ops::SwiGlu(gate_up.Slice(1, 0, f), gate_up.Slice(1, f, 2 * f), down_proj.weight_dtype());
  return down_proj.Forward(act, x.dtype());
}

StatusOr<Mlp> Mlp::Load(const Checkpoint& ckpt, std::string_view prefix, const MlpConfig& c) {
  Mlp mlp;
  mlp.activation = c.activation;
  const int64_t out = c.out > 0 ? c.out : c.hidden;
  OMNI_ASSIGN_OR_RETURN(mlp.fc1, LoadLinear(ckpt, WeightName(prefix, c.fc1_name), c.intermediate, c.hidden, c.bias));
  OMNI_ASSIGN_OR_RETURN(mlp.fc2, LoadLinear(ckpt, WeightName(prefix, c.fc2_name), out, c.intermediate, c.bias));
  return mlp;
}

Tensor Mlp::Forward(const Tensor& x) const {
  // f32 between the two projections: the activation is computed in f32 and
  // fc2 rounds its input to bf16 itself.
  Tensor a = Activate(fc1.Forward(x, DType::kF32), activation);
  return fc2.Forward(a, x.dtype());
}

}  // namespace omni::models::layers
