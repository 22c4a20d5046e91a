// libFuzzer target for the media layer's audio path: the sniffer, the WAV
// chunk walk, libsndfile (WAV, FLAC, Ogg, MP3) and FFmpeg (M4A/AAC, WebM,
// Matroska, MP4, AVI and whatever libsndfile refuses) from memory, the
// downmix and the soxr resampling (the system libraries are not
// instrumented: the fuzzer sees our code's branches, ASan our reads of
// their output).
//
// For any input: DecodeAudio returns audio or a client error (InvalidArgument,
// UnsupportedMedia, PayloadTooLarge) with a message, never crashes, reads out
// of bounds or holds more than the length limit; the audio is at the asked
// rate, finite, and as long as the decoded source says.
#include <cmath>
#include <cstdint>
#include <string_view>

#include "core/check.h"
#include "media/audio.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace omni;
  using namespace omni::media;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // A short limit keeps every accepted input cheap (and checks the limit).
  const AudioDecodeOptions options{.sample_rate = 16000, .max_seconds = 5};
  AudioInfo info;
  StatusOr<Audio> audio = DecodeAudio(bytes, options, &info);
  if (!audio.ok()) {
    const StatusCode code = audio.status().code();
    OMNI_CHECK(!audio.status().message().empty());
    OMNI_CHECK(code == StatusCode::kInvalidArgument || code == StatusCode::kUnsupportedMedia ||
               code == StatusCode::kPayloadTooLarge || code == StatusCode::kResourceExhausted)
        << audio.status().ToString();
    return 0;
  }
  OMNI_CHECK_EQ(audio->sample_rate, options.sample_rate);
  OMNI_CHECK(!audio->samples.empty());
  OMNI_CHECK(info.kind == SniffMediaKind(bytes));
  OMNI_CHECK(info.channels >= 1 && info.source_rate >= 1000);
  OMNI_CHECK(info.source_seconds > 0 && info.source_seconds <= options.max_seconds);
  // ceil(frames * 16000 / source_rate), the frames recovered from seconds.
  const double frames = std::round(info.source_seconds * info.source_rate);
  const double want = std::ceil(frames * options.sample_rate / info.source_rate - 1e-9);
  OMNI_CHECK(std::abs(static_cast<double>(audio->samples.size()) - want) <= 1.0)
      << audio->samples.size() << " samples for " << frames << " frames at " << info.source_rate << " Hz";
  for (float v : audio->samples) OMNI_CHECK(std::isfinite(v));
  return 0;
}
