#include "models/audio_encoder/omni_audio_encoder.h"

#include <algorithm>
#include <filesystem>
#include <string_view>

#include <fmt/core.h>

#include "core/config.h"
#include "modelfile/checkpoint.h"

namespace omni::models {
namespace {

// Prefixes a branch's activation names.
ActivationCallback Prefixed(const ActivationCallback* inner, std::string_view prefix) {
  return [inner, prefix](std::string_view name, const Tensor& value) {
    (*inner)(std::string(prefix) + std::string(name), value);
  };
}

Status CheckClip(std::span<const float> samples) {
  if (std::ssize(samples) < OmniAudioEncoder::kMinSamples) {
    return InvalidArgument(fmt::format("the audio is {:.3f} s long; the audio encoder needs at least {:.1f} s",
                                       static_cast<double>(samples.size()) / OmniAudioEncoder::kSampleRate,
                                       static_cast<double>(OmniAudioEncoder::kMinSamples) /
                                           OmniAudioEncoder::kSampleRate));
  }
  return Status::Ok();
}

}  // namespace

OmniAudioEncoder::~OmniAudioEncoder() = default;

StatusOr<std::unique_ptr<OmniAudioEncoder>> OmniAudioEncoder::Load(const std::string& dir) {
  const std::filesystem::path root(dir);
  const std::string config_name = (root / "config.json").string();
  OMNI_ASSIGN_OR_RETURN(std::string config, ReadTextFile(config_name));
  OMNI_ASSIGN_OR_RETURN(Qwen2AudioConfig continuous, ParseQwen2AudioConfig(config, config_name));
  OMNI_ASSIGN_OR_RETURN(S3TokenizerConfig discrete, ParseS3TokenizerConfig(config, config_name));
  OMNI_ASSIGN_OR_RETURN(Checkpoint ckpt, Checkpoint::Open(dir));
  std::unique_ptr<OmniAudioEncoder> e(new OmniAudioEncoder());
  OMNI_ASSIGN_OR_RETURN(e->continuous_, Qwen2AudioEncoder::Load(ckpt, continuous));
  OMNI_ASSIGN_OR_RETURN(e->discrete_, S3Tokenizer::Load(ckpt, discrete));
  return e;
}

int64_t OmniAudioEncoder::ContinuousRows(int64_t num_samples) {
  int64_t rows = 0;
  for (int64_t start = 0; start < num_samples; start += WhisperMel::kChunkSamples) {
    const int64_t piece = std::min(WhisperMel::kChunkSamples, num_samples - start);
    rows += Qwen2AudioEncoder::RowsForFrames((piece + WhisperMel::kHop - 1) / WhisperMel::kHop);
  }
  return rows;
}

int64_t OmniAudioEncoder::DiscreteIds(int64_t num_samples) {
  if (num_samples <= kPieceSamples) return S3Tokenizer::TokensForFrames(WhisperMel::NumFrames(num_samples));
  int64_t ids = 0;
  for (int64_t start = 0; start < num_samples; start += kPieceSamples) {
    const int64_t piece = std::min(kPieceSamples, num_samples - start);
    if (piece > WhisperMel::kNumFft / 2) ids += S3Tokenizer::TokensForFrames(WhisperMel::NumFrames(piece));
  }
  return ids;
}

StatusOr<std::vector<int32_t>> OmniAudioEncoder::Tokenize(std::span<const float> samples,
                                                          const ActivationCallback* on_activation) const {
  std::vector<int32_t> ids;
  const int64_t n = std::ssize(samples);
  const int64_t piece_len = n > kPieceSamples ? kPieceSamples : n;
  for (int64_t start = 0; start < n; start += piece_len) {
    const std::span<const float> piece = samples.subspan(start, std::min(piece_len, n - start));
    if (std::ssize(piece) <= WhisperMel::kNumFft / 2) break;  // a last sliver: no frame of its own
    OMNI_ASSIGN_OR_RETURN(Tensor mel, mel_.Compute(piece));
    OMNI_ASSIGN_OR_RETURN(std::vector<int32_t> piece_ids, discrete_->Encode(mel, on_activation));
    ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
  }
  return ids;
}

StatusOr<AudioEncoding> OmniAudioEncoder::Encode(std::span<const float> samples,
                                                 const ActivationCallback* on_activation) const {
  OMNI_RETURN_IF_ERROR(CheckClip(samples));
  AudioEncoding out;
  out.seconds = static_cast<double>(samples.size()) / kSampleRate;
  OMNI_ASSIGN_OR_RETURN(std::vector<WhisperMelChunk> chunks, mel_.ComputeChunks(samples));
  if (on_activation != nullptr) {
    const ActivationCallback continuous = Prefixed(on_activation, "continuous.");
    const ActivationCallback discrete = Prefixed(on_activation, "discrete.");
    OMNI_ASSIGN_OR_RETURN(out.rows, continuous_->Forward(chunks, &continuous));
    OMNI_ASSIGN_OR_RETURN(out.ids, Tokenize(samples, &discrete));
  } else {
    OMNI_ASSIGN_OR_RETURN(out.rows, continuous_->Forward(chunks));
    OMNI_ASSIGN_OR_RETURN(out.ids, Tokenize(samples, nullptr));
  }
  return out;
}

StatusOr<std::vector<AudioEncoding>> OmniAudioEncoder::EncodeBatch(
    std::span<const std::span<const float>> clips) const {
  std::vector<AudioEncoding> out(clips.size());
  std::vector<WhisperMelChunk> chunks;
  for (size_t i = 0; i < clips.size(); ++i) {
    OMNI_RETURN_IF_ERROR(CheckClip(clips[i]));
    out[i].seconds = static_cast<double>(clips[i].size()) / kSampleRate;
    OMNI_ASSIGN_OR_RETURN(std::vector<WhisperMelChunk> clip_chunks, mel_.ComputeChunks(clips[i]));
    for (WhisperMelChunk& c : clip_chunks) chunks.push_back(std::move(c));
    OMNI_ASSIGN_OR_RETURN(out[i].ids, Tokenize(clips[i], nullptr));
  }
  if (clips.empty()) return out;
  OMNI_ASSIGN_OR_RETURN(Tensor rows, continuous_->Forward(chunks));
  int64_t row = 0;
  for (size_t i = 0; i < clips.size(); ++i) {
    const int64_t n = ContinuousRows(std::ssize(clips[i]));
    out[i].rows = rows.Slice(0, row, row + n).Copy();
    row += n;
  }
  return out;
}

}  // namespace omni::models
