// Named intermediate activations, for comparing a model family with its
// reference layer by layer (tests) or dumping them (debugging).
#pragma once

#include <functional>
#include <string_view>

#include "tensor/tensor.h"

namespace omni::models {

// Called with each named activation ("layers.3.out", "blocks.7", ...) as the
// forward pass produces it; the tensor is only valid during the call.
using ActivationCallback = std::function<void(std::string_view name, const Tensor& value)>;

}  // namespace omni::models
