#include "models/layers/conv_stem.h"

#include "models/layers/weights.h"

namespace omni::models::layers {

StatusOr<ConvStem> ConvStem::Load(const Checkpoint& ckpt, std::string_view prefix, int spatial_rank,
                                  std::span<const ConvStageSpec> specs) {
  if (spatial_rank != 1 && spatial_rank != 2) return InvalidArgument("conv stem: spatial rank must be 1 or 2");
  if (specs.empty()) return InvalidArgument("conv stem: no stages");
  ConvStem stem;
  stem.spatial_rank = spatial_rank;
  int64_t channels = -1;  // the previous stage's output channels
  for (const ConvStageSpec& spec : specs) {
    if (spec.params.transposed) return InvalidArgument("conv stem: stage " + spec.name + " is transposed");
    const std::string name = WeightName(prefix, spec.name);
    Shape want(2 + spatial_rank, -1);
    if (channels > 0) want[1] = channels / spec.params.groups;
    OMNI_ASSIGN_OR_RETURN(Tensor w, LoadFloatWeight(ckpt, name + ".weight", want));
    if (channels > 0 && w.dim(1) * spec.params.groups != channels) {
      return InvalidArgument(name + ".weight: " + std::to_string(w.dim(1) * spec.params.groups) +
                             " input channels after a stage of " + std::to_string(channels));
    }
    Tensor bias;
    if (spec.bias) {
      OMNI_ASSIGN_OR_RETURN(bias, LoadVector(ckpt, name + ".bias", w.dim(0)));
    }
    stem.stages.push_back({ops::Conv(ToBf16(w), bias, spec.params), spec.activation});
    channels = w.dim(0);
  }
  return stem;
}

Tensor ConvStem::Forward(const Tensor& x) const {
  OMNI_CHECK_EQ(x.rank(), 2 + spatial_rank) << "conv stem input " << x.DebugString();
  Tensor h = x;
  for (const Stage& s : stages) h = Activate(s.conv.Forward(h), s.activation);
  return h;
}

Shape ConvStem::OutputShape(const Shape& input) const {
  Shape shape = input;
  for (const Stage& s : stages) shape = s.conv.OutputShape(shape);
  return shape;
}

}  // namespace omni::models::layers
