// The encoder's batchers: services/model_batcher.h over its two models
// (OmniVisionEncoder::EncodeBatch, OmniAudioEncoder::EncodeBatch), with the
// histograms named omni_encoder_batch_size and omni_encoder_forward_seconds.
//
//   ImageBatcher batcher([&](auto images) { return model.EncodeBatch(images); }, 8, &metrics);
//   StatusOr<VisionEncoding> e = batcher.Encode(image);   // on a worker; blocks
//
// Thread-safety: as ModelBatcher's.
#pragma once

#include <span>
#include <utility>

#include "media/image.h"
#include "models/audio_encoder/omni_audio_encoder.h"
#include "models/omni_vision/omni_vision_encoder.h"
#include "services/model_batcher.h"

namespace omni::encoder {

template <typename Input, typename Output>
class EncodeBatcher : public ModelBatcher<Input, Output> {
 public:
  // `metrics` may be null.
  EncodeBatcher(typename ModelBatcher<Input, Output>::BatchFn encode, int max_batch, MetricsRegistry* metrics)
      : ModelBatcher<Input, Output>(std::move(encode), max_batch, metrics, "omni_encoder") {}

  // `input` must stay valid until this returns.
  StatusOr<Output> Encode(const Input& input) { return this->Forward(input); }
};

// An audio clip for the audio encoder: 16 kHz mono samples.
using AudioClip = std::span<const float>;

using ImageBatcher = EncodeBatcher<media::Image, models::VisionEncoding>;
using AudioBatcher = EncodeBatcher<AudioClip, models::AudioEncoding>;

}  // namespace omni::encoder
