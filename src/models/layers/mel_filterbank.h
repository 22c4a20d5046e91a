// Mel filterbanks as librosa.filters.mel builds them by default (htk=False,
// norm="slaney"), the same as torchaudio's melscale_fbanks(norm="slaney",
// mel_scale="slaney"): Slaney's mel scale (linear, 3 mels per 200 Hz, below
// 1 kHz; logarithmic above, 27 mels per factor 6.4), n_mels + 2 edges evenly
// spaced in mel over [fmin, fmax], filter m a triangle over edges m, m+1,
// m+2 scaled by 2 / (its width in Hz). Built in double, stored as float.
//
//   MelFilterbank fb = MelFilterbank::Slaney(24000, 1024, 100, 0, 12000);
//   fb.Apply(spectrum, out);  // spectrum [n_fft/2 + 1] -> out [n_mels]
//
// Used by the audio encoder's Whisper features and the audio decoder's
// reference-clip features. Thread-safety: immutable after construction.
#pragma once

#include <mutex>
#include <span>
#include <vector>

namespace omni::models::layers {

class MelFilterbank {
 public:
  static MelFilterbank Slaney(int sample_rate, int n_fft, int n_mels, double fmin, double fmax);

  int n_mels() const { return n_mels_; }
  int n_freqs() const { return n_freqs_; }
  // [n_mels, n_freqs] row-major: weight of FFT bin k in filter m.
  std::span<const float> weights() const { return weights_; }

  // out[m] = sum_k weight[m][k] * spectrum[k], over each filter's non-zero
  // bins only (in ascending k), spectrum [n_freqs], out [n_mels].
  void Apply(const float* spectrum, float* out) const;

 private:
  struct Span {
    int begin = 0, end = 0;  // the filter's non-zero bins; empty when begin >= end
  };
  int n_mels_ = 0, n_freqs_ = 0;
  std::vector<float> weights_;
  std::vector<Span> spans_;
};

// FFTW's planner is not thread-safe: every FFTW plan in the process is made
// and destroyed under this mutex (the mel features' FFTs are FFTW's).
std::mutex& FftwPlannerMutex();

}  // namespace omni::models::layers
