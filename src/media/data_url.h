// data: URLs (RFC 2397), the inline form of OpenAI's image_url and of
// OmniServe's media_base64:
//   data:image/png;base64,iVBORw0KGgo...
//   data:,hello%20world                    (percent-encoded bytes)
// The media type a data: URL claims is kept for messages only; what the bytes
// are is sniffed (media_kind.h).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/status.h"

namespace omni::media {

struct DataUrl {
  std::string media_type;  // as claimed, lower-cased, without parameters; "" if none
  std::string bytes;
};

// InvalidArgument for a malformed URL or payload (naming what is wrong, never
// quoting the payload); PayloadTooLarge when the bytes would exceed
// `max_bytes`, checked before decoding.
StatusOr<DataUrl> ParseDataUrl(std::string_view url, size_t max_bytes);

}  // namespace omni::media
