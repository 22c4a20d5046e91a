#include "media/media_kind.h"

#include <array>
#include <cstdint>

namespace omni::media {
namespace {

bool At(std::string_view b, size_t offset, std::string_view magic) {
  return b.size() >= offset + magic.size() && b.substr(offset, magic.size()) == magic;
}

uint8_t Byte(std::string_view b, size_t i) { return static_cast<uint8_t>(b[i]); }

// ISO BMFF (MP4, QuickTime, HEIF, AVIF, M4A): a first box of type "ftyp"
// whose major brand (and, for HEIF/AVIF, compatible brands) names the kind.
MediaKind SniffIsoBmff(std::string_view b) {
  if (!At(b, 4, "ftyp") || b.size() < 12) return MediaKind::kUnknown;
  const uint32_t box_size = uint32_t{Byte(b, 0)} << 24 | uint32_t{Byte(b, 1)} << 16 | uint32_t{Byte(b, 2)} << 8 |
                            Byte(b, 3);
  std::string_view major = b.substr(8, 4);
  if (major == "avif" || major == "avis") return MediaKind::kAvif;
  if (major == "heic" || major == "heix" || major == "hevc" || major == "hevx" || major == "heim" ||
      major == "heis" || major == "mif1" || major == "msf1") {
    // mif1 files may be AVIF: look for the brand among the compatible ones.
    for (size_t at = 16; at + 4 <= std::min<size_t>(box_size, b.size()); at += 4) {
      if (b.substr(at, 4) == "avif") return MediaKind::kAvif;
    }
    return MediaKind::kHeif;
  }
  if (major == "M4A " || major == "M4B " || major == "M4P ") return MediaKind::kM4a;
  if (major == "qt  ") return MediaKind::kQuickTime;
  return MediaKind::kMp4;
}

// EBML header (Matroska and WebM): the DocType element says which.
MediaKind SniffEbml(std::string_view b) {
  if (!At(b, 0, "\x1a\x45\xdf\xa3")) return MediaKind::kUnknown;
  std::string_view head = b.substr(0, 64);
  return head.find("webm") != std::string_view::npos ? MediaKind::kWebm : MediaKind::kMatroska;
}

// An MPEG audio frame header: 11 sync bits, then version, layer, bitrate
// and sample-rate fields that are not reserved. Layer 0 ("reserved" for
// MPEG audio) with the ADTS sync is AAC.
MediaKind SniffMpegAudio(std::string_view b) {
  if (b.size() < 4 || Byte(b, 0) != 0xff || (Byte(b, 1) & 0xe0) != 0xe0) return MediaKind::kUnknown;
  const int version = (Byte(b, 1) >> 3) & 3, layer = (Byte(b, 1) >> 1) & 3;
  if ((Byte(b, 1) & 0xf6) == 0xf0) {  // ADTS: MPEG-4/2, layer 00
    const int sample_rate_index = (Byte(b, 2) >> 2) & 0xf;
    return sample_rate_index < 13 ? MediaKind::kAac : MediaKind::kUnknown;
  }
  const int bitrate = Byte(b, 2) >> 4, sample_rate = (Byte(b, 2) >> 2) & 3;
  if (version == 1 || layer == 0 || bitrate == 0xf || sample_rate == 3) return MediaKind::kUnknown;
  return MediaKind::kMp3;
}

}  // namespace

const MediaKindDescription& MediaKindInfo(MediaKind kind) {
  static const MediaKindDescription kUnknownInfo{"unknown", "application/octet-stream", "bin", MediaClass::kUnknown};
  static const std::array<MediaKindDescription, 19> kInfo = {{
      {"JPEG", "image/jpeg", "jpg", MediaClass::kImage},
      {"PNG", "image/png", "png", MediaClass::kImage},
      {"GIF", "image/gif", "gif", MediaClass::kImage},
      {"WebP", "image/webp", "webp", MediaClass::kImage},
      {"BMP", "image/bmp", "bmp", MediaClass::kImage},
      {"TIFF", "image/tiff", "tiff", MediaClass::kImage},
      {"HEIF", "image/heif", "heic", MediaClass::kImage},
      {"AVIF", "image/avif", "avif", MediaClass::kImage},
      {"WAV", "audio/wav", "wav", MediaClass::kAudio},
      {"FLAC", "audio/flac", "flac", MediaClass::kAudio},
      {"Ogg", "audio/ogg", "ogg", MediaClass::kAudio},
      {"MP3", "audio/mpeg", "mp3", MediaClass::kAudio},
      {"AAC", "audio/aac", "aac", MediaClass::kAudio},
      {"M4A", "audio/mp4", "m4a", MediaClass::kAudio},
      {"MP4", "video/mp4", "mp4", MediaClass::kVideo},
      {"QuickTime", "video/quicktime", "mov", MediaClass::kVideo},
      {"WebM", "video/webm", "webm", MediaClass::kVideo},
      {"Matroska", "video/x-matroska", "mkv", MediaClass::kVideo},
      {"AVI", "video/x-msvideo", "avi", MediaClass::kVideo},
  }};
  const int i = static_cast<int>(kind) - 1;
  return i >= 0 && i < 19 ? kInfo[i] : kUnknownInfo;
}

std::string_view MediaClassName(MediaClass cls) {
  switch (cls) {
    case MediaClass::kImage: return "image";
    case MediaClass::kAudio: return "audio";
    case MediaClass::kVideo: return "video";
    case MediaClass::kUnknown: break;
  }
  return "unknown";
}

MediaKind SniffMediaKind(std::string_view b) {
  if (At(b, 0, "\xff\xd8\xff")) return MediaKind::kJpeg;
  if (At(b, 0, "\x89PNG\r\n\x1a\n")) return MediaKind::kPng;
  if (At(b, 0, "GIF87a") || At(b, 0, "GIF89a")) return MediaKind::kGif;
  if (At(b, 0, "RIFF")) {
    if (At(b, 8, "WEBPVP")) return MediaKind::kWebp;
    if (At(b, 8, "WAVE")) return MediaKind::kWav;
    if (At(b, 8, "AVI ")) return MediaKind::kAvi;
    return MediaKind::kUnknown;
  }
  if (At(b, 0, "BM") && b.size() >= 14) return MediaKind::kBmp;
  if (At(b, 0, std::string_view("II*\0", 4)) || At(b, 0, std::string_view("MM\0*", 4))) return MediaKind::kTiff;
  if (At(b, 0, "fLaC")) return MediaKind::kFlac;
  if (At(b, 0, "OggS")) return MediaKind::kOgg;
  if (At(b, 0, "ID3")) return MediaKind::kMp3;
  if (MediaKind k = SniffIsoBmff(b); k != MediaKind::kUnknown) return k;
  if (MediaKind k = SniffEbml(b); k != MediaKind::kUnknown) return k;
  return SniffMpegAudio(b);
}

std::string_view DescribeUnknownBytes(std::string_view b) {
  if (b.empty()) return "empty";
  std::string_view head = b.substr(0, 512);
  size_t skip = head.find_first_not_of(" \t\r\n");
  if (skip != std::string_view::npos && (At(head, skip, "<!") || At(head, skip, "<html") || At(head, skip, "<HTML"))) {
    return "HTML";
  }
  for (unsigned char c : head) {
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f') return "binary data";
  }
  return "text";
}

}  // namespace omni::media
