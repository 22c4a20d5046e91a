#include "models/layers/adaln.h"

#include "models/layers/weights.h"
#include "ops/elementwise.h"

namespace omni::models::layers {
namespace {

// A per-item [B, hidden] vector as [B, 1, hidden] against x [B, T, hidden];
// anything else broadcasts as it is.
Tensor PerItem(const Tensor& v, const Tensor& x) {
  if (x.rank() == 3 && v.rank() == 2) {
    OMNI_CHECK(v.dim(0) == x.dim(0) && v.dim(1) == x.dim(2)) << v.DebugString() << " against " << x.DebugString();
    return v.Contiguous().Reshape({v.dim(0), 1, v.dim(1)});
  }
  return v;
}

}  // namespace

StatusOr<AdaLnModulation> AdaLnModulation::Load(const Checkpoint& ckpt, std::string_view prefix,
                                                const AdaLnConfig& c) {
  if (c.cond_dim <= 0 || c.hidden <= 0 || c.num_chunks <= 0) return InvalidArgument("adaLN: sizes must be positive");
  AdaLnModulation mod;
  mod.hidden = c.hidden;
  mod.num_chunks = c.num_chunks;
  OMNI_ASSIGN_OR_RETURN(mod.linear, LoadLinear(ckpt, std::string(prefix), c.num_chunks * c.hidden, c.cond_dim, c.bias));
  return mod;
}

std::vector<Tensor> AdaLnModulation::Forward(const Tensor& c) const {
  OMNI_CHECK(c.rank() == 2) << "conditioning [B, cond_dim]: " << c.DebugString();
  Tensor out = linear.Forward(ops::Silu(c), DType::kF32);  // [B, num_chunks * hidden]
  std::vector<Tensor> chunks;
  chunks.reserve(num_chunks);
  for (int64_t i = 0; i < num_chunks; ++i) chunks.push_back(out.Slice(1, i * hidden, (i + 1) * hidden).Contiguous());
  return chunks;
}

Tensor Modulate(const Tensor& x, const Tensor& shift, const Tensor& scale) {
  const Tensor one = Tensor::FromFloats(std::vector<float>{1.f}, {1});
  Tensor y = ops::Mul(ops::Cast(x, DType::kF32), ops::Add(PerItem(scale, x), one));
  return ops::Add(y, PerItem(shift, x));
}

Tensor GatedResidual(const Tensor& h, const Tensor& gate, const Tensor& y) {
  return ops::Add(h, ops::Mul(PerItem(gate, y), y));
}

}  // namespace omni::models::layers
