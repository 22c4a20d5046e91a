// libFuzzer target for the vision decoder's request bodies (/v1/decode and
// OmniServe's /decode), which a client sends.
//
// For any input, through either parser: no crash or out-of-bounds read; a
// parse that succeeds holds exactly 729 ids inside the table, a known ratio
// with its size, and fields inside their documented ranges; one that fails
// says why.
#include <cstdint>
#include <string_view>

#include "core/check.h"
#include "services/decoder/decode_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace omni;
  using namespace omni::decoder;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (int form = 0; form < 3; ++form) {
    StatusOr<DecodeRequest> r = form == 0 ? ParseDecodeRequest(body, 65536)
                                          : ParseOmniServeDecodeRequest(body, form == 2, 65536);
    if (!r.ok()) {
      OMNI_CHECK(!r.status().message().empty());
      continue;
    }
    OMNI_CHECK(r->tokens.ids.size() == static_cast<size_t>(kDecodeNumIds));
    for (int32_t id : r->tokens.ids) OMNI_CHECK(id >= 0 && id < 65536);
    OMNI_CHECK(models::VisionRatioSize(r->tokens.ratio).has_value());
    for (const auto& side : {r->width, r->height}) {
      if (side) OMNI_CHECK(*side >= kMinDecodeSide && *side <= kMaxDecodeSide && *side % 16 == 0);
    }
    if (r->steps) OMNI_CHECK(*r->steps >= 1 && *r->steps <= kMaxDecodeSteps);
    if (r->guidance) OMNI_CHECK(*r->guidance >= 0 && *r->guidance <= kMaxDecodeGuidance);
    OMNI_CHECK(r->quality >= 1 && r->quality <= 100);
  }
  return 0;
}
