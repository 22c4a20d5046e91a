// BlockPool: the bookkeeping of the KV block pool. Every block has a
// reference count (one per sequence whose block table holds it; several when
// a prefix-cache hit shares it) and, once full and committed, a content hash
// under which the prefix cache finds it.
//
// Unreferenced blocks sit on one free list in eviction order:
//   head: blocks without a hash (nothing to lose), reused first;
//   then cached blocks, least recently released first (LRU).
// Allocation pops from the head; popping a cached block evicts its hash.
// A cached block stays findable while on the free list, and a hit takes it
// off the list again (AddRef).
//
// Thread-safety: none; called from the engine thread only.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace omni {

using BlockId = int32_t;
using BlockHash = uint64_t;

class BlockPool {
 public:
  explicit BlockPool(int num_blocks);
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  // Unreferenced blocks, cached or not: what Allocate can hand out.
  int num_free() const { return static_cast<int>(free_list_.size()); }
  // Blocks that carry a hash (referenced or not).
  int num_cached() const { return static_cast<int>(cached_.size()); }
  // Fraction of blocks referenced by some sequence, in [0, 1]. Cached but
  // unreferenced blocks count as free, as in vLLM's kv_cache_usage_perc.
  double Usage() const;

  int ref_count(BlockId id) const { return blocks_.at(id).ref_count; }
  std::optional<BlockHash> hash_of(BlockId id) const;

  // Hands out `n` blocks with a reference count of 1, appending them to
  // `out`. Hashes of evicted cached blocks are appended to `evicted` (in
  // eviction order). Returns false and changes nothing if fewer than `n`
  // blocks are free.
  bool Allocate(int n, std::vector<BlockId>* out, std::vector<BlockHash>* evicted);
  // One more reference, for a prefix-cache hit. A free block leaves the free list.
  void AddRef(BlockId id);
  // Drops one reference from each block, in order. Blocks that reach zero
  // join the free list: uncached ones at the head, cached ones at the tail,
  // so among cached blocks the first released is the first evicted.
  void Release(std::span<const BlockId> ids);

  // The block holding content `hash`, if cached.
  std::optional<BlockId> Lookup(BlockHash hash) const;
  // Records that referenced block `id` holds content `hash`. Returns false
  // (and leaves the block uncached) if another block already holds `hash`
  // or the block already has a hash.
  bool Register(BlockId id, BlockHash hash);
  // Forgets every hash. Only allowed when no block is referenced (returns
  // false otherwise); the cleared hashes are appended to `cleared`.
  bool ClearCache(std::vector<BlockHash>* cleared);

 private:
  struct Block {
    int ref_count = 0;
    std::optional<BlockHash> hash;
    std::list<BlockId>::iterator free_pos;  // valid while ref_count == 0
  };

  void PushFree(BlockId id);

  std::vector<Block> blocks_;
  std::list<BlockId> free_list_;  // eviction order, see the file comment
  std::unordered_map<BlockHash, BlockId> cached_;
};

}  // namespace omni
