#include "models/audio_encoder/whisper_mel.h"

#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numbers>
#include <string>

#include "core/check.h"

namespace omni::models {
namespace {

constexpr int kPad = WhisperMel::kNumFft / 2;  // reflect padding on each side
constexpr double kMaxHz = 8000.0;
constexpr float kLogFloor = 1e-10f;    // mel power floor before log10
constexpr float kDynamicRange = 8.0f;  // log10 units kept below the max

struct FftwFree {
  void operator()(void* p) const { fftwf_free(p); }
};
using RealBuffer = std::unique_ptr<float[], FftwFree>;
using ComplexBuffer = std::unique_ptr<fftwf_complex[], FftwFree>;

// fftwf_alloc_* so that per-call buffers have the alignment the plan was made
// with, as the new-array execute functions require.
RealBuffer AllocReal(size_t n) {
  float* p = fftwf_alloc_real(n);
  OMNI_CHECK(p != nullptr) << "fftwf_alloc_real(" << n << ")";
  return RealBuffer(p);
}
ComplexBuffer AllocComplex(size_t n) {
  fftwf_complex* p = fftwf_alloc_complex(n);
  OMNI_CHECK(p != nullptr) << "fftwf_alloc_complex(" << n << ")";
  return ComplexBuffer(p);
}

Status CheckFinite(std::span<const float> samples) {
  for (size_t i = 0; i < samples.size(); ++i) {
    if (!std::isfinite(samples[i])) {
      return InvalidArgument("audio sample " + std::to_string(i) + " is not a finite number");
    }
  }
  return Status::Ok();
}

}  // namespace

std::mutex& WhisperMel::FftwPlannerMutex() { return layers::FftwPlannerMutex(); }

WhisperMel::WhisperMel()
    : window_(kNumFft), filterbank_(layers::MelFilterbank::Slaney(kSampleRate, kNumFft, kNumMels, 0.0, kMaxHz)) {
  for (int k = 0; k < kNumFft; ++k) {
    window_[k] = static_cast<float>(0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * k / kNumFft));
  }
  RealBuffer in = AllocReal(kNumFft);
  ComplexBuffer out = AllocComplex(kNumFreqs);
  std::lock_guard<std::mutex> lock(FftwPlannerMutex());
  // FFTW_ESTIMATE: the plan is chosen without timing, so every process runs
  // the same algorithm and gives the same bits; a 400-point transform is a
  // small part of the cost either way.
  fftwf_plan plan = fftwf_plan_dft_r2c_1d(kNumFft, in.get(), out.get(), FFTW_ESTIMATE);
  OMNI_CHECK(plan != nullptr) << "fftwf_plan_dft_r2c_1d(" << kNumFft << ") failed";
  plan_ = plan;
}

WhisperMel::~WhisperMel() {
  std::lock_guard<std::mutex> lock(FftwPlannerMutex());
  fftwf_destroy_plan(static_cast<fftwf_plan>(plan_));
}

void WhisperMel::LogMelInto(std::span<const float> samples, float* out) const {
  const int64_t n = static_cast<int64_t>(samples.size());
  OMNI_CHECK_GT(n, kPad);
  const int64_t frames = NumFrames(n);
  RealBuffer frame = AllocReal(kNumFft);
  ComplexBuffer spectrum = AllocComplex(kNumFreqs);
  float power[kNumFreqs];
  float max_log = -INFINITY;
  for (int64_t t = 0; t < frames; ++t) {
    // Padded sample j is x[j - 200], reflected at both ends.
    const int64_t first = t * kHop - kPad;
    if (first >= 0 && first + kNumFft <= n) {
      for (int k = 0; k < kNumFft; ++k) frame[k] = window_[k] * samples[first + k];
    } else {
      for (int k = 0; k < kNumFft; ++k) {
        int64_t i = first + k;
        if (i < 0) i = -i;
        if (i >= n) i = 2 * (n - 1) - i;
        frame[k] = window_[k] * samples[i];
      }
    }
    fftwf_execute_dft_r2c(static_cast<fftwf_plan>(plan_), frame.get(), spectrum.get());
    for (int k = 0; k < kNumFreqs; ++k) {
      power[k] = spectrum[k][0] * spectrum[k][0] + spectrum[k][1] * spectrum[k][1];
    }
    float mel[kNumMels];
    filterbank_.Apply(power, mel);
    for (int m = 0; m < kNumMels; ++m) {
      const float log_mel = std::log10(std::max(mel[m], kLogFloor));
      out[m * frames + t] = log_mel;
      max_log = std::max(max_log, log_mel);
    }
  }
  const float floor = max_log - kDynamicRange;
  for (int64_t i = 0; i < int64_t{kNumMels} * frames; ++i) {
    out[i] = (std::max(out[i], floor) + 4.0f) / 4.0f;
  }
}

StatusOr<Tensor> WhisperMel::Compute(std::span<const float> samples) const {
  if (samples.size() <= static_cast<size_t>(kPad)) {
    return InvalidArgument("the log-mel spectrogram needs more than " + std::to_string(kPad) +
                           " audio samples (12.5 ms at 16 kHz), got " + std::to_string(samples.size()));
  }
  if (Status s = CheckFinite(samples); !s.ok()) return s;
  Tensor mel = Tensor::Empty({kNumMels, NumFrames(static_cast<int64_t>(samples.size()))}, DType::kF32);
  LogMelInto(samples, mel.data<float>());
  return mel;
}

StatusOr<std::vector<WhisperMelChunk>> WhisperMel::ComputeChunks(std::span<const float> samples) const {
  if (samples.empty()) return InvalidArgument("the audio has no samples");
  if (Status s = CheckFinite(samples); !s.ok()) return s;
  std::vector<WhisperMelChunk> chunks;
  std::vector<float> padded(kChunkSamples);
  for (size_t start = 0; start < samples.size(); start += kChunkSamples) {
    const size_t piece = std::min<size_t>(kChunkSamples, samples.size() - start);
    std::copy_n(samples.begin() + start, piece, padded.begin());
    std::fill(padded.begin() + piece, padded.end(), 0.0f);
    WhisperMelChunk chunk{.mel = Tensor::Empty({kNumMels, kChunkFrames}, DType::kF32),
                          .valid_frames = static_cast<int64_t>((piece + kHop - 1) / kHop)};
    LogMelInto(padded, chunk.mel.data<float>());
    chunks.push_back(std::move(chunk));
  }
  return chunks;
}

}  // namespace omni::models
