#include "models/layers/mel_filterbank.h"

#include <algorithm>
#include <cmath>

namespace omni::models::layers {
namespace {

constexpr double kHzPerMel = 200.0 / 3.0;
constexpr double kLogStartHz = 1000.0;
constexpr double kLogStartMel = kLogStartHz / kHzPerMel;  // 15

double LogStep() { return std::log(6.4) / 27.0; }

double HzToMel(double hz) {
  if (hz < kLogStartHz) return hz / kHzPerMel;
  return kLogStartMel + std::log(hz / kLogStartHz) / LogStep();
}

double MelToHz(double mel) {
  if (mel < kLogStartMel) return mel * kHzPerMel;
  return kLogStartHz * std::exp(LogStep() * (mel - kLogStartMel));
}

}  // namespace

std::mutex& FftwPlannerMutex() {
  static std::mutex mu;
  return mu;
}

MelFilterbank MelFilterbank::Slaney(int sample_rate, int n_fft, int n_mels, double fmin, double fmax) {
  MelFilterbank fb;
  fb.n_mels_ = n_mels;
  fb.n_freqs_ = n_fft / 2 + 1;
  fb.weights_.assign(static_cast<size_t>(n_mels) * fb.n_freqs_, 0.0f);
  fb.spans_.assign(static_cast<size_t>(n_mels), Span{});
  const double mel_lo = HzToMel(fmin), mel_hi = HzToMel(fmax);
  std::vector<double> edges(static_cast<size_t>(n_mels) + 2);
  for (int i = 0; i < n_mels + 2; ++i) edges[i] = MelToHz(mel_lo + (mel_hi - mel_lo) * i / (n_mels + 1));
  for (int m = 0; m < n_mels; ++m) {
    const double left = edges[m], center = edges[m + 1], right = edges[m + 2];
    const double norm = 2.0 / (right - left);
    Span span{.begin = fb.n_freqs_, .end = 0};
    for (int k = 0; k < fb.n_freqs_; ++k) {
      const double hz = static_cast<double>(k) * sample_rate / n_fft;
      const double rising = (hz - left) / (center - left);
      const double falling = (right - hz) / (right - center);
      const double w = std::max(0.0, std::min(rising, falling)) * norm;
      fb.weights_[static_cast<size_t>(m) * fb.n_freqs_ + k] = static_cast<float>(w);
      if (w > 0.0) {
        span.begin = std::min(span.begin, k);
        span.end = k + 1;
      }
    }
    fb.spans_[m] = span;
  }
  return fb;
}

void MelFilterbank::Apply(const float* spectrum, float* out) const {
  for (int m = 0; m < n_mels_; ++m) {
    const float* w = &weights_[static_cast<size_t>(m) * n_freqs_];
    float sum = 0.0f;
    for (int k = spans_[m].begin; k < spans_[m].end; ++k) sum += w[k] * spectrum[k];
    out[m] = sum;
  }
}

}  // namespace omni::models::layers
