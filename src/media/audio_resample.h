// Mono resampling with libsoxr at its HQ recipe (SOXR_HQ: 20-bit precision,
// a linear-phase filter passing 91% of the lower Nyquist frequency), what
// librosa.resample(res_type="soxr_hq") runs and so what OmniServe's
// librosa.load(sr=16000) gives.
//
//   OMNI_ASSIGN_OR_RETURN(SoxrResampler r, SoxrResampler::Create(44100, 16000));
//   OMNI_RETURN_IF_ERROR(r.Push(block));  // as blocks are decoded
//   OMNI_ASSIGN_OR_RETURN(std::vector<float> out, std::move(r).Finish());
//
// soxr aligns its output with its input (the filter's delay is taken out),
// and the result has ceil(n_in * out_rate / in_rate) samples, the length
// librosa.resample fixes soxr's output to (zero-padded if soxr gives fewer).
// Pushing the input in blocks gives the same samples as pushing it at once.
// Thread-safety: a SoxrResampler is used by one thread at a time; separate
// objects share nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/status.h"

struct soxr;  // libsoxr's handle, kept out of this header

namespace omni::media {

class SoxrResampler {
 public:
  // Rates in Hz, each 1..1'000'000.
  static StatusOr<SoxrResampler> Create(int in_rate, int out_rate);

  Status Push(std::span<const float> in);
  // Flushes the filter; the resampler is spent afterwards.
  StatusOr<std::vector<float>> Finish() &&;

  int64_t input_samples() const { return input_samples_; }
  size_t output_samples() const { return out_.size(); }

 private:
  struct Deleter {
    void operator()(soxr* s) const;
  };
  SoxrResampler(soxr* s, int in_rate, int out_rate) : soxr_(s), in_rate_(in_rate), out_rate_(out_rate) {}

  std::unique_ptr<soxr, Deleter> soxr_;
  int in_rate_ = 0;
  int out_rate_ = 0;
  int64_t input_samples_ = 0;
  std::vector<float> out_;  // [samples so far]
};

// The whole of `in` at once.
StatusOr<std::vector<float>> ResampleMono(std::span<const float> in, int in_rate, int out_rate);

}  // namespace omni::media
