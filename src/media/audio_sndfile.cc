// WAV, FLAC and MP3 through libsndfile (1.2, which reads MP3 with
// libmpg123), from memory by its virtual I/O: what soundfile.read, and so
// librosa.load, does with the same bytes. (Ogg goes to FFmpeg; see audio.cc.)
//
// libsndfile is forgiving where a server should not be, so a few checks come
// first or after:
//  - a WAV's chunks are walked before libsndfile sees them: a 'data' chunk
//    that claims more than the limit is refused from its size alone, and one
//    that claims more bytes than there are is truncated (libsndfile would
//    quietly read what is there);
//  - fewer frames than the header promised is a truncated file: exactly for
//    WAV and FLAC, whose headers count frames; by more than 10% and 50 ms
//    for MP3, whose count may be an estimate (libmpg123 guesses from the
//    file size when there is no Xing/LAME header);
//  - the detected format must be the sniffed one (libsndfile skips an ID3
//    tag and detects whatever follows it).
// libsndfile's error for a failed open lives in a global (sf_error(NULL)),
// racy between threads, so it is not read: a file libsndfile will not open
// goes to FFmpeg, whose error names the problem.
#include <sndfile.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>

#include <fmt/core.h>

#include "media/audio_codecs.h"

namespace omni::media::internal {
namespace {

struct MemoryFile {
  std::string_view bytes;
  sf_count_t at = 0;
};

sf_count_t FileLength(void* user) { return static_cast<sf_count_t>(static_cast<MemoryFile*>(user)->bytes.size()); }

sf_count_t Seek(sf_count_t offset, int whence, void* user) {
  auto* f = static_cast<MemoryFile*>(user);
  const sf_count_t size = static_cast<sf_count_t>(f->bytes.size());
  sf_count_t base = 0;
  switch (whence) {
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: base = f->at; break;
    case SEEK_END: base = size; break;
    default: return -1;
  }
  // Both are at most the data's size plus a 64-bit file offset; past the
  // end is allowed (reads there return nothing), before the start is not.
  if (offset < -base || offset > INT64_MAX / 2) return -1;
  f->at = base + offset;
  return f->at;
}

sf_count_t Read(void* out, sf_count_t count, void* user) {
  auto* f = static_cast<MemoryFile*>(user);
  const sf_count_t size = static_cast<sf_count_t>(f->bytes.size());
  if (count <= 0 || f->at >= size) return 0;
  const sf_count_t n = std::min(count, size - f->at);
  std::memcpy(out, f->bytes.data() + f->at, static_cast<size_t>(n));
  f->at += n;
  return n;
}

sf_count_t Write(const void*, sf_count_t, void*) { return 0; }

sf_count_t Tell(void* user) { return static_cast<MemoryFile*>(user)->at; }

struct SndfileCloser {
  void operator()(SNDFILE* f) const { sf_close(f); }
};

uint32_t Le32(std::string_view b, size_t at) {
  return uint32_t{static_cast<uint8_t>(b[at])} | uint32_t{static_cast<uint8_t>(b[at + 1])} << 8 |
         uint32_t{static_cast<uint8_t>(b[at + 2])} << 16 | uint32_t{static_cast<uint8_t>(b[at + 3])} << 24;
}

// The RIFF chunk walk of a WAVE file (Microsoft's Multimedia Programming
// Interface and Data Specifications 1.0): 'fmt ' carries the average bytes
// per second, 'data' the size of the samples. Chunks are padded to even
// sizes. A data size of 0 or 0xFFFFFFFF is a stream written before its
// length was known; libsndfile then reads to the end.
Status CheckWavChunks(std::string_view b, std::string_view label, const AudioDecodeOptions& options) {
  size_t at = 12;
  uint32_t byte_rate = 0;
  while (true) {
    if (b.size() < at + 8) return TruncatedAudio(label);  // ends before the 'data' chunk
    const std::string_view id = b.substr(at, 4);
    const uint64_t size = Le32(b, at + 4);
    at += 8;
    const uint64_t left = b.size() - at;
    if (id == "data") {
      if (size == 0 || size == 0xffffffffu) return Status::Ok();
      if (byte_rate > 0) {
        OMNI_RETURN_IF_ERROR(CheckClaimedDuration(label, static_cast<double>(size) / byte_rate, options));
      }
      return size > left ? TruncatedAudio(label) : Status::Ok();
    }
    if (id == "fmt " && size >= 16 && left >= 16) byte_rate = Le32(b, at + 8);
    if (size > left) return TruncatedAudio(label);
    at += static_cast<size_t>(std::min(size + (size & 1), left));
  }
}

bool IsSniffedFormat(int format, MediaKind kind) {
  switch (format & SF_FORMAT_TYPEMASK) {
    case SF_FORMAT_WAV:
    case SF_FORMAT_WAVEX: return kind == MediaKind::kWav;
    case SF_FORMAT_FLAC: return kind == MediaKind::kFlac;
    case SF_FORMAT_MPEG: return kind == MediaKind::kMp3;
    default: return false;
  }
}

// FFmpeg's names for the codecs, so AudioInfo reads the same whichever
// library decoded.
std::string CodecName(int format) {
  if ((format & SF_FORMAT_TYPEMASK) == SF_FORMAT_FLAC) return "flac";
  switch (format & SF_FORMAT_SUBMASK) {
    case SF_FORMAT_PCM_S8: return "pcm_s8";
    case SF_FORMAT_PCM_U8: return "pcm_u8";
    case SF_FORMAT_PCM_16: return "pcm_s16le";
    case SF_FORMAT_PCM_24: return "pcm_s24le";
    case SF_FORMAT_PCM_32: return "pcm_s32le";
    case SF_FORMAT_FLOAT: return "pcm_f32le";
    case SF_FORMAT_DOUBLE: return "pcm_f64le";
    case SF_FORMAT_ULAW: return "pcm_mulaw";
    case SF_FORMAT_ALAW: return "pcm_alaw";
    case SF_FORMAT_IMA_ADPCM: return "adpcm_ima_wav";
    case SF_FORMAT_MS_ADPCM: return "adpcm_ms";
    case SF_FORMAT_GSM610: return "gsm_ms";
    case SF_FORMAT_MPEG_LAYER_I: return "mp1";
    case SF_FORMAT_MPEG_LAYER_II: return "mp2";
    case SF_FORMAT_MPEG_LAYER_III: return "mp3";
    default: return fmt::format("libsndfile 0x{:04x}", format & SF_FORMAT_SUBMASK);
  }
}

bool CountsFramesExactly(int format) {
  const int type = format & SF_FORMAT_TYPEMASK;
  return type == SF_FORMAT_WAV || type == SF_FORMAT_WAVEX || type == SF_FORMAT_FLAC;
}

}  // namespace

std::optional<StatusOr<DecodedAudio>> DecodeWithSndfile(std::string_view bytes, MediaKind kind,
                                                        std::string_view label, const AudioDecodeOptions& options) {
  if (kind == MediaKind::kWav) {
    if (Status s = CheckWavChunks(bytes, label, options); !s.ok()) return StatusOr<DecodedAudio>(std::move(s));
  }
  MemoryFile file{.bytes = bytes};
  SF_VIRTUAL_IO io{.get_filelen = FileLength, .seek = Seek, .read = Read, .write = Write, .tell = Tell};
  SF_INFO sf_info{};
  std::unique_ptr<SNDFILE, SndfileCloser> sf(sf_open_virtual(&io, SFM_READ, &sf_info, &file));
  if (sf == nullptr || !IsSniffedFormat(sf_info.format, kind)) return std::nullopt;

  MonoAccumulator acc{std::string(label), options};
  const bool counted = sf_info.frames >= 0 && sf_info.frames != SF_COUNT_MAX;
  const double header_seconds =
      counted && sf_info.samplerate > 0 ? static_cast<double>(sf_info.frames) / sf_info.samplerate : -1.0;
  if (Status s = acc.Start(sf_info.samplerate, sf_info.channels, header_seconds); !s.ok()) {
    return StatusOr<DecodedAudio>(std::move(s));
  }
  // About 128 KiB of floats a read, at least one frame.
  const sf_count_t block = std::max(1, 32768 / sf_info.channels);
  std::vector<float> buffer(static_cast<size_t>(block) * sf_info.channels);
  while (true) {
    const sf_count_t n = sf_readf_float(sf.get(), buffer.data(), block);
    if (n <= 0) break;
    const std::span<const float> frames(buffer.data(), static_cast<size_t>(n) * sf_info.channels);
    if (Status s = acc.AddInterleaved(frames); !s.ok()) return StatusOr<DecodedAudio>(std::move(s));
  }
  const int error = sf_error(sf.get());
  const double got = static_cast<double>(acc.frames());
  const double promised = static_cast<double>(sf_info.frames);
  // An estimate is trusted to 10% and 50 ms.
  const bool short_read = counted && (CountsFramesExactly(sf_info.format)
                                          ? got < promised
                                          : got < 0.9 * promised - 0.05 * sf_info.samplerate);
  if (short_read) return StatusOr<DecodedAudio>(TruncatedAudio(label));
  if (error != SF_ERR_NO_ERROR) return StatusOr<DecodedAudio>(CorruptAudio(label, sf_strerror(sf.get())));
  return std::move(acc).Finish(CodecName(sf_info.format));
}

}  // namespace omni::media::internal
