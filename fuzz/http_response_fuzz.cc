// libFuzzer target for the client's response reading (net/internal/framing.h):
// the raw-head checks, Beast's parser and the framing rules the client
// applies to an upstream's answer.
//
// For any input: a Status, never a crash. For an accepted response: it took
// no more than the input, its body is within the limit, its status is
// 100-599, and the same bytes cut at the end of the response parse to the
// same status and body.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/check.h"
#include "net/http.h"
#include "net/internal/framing.h"

namespace {
constexpr size_t kMaxBody = 64 * 1024;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace omni;
  using namespace omni::net_internal;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto parsed = ParseResponseBytes(bytes, kMaxBody);
  if (!parsed.ok()) {
    OMNI_CHECK(!parsed.status().message().empty());
    return 0;
  }
  OMNI_CHECK_LE(parsed->consumed, size);
  OMNI_CHECK_LE(parsed->body.size(), kMaxBody);
  OMNI_CHECK_GE(parsed->status, 100);
  OMNI_CHECK_LE(parsed->status, 599);
  auto again = ParseResponseBytes(bytes.substr(0, parsed->consumed), kMaxBody);
  OMNI_CHECK(again.ok()) << again.status().ToString();
  OMNI_CHECK_EQ(again->status, parsed->status);
  OMNI_CHECK(again->body == parsed->body);
  return 0;
}
