// libFuzzer target for multipart/form-data bodies (net/multipart.h), which a
// client sends to /v1/images/edits. An input is the request's Content-Type
// value, a '\n', then the body (fuzz/corpus/multipart holds examples).
//
// For any input: a Status, never a crash or a read outside the input; a
// refusal says why in a short message with no control or non-ASCII bytes (no
// client text echoed raw). For an accepted body: the limits hold, every part
// has a name, FindPart finds the first part of each name, bytes appended
// after the close delimiter change nothing, and the parts written out again
// under a fresh boundary parse back to the same parts.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "net/multipart.h"

namespace {

using omni::MultipartPart;

constexpr omni::MultipartLimits kLimits{.max_parts = 8, .max_header_bytes = 256};

bool SameParts(const std::vector<MultipartPart>& a, const std::vector<MultipartPart>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].filename != b[i].filename || a[i].content_type != b[i].content_type ||
        a[i].data != b[i].data) {
      return false;
    }
  }
  return true;
}

std::string Quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A boundary that occurs nowhere in `body`, so nowhere in any part either.
std::string FreshBoundary(std::string_view body) {
  for (int i = 0;; ++i) {
    std::string boundary = "omni-rt-" + std::to_string(i);
    if (body.find(boundary) == std::string_view::npos) return boundary;
  }
}

std::string Serialize(const std::vector<MultipartPart>& parts, std::string_view boundary) {
  std::string body;
  for (const MultipartPart& p : parts) {
    body += "--" + std::string(boundary) + "\r\nContent-Disposition: form-data; name=" + Quoted(p.name);
    if (!p.filename.empty()) body += "; filename=" + Quoted(p.filename);
    body += "\r\n";
    if (!p.content_type.empty()) body += "Content-Type: " + p.content_type + "\r\n";
    body += "\r\n" + p.data + "\r\n";
  }
  return body + "--" + std::string(boundary) + "--\r\n";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace omni;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  if (newline == std::string_view::npos) return 0;
  const std::string_view content_type = input.substr(0, newline);
  const std::string_view body = input.substr(newline + 1);

  auto parsed = ParseMultipartFormData(content_type, body, kLimits);
  if (!parsed.ok()) {
    const Status status = parsed.status();
    const std::string& message = status.message();
    OMNI_CHECK(status.code() == StatusCode::kInvalidArgument);
    OMNI_CHECK(!message.empty());
    OMNI_CHECK_LE(message.size(), 512u);
    for (char c : message) OMNI_CHECK(c >= 0x20 && c < 0x7f) << "unescaped byte in: " << message;
    return 0;
  }
  const std::vector<MultipartPart>& parts = *parsed;
  OMNI_CHECK_LE(parts.size(), kLimits.max_parts);
  size_t data_bytes = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    OMNI_CHECK(!parts[i].name.empty());
    OMNI_CHECK_EQ(parts[i].is_file(), !parts[i].filename.empty());
    data_bytes += parts[i].data.size();
    const MultipartPart* first = FindPart(parts, parts[i].name);
    OMNI_CHECK(first != nullptr && first <= &parts[i] && first->name == parts[i].name);
  }
  OMNI_CHECK_LE(data_bytes, body.size());

  const std::string with_epilogue = std::string(body) + "\r\ntrailing --epilogue\r\n";
  auto again = ParseMultipartFormData(content_type, with_epilogue, kLimits);
  OMNI_CHECK(again.ok() && SameParts(*again, parts));

  // Re-quoting can lengthen a header block, so the round trip lifts that limit.
  const std::string boundary = FreshBoundary(body);
  auto round_trip = ParseMultipartFormData("multipart/form-data; boundary=" + boundary, Serialize(parts, boundary),
                                           {.max_parts = kLimits.max_parts, .max_header_bytes = SIZE_MAX});
  OMNI_CHECK(round_trip.ok()) << round_trip.status().ToString();
  OMNI_CHECK(SameParts(*round_trip, parts));
  return 0;
}
