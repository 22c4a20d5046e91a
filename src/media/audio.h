// Decoded audio: mono float samples at the rate an audio encoder takes.
//
//   StatusOr<Audio> audio = DecodeAudio(bytes, {.sample_rate = 16000, .max_seconds = 600});
//
// OmniServe loads audio with librosa.load(path, sr=16000, mono=True): the
// file decoded to float, the channels averaged, then resampled by soxr at
// its "HQ" recipe. DecodeAudio does the same from untrusted bytes:
//  - the kind is sniffed from the bytes (media_kind.h), never taken from a
//    name or a content type;
//  - WAV, FLAC and MP3 are read by libsndfile, as librosa's soundfile
//    backend reads them (integer PCM scaled by 1/32768, 1/2^31 for 24- and
//    32-bit; float PCM as stored);
//  - everything else (Ogg Vorbis/Opus, M4A/AAC, WebM/Matroska,
//    MP4/QuickTime/AVI soundtracks), and any of the above libsndfile
//    refuses, by FFmpeg's libraries: the best audio stream of the
//    container, its demuxer the one the sniffed kind names and its codec one
//    of a list of common ones. (Ogg would be libsndfile's too, as in
//    librosa, but libsndfile 1.2.0 leaks memory on damaged Ogg Vorbis
//    headers; FFmpeg's samples agree to 2e-7, see audio.cc);
//  - the channels are averaged to mono as they are decoded, then libsoxr
//    resamples at SOXR_HQ to options.sample_rate (skipped when the rate
//    matches). The result has ceil(frames * rate / source_rate) samples, the
//    length librosa.resample fixes its output to.
// The duration is checked against max_seconds from the header before any
// sample is decoded, and again while decoding (a header can lie), so memory
// stays bounded by max_seconds whatever the input.
//
// Errors: InvalidArgument for empty, truncated or corrupt data ("the WAV
// audio is truncated", "the MP3 audio is corrupt: ..."), for a file with no
// samples ("contains no audio") and for non-finite samples; UnsupportedMedia
// for bytes that are not audio (an image, text: named), for a codec outside
// the list and for a video without an audio stream; PayloadTooLarge over
// max_seconds.
// Thread-safety: pure functions; no global state of ours (FFmpeg's log level
// is set once, quiet).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "media/media_kind.h"

namespace omni::media {

struct Audio {
  int sample_rate = 0;
  std::vector<float> samples;  // [num_samples], mono, finite

  double seconds() const { return sample_rate > 0 ? static_cast<double>(samples.size()) / sample_rate : 0.0; }
};

struct AudioDecodeOptions {
  int sample_rate = 16000;   // of the result, 8000..192000 Hz
  double max_seconds = 600;  // longer audio is refused (PayloadTooLarge)
};

// What DecodeAudio learnt besides the samples, for answers and logs.
struct AudioInfo {
  MediaKind kind = MediaKind::kUnknown;  // as sniffed (kMp4 for a video's soundtrack)
  std::string codec;                     // "pcm_s16le", "flac", "vorbis", "opus", "mp3", "aac", ...
  int source_rate = 0;                   // Hz, as stored
  int channels = 0;                      // as stored, before the downmix
  double source_seconds = 0;             // as decoded
};

StatusOr<Audio> DecodeAudio(std::string_view bytes, const AudioDecodeOptions& options = {},
                            AudioInfo* info = nullptr);

}  // namespace omni::media
