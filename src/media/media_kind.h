// What a medium is, told from its bytes alone: never from a URL's extension
// or a claimed content type, which a client or a server may get wrong (a
// presigned ".../video?X-Amz-..." URL, a PNG named photo.jpg, a text file
// called .jpg).
//
//   MediaKind kind = SniffMediaKind(bytes);          // magic numbers
//   if (MediaKindInfo(kind).cls != MediaClass::kImage) ...
//
// The rules are the signatures of each container's specification (the
// WHATWG MIME Sniffing table for images, audio and video, ISO BMFF's ftyp
// brands, the EBML header of Matroska/WebM, MPEG audio frame headers).
// Thread-safety: pure functions.
#pragma once

#include <string_view>

namespace omni::media {

enum class MediaClass { kUnknown, kImage, kAudio, kVideo };

enum class MediaKind {
  kUnknown,
  // images
  kJpeg,
  kPng,
  kGif,
  kWebp,
  kBmp,
  kTiff,
  kHeif,
  kAvif,
  // audio
  kWav,
  kFlac,
  kOgg,
  kMp3,
  kAac,
  kM4a,
  // video
  kMp4,
  kQuickTime,
  kWebm,
  kMatroska,
  kAvi,
};

struct MediaKindDescription {
  std::string_view name;       // "JPEG", for messages
  std::string_view mime;       // "image/jpeg"
  std::string_view extension;  // "jpg", for file names we make up
  MediaClass cls = MediaClass::kUnknown;
};

const MediaKindDescription& MediaKindInfo(MediaKind kind);
std::string_view MediaClassName(MediaClass cls);  // "image", "audio", "video", "unknown"

// The kind of `bytes` by its leading signature; kUnknown when none matches.
MediaKind SniffMediaKind(std::string_view bytes);

// For messages about unknown bytes: "empty", "text", "HTML" or "binary data".
std::string_view DescribeUnknownBytes(std::string_view bytes);

}  // namespace omni::media
