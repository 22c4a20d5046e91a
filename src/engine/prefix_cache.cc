#include "engine/prefix_cache.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "core/check.h"

namespace omni {
namespace {

void AppendLe32(uint32_t v, std::vector<uint8_t>* out) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void AppendLe64(uint64_t v, std::vector<uint8_t>* out) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}

}  // namespace

BlockHash RootHash(std::string_view cache_salt) {
  return XXH3_64bits(cache_salt.data(), cache_salt.size());
}

BlockHash HashBlock(BlockHash parent, std::span<const int32_t> tokens,
                    std::span<const Sha256Digest> extra_keys) {
  OMNI_CHECK_EQ(tokens.size(), static_cast<size_t>(kBlockSize));
  std::vector<uint8_t> bytes;
  bytes.reserve(8 + 4 * kBlockSize + 4 + 32 * extra_keys.size());
  AppendLe64(parent, &bytes);
  for (int32_t t : tokens) AppendLe32(static_cast<uint32_t>(t), &bytes);
  AppendLe32(static_cast<uint32_t>(extra_keys.size()), &bytes);
  for (const Sha256Digest& d : extra_keys) bytes.insert(bytes.end(), d.begin(), d.end());
  return XXH3_64bits(bytes.data(), bytes.size());
}

void BlockExtraKeys(std::span<const MediaSpan> media, int64_t block, std::vector<Sha256Digest>* out) {
  const int64_t begin = block * kBlockSize;
  const int64_t end = begin + kBlockSize;
  out->clear();
  for (const MediaSpan& m : media) {
    if (m.start < end && int64_t{m.start} + m.length > begin) out->push_back(m.sha256);
  }
}

void ExtendBlockHashes(std::span<const int32_t> tokens, std::span<const MediaSpan> media,
                       std::string_view cache_salt, std::vector<BlockHash>* hashes) {
  const size_t num_full = tokens.size() / kBlockSize;
  std::vector<Sha256Digest> extra;
  for (size_t i = hashes->size(); i < num_full; ++i) {
    const int64_t begin = static_cast<int64_t>(i) * kBlockSize;
    BlockExtraKeys(media, static_cast<int64_t>(i), &extra);
    const BlockHash parent = i == 0 ? RootHash(cache_salt) : (*hashes)[i - 1];
    hashes->push_back(HashBlock(parent, tokens.subspan(begin, kBlockSize), extra));
  }
}

PrefixCache::PrefixCache(int num_blocks, bool enabled, KvEventSink* sink)
    : pool_(num_blocks), enabled_(enabled), sink_(sink) {}

int PrefixCache::MatchPrefix(std::span<const BlockHash> hashes, int max_blocks) const {
  if (!enabled_) return 0;
  const int limit = std::min<int>(max_blocks, static_cast<int>(hashes.size()));
  int n = 0;
  while (n < limit && pool_.Lookup(hashes[n])) ++n;
  return n;
}

bool PrefixCache::CanTake(std::span<const BlockHash> hashes, int num_hit, int num_new) const {
  int free_hits = 0;
  for (int i = 0; i < num_hit; ++i) {
    if (pool_.ref_count(*pool_.Lookup(hashes[i])) == 0) ++free_hits;
  }
  return free_hits + num_new <= pool_.num_free();
}

void PrefixCache::TakeCached(std::span<const BlockHash> hashes, int num_hit,
                             std::vector<BlockId>* table) {
  for (int i = 0; i < num_hit; ++i) {
    const std::optional<BlockId> id = pool_.Lookup(hashes[i]);
    OMNI_CHECK(id.has_value()) << "cached block " << i << " vanished";
    pool_.AddRef(*id);
    table->push_back(*id);
  }
}

bool PrefixCache::Allocate(int n, std::vector<BlockId>* table) {
  std::vector<BlockHash> evicted;
  if (!pool_.Allocate(n, table, &evicted)) return false;
  if (sink_ != nullptr && !evicted.empty()) {
    sink_->Publish(KvEvent(std::in_place_type<BlockRemoved>, BlockRemoved{std::move(evicted)}));
  }
  return true;
}

void PrefixCache::Commit(std::span<const BlockId> table, std::span<const BlockHash> hashes,
                         int from, int to, std::span<const int32_t> tokens, std::span<const MediaSpan> media) {
  if (!enabled_) return;
  OMNI_CHECK_LE(to, static_cast<int>(table.size()));
  OMNI_CHECK_LE(to, static_cast<int>(hashes.size()));
  OMNI_CHECK_LE(static_cast<size_t>(to) * kBlockSize, tokens.size());
  BlockStored run;
  bool run_has_keys = false;
  auto flush = [&] {
    if (!run_has_keys) run.extra_keys.clear();  // the wire leaves the field out
    if (!run.block_hashes.empty() && sink_ != nullptr) sink_->Publish(KvEvent(std::in_place_type<BlockStored>, std::move(run)));
    run = BlockStored{};
    run_has_keys = false;
  };
  std::vector<Sha256Digest> extra;
  for (int i = from; i < to; ++i) {
    if (!pool_.Register(table[i], hashes[i])) {
      flush();  // already cached elsewhere (or already ours): the run breaks here
      continue;
    }
    if (run.block_hashes.empty() && i > 0) run.parent_hash = hashes[i - 1];
    run.block_hashes.push_back(hashes[i]);
    auto block_tokens = tokens.subspan(static_cast<size_t>(i) * kBlockSize, kBlockSize);
    run.token_ids.insert(run.token_ids.end(), block_tokens.begin(), block_tokens.end());
    if (sink_ != nullptr) {
      BlockExtraKeys(media, i, &extra);
      run_has_keys = run_has_keys || !extra.empty();
      run.extra_keys.push_back(extra);
    }
  }
  flush();
}

void PrefixCache::Free(std::vector<BlockId>* table) {
  std::reverse(table->begin(), table->end());
  pool_.Release(*table);
  table->clear();
}

bool PrefixCache::Reset() {
  std::vector<BlockHash> cleared;
  if (!pool_.ClearCache(&cleared)) return false;
  if (sink_ != nullptr) sink_->Publish(KvEvent(std::in_place_type<AllBlocksCleared>));
  return true;
}

void PrefixCache::RecordQuery(int64_t queried_tokens, int64_t hit_tokens) {
  if (!enabled_) return;
  query_tokens_ += queried_tokens;
  hit_tokens_ += hit_tokens;
}

}  // namespace omni
