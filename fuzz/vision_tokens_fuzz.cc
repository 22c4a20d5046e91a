// libFuzzer target for the vision decoder's token-string parser.
//
// For any input: no crash or out-of-bounds read; a parse that succeeds has
// exactly 729 ids, each in the table, and a known ratio with its size; one
// that fails says why.
#include <cstdint>
#include <string_view>

#include "core/check.h"
#include "models/vision_decoder/vision_tokens.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace omni;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  StatusOr<models::VisionTokens> t = models::ParseVisionTokens(text, 729, 65536);
  if (!t.ok()) {
    OMNI_CHECK(!t.status().message().empty());
    return 0;
  }
  OMNI_CHECK(t->ids.size() == 729u);
  for (int32_t id : t->ids) OMNI_CHECK(id >= 0 && id < 65536);
  const std::optional<models::ImageSize> ratio_size = models::VisionRatioSize(t->ratio);
  OMNI_CHECK(ratio_size.has_value() && ratio_size->width == t->size.width && ratio_size->height == t->size.height);
  return 0;
}
