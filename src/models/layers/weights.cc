#include "models/layers/weights.h"

#include <algorithm>
#include <iterator>
#include <vector>

#include "ops/shape_ops.h"

namespace omni::models::layers {

std::string WeightName(std::string_view prefix, std::string_view name) {
  if (prefix.empty()) return std::string(name);
  if (name.empty()) return std::string(prefix);
  std::string out(prefix);
  out += '.';
  out += name;
  return out;
}

StatusOr<Tensor> LoadFloatWeight(const Checkpoint& ckpt, const std::string& name, const Shape& shape) {
  OMNI_ASSIGN_OR_RETURN(Tensor t, ckpt.Get(name));
  if (!IsFloating(t.dtype())) return InvalidArgument(name + ": expected a float tensor, got " + t.DebugString());
  OMNI_RETURN_IF_ERROR(CheckTensorSpec(t, name, shape, t.dtype()));
  return t;
}

StatusOr<Tensor> LoadVector(const Checkpoint& ckpt, const std::string& name, int64_t size) {
  OMNI_ASSIGN_OR_RETURN(Tensor t, LoadFloatWeight(ckpt, name, {size}));
  return t.To(DType::kF32);
}

Tensor ToBf16(const Tensor& t) { return t.dtype() == DType::kBF16 ? t : t.To(DType::kBF16); }

StatusOr<ops::Linear> LoadStackedLinearSomeBiases(const Checkpoint& ckpt, std::span<const std::string> names,
                                                  std::span<const int64_t> out_sizes, int64_t in,
                                                  std::span<const bool> has_bias) {
  OMNI_CHECK_EQ(names.size(), out_sizes.size());
  OMNI_CHECK_EQ(names.size(), has_bias.size());
  OMNI_CHECK(!names.empty());
  const bool any_bias = std::find(has_bias.begin(), has_bias.end(), true) != has_bias.end();
  std::vector<Tensor> weights, biases;
  for (size_t i = 0; i < names.size(); ++i) {
    OMNI_ASSIGN_OR_RETURN(Tensor w, LoadFloatWeight(ckpt, names[i] + ".weight", {out_sizes[i], in}));
    weights.push_back(ToBf16(w));
    if (has_bias[i]) {
      OMNI_ASSIGN_OR_RETURN(Tensor b, LoadVector(ckpt, names[i] + ".bias", out_sizes[i]));
      biases.push_back(std::move(b));
    } else if (any_bias) {
      biases.push_back(Tensor::Zeros({out_sizes[i]}, DType::kF32));
    }
  }
  Tensor w = weights.size() == 1 ? weights[0] : ops::Concat(weights, 0);
  Tensor b = !any_bias ? Tensor() : biases.size() == 1 ? biases[0] : ops::Concat(biases, 0);
  return ops::Linear(w, b);
}

StatusOr<ops::Linear> LoadStackedLinear(const Checkpoint& ckpt, std::span<const std::string> names,
                                        std::span<const int64_t> out_sizes, int64_t in, bool bias) {
  bool flags[8];
  OMNI_CHECK_LE(names.size(), std::size(flags));
  std::fill_n(flags, names.size(), bias);
  return LoadStackedLinearSomeBiases(ckpt, names, out_sizes, in, std::span<const bool>(flags, names.size()));
}

StatusOr<ops::Linear> LoadLinear(const Checkpoint& ckpt, const std::string& name, int64_t out, int64_t in,
                                 bool bias) {
  const std::string names[] = {name};
  const int64_t sizes[] = {out};
  return LoadStackedLinear(ckpt, names, sizes, in, bias);
}

}  // namespace omni::models::layers
