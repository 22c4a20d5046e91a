#include "media/audio.h"

#include <cmath>

#include <fmt/core.h>

#include "media/audio_codecs.h"

namespace omni::media {
namespace internal {

Status TruncatedAudio(std::string_view label) { return InvalidArgument(fmt::format("the {} is truncated", label)); }

Status CorruptAudio(std::string_view label, std::string_view detail) {
  return InvalidArgument(fmt::format("the {} is corrupt: {}", label, detail));
}

Status UnsupportedAudio(std::string_view message) {
  return Status(StatusCode::kUnsupportedMedia, std::string(message));
}

Status CheckClaimedDuration(std::string_view label, double seconds, const AudioDecodeOptions& options) {
  if (seconds <= options.max_seconds) return Status::Ok();
  return PayloadTooLarge(fmt::format("the {} lasts {:.1f} s, over the limit of {:g} s", label, seconds,
                                     options.max_seconds));
}

Status MonoAccumulator::Start(int source_rate, int channels, double header_seconds) {
  OMNI_CHECK(!started()) << "MonoAccumulator started twice";
  if (channels < 1 || channels > kMaxChannels) {
    return CorruptAudio(label_, fmt::format("it declares {} channels", channels));
  }
  if (source_rate < kMinSourceRate || source_rate > kMaxSourceRate) {
    return UnsupportedAudio(fmt::format("the {} has a sample rate of {} Hz; omniserve reads {}..{} Hz", label_,
                                        source_rate, kMinSourceRate, kMaxSourceRate));
  }
  OMNI_RETURN_IF_ERROR(CheckClaimedDuration(label_, header_seconds, options_));
  source_rate_ = source_rate;
  channels_ = channels;
  max_frames_ = options_.max_seconds * source_rate;
  if (source_rate != options_.sample_rate) {
    OMNI_ASSIGN_OR_RETURN(SoxrResampler resampler, SoxrResampler::Create(source_rate, options_.sample_rate));
    resampler_.emplace(std::move(resampler));
  }
  return Status::Ok();
}

Status MonoAccumulator::AddInterleaved(std::span<const float> interleaved) {
  OMNI_CHECK(started() && interleaved.size() % channels_ == 0) << "frames before Start or cut mid-frame";
  if (channels_ == 1) return AddMono(interleaved);
  const size_t frames = interleaved.size() / channels_;
  mono_.resize(frames);
  for (size_t i = 0; i < frames; ++i) {
    // librosa.to_mono is np.mean over the channels; the sum in double keeps
    // it exact for two channels and within an ulp otherwise.
    double sum = 0;
    for (int c = 0; c < channels_; ++c) sum += interleaved[i * channels_ + c];
    mono_[i] = static_cast<float>(sum / channels_);
  }
  return AddMono(mono_);
}

Status MonoAccumulator::AddMono(std::span<const float> mono) {
  OMNI_CHECK(started()) << "frames before Start";
  frames_ += static_cast<int64_t>(mono.size());
  if (static_cast<double>(frames_) > max_frames_) {
    // The header claimed less (or nothing): stop before holding more.
    return PayloadTooLarge(fmt::format("the {} lasts more than the limit of {:g} s", label_, options_.max_seconds));
  }
  for (float v : mono) {
    if (!std::isfinite(v)) return CorruptAudio(label_, "it holds a non-finite sample (NaN or infinity)");
  }
  if (resampler_) return resampler_->Push(mono);
  same_rate_.insert(same_rate_.end(), mono.begin(), mono.end());
  return Status::Ok();
}

StatusOr<DecodedAudio> MonoAccumulator::Finish(std::string codec) && {
  if (frames_ == 0) return InvalidArgument(fmt::format("the {} contains no audio (0 samples)", label_));
  DecodedAudio out;
  out.codec = std::move(codec);
  out.source_rate = source_rate_;
  out.channels = channels_;
  out.source_frames = frames_;
  out.audio.sample_rate = options_.sample_rate;
  if (resampler_) {
    OMNI_ASSIGN_OR_RETURN(out.audio.samples, std::move(*resampler_).Finish());
    resampler_.reset();
    // Finite input near the float limit can overflow in the filter.
    for (float v : out.audio.samples) {
      if (!std::isfinite(v)) return CorruptAudio(label_, "its samples are too large to resample");
    }
  } else {
    out.audio.samples = std::move(same_rate_);
  }
  return out;
}

}  // namespace internal

namespace {

constexpr std::string_view kSupported = "WAV, FLAC, Ogg (Vorbis, Opus), MP3, M4A/AAC, WebM, or a video with sound";

Status NotAudio(std::string_view bytes, MediaKind kind) {
  const MediaKindDescription& d = MediaKindInfo(kind);
  if (d.cls == MediaClass::kImage) {
    return internal::UnsupportedAudio(fmt::format("the data is an image ({}), not audio; send {}", d.name, kSupported));
  }
  return internal::UnsupportedAudio(fmt::format("the data is not audio omniserve can read ({}); send {}",
                                                DescribeUnknownBytes(bytes), kSupported));
}

Status CheckOptions(const AudioDecodeOptions& options) {
  if (options.sample_rate < 8000 || options.sample_rate > 192'000) {
    return InvalidArgument(fmt::format("an audio sample rate of {} Hz was asked for; 8000..192000 Hz are possible",
                                       options.sample_rate));
  }
  if (!(options.max_seconds > 0) || !std::isfinite(options.max_seconds)) {
    return InvalidArgument(fmt::format("the audio length limit {} s is not a positive number", options.max_seconds));
  }
  return Status::Ok();
}

// Ogg is left to FFmpeg: libsndfile 1.2.0 leaks the Vorbis decoder's setup
// (about 6 KiB a file) when an Ogg Vorbis file's headers are damaged, which
// a client could repeat at will. FFmpeg's decoders give the same samples to
// 2e-7 (Vorbis may end up to half a short block earlier).
bool ReadBySndfile(MediaKind kind) {
  return kind == MediaKind::kWav || kind == MediaKind::kFlac || kind == MediaKind::kMp3;
}

}  // namespace

StatusOr<Audio> DecodeAudio(std::string_view bytes, const AudioDecodeOptions& options, AudioInfo* info) {
  OMNI_RETURN_IF_ERROR(CheckOptions(options));
  if (bytes.empty()) return InvalidArgument("the audio is empty (0 bytes)");
  const MediaKind kind = SniffMediaKind(bytes);
  const MediaKindDescription& d = MediaKindInfo(kind);
  if (d.cls != MediaClass::kAudio && d.cls != MediaClass::kVideo) return NotAudio(bytes, kind);
  const std::string label =
      d.cls == MediaClass::kAudio ? fmt::format("{} audio", d.name) : fmt::format("{} video's audio", d.name);
  std::optional<StatusOr<internal::DecodedAudio>> decoded;
  if (ReadBySndfile(kind)) decoded = internal::DecodeWithSndfile(bytes, kind, label, options);
  if (!decoded) decoded = internal::DecodeWithFfmpeg(bytes, kind, label, options);
  if (!decoded->ok()) return decoded->status();
  internal::DecodedAudio& out = **decoded;
  if (info != nullptr) {
    *info = {.kind = kind, .codec = out.codec, .source_rate = out.source_rate, .channels = out.channels,
             .source_seconds = static_cast<double>(out.source_frames) / out.source_rate};
  }
  return std::move(out.audio);
}

}  // namespace omni::media
