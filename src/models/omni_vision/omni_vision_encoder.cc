#include "models/omni_vision/omni_vision_encoder.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include <fmt/core.h>

#include "core/check.h"
#include "core/config.h"
#include "ops/shape_ops.h"

namespace omni::models {
namespace {

StatusOr<std::string> ReadText(const std::filesystem::path& path) { return ReadTextFile(path.string()); }

}  // namespace

OmniVisionEncoder::~OmniVisionEncoder() = default;

StatusOr<std::unique_ptr<OmniVisionEncoder>> OmniVisionEncoder::Load(const std::string& dir) {
  const std::filesystem::path root(dir);
  std::unique_ptr<OmniVisionEncoder> e(new OmniVisionEncoder());
  OMNI_ASSIGN_OR_RETURN(std::string config, ReadText(root / "config.json"));
  const std::string config_name = (root / "config.json").string();
  OMNI_ASSIGN_OR_RETURN(Qwen25VitConfig vit_config, ParseQwen25VitConfig(config, config_name));
  OMNI_ASSIGN_OR_RETURN(TaTokConfig tatok_config, ParseTaTokConfig(config, config_name));
  if (std::filesystem::exists(root / "preprocessor_config.json")) {
    OMNI_ASSIGN_OR_RETURN(std::string pre, ReadText(root / "preprocessor_config.json"));
    OMNI_ASSIGN_OR_RETURN(e->processor_,
                          ParseQwen2VlImageProcessorConfig(pre, (root / "preprocessor_config.json").string()));
  }
  if (e->processor_.patch_size != vit_config.patch_size || e->processor_.merge_size != vit_config.spatial_merge_size ||
      e->processor_.temporal_patch_size != vit_config.temporal_patch_size) {
    return InvalidArgument(fmt::format("{}: the processor's patch, merge and temporal sizes must be the ViT's", dir));
  }
  e->tatok_processor_.size = tatok_config.image_size;
  OMNI_ASSIGN_OR_RETURN(Checkpoint ckpt, Checkpoint::Open(dir));
  OMNI_ASSIGN_OR_RETURN(e->vit_, Qwen25Vit::Load(ckpt, vit_config));
  OMNI_ASSIGN_OR_RETURN(e->tatok_, TaTok::Load(ckpt, tatok_config));
  return e;
}

StatusOr<VisionEncoding> OmniVisionEncoder::Encode(const media::Image& image,
                                                   const ActivationCallback* on_activation) const {
  OMNI_ASSIGN_OR_RETURN(VisionPatches patches, PreprocessImage(image, processor_));
  VisionEncoding out;
  out.grid = {.t = patches.grid_t, .h = patches.grid_h, .w = patches.grid_w};
  out.resized_height = patches.resized_height;
  out.resized_width = patches.resized_width;
  OMNI_ASSIGN_OR_RETURN(out.rows, vit_->Forward(patches.pixel_values, {&out.grid, 1}, on_activation));
  OMNI_ASSIGN_OR_RETURN(out.ids, tatok_->Encode(PreprocessTaTokImage(image, tatok_processor_), on_activation));
  return out;
}

StatusOr<std::vector<VisionEncoding>> OmniVisionEncoder::EncodeBatch(
    std::span<const media::Image* const> images) const {
  if (images.empty()) return std::vector<VisionEncoding>{};
  if (images.size() == 1) {
    OMNI_ASSIGN_OR_RETURN(VisionEncoding one, Encode(*images.front()));
    std::vector<VisionEncoding> out;
    out.push_back(std::move(one));
    return out;
  }
  std::vector<VisionEncoding> out(images.size());
  std::vector<Tensor> pixels, tatok_images;
  std::vector<PatchGrid> grids;
  for (size_t i = 0; i < images.size(); ++i) {
    OMNI_ASSIGN_OR_RETURN(VisionPatches patches, PreprocessImage(*images[i], processor_));
    out[i].grid = {.t = patches.grid_t, .h = patches.grid_h, .w = patches.grid_w};
    out[i].resized_height = patches.resized_height;
    out[i].resized_width = patches.resized_width;
    grids.push_back(out[i].grid);
    pixels.push_back(std::move(patches.pixel_values));
    tatok_images.push_back(PreprocessTaTokImage(*images[i], tatok_processor_));
  }
  OMNI_ASSIGN_OR_RETURN(Tensor rows, vit_->Forward(ops::Concat(pixels, 0), grids));
  const int64_t unit = processor_.merge_size * processor_.merge_size;
  int64_t row = 0;
  for (VisionEncoding& e : out) {
    const int64_t n = e.grid.t * e.grid.h * e.grid.w / unit;
    e.rows = rows.Slice(0, row, row + n).Copy();
    row += n;
  }
  OMNI_ASSIGN_OR_RETURN(std::vector<std::vector<int32_t>> ids, tatok_->EncodeBatch(tatok_images));
  for (size_t i = 0; i < out.size(); ++i) out[i].ids = std::move(ids[i]);
  return out;
}

StatusOr<VisionEncoding> OmniVisionEncoder::EncodeVideo(std::span<const media::Image> frames,
                                                        const ActivationCallback* on_activation) const {
  if (frames.empty()) return InvalidArgument("a video needs at least one frame");
  const int height = frames[0].height, width = frames[0].width;
  for (const media::Image& f : frames) {
    if (f.width != width || f.height != height) {
      return InvalidArgument(
          fmt::format("video frames differ in size ({}x{} and {}x{})", width, height, f.width, f.height));
    }
  }
  OMNI_ASSIGN_OR_RETURN(auto size, VideoFrameSize(height, width, std::ssize(frames), processor_, video_processor_));
  // The processor's own smart_resize: the identity for the Omni model's
  // bounds, a second resize for a config whose bounds exclude the frame.
  OMNI_ASSIGN_OR_RETURN(auto again, SmartResize(size.first, size.second, processor_));
  const int64_t tp = processor_.temporal_patch_size, unit = processor_.merge_size * processor_.merge_size;
  // Even, so that only the last chunk can hold an odd frame.
  const int64_t chunk = std::max<int64_t>(tp, video_processor_.chunk_frames / tp * tp);
  VisionEncoding out;
  out.resized_height = again.first;
  out.resized_width = again.second;
  out.grid = {.t = (std::ssize(frames) + tp - 1) / tp, .h = again.first / processor_.patch_size,
              .w = again.second / processor_.patch_size};
  out.rows = Tensor::Empty({out.grid.t * out.grid.h * out.grid.w / unit, output_width()}, DType::kF32);
  int64_t row = 0;
  for (int64_t start = 0; start < std::ssize(frames); start += chunk) {
    const int64_t end = std::min<int64_t>(start + chunk, std::ssize(frames));
    std::vector<media::Image> resized;
    resized.reserve(static_cast<size_t>(end - start));
    for (int64_t i = start; i < end; ++i) {
      media::Image r = ResizeBicubicAntialias(frames[static_cast<size_t>(i)], static_cast<int>(size.second),
                                              static_cast<int>(size.first));
      if (again != size) r = ResizeBicubicAntialias(r, static_cast<int>(again.second), static_cast<int>(again.first));
      resized.push_back(std::move(r));
    }
    OMNI_ASSIGN_OR_RETURN(VisionPatches patches, PatchifyVideoFrames(resized, processor_));
    resized.clear();
    const PatchGrid grid = {.t = patches.grid_t, .h = patches.grid_h, .w = patches.grid_w};
    OMNI_ASSIGN_OR_RETURN(Tensor rows, vit_->Forward(patches.pixel_values, {&grid, 1}, on_activation));
    OMNI_CHECK(row + rows.dim(0) <= out.rows.dim(0)) << "video rows past the grid";
    std::memcpy(out.rows.data<float>() + row * output_width(), rows.data<float>(), rows.nbytes());
    row += rows.dim(0);
  }
  OMNI_CHECK(row == out.rows.dim(0)) << "video rows short of the grid";
  return out;
}

}  // namespace omni::models
