// The FFmpeg half of audio_encode.h (FLAC, MP3, Ogg Opus, ADTS AAC); not for
// use outside src/media. audio_encode.cc checks the arguments and owns WAV
// and raw PCM; this is reached only with a valid rate and an FFmpeg format.
#pragma once

#include <memory>

#include "core/status.h"
#include "media/audio_encode.h"

namespace omni::media::internal {

// Where the container's bytes go.
enum class EncodeOutput {
  // Handed out by each Push; the output cannot be seeked, so headers that
  // muxers fill in at the end (FLAC's sample count, MP3's Xing frame, the
  // WAV sizes) are left out or left "unknown".
  kStream,
  // Held until Finish, which returns the whole file with those headers
  // filled in; Push returns nothing.
  kWholeFile,
};

// `format` is kFlac, kMp3, kOpus or kAac; `sample_rate` within
// kMinEncodeSampleRate..kMaxEncodeSampleRate (checked by the caller).
StatusOr<std::unique_ptr<AudioStreamEncoder>> CreateFfmpegAudioEncoder(AudioFormat format, int sample_rate,
                                                                       EncodeOutput output);

}  // namespace omni::media::internal
