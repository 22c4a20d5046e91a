// Reading a block's weights from a checkpoint by name, once, at load time.
//
// Every block's Load takes a weight-name prefix ("model.layers.3.mlp") and
// appends its own names ("gate_proj.weight"), so a family states where a
// block lives in its checkpoint and the block states what it holds.
// Projections are packed bf16 (the runtime's weight format: activations are
// rounded to bf16 at the matmul input, accumulation is f32); norm and
// modulation vectors are f32.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "modelfile/checkpoint.h"
#include "ops/linear.h"
#include "tensor/tensor.h"

namespace omni::models::layers {

// "a.b" + "c" -> "a.b.c"; an empty prefix gives "c", an empty name "a.b".
std::string WeightName(std::string_view prefix, std::string_view name);

// A float tensor (any float dtype, as stored) of exactly `shape`; -1 in
// `shape` matches any size. The result is a view of the checkpoint.
StatusOr<Tensor> LoadFloatWeight(const Checkpoint& ckpt, const std::string& name, const Shape& shape);

// A [size] vector as contiguous f32 (norm weights, biases used elementwise).
StatusOr<Tensor> LoadVector(const Checkpoint& ckpt, const std::string& name, int64_t size);

// bf16 as is, anything else converted to bf16.
Tensor ToBf16(const Tensor& t);

// One packed bf16 Linear from the projections `names[i]` (each
// "<name>.weight" [out_sizes[i], in], and "<name>.bias" when `bias`), stacked
// along the output dim in the order given. Projections that read the same
// input run as one matmul (q/k/v, gate/up), which matters most for decode,
// where each call is a GEMV.
StatusOr<ops::Linear> LoadStackedLinear(const Checkpoint& ckpt, std::span<const std::string> names,
                                        std::span<const int64_t> out_sizes, int64_t in, bool bias);
// The same with a bias per projection: has_bias[i] false means "<name>.bias"
// is not in the checkpoint and that projection adds zero (Whisper's k_proj).
// (Its own name: an array argument would convert to the bool overload.)
StatusOr<ops::Linear> LoadStackedLinearSomeBiases(const Checkpoint& ckpt, std::span<const std::string> names,
                                                  std::span<const int64_t> out_sizes, int64_t in,
                                                  std::span<const bool> has_bias);
StatusOr<ops::Linear> LoadLinear(const Checkpoint& ckpt, const std::string& name, int64_t out, int64_t in,
                                 bool bias);

}  // namespace omni::models::layers
