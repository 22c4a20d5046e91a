#include "models/layers/activation.h"

#include "ops/elementwise.h"

namespace omni::models::layers {

Tensor Activate(const Tensor& x, Activation activation) {
  switch (activation) {
    case Activation::kIdentity:
      return x;
    case Activation::kGelu:
      return ops::Gelu(x, ops::GeluApprox::kNone);
    case Activation::kGeluTanh:
      return ops::Gelu(x, ops::GeluApprox::kTanh);
    case Activation::kSilu:
      return ops::Silu(x);
  }
  OMNI_CHECK(false) << "unknown activation";
  return x;
}

}  // namespace omni::models::layers
