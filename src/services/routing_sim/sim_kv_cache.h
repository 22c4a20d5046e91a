// One simulated replica's KV blocks and prefix cache, the part of the engine
// the router's prefix scorers try to predict.
//
// A fixed budget of blocks of kSimBlockSize tokens. A request holds a list of
// blocks (reference counted, so cached prefix blocks are shared); once a
// block is full its chained hash (engine/prefix_cache.h, the server's own
// hash) may be registered in the cache. A block nobody references but that
// is cached stays in an LRU list and is reused, oldest first, only when no
// never-cached block is free; reusing it drops its hash (a BlockRemoved event).
// Registering a hash emits BlockStored with the block's token ids, so the
// router's precise index can rebuild its own chain (spec/routing.md).
//
// Free blocks that are cached do not count as used, as in vLLM's
// kv_cache_usage_perc and engine/block_pool.h.
//
// Thread-safety: none; the simulator is single-threaded.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/kv_event_decoder.h"

namespace omni::routing_sim {

inline constexpr int kSimBlockSize = 16;

class SimKvCache {
 public:
  explicit SimKvCache(int num_blocks);

  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  // Blocks referenced by at least one request.
  int used_blocks() const { return used_; }
  // Blocks whose hash is registered (referenced or not).
  int cached_blocks() const { return static_cast<int>(by_hash_.size()); }

  // How many of `hashes` (a request's chain, block 0 first) are cached, from
  // block 0 on.
  int LongestCachedPrefix(std::span<const uint64_t> hashes) const;

  // Gives a request its blocks: the first `hit` are the cached blocks of
  // hashes[0, hit) (shared), the other `total - hit` are fresh, evicting
  // cached free blocks oldest first. Returns false and changes nothing when
  // too few blocks are free. Needs hit <= LongestCachedPrefix(hashes).
  bool Allocate(std::span<const uint64_t> hashes, int hit, int total, std::vector<int>* blocks);

  // Block `block` now holds the full block with `hash`, whose chain parent is
  // `parent` (nullopt for block 0), over `tokens` (kSimBlockSize ids).
  // Registers it unless another block already holds that hash (two requests
  // computed the same prefix at once); then the block stays anonymous.
  void Register(int block, uint64_t hash, std::optional<uint64_t> parent, std::span<const int32_t> tokens);

  // Drops a request's references, last block first, so a prompt's tail is
  // evicted before its shared head.
  void Release(std::span<const int> blocks);

  // KV events since the last call, in the order they happened.
  std::vector<WireKvEvent> TakeEvents();

 private:
  static constexpr int kNone = -1;
  struct Block {
    int refs = 0;
    bool cached = false;
    uint64_t hash = 0;
    int lru_prev = kNone;  // in the LRU list while cached and unreferenced
    int lru_next = kNone;
  };

  void LruPushBack(int b);
  void LruUnlink(int b);
  int TakeFreeBlock();  // never-cached first, else evicts the LRU head

  std::vector<Block> blocks_;
  std::vector<int> free_;  // unreferenced, not cached
  int lru_head_ = kNone;   // unreferenced and cached, least recently freed first
  int lru_tail_ = kNone;
  int lru_size_ = 0;
  int used_ = 0;
  std::unordered_map<uint64_t, int> by_hash_;
  std::vector<WireKvEvent> events_;
};

}  // namespace omni::routing_sim
