// The front end of the audio encoders: names, the rate check, and the two
// formats that need no codec (raw PCM and WAV); the rest is FFmpeg's
// (audio_encode_ffmpeg.cc).
#include "media/audio_encode.h"

#include <bit>
#include <cstring>
#include <utility>

#include <fmt/core.h>

#include "media/audio_encode_ffmpeg.h"

namespace omni::media {
namespace {

using internal::EncodeOutput;

constexpr size_t kWavHeaderBytes = 44;
// The RIFF and 'data' sizes of a stream whose length is not yet known.
constexpr uint32_t kUnknownWavSize = 0xFFFFFFFF;

void PutLe(std::string& out, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// The canonical 44-byte header (RIFF, 'fmt ' with 16-bit integer PCM, mono,
// 'data'). `data_bytes` kUnknownWavSize: unknown, and so the RIFF size too.
std::string WavHeader(int sample_rate, uint32_t data_bytes) {
  constexpr int kChannels = 1, kBytesPerSample = 2;
  std::string h;
  h.reserve(kWavHeaderBytes);
  h += "RIFF";
  PutLe(h, data_bytes == kUnknownWavSize ? kUnknownWavSize : data_bytes + 36, 4);
  h += "WAVEfmt ";
  PutLe(h, 16, 4);  // the size of the 'fmt ' chunk that follows
  PutLe(h, 1, 2);   // WAVE_FORMAT_PCM
  PutLe(h, kChannels, 2);
  PutLe(h, static_cast<uint32_t>(sample_rate), 4);
  PutLe(h, static_cast<uint32_t>(sample_rate * kChannels * kBytesPerSample), 4);  // bytes per second
  PutLe(h, kChannels * kBytesPerSample, 2);                                      // block align
  PutLe(h, 8 * kBytesPerSample, 2);                                              // bits per sample
  h += "data";
  PutLe(h, data_bytes, 4);
  return h;
}

void AppendLittleEndian(std::span<const int16_t> pcm, std::string& out) {
  const size_t at = out.size();
  out.resize(at + pcm.size() * 2);
  if constexpr (std::endian::native == std::endian::little) {
    if (!pcm.empty()) std::memcpy(out.data() + at, pcm.data(), pcm.size() * 2);
  } else {
    for (size_t i = 0; i < pcm.size(); ++i) {
      const auto v = static_cast<uint16_t>(pcm[i]);
      out[at + 2 * i] = static_cast<char>(v & 0xff);
      out[at + 2 * i + 1] = static_cast<char>(v >> 8);
    }
  }
}

Status PushedAfterFinish() { return FailedPrecondition("the audio encoder was used after Finish"); }

// Raw PCM16, with or without a WAV header.
class PcmEncoder final : public AudioStreamEncoder {
 public:
  PcmEncoder(int sample_rate, bool wav, EncodeOutput output) : sample_rate_(sample_rate), wav_(wav), output_(output) {
    // A whole file keeps room for the header, filled in by Finish.
    if (wav_ && output_ == EncodeOutput::kWholeFile) file_.assign(kWavHeaderBytes, '\0');
  }

  StatusOr<std::string> Push(std::span<const int16_t> pcm) override {
    if (finished_) return PushedAfterFinish();
    data_bytes_ += pcm.size() * 2;
    if (output_ == EncodeOutput::kWholeFile) {
      AppendLittleEndian(pcm, file_);
      return std::string();
    }
    std::string out;
    if (pcm.empty()) return out;
    // The header leaves with the first samples, its sizes unknown.
    if (wav_ && !header_sent_) out = WavHeader(sample_rate_, kUnknownWavSize);
    header_sent_ = true;
    AppendLittleEndian(pcm, out);
    return out;
  }

  StatusOr<std::string> Finish() override {
    if (finished_) return PushedAfterFinish();
    finished_ = true;
    if (!wav_) return std::move(file_);
    // The RIFF size (data + 36) must fit 32 bits and not read as "unknown".
    if (data_bytes_ > kUnknownWavSize - 1 - 36) {
      return InvalidArgument(fmt::format("{} samples are too many for a WAV file", data_bytes_ / 2));
    }
    const std::string exact = WavHeader(sample_rate_, static_cast<uint32_t>(data_bytes_));
    if (output_ == EncodeOutput::kWholeFile) {
      file_.replace(0, kWavHeaderBytes, exact);
      return std::move(file_);
    }
    // A stream that never got a sample is an exact, empty WAV.
    return header_sent_ ? std::string() : exact;
  }

 private:
  const int sample_rate_;
  const bool wav_;
  const EncodeOutput output_;
  std::string file_;  // kWholeFile: the file so far
  uint64_t data_bytes_ = 0;
  bool header_sent_ = false;  // kStream: the first samples have left
  bool finished_ = false;
};

StatusOr<std::unique_ptr<AudioStreamEncoder>> CreateEncoder(AudioFormat format, int sample_rate,
                                                            EncodeOutput output) {
  if (sample_rate < kMinEncodeSampleRate || sample_rate > kMaxEncodeSampleRate) {
    return InvalidArgument(fmt::format("cannot encode audio at {} Hz: the sample rate must be {}..{} Hz",
                                       sample_rate, kMinEncodeSampleRate, kMaxEncodeSampleRate));
  }
  switch (format) {
    case AudioFormat::kPcm16:
    case AudioFormat::kWav:
      return std::unique_ptr<AudioStreamEncoder>(
          std::make_unique<PcmEncoder>(sample_rate, format == AudioFormat::kWav, output));
    case AudioFormat::kFlac:
    case AudioFormat::kMp3:
    case AudioFormat::kOpus:
    case AudioFormat::kAac: return internal::CreateFfmpegAudioEncoder(format, sample_rate, output);
  }
  return Internal("an unknown audio format");
}

}  // namespace

StatusOr<AudioFormat> ParseAudioFormat(std::string_view name) {
  if (name == "wav") return AudioFormat::kWav;
  if (name == "flac") return AudioFormat::kFlac;
  if (name == "mp3") return AudioFormat::kMp3;
  if (name == "opus") return AudioFormat::kOpus;
  if (name == "aac") return AudioFormat::kAac;
  if (name == "pcm16" || name == "pcm") return AudioFormat::kPcm16;
  return InvalidArgument(fmt::format("unsupported audio format '{}': expected 'wav', 'flac', 'mp3', 'opus', 'aac' "
                                     "or 'pcm16' ('pcm')",
                                     ShownValue(name)))
      .WithParam("response_format");
}

std::string_view AudioFormatName(AudioFormat format) {
  switch (format) {
    case AudioFormat::kWav: return "wav";
    case AudioFormat::kFlac: return "flac";
    case AudioFormat::kMp3: return "mp3";
    case AudioFormat::kOpus: return "opus";
    case AudioFormat::kAac: return "aac";
    case AudioFormat::kPcm16: return "pcm16";
  }
  return "unknown";
}

std::string_view AudioMimeType(AudioFormat format) {
  switch (format) {
    case AudioFormat::kWav: return "audio/wav";
    case AudioFormat::kFlac: return "audio/flac";
    case AudioFormat::kMp3: return "audio/mpeg";
    case AudioFormat::kOpus: return "audio/ogg";
    case AudioFormat::kAac: return "audio/aac";
    case AudioFormat::kPcm16: return "audio/pcm";
  }
  return "application/octet-stream";
}

AudioStreamEncoder::~AudioStreamEncoder() = default;

StatusOr<std::unique_ptr<AudioStreamEncoder>> AudioStreamEncoder::Create(AudioFormat format, int sample_rate) {
  return CreateEncoder(format, sample_rate, EncodeOutput::kStream);
}

StatusOr<std::string> EncodeAudio(std::span<const int16_t> pcm, int sample_rate, AudioFormat format) {
  OMNI_ASSIGN_OR_RETURN(std::unique_ptr<AudioStreamEncoder> encoder,
                        CreateEncoder(format, sample_rate, EncodeOutput::kWholeFile));
  OMNI_ASSIGN_OR_RETURN(std::string head, encoder->Push(pcm));
  OMNI_ASSIGN_OR_RETURN(std::string rest, encoder->Finish());
  if (head.empty()) return rest;  // always, for a whole file: no copy
  head += rest;
  return head;
}

}  // namespace omni::media
