// TokenConstraint: what a sequence may sample next, for structured output
// (forced tool calls, well-formed media blocks, a capped thought). The
// engine asks it before each draw and tells it the token appended after.
//
// The allowed set is a union of half-open id ranges, so a mask costs one
// pass over the row whatever the grammar, and a grammar is written over
// contiguous id ranges (all vision codes, all regular tokens), never over a
// per-step scan of the vocabulary.
//
// Thread-safety: AllowedNext is const and may run concurrently for different
// sequences (the engine samples rows in parallel); Accept runs on the engine
// thread. One object per sequence.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace omni {

struct TokenRange {
  int32_t begin = 0;  // first allowed id
  int32_t end = 0;    // one past the last
  bool operator==(const TokenRange&) const = default;
};

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // Appends the allowed next ids to *allowed (sorted, disjoint, non-empty)
  // and returns true; returns false when any token may come next.
  virtual bool AllowedNext(std::vector<TokenRange>* allowed) const = 0;
  // The token the engine appended: one AllowedNext allowed, or any token
  // after it returned false.
  virtual void Accept(int32_t token) = 0;
};

// Sorted, coalesced ranges of the ids in `ids` (any order, duplicates ok).
std::vector<TokenRange> RangesOf(std::vector<int32_t> ids);
// Whether `id` lies in one of the sorted ranges.
bool InRanges(std::span<const TokenRange> ranges, int32_t id);

}  // namespace omni
