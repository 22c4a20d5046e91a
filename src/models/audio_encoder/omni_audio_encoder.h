// The Omni model's audio encoder (its `ae` component): both branches behind
// one call, from one folder.
//
//   auto encoder = OmniAudioEncoder::Load("/models/ae");
//   OMNI_ASSIGN_OR_RETURN(AudioEncoding e, (*encoder)->Encode(samples));  // 16 kHz mono
//   // e.rows [Tc, llm_width] f32: the continuous rows (<|AUDIO_PAD|>)
//   // e.ids  [Td]: S3 tokenizer ids in [0, 6561) (<|DISCRETE_AUDIO_PAD|>)
//
// As OmniServe's audio encoder computes them (encoder/audio/track_b,
// Model._process_audio): the continuous rows from OmniServe's 30 s chunks
// (WhisperMel::ComputeChunks) through Qwen2AudioEncoder, every chunk's kept
// rows concatenated; the ids from the whole clip's mel (WhisperMel::Compute)
// through S3Tokenizer, or, for a clip over 80 s, from 80 s pieces tokenised
// independently and concatenated. Both are 25 per second, by different
// formulas: a 3.0 s clip gives 75 and 75, a 1.37 s clip 34 and 35.
// A last 80 s piece too short for the STFT's reflect padding (200 samples or
// fewer, 12.5 ms) gives no ids; the reference fails on it.
//
// The folder: config.json ("audio_config", "discrete_audio_config",
// "text_config.hidden_size") and the weights under the Omni checkpoint's
// names (model.audio_model.*, model.audio_projector.*,
// model.discrete_audio_model.*) in model.safetensors or a sharded index.
// Thread-safety: immutable after Load; Encode is const and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/activation_callback.h"
#include "models/audio_encoder/qwen2_audio.h"
#include "models/audio_encoder/s3_tokenizer.h"
#include "models/audio_encoder/whisper_mel.h"
#include "tensor/tensor.h"

namespace omni::models {

struct AudioEncoding {
  Tensor rows;               // [Tc, llm_width] f32
  std::vector<int32_t> ids;  // [Td]
  double seconds = 0;        // the clip's duration
};

class OmniAudioEncoder {
 public:
  static constexpr int kSampleRate = WhisperMel::kSampleRate;  // 16000
  static constexpr int64_t kMinSamples = kSampleRate / 10;     // 0.1 s
  static constexpr int64_t kPieceSamples = 80 * int64_t{kSampleRate};

  static StatusOr<std::unique_ptr<OmniAudioEncoder>> Load(const std::string& dir);
  ~OmniAudioEncoder();

  // 16 kHz mono samples, at least kMinSamples (InvalidArgument otherwise).
  // Named activations: the branches', prefixed "continuous." and "discrete.".
  StatusOr<AudioEncoding> Encode(std::span<const float> samples,
                                 const ActivationCallback* on_activation = nullptr) const;
  // Several clips, the continuous branch in one forward (the encoder
  // server's batching; the S3 tokenizer runs per clip): per clip, what
  // Encode gives up to the GEMMs' summation order.
  StatusOr<std::vector<AudioEncoding>> EncodeBatch(std::span<const std::span<const float>> clips) const;

  // The rows and ids a clip of `num_samples` samples gives, without running it.
  static int64_t ContinuousRows(int64_t num_samples);
  static int64_t DiscreteIds(int64_t num_samples);

  int64_t output_width() const { return continuous_->config().llm_hidden_size; }

 private:
  OmniAudioEncoder() = default;
  StatusOr<std::vector<int32_t>> Tokenize(std::span<const float> samples,
                                          const ActivationCallback* on_activation) const;

  WhisperMel mel_;
  std::unique_ptr<Qwen2AudioEncoder> continuous_;
  std::unique_ptr<S3Tokenizer> discrete_;
};

}  // namespace omni::models
