// The audio encoder's input features: Whisper's 128-bin log-mel spectrogram,
// as the Whisper / Qwen2-Audio feature extractor computes it, on FFTW3.
//
//   WhisperMel mel;  // once per process: FFTW plan and filterbank
//   OMNI_ASSIGN_OR_RETURN(Tensor m, mel.Compute(samples));  // [128, samples / 160] f32
//   OMNI_ASSIGN_OR_RETURN(auto chunks, mel.ComputeChunks(samples));
//   // chunks[i].mel [128, 3000] f32; frames [0, chunks[i].valid_frames) are audio
//
// Compute(samples), 16 kHz mono float samples, does exactly this:
//   1. pads the clip by reflection (x[-i] = x[i], x[n-1+i] = x[n-1-i]) with
//      200 samples (n_fft / 2) on each side (torch.stft center=True,
//      pad_mode="reflect");
//   2. frame t covers padded samples [160 t, 160 t + 400), times a periodic
//      Hann window w[k] = 0.5 - 0.5 cos(2 pi k / 400);
//   3. |X[k]|^2 of its 400-point real FFT, k = 0..200 (FFTW single
//      precision);
//   4. keeps frames = n / 160 (rounded down): the STFT's last frame is
//      dropped, as Whisper's stft[..., :-1];
//   5. 128 mel filters, Slaney's mel scale (linear below 1 kHz, logarithmic
//      above), Slaney area normalisation (each triangle times 2 / its width in
//      Hz), 0..8000 Hz: librosa.filters.mel(sr=16000, n_fft=400, n_mels=128),
//      the same as torchaudio's melscale_fbanks(norm="slaney",
//      mel_scale="slaney");
//   6. log10(max(mel, 1e-10)), then max(x, M - 8) where M is the largest value
//      of this call's whole output, then (x + 4) / 4.
// The clip is not cut or padded: a 45 s clip gives one [128, 4500] tensor with
// one M. This is openai-whisper's log_mel_spectrogram(audio, n_mels=128),
// which CosyVoice2's S3 tokenizer uses (no 30 s padding).
//
// ComputeChunks(samples) is the continuous branch's (Qwen2-Audio's) input, as
// OmniServe builds it (encoder/audio/track_b/app/model/__init__.py,
// Model._process_audio): the samples are cut into 30 s pieces of 480000
// samples (the last one shorter), each piece is zero-padded to 480000 samples
// *before* the STFT (WhisperFeatureExtractor with padding="max_length"), and
// each padded piece goes through Compute, so every chunk is [128, 3000] with
// its own M. valid_frames = ceil(piece / 160), at most 3000, is the
// extractor's attention mask (its sample mask taken every 160th sample); the
// frames after it are the padding's. Frames near a piece's end therefore see
// zeros where Compute would see the reflection, and a quiet chunk after a loud
// one is clamped at its own M - 8: a chunk is not a slice of Compute's output.
//
// Errors (InvalidArgument): Compute needs more than 200 samples (reflect
// padding of 200 needs them; torch.stft refuses fewer), so an empty clip is an
// error, not 0 frames; ComputeChunks needs at least one sample (a short clip is
// padded to 30 s like any other). Non-finite samples are refused by both.
//
// Thread-safety: construction and destruction take a process-wide mutex (FFTW's
// planner is not thread-safe; any other FFTW user in the process must plan
// under WhisperMel::FftwPlannerMutex()). Compute and ComputeChunks are const
// and may run concurrently on one WhisperMel: each call has its own buffers
// and runs the shared plan with fftwf_execute_dft_r2c, which FFTW documents as
// thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "core/status.h"
#include "models/layers/mel_filterbank.h"
#include "tensor/tensor.h"

namespace omni::models {

struct WhisperMelChunk {
  Tensor mel;                // [128, 3000] f32
  int64_t valid_frames = 0;  // in [1, 3000]; the rest is the zero padding's
};

class WhisperMel {
 public:
  static constexpr int kSampleRate = 16000;
  static constexpr int kNumFft = 400;
  static constexpr int kHop = 160;
  static constexpr int kNumFreqs = kNumFft / 2 + 1;  // 201
  static constexpr int kNumMels = 128;
  static constexpr int64_t kChunkSamples = 30 * kSampleRate;  // 480000
  static constexpr int64_t kChunkFrames = kChunkSamples / kHop;  // 3000

  WhisperMel();
  ~WhisperMel();
  WhisperMel(const WhisperMel&) = delete;
  WhisperMel& operator=(const WhisperMel&) = delete;

  // Frames Compute gives for `num_samples` samples.
  static int64_t NumFrames(int64_t num_samples) { return num_samples / kHop; }

  // The whole clip: [128, samples.size() / 160] f32 (see the top of the file).
  StatusOr<Tensor> Compute(std::span<const float> samples) const;

  // OmniServe's 30 s chunks: ceil(samples.size() / 480000) chunks.
  StatusOr<std::vector<WhisperMelChunk>> ComputeChunks(std::span<const float> samples) const;

  // The mel filterbank, [128, 201] row-major: weight of FFT bin k in filter m.
  std::span<const float> filterbank() const { return filterbank_.weights(); }

  // Serialises every FFTW plan creation and destruction in the process.
  static std::mutex& FftwPlannerMutex();

 private:
  // Writes [128, frames] into `out` (row stride `frames`) from samples.size()
  // > 200 finite samples, frames = samples.size() / 160.
  void LogMelInto(std::span<const float> samples, float* out) const;

  std::vector<float> window_;       // [400] periodic Hann
  layers::MelFilterbank filterbank_;  // 128 filters over 0..8000 Hz
  void* plan_ = nullptr;            // fftwf_plan, r2c of 400; made once
};

}  // namespace omni::models
