// MediaSpan: a run of prompt positions whose input embeddings are injected
// from an object (an image's or an audio clip's encoder rows) instead of
// looked up from the token ids (which are placeholders there), or, with
// key_only, a run of ordinary token ids that came from an object (an image's
// discrete ids) and are only keyed by it.
#pragma once

#include <cstdint>

#include "engine/sha256_digest.h"
#include "tensor/tensor.h"

namespace omni {

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
  // The positions hold ordinary token ids (an image's 729 discrete ids as
  // <|visionN|>): nothing is injected, the span only adds `sha256` to the
  // extra keys of the blocks it overlaps. Those ids already key the blocks by
  // value; the digest is there so a KV event names the medium, which a
  // router that knows only the object's metadata (not its ids) can match.
  bool key_only = false;
};

}  // namespace omni
