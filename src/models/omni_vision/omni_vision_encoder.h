// The Omni model's vision encoder (its `ve` component): both branches behind
// one call, from one folder.
//
//   auto encoder = OmniVisionEncoder::Load("/models/ve");
//   OMNI_ASSIGN_OR_RETURN(VisionEncoding e, (*encoder)->Encode(image));
//   // e.rows [N, llm_width] f32: the continuous rows (<|IMAGE_PAD|>)
//   // e.ids  [729]: TA-Tok ids (<|DISCRETE_IMAGE_PAD|>)
//   // EncodeBatch: several images, one forward per branch (the encoder
//   // server's batching)
//   OMNI_ASSIGN_OR_RETURN(VisionEncoding v, (*encoder)->EncodeVideo(video.frames));
//   // v.rows [t * h * w / 4, llm_width] (<|VIDEO_PAD|>), no ids
//
// The folder: config.json (Qwen2.5-VL "vision_config" keys, and
// "discrete_vision_config" for TA-Tok, whose defaults are the released
// sizes), preprocessor_config.json (Qwen2-VL processor keys, optional), and
// the weights under their Hugging Face names (model.vision_model.*,
// model.mm_projector.*, model.discrete_vision_model.*) in model.safetensors
// or a sharded index: the whole Omni checkpoint folder loads as it is.
// Thread-safety: immutable after Load; Encode is const and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "media/image.h"
#include "models/activation_callback.h"
#include "models/qwen25_vit/image_processor.h"
#include "models/qwen25_vit/qwen25_vit.h"
#include "models/qwen25_vit/video_processor.h"
#include "models/siglip_tatok/image_processor.h"
#include "models/siglip_tatok/tatok.h"
#include "tensor/tensor.h"

namespace omni::models {

struct VisionEncoding {
  Tensor rows;               // [grid_t * grid_h * grid_w / merge^2, llm_width] f32
  std::vector<int32_t> ids;  // TA-Tok ids, row-major; empty for a video
  PatchGrid grid;            // in patches
  int64_t resized_height = 0, resized_width = 0;
};

class OmniVisionEncoder {
 public:
  static StatusOr<std::unique_ptr<OmniVisionEncoder>> Load(const std::string& dir);
  ~OmniVisionEncoder();

  StatusOr<VisionEncoding> Encode(const media::Image& image, const ActivationCallback* on_activation = nullptr) const;
  // Several images in one forward of each branch (their patches one after
  // another, each attending to its own): per image, what Encode gives, up
  // to the GEMMs' summation order (the ids are the same).
  StatusOr<std::vector<VisionEncoding>> EncodeBatch(std::span<const media::Image* const> images) const;

  // A video's sampled frames (media::DecodeVideo's: full size, all of one
  // size, in time order) -> the continuous rows alone (the Omni model has no
  // discrete video rows; ids stay empty). Every frame is resized to
  // VideoFrameSize; then, as the reference does, each chunk of
  // video_config().chunk_frames frames is patched and run through the ViT on
  // its own. The ViT attends within a frame pair in every block and its
  // rotary positions restart each pair, so the chunks change nothing but
  // the peak memory. rows [grid.t * grid.h * grid.w / merge^2, llm_width],
  // grid.t = ceil(frames / 2) (an odd count repeats the last frame).
  // The callback sees each chunk's activations in turn.
  StatusOr<VisionEncoding> EncodeVideo(std::span<const media::Image> frames,
                                       const ActivationCallback* on_activation = nullptr) const;

  int64_t output_width() const { return vit_->output_width(); }
  int64_t num_ids() const { return tatok_->num_tokens(); }
  const Qwen2VlImageProcessorConfig& processor_config() const { return processor_; }
  const Qwen2VlVideoProcessorConfig& video_config() const { return video_processor_; }

 private:
  OmniVisionEncoder() = default;

  Qwen2VlImageProcessorConfig processor_;
  Qwen2VlVideoProcessorConfig video_processor_;  // the reference's constants
  TaTokImageProcessorConfig tatok_processor_;
  std::unique_ptr<Qwen25Vit> vit_;
  std::unique_ptr<TaTok> tatok_;
};

}  // namespace omni::models
