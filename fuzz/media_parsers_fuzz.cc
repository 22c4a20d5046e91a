// libFuzzer target for the media layer's small parsers of untrusted bytes:
// the kind sniffer, the EXIF orientation reader, data: URLs and base64.
//
// For any input: no crash or out-of-bounds read; the orientation is 1..8; a
// data: URL either parses within its size limit or fails with a message; a
// base64 decode re-encodes to its own canonical input.
#include <cstdint>
#include <string_view>

#include "core/base64.h"
#include "core/check.h"
#include "media/data_url.h"
#include "media/exif.h"
#include "media/media_kind.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace omni;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const media::MediaKind kind = media::SniffMediaKind(bytes);
  OMNI_CHECK(!media::MediaKindInfo(kind).name.empty());
  OMNI_CHECK(!media::DescribeUnknownBytes(bytes).empty());
  const int orientation = media::ExifOrientation(bytes);
  OMNI_CHECK(orientation >= 1 && orientation <= 8);
  StatusOr<media::DataUrl> url = media::ParseDataUrl(bytes, 4096);
  if (url.ok()) {
    OMNI_CHECK(url->bytes.size() <= 4096);
  } else {
    OMNI_CHECK(!url.status().message().empty());
  }
  if (std::optional<std::string> decoded = Base64Decode(bytes)) {
    const std::string again = Base64Encode(*decoded);
    // Canonical input (padded) encodes back to itself; unpadded input to
    // itself plus its padding.
    OMNI_CHECK(std::string_view(again).substr(0, bytes.size()) == bytes);
  }
  return 0;
}
