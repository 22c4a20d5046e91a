// Encoding generated speech for clients: mono 16-bit PCM from a vocoder
// becomes the container a request asked for (OpenAI's `response_format`).
//
//   OMNI_ASSIGN_OR_RETURN(AudioFormat format, ParseAudioFormat(request.response_format));
//   OMNI_ASSIGN_OR_RETURN(auto encoder, AudioStreamEncoder::Create(format, 24000));
//   for (chunk : vocoder) { OMNI_ASSIGN_OR_RETURN(std::string bytes, encoder->Push(chunk)); Send(bytes); }
//   OMNI_ASSIGN_OR_RETURN(std::string tail, encoder->Finish()); Send(tail);
//
// Per format:
//  - pcm16: the samples, little-endian, no header.
//  - wav: a 44-byte RIFF/WAVE header (PCM, 16-bit, mono), then the samples.
//    EncodeAudio writes the real sizes. A streaming encoder cannot know them
//    when its first bytes leave, so it writes 0xFFFFFFFF as the RIFF and
//    'data' sizes (what streaming WAV servers send; FFmpeg and libsndfile
//    read such a file to its end); a stream that never got a sample ends
//    as an exact, empty WAV.
//  - flac (FFmpeg's "flac"), mp3 ("libmp3lame", 128 kb/s CBR), opus
//    ("libopus" in Ogg, 64 kb/s, 20 ms frames), aac (FFmpeg's native "aac"
//    in ADTS, 96 kb/s LC): through libavcodec and libavformat, written to
//    memory, packets drained as the encoder releases them. An encoder that
//    does not take `sample_rate` gets the audio resampled by libsoxr (HQ) to
//    the nearest rate it does take: Opus takes 8, 12, 16, 24 or 48 kHz, MP3
//    8..48 kHz, AAC the ADTS rates up to 96 kHz.
//    Streamed FLAC carries no sample count or MD5 in its STREAMINFO and
//    streamed MP3 no Xing/LAME header (both are written by seeking back,
//    which a stream cannot do); EncodeAudio writes them, so its MP3 says its
//    exact length to gapless decoders.
//  - Ogg Opus always plays at 48 kHz (RFC 7845 5.1): ffprobe reports 48000
//    whatever rate went in; the input rate is kept in the OpusHead.
// Lossy codecs add the encoder's priming and padding: Opus and MP3 (one
// shot) carry it in the container so decoders trim it; ADTS cannot, and AAC
// decodes up to 2048 samples (1024 priming, up to 1023 padding) longer.
//
// Errors: InvalidArgument for an unknown format name or a sample rate
// outside 8000..192000 Hz; Unavailable when this FFmpeg build lacks the
// encoder (named); Internal with FFmpeg's message when a library fails;
// FailedPrecondition for Push or Finish after Finish.
// Thread-safety: an encoder is used by one thread at a time; encoders share
// no state (FFmpeg's log level is set once, quiet).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"

namespace omni::media {

enum class AudioFormat { kWav, kFlac, kMp3, kOpus, kAac, kPcm16 };

// The rates EncodeAudio and AudioStreamEncoder accept, in Hz.
inline constexpr int kMinEncodeSampleRate = 8000;
inline constexpr int kMaxEncodeSampleRate = 192'000;

// "wav", "flac", "mp3", "opus", "aac", "pcm16" or "pcm" (exactly); anything
// else is InvalidArgument with param "response_format".
StatusOr<AudioFormat> ParseAudioFormat(std::string_view name);

std::string_view AudioFormatName(AudioFormat format);  // "wav", ..., "pcm16"
// audio/wav, audio/flac, audio/mpeg, audio/ogg (Ogg Opus), audio/aac
// (ADTS), audio/pcm.
std::string_view AudioMimeType(AudioFormat format);

// Mono int16 PCM in, container bytes out as soon as they are ready.
class AudioStreamEncoder {
 public:
  static StatusOr<std::unique_ptr<AudioStreamEncoder>> Create(AudioFormat format, int sample_rate);
  virtual ~AudioStreamEncoder();

  // The bytes ready now (may be empty: codecs buffer a frame or two).
  virtual StatusOr<std::string> Push(std::span<const int16_t> pcm) = 0;
  // Flushes the encoder and closes the container: the rest of the bytes.
  // Call once; Push and Finish fail afterwards.
  virtual StatusOr<std::string> Finish() = 0;
};

// The whole file at once (exact WAV sizes, FLAC STREAMINFO and MP3 Xing
// header): the bytes of Create + Push(pcm) + Finish, but for those headers.
StatusOr<std::string> EncodeAudio(std::span<const int16_t> pcm, int sample_rate, AudioFormat format);

}  // namespace omni::media
