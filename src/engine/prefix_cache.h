// Automatic prefix caching over the BlockPool, and the KV events it emits.
//
// A full block's hash chains its parent's hash, its kBlockSize token ids and
// its extra keys (the sha256 of every MediaSpan overlapping the block,
// key-only spans included), so a block matches only if the whole prefix up
// to and including it matches. BlockStored events list each block's extra
// keys, so a router can rebuild the chain without the media's bytes. The
// exact bytes hashed with XXH3-64 (seed 0), all integers little-endian:
//
//   parent   u64   hash of the previous block; for block 0, RootHash(salt)
//   tokens   16 x i32   the block's token ids
//   n_extra  u32   number of extra keys
//   extra    n_extra x 32 bytes   sha256 digests, in MediaSpan order
//
// RootHash(salt) = XXH3-64 (seed 0) of the salt's bytes (empty salt allowed),
// so requests with different cache salts never share blocks.
//
// Thread-safety: none; called from the engine thread only. Event sinks are
// called on the engine thread, in the order things happen.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "engine/block_pool.h"
#include "engine/kv_events.h"
#include "engine/kv_cache.h"
#include "engine/media_span.h"

namespace omni {

BlockHash RootHash(std::string_view cache_salt);
// `tokens` must hold exactly kBlockSize ids.
BlockHash HashBlock(BlockHash parent, std::span<const int32_t> tokens,
                    std::span<const Sha256Digest> extra_keys);
// The extra keys of block `block` (tokens [16 block, 16 block + 16)): the
// sha256 of every span of `media` that overlaps it, in span order.
void BlockExtraKeys(std::span<const MediaSpan> media, int64_t block, std::vector<Sha256Digest>* out);
// Appends the hashes of the full blocks of `tokens` not yet in `hashes`
// (hashes[i] covers tokens [16 i, 16 i + 16)).
void ExtendBlockHashes(std::span<const int32_t> tokens, std::span<const MediaSpan> media,
                       std::string_view cache_salt, std::vector<BlockHash>* hashes);

class PrefixCache {
 public:
  // `sink` may be null and must outlive this object.
  PrefixCache(int num_blocks, bool enabled, KvEventSink* sink);

  bool enabled() const { return enabled_; }
  const BlockPool& pool() const { return pool_; }

  // How many leading blocks of `hashes` are cached, at most `max_blocks`
  // (0 when caching is off).
  int MatchPrefix(std::span<const BlockHash> hashes, int max_blocks) const;
  // Whether the first `num_hit` matched blocks plus `num_new` fresh ones can
  // be taken now (hits on unreferenced blocks use up free blocks too).
  bool CanTake(std::span<const BlockHash> hashes, int num_hit, int num_new) const;
  // References the first `num_hit` matched blocks, appending them to `table`.
  void TakeCached(std::span<const BlockHash> hashes, int num_hit, std::vector<BlockId>* table);
  // Appends `n` fresh blocks to `table`, evicting LRU cached blocks as needed
  // (publishing BlockRemoved). False, and nothing changes, if too few are free.
  bool Allocate(int n, std::vector<BlockId>* table);
  // Registers table[from, to) as holding the content hashes[from, to)
  // (those blocks' tokens are computed) and publishes BlockStored for each
  // run of newly cached blocks, with each block's extra keys. `tokens` and
  // `media` are all of the sequence's tokens and media spans.
  void Commit(std::span<const BlockId> table, std::span<const BlockHash> hashes, int from, int to,
              std::span<const int32_t> tokens, std::span<const MediaSpan> media = {});
  // Drops the table's references, last block first (so a sequence's tail is
  // evicted before its head), and clears the table.
  void Free(std::vector<BlockId>* table);
  // Forgets all cached content (publishes AllBlocksCleared); false if any
  // block is in use.
  bool Reset();

  // Counters for vllm:prefix_cache_queries_total / hits_total, in tokens.
  void RecordQuery(int64_t queried_tokens, int64_t hit_tokens);
  int64_t query_tokens() const { return query_tokens_; }
  int64_t hit_tokens() const { return hit_tokens_; }

 private:
  BlockPool pool_;
  bool enabled_;
  KvEventSink* sink_;  // not owned; may be null
  int64_t query_tokens_ = 0;
  int64_t hit_tokens_ = 0;
};

}  // namespace omni
