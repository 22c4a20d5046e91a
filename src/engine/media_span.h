// MediaSpan: a run of prompt positions whose input embeddings are injected
// from an object (an image's or an audio clip's encoder rows) instead of
// looked up from the token ids (which are placeholders there).
#pragma once

#include <array>
#include <cstdint>

#include "tensor/tensor.h"

namespace omni {

using Sha256Digest = std::array<uint8_t, 32>;

struct MediaSpan {
  int32_t start = 0;   // first prompt position covered
  int32_t length = 0;  // number of positions (= rows)
  // sha256 of the injected object; it is an extra key of every KV block the
  // span overlaps, so equal placeholder ids with different media never share
  // cached blocks.
  Sha256Digest sha256{};
  // [length, hidden] continuous rows, or [length] I32 discrete ids the model
  // embeds itself; undefined when the model runner resolves them another way.
  Tensor rows;
};

}  // namespace omni
