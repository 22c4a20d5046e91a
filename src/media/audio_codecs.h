// The pieces behind DecodeAudio (audio.h); not for use outside src/media.
//
// A decoder (libsndfile's or FFmpeg's) reads the header, hands the stored
// rate, channel count and claimed duration to a MonoAccumulator, then feeds
// it the decoded frames; the accumulator averages the channels, enforces the
// duration limit as the frames arrive, refuses non-finite samples and
// resamples to the requested rate as it goes, so no more than the result is
// ever held.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "media/audio.h"
#include "media/audio_resample.h"

namespace omni::media::internal {

// Sample rates and channel counts a stored stream may have; outside them
// a file is refused before decoding (libsndfile's own channel limit is 1024).
inline constexpr int kMinSourceRate = 1000;
inline constexpr int kMaxSourceRate = 768'000;
inline constexpr int kMaxChannels = 1024;

// What a decoder hands back: the result at the requested rate and what it
// learnt (the kind is DecodeAudio's).
struct DecodedAudio {
  Audio audio;
  std::string codec;
  int source_rate = 0;
  int channels = 0;
  int64_t source_frames = 0;  // as decoded, at source_rate
};

class MonoAccumulator {
 public:
  // `label` names the input in messages: "WAV audio", "MP4 video's audio".
  MonoAccumulator(std::string label, const AudioDecodeOptions& options) : label_(std::move(label)), options_(options) {}

  // Once, before any frames: the stream as stored, and the duration its
  // header claims (a negative value when it claims none). Refuses a rate or
  // channel count out of range and a claimed duration over the limit.
  Status Start(int source_rate, int channels, double header_seconds);
  bool started() const { return source_rate_ > 0; }

  // Frames [frames][channels()] interleaved, averaged here.
  Status AddInterleaved(std::span<const float> interleaved);
  // Frames a decoder has averaged itself.
  Status AddMono(std::span<const float> mono);

  int channels() const { return channels_; }
  int source_rate() const { return source_rate_; }
  int64_t frames() const { return frames_; }
  const std::string& label() const { return label_; }

  // The samples at options.sample_rate; InvalidArgument when there are none.
  StatusOr<DecodedAudio> Finish(std::string codec) &&;

 private:
  std::string label_;
  AudioDecodeOptions options_;
  int source_rate_ = 0;
  int channels_ = 0;
  int64_t frames_ = 0;
  double max_frames_ = 0;                 // options.max_seconds * source_rate
  std::optional<SoxrResampler> resampler_;  // absent when the rates match
  std::vector<float> same_rate_;            // the samples when they do
  std::vector<float> mono_;                 // scratch for AddInterleaved
};

// The refusals, worded alike for every format ("the WAV audio is truncated").
Status TruncatedAudio(std::string_view label);
// PayloadTooLarge when a header claims more than options.max_seconds.
Status CheckClaimedDuration(std::string_view label, double seconds, const AudioDecodeOptions& options);
Status CorruptAudio(std::string_view label, std::string_view detail);
Status UnsupportedAudio(std::string_view message);

// WAV, FLAC and MP3 through libsndfile from memory. std::nullopt when
// libsndfile will not open the bytes (an unknown codec in a WAV, a cut
// header): FFmpeg then tries. `kind` is one of those three.
std::optional<StatusOr<DecodedAudio>> DecodeWithSndfile(std::string_view bytes, MediaKind kind,
                                                        std::string_view label, const AudioDecodeOptions& options);

// The best audio stream of any container FFmpeg demuxes for `kind`.
StatusOr<DecodedAudio> DecodeWithFfmpeg(std::string_view bytes, MediaKind kind, std::string_view label,
                                        const AudioDecodeOptions& options);

}  // namespace omni::media::internal
