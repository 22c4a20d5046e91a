#include "models/audio_decoder/speaker_reference.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <numbers>

#include <fftw3.h>
#include <fmt/core.h>

#include "core/check.h"
#include "models/layers/mel_filterbank.h"

namespace omni::models {
namespace {

constexpr double kHighPassHz = 70.0;
constexpr double kLoudnessDb = -26.0;
constexpr double kSilentPeak = 1e-6;
constexpr float kMelFloor = 1e-5f;
constexpr float kMagnitudeEps = 1e-9f;

struct FftwFree {
  void operator()(void* p) const { fftwf_free(p); }
};

}  // namespace

Biquad ReferenceHighPass(int sample_rate) {
  // Analog Butterworth high-pass s^2 / (s^2 + sqrt(2) w s + w^2) with the
  // cut-off pre-warped, w = 2 fs tan(pi fc / fs); s = 2 fs (z - 1) / (z + 1)
  // gives, with K = tan(pi fc / fs), the biquad below.
  const double k = std::tan(std::numbers::pi * kHighPassHz / sample_rate);
  const double q = std::numbers::sqrt2;
  const double norm = 1.0 / (1.0 + q * k + k * k);
  Biquad f;
  f.b[0] = norm;
  f.b[1] = -2.0 * norm;
  f.b[2] = norm;
  f.a[1] = 2.0 * (k * k - 1.0) * norm;
  f.a[2] = (1.0 - q * k + k * k) * norm;
  return f;
}

StatusOr<std::vector<float>> NormalizeReferenceClip(std::span<const float> samples, int sample_rate) {
  for (size_t i = 0; i < samples.size(); ++i) {
    if (!std::isfinite(samples[i])) return InvalidArgument(fmt::format("reference audio sample {} is not finite", i));
  }
  const Biquad f = ReferenceHighPass(sample_rate);
  std::vector<float> out(samples.size());
  double z1 = 0, z2 = 0;  // transposed direct form II
  double energy = 0, peak = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const double x = samples[i];
    const double y = f.b[0] * x + z1;
    z1 = f.b[1] * x - f.a[1] * y + z2;
    z2 = f.b[2] * x - f.a[2] * y;
    out[i] = static_cast<float>(y);
    energy += static_cast<double>(out[i]) * out[i];
    peak = std::max(peak, static_cast<double>(std::abs(out[i])));
  }
  // Below -120 dBFS there is no voice to clone, and the gain would overflow.
  if (samples.empty() || peak < kSilentPeak) {
    return InvalidArgument("the reference audio is silent (after a 70 Hz high-pass); a voice to clone is needed");
  }
  const double rms = std::sqrt(energy / static_cast<double>(samples.size()));
  const double gain = std::min(std::pow(10.0, kLoudnessDb / 20.0) / rms, 1.0 / peak);
  for (float& v : out) v = static_cast<float>(v * gain);
  return out;
}

struct ReferenceMel::Impl {
  layers::MelFilterbank filterbank;
  fftwf_plan plan = nullptr;
};

ReferenceMel::ReferenceMel(const ReferenceMelConfig& c) : config_(c), window_(static_cast<size_t>(c.n_fft), 0.0f) {
  OMNI_CHECK(c.win_size > 0 && c.win_size <= c.n_fft && c.hop_size > 0 && c.hop_size <= c.n_fft)
      << "reference mel: window, hop and FFT sizes";
  // torch.stft centres a shorter window in the frame.
  const int offset = (c.n_fft - c.win_size) / 2;
  for (int k = 0; k < c.win_size; ++k) {
    window_[offset + k] = static_cast<float>(0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * k / c.win_size));
  }
  impl_ = std::make_unique<Impl>();
  impl_->filterbank = layers::MelFilterbank::Slaney(c.sample_rate, c.n_fft, c.num_mels, c.fmin, c.fmax);
  std::unique_ptr<float[], FftwFree> in(fftwf_alloc_real(c.n_fft));
  std::unique_ptr<fftwf_complex[], FftwFree> out(fftwf_alloc_complex(c.n_fft / 2 + 1));
  std::lock_guard<std::mutex> lock(layers::FftwPlannerMutex());
  impl_->plan = fftwf_plan_dft_r2c_1d(c.n_fft, in.get(), out.get(), FFTW_ESTIMATE);
  OMNI_CHECK(impl_->plan != nullptr) << "fftwf_plan_dft_r2c_1d(" << c.n_fft << ")";
}

ReferenceMel::~ReferenceMel() {
  std::lock_guard<std::mutex> lock(layers::FftwPlannerMutex());
  fftwf_destroy_plan(impl_->plan);
}

StatusOr<Tensor> ReferenceMel::Compute(std::span<const float> samples) const {
  const ReferenceMelConfig& c = config_;
  const int64_t n = std::ssize(samples), pad = (c.n_fft - c.hop_size) / 2;
  // Two frames at least: the speaker encoder's statistics need them.
  const int64_t min_samples = std::max<int64_t>(pad + 1, c.n_fft + c.hop_size - 2 * pad);
  if (n < min_samples) {
    return InvalidArgument(fmt::format("the reference audio is too short: {} samples at {} Hz, at least {} are needed",
                                       n, c.sample_rate, min_samples));
  }
  const int64_t frames = (n + 2 * pad - c.n_fft) / c.hop_size + 1;
  const int freqs = c.n_fft / 2 + 1;
  Tensor mel = Tensor::Empty({c.num_mels, frames}, DType::kF32);
  std::unique_ptr<float[], FftwFree> frame(fftwf_alloc_real(c.n_fft));
  std::unique_ptr<fftwf_complex[], FftwFree> spectrum(fftwf_alloc_complex(freqs));
  std::vector<float> magnitude(static_cast<size_t>(freqs)), bins(static_cast<size_t>(c.num_mels));
  float* out = mel.data<float>();
  for (int64_t t = 0; t < frames; ++t) {
    for (int k = 0; k < c.n_fft; ++k) {
      int64_t i = t * c.hop_size + k - pad;  // reflected at both ends
      if (i < 0) i = -i;
      if (i >= n) i = 2 * (n - 1) - i;
      frame[k] = window_[k] * samples[i];
    }
    fftwf_execute_dft_r2c(impl_->plan, frame.get(), spectrum.get());
    for (int k = 0; k < freqs; ++k) {
      magnitude[k] = std::sqrt(spectrum[k][0] * spectrum[k][0] + spectrum[k][1] * spectrum[k][1] + kMagnitudeEps);
    }
    impl_->filterbank.Apply(magnitude.data(), bins.data());
    for (int m = 0; m < c.num_mels; ++m) out[m * frames + t] = std::log(std::max(bins[m], kMelFloor));
  }
  return mel;
}

}  // namespace omni::models
