// A zero-shot speaker's reference clip, made ready for the speaker encoder
// (ecapa_tdnn.h) as OmniServe's zero-shot audio decoder does it
// (load_reference_audio, hpf_normalize, compute_mel_spectrogram):
//
//   1. NormalizeReferenceClip: the clip, already mono at the vocoder's rate,
//      through a 2nd-order Butterworth high-pass at 70 Hz (one biquad from
//      the bilinear transform with pre-warping, as scipy's butter(2, 70,
//      "highpass", output="sos") designs it; run in double from zero state,
//      stored as float), then scaled by min(10^(-26/20) / rms, 1 / peak):
//      -26 dBFS loudness unless that would clip.
//   2. ReferenceMel::Compute: reflect-pad (n_fft - hop) / 2 samples on each
//      side; frames of n_fft every hop, times a periodic Hann window of
//      win_size centred in n_fft; magnitude sqrt(re^2 + im^2 + 1e-9);
//      Slaney mel filters (layers/mel_filterbank.h) over [fmin, fmax];
//      ln(max(mel, 1e-5)). [num_mels, (n + 2 pad - n_fft) / hop + 1].
//
// Errors (InvalidArgument): a silent clip (a high-passed peak below 1e-6;
// OmniServe asserts on exact silence), non-finite samples, a clip shorter
// than two frames.
// Thread-safety: NormalizeReferenceClip is pure; ReferenceMel's construction
// plans an FFT under layers::FftwPlannerMutex(), Compute is const and may
// run concurrently.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "core/status.h"
#include "tensor/tensor.h"

namespace omni::models {

struct ReferenceMelConfig {
  int sample_rate = 24000;
  int n_fft = 1024, hop_size = 256, win_size = 1024;
  int num_mels = 100;
  double fmin = 0, fmax = 12000;
};

// The 70 Hz high-pass biquad at `sample_rate`: {b0, b1, b2} and {1, a1, a2}.
struct Biquad {
  double b[3] = {0, 0, 0};
  double a[3] = {1, 0, 0};
};
Biquad ReferenceHighPass(int sample_rate);

StatusOr<std::vector<float>> NormalizeReferenceClip(std::span<const float> samples, int sample_rate);

class ReferenceMel {
 public:
  explicit ReferenceMel(const ReferenceMelConfig& config);
  ~ReferenceMel();
  ReferenceMel(const ReferenceMel&) = delete;
  ReferenceMel& operator=(const ReferenceMel&) = delete;

  const ReferenceMelConfig& config() const { return config_; }
  StatusOr<Tensor> Compute(std::span<const float> samples) const;

 private:
  ReferenceMelConfig config_;
  std::vector<float> window_;  // [n_fft]
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace omni::models
