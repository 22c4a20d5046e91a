// The approximate prefix-cache index (llm-d's `prefix-cache-scorer`): the
// gateway guesses what each endpoint holds from what it sent there.
//
// A prompt is cut into blocks of `block_chars` characters (16 tokens x about
// 4 characters); only full blocks count. The hashes chain, XXH64 with seed 0:
//   h0 = XXH64(model || cache_salt)
//   hi = XXH64(block_i || h(i-1) as 8 little-endian bytes)
// Each endpoint keeps an LRU set of hashes sized to what its KV blocks hold
// (PoolRouter converts tokens to characters with the pool's measured ratio);
// after a pick the chosen endpoint's set gets every hash of the request. An
// endpoint's score is the number of consecutive blocks from block 0 it holds
// over the prompt's number of blocks.
//
// Thread-safety: none; PoolRouter locks around it.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "services/gateway/lru_hash_set.h"

namespace omni::gateway {

// At most `max_blocks` hashes, one per full block of `prompt`.
std::vector<uint64_t> ApproxPromptHashes(std::string_view model, std::string_view cache_salt,
                                         std::string_view prompt, int block_chars, int max_blocks);

class ApproxPrefixIndex {
 public:
  ApproxPrefixIndex(int num_endpoints, size_t default_capacity);

  // Consecutive leading hashes that endpoint `e` holds.
  int MatchLength(int e, std::span<const uint64_t> hashes) const;
  void Record(int e, std::span<const uint64_t> hashes);
  // From the endpoint's reported KV block count (0: keep the default).
  void SetCapacity(int e, size_t capacity);
  void Clear(int e) { sets_[e].Clear(); }
  size_t size(int e) const { return sets_[e].size(); }
  size_t capacity(int e) const { return sets_[e].capacity(); }

 private:
  size_t default_capacity_;
  std::vector<LruHashSet> sets_;  // one per endpoint
};

}  // namespace omni::gateway
