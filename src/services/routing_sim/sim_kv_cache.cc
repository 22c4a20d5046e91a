#include "services/routing_sim/sim_kv_cache.h"

#include "core/check.h"

namespace omni::routing_sim {

SimKvCache::SimKvCache(int num_blocks) : blocks_(num_blocks) {
  OMNI_CHECK_GT(num_blocks, 0);
  free_.reserve(num_blocks);
  // Popped from the back, so block 0 is handed out first.
  for (int b = num_blocks - 1; b >= 0; --b) free_.push_back(b);
}

int SimKvCache::LongestCachedPrefix(std::span<const uint64_t> hashes) const {
  int n = 0;
  for (uint64_t h : hashes) {
    if (!by_hash_.contains(h)) break;
    ++n;
  }
  return n;
}

bool SimKvCache::Allocate(std::span<const uint64_t> hashes, int hit, int total, std::vector<int>* blocks) {
  OMNI_CHECK_LE(hit, total);
  OMNI_CHECK_LE(static_cast<size_t>(hit), hashes.size());
  int hit_in_lru = 0;
  for (int i = 0; i < hit; ++i) {
    auto it = by_hash_.find(hashes[i]);
    OMNI_CHECK(it != by_hash_.end()) << "block " << i << " is not cached";
    if (blocks_[it->second].refs == 0) ++hit_in_lru;
  }
  const int fresh = total - hit;
  if (static_cast<int>(free_.size()) + lru_size_ - hit_in_lru < fresh) return false;

  blocks->clear();
  blocks->reserve(total);
  for (int i = 0; i < hit; ++i) {
    const int b = by_hash_.at(hashes[i]);
    if (blocks_[b].refs++ == 0) {
      LruUnlink(b);
      ++used_;
    }
    blocks->push_back(b);
  }
  for (int i = 0; i < fresh; ++i) {
    const int b = TakeFreeBlock();
    blocks_[b].refs = 1;
    ++used_;
    blocks->push_back(b);
  }
  return true;
}

void SimKvCache::Register(int block, uint64_t hash, std::optional<uint64_t> parent,
                          std::span<const int32_t> tokens) {
  Block& b = blocks_[block];
  OMNI_CHECK_GT(b.refs, 0);
  OMNI_CHECK(!b.cached) << "block " << block << " is already registered";
  if (!by_hash_.emplace(hash, block).second) return;
  b.cached = true;
  b.hash = hash;
  WireBlockStored stored;
  stored.block_hashes.push_back(WireBlockHash{.key = hash});
  if (parent) stored.parent_block_hash = WireBlockHash{.key = *parent};
  stored.token_ids.assign(tokens.begin(), tokens.end());
  stored.block_size = kSimBlockSize;
  events_.push_back(std::move(stored));
}

void SimKvCache::Release(std::span<const int> blocks) {
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    Block& b = blocks_[*it];
    OMNI_CHECK_GT(b.refs, 0);
    if (--b.refs > 0) continue;
    --used_;
    if (b.cached) {
      LruPushBack(*it);
    } else {
      free_.push_back(*it);
    }
  }
}

std::vector<WireKvEvent> SimKvCache::TakeEvents() {
  std::vector<WireKvEvent> out;
  out.swap(events_);
  return out;
}

int SimKvCache::TakeFreeBlock() {
  if (!free_.empty()) {
    const int b = free_.back();
    free_.pop_back();
    return b;
  }
  const int b = lru_head_;
  OMNI_CHECK_NE(b, kNone) << "no free block";
  LruUnlink(b);
  Block& victim = blocks_[b];
  by_hash_.erase(victim.hash);
  victim.cached = false;
  WireBlockRemoved removed;
  removed.block_hashes.push_back(WireBlockHash{.key = victim.hash});
  events_.push_back(std::move(removed));
  return b;
}

void SimKvCache::LruPushBack(int b) {
  blocks_[b].lru_prev = lru_tail_;
  blocks_[b].lru_next = kNone;
  if (lru_tail_ != kNone) {
    blocks_[lru_tail_].lru_next = b;
  } else {
    lru_head_ = b;
  }
  lru_tail_ = b;
  ++lru_size_;
}

void SimKvCache::LruUnlink(int b) {
  Block& blk = blocks_[b];
  if (blk.lru_prev != kNone) {
    blocks_[blk.lru_prev].lru_next = blk.lru_next;
  } else {
    lru_head_ = blk.lru_next;
  }
  if (blk.lru_next != kNone) {
    blocks_[blk.lru_next].lru_prev = blk.lru_prev;
  } else {
    lru_tail_ = blk.lru_prev;
  }
  blk.lru_prev = blk.lru_next = kNone;
  --lru_size_;
}

}  // namespace omni::routing_sim
