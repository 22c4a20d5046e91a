// Deterministic random weights for the demo model folders (make-demo-model):
// element j of tensor `name` is Mix(key + j), key = Mix(seed ^ Fnv1a64(name))
// (SplitMix64, Steele, Lea, Flood 2014, over a counter). The top 24 bits
// give u in [-1, 1), and the value is offset + std * sqrt(3) * u (a uniform
// of that standard deviation), stored as bf16. Independent per tensor, so
// adding a tensor does not shift the others; the PyTorch references read the
// written files rather than re-deriving them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "tensor/tensor.h"

namespace omni::models {

Tensor RandomBf16(uint64_t seed, std::string_view name, const Shape& shape, double std, double offset = 0.0);

// Writes (replaces) a text file of a demo folder.
Status WriteDemoTextFile(const std::string& path, std::string_view text);

}  // namespace omni::models
