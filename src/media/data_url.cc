#include "media/data_url.h"

#include <fmt/core.h>

#include "core/ascii.h"
#include "core/base64.h"

namespace omni::media {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (LowerAscii(a[i]) != LowerAscii(b[i])) return false;
  return true;
}

std::string ToLowerAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = LowerAscii(c);
  return out;
}

bool PercentDecode(std::string_view in, std::string* out) {
  out->reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      *out += in[i];
      continue;
    }
    if (i + 2 >= in.size()) return false;
    int hi = HexDigitValue(in[i + 1]), lo = HexDigitValue(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    *out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return true;
}

}  // namespace

StatusOr<DataUrl> ParseDataUrl(std::string_view url, size_t max_bytes) {
  if (url.size() < 5 || !EqualsIgnoreCase(url.substr(0, 5), "data:")) {
    return InvalidArgument("not a data: URL");
  }
  size_t comma = url.find(',');
  if (comma == std::string_view::npos) {
    return InvalidArgument("malformed data: URL: no ',' before the data");
  }
  std::string_view header = url.substr(5, comma - 5);
  std::string_view payload = url.substr(comma + 1);
  bool base64 = false;
  if (header.size() >= 7 && EqualsIgnoreCase(header.substr(header.size() - 7), ";base64")) {
    base64 = true;
    header.remove_suffix(7);
  }
  DataUrl result;
  result.media_type = ToLowerAscii(header.substr(0, header.find(';')));
  const size_t bound = base64 ? Base64DecodedSizeBound(payload.size()) : payload.size();
  if (bound > max_bytes + (base64 ? 2 : 0)) {
    return PayloadTooLarge(fmt::format("the data: URL holds about {} bytes, over the limit of {} bytes", bound,
                                       max_bytes));
  }
  std::string text;
  if (payload.find('%') != std::string_view::npos) {
    if (!PercentDecode(payload, &text)) return InvalidArgument("malformed data: URL: a bad %-escape");
    payload = text;
  }
  if (base64) {
    std::optional<std::string> bytes = Base64Decode(payload);
    if (!bytes) return InvalidArgument("malformed data: URL: the data is not valid base64");
    result.bytes = std::move(*bytes);
  } else {
    result.bytes = std::string(payload);
  }
  if (result.bytes.size() > max_bytes) {
    return PayloadTooLarge(fmt::format("the data: URL holds {} bytes, over the limit of {} bytes",
                                       result.bytes.size(), max_bytes));
  }
  return result;
}

}  // namespace omni::media
