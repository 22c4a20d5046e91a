// The pointwise activations blocks are configured with (MLPs, conv stems).
#pragma once

#include "tensor/tensor.h"

namespace omni::models::layers {

enum class Activation {
  kIdentity,
  kGelu,      // exact erf form (nn.GELU())
  kGeluTanh,  // nn.GELU(approximate="tanh"), "gelu_pytorch_tanh"
  kSilu,
};

// x in its own dtype (computed in f32).
Tensor Activate(const Tensor& x, Activation activation);

}  // namespace omni::models::layers
