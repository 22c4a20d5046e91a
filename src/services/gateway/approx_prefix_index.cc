#include "services/gateway/approx_prefix_index.h"

#include <xxhash.h>

#include <cstring>
#include <string>

namespace omni::gateway {

std::vector<uint64_t> ApproxPromptHashes(std::string_view model, std::string_view cache_salt,
                                         std::string_view prompt, int block_chars, int max_blocks) {
  std::vector<uint64_t> hashes;
  if (block_chars <= 0 || max_blocks <= 0) return hashes;
  std::string root(model);
  root.append(cache_salt);
  uint64_t prev = XXH64(root.data(), root.size(), 0);
  const size_t n = std::min<size_t>(prompt.size() / block_chars, max_blocks);
  hashes.reserve(n);
  std::string buf;
  buf.reserve(block_chars + 8);
  for (size_t i = 0; i < n; ++i) {
    buf.assign(prompt.substr(i * block_chars, block_chars));
    char le[8];
    for (int b = 0; b < 8; ++b) le[b] = static_cast<char>((prev >> (8 * b)) & 0xff);
    buf.append(le, 8);
    prev = XXH64(buf.data(), buf.size(), 0);
    hashes.push_back(prev);
  }
  return hashes;
}

ApproxPrefixIndex::ApproxPrefixIndex(int num_endpoints, size_t default_capacity)
    : default_capacity_(default_capacity), sets_(num_endpoints, LruHashSet(default_capacity)) {}

int ApproxPrefixIndex::MatchLength(int e, std::span<const uint64_t> hashes) const {
  int n = 0;
  for (uint64_t h : hashes) {
    if (!sets_[e].Contains(h)) break;
    ++n;
  }
  return n;
}

void ApproxPrefixIndex::Record(int e, std::span<const uint64_t> hashes) {
  // Deepest first, so block 0 ends up most recent and an over-full set
  // forgets the tails of prompts before their shared heads.
  for (auto it = hashes.rbegin(); it != hashes.rend(); ++it) sets_[e].Touch(*it);
}

void ApproxPrefixIndex::SetCapacity(int e, size_t capacity) {
  sets_[e].SetCapacity(capacity > 0 ? capacity : default_capacity_);
}

}  // namespace omni::gateway
