#include "media/audio_resample.h"

#include <soxr.h>

#include <fmt/core.h>

namespace omni::media {
namespace {

// Output room for `n` more input samples: soxr holds back part of the
// input for its filter, so a call may give a little more than the ratio
// says once earlier input is released.
size_t OutputRoom(size_t n, int in_rate, int out_rate) {
  return static_cast<size_t>(static_cast<double>(n) * out_rate / in_rate) + 64;
}

}  // namespace

void SoxrResampler::Deleter::operator()(soxr* s) const { soxr_delete(s); }

StatusOr<SoxrResampler> SoxrResampler::Create(int in_rate, int out_rate) {
  if (in_rate < 1 || in_rate > 1'000'000 || out_rate < 1 || out_rate > 1'000'000) {
    return InvalidArgument(fmt::format("cannot resample from {} Hz to {} Hz", in_rate, out_rate));
  }
  // The io and quality specs are soxr_create's defaults spelled out:
  // float in, float out, SOXR_HQ with no flags, one thread.
  const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  const soxr_quality_spec_t quality = soxr_quality_spec(SOXR_HQ, 0);
  const soxr_runtime_spec_t runtime = soxr_runtime_spec(1);
  soxr_error_t error = nullptr;
  soxr_t s = soxr_create(in_rate, out_rate, 1, &error, &io, &quality, &runtime);
  if (s == nullptr || error != nullptr) {
    if (s != nullptr) soxr_delete(s);
    return Internal(fmt::format("libsoxr could not start ({} Hz to {} Hz): {}", in_rate, out_rate,
                                soxr_strerror(error)));
  }
  return SoxrResampler(s, in_rate, out_rate);
}

Status SoxrResampler::Push(std::span<const float> in) {
  OMNI_CHECK(soxr_ != nullptr) << "SoxrResampler used after Finish";
  input_samples_ += static_cast<int64_t>(in.size());
  size_t used = 0;
  while (used < in.size()) {
    const size_t room = OutputRoom(in.size() - used, in_rate_, out_rate_);
    const size_t at = out_.size();
    out_.resize(at + room);
    size_t idone = 0, odone = 0;
    const soxr_error_t error =
        soxr_process(soxr_.get(), in.data() + used, in.size() - used, &idone, out_.data() + at, room, &odone);
    out_.resize(at + odone);
    if (error != nullptr) return Internal(fmt::format("libsoxr failed: {}", error));
    used += idone;
  }
  return Status::Ok();
}

StatusOr<std::vector<float>> SoxrResampler::Finish() && {
  OMNI_CHECK(soxr_ != nullptr) << "SoxrResampler finished twice";
  // librosa.resample's length: ceil(n * out / in).
  const int64_t want = (input_samples_ * out_rate_ + in_rate_ - 1) / in_rate_;
  constexpr size_t kFlushBlock = 4096;
  while (static_cast<int64_t>(out_.size()) < want) {
    const size_t at = out_.size();
    out_.resize(at + kFlushBlock);
    size_t odone = 0;
    const soxr_error_t error = soxr_process(soxr_.get(), nullptr, 0, nullptr, out_.data() + at, kFlushBlock, &odone);
    out_.resize(at + odone);
    if (error != nullptr) return Internal(fmt::format("libsoxr failed: {}", error));
    if (odone == 0) break;
  }
  soxr_.reset();
  out_.resize(static_cast<size_t>(want), 0.0f);
  return std::move(out_);
}

StatusOr<std::vector<float>> ResampleMono(std::span<const float> in, int in_rate, int out_rate) {
  OMNI_ASSIGN_OR_RETURN(SoxrResampler resampler, SoxrResampler::Create(in_rate, out_rate));
  OMNI_RETURN_IF_ERROR(resampler.Push(in));
  return std::move(resampler).Finish();
}

}  // namespace omni::media
