#include "engine/block_pool.h"

#include "core/check.h"

namespace omni {

BlockPool::BlockPool(int num_blocks) : blocks_(num_blocks) {
  OMNI_CHECK_GT(num_blocks, 0);
  for (BlockId id = 0; id < num_blocks; ++id) {
    blocks_[id].free_pos = free_list_.insert(free_list_.end(), id);
  }
}

double BlockPool::Usage() const {
  return 1.0 - static_cast<double>(num_free()) / static_cast<double>(num_blocks());
}

std::optional<BlockHash> BlockPool::hash_of(BlockId id) const { return blocks_.at(id).hash; }

bool BlockPool::Allocate(int n, std::vector<BlockId>* out, std::vector<BlockHash>* evicted) {
  OMNI_CHECK_GE(n, 0);
  if (n > num_free()) return false;
  for (int i = 0; i < n; ++i) {
    const BlockId id = free_list_.front();
    free_list_.pop_front();
    Block& b = blocks_[id];
    OMNI_CHECK_EQ(b.ref_count, 0);
    if (b.hash) {
      cached_.erase(*b.hash);
      evicted->push_back(*b.hash);
      b.hash.reset();
    }
    b.ref_count = 1;
    out->push_back(id);
  }
  return true;
}

void BlockPool::AddRef(BlockId id) {
  Block& b = blocks_.at(id);
  if (b.ref_count == 0) free_list_.erase(b.free_pos);
  ++b.ref_count;
}

void BlockPool::Release(std::span<const BlockId> ids) {
  for (BlockId id : ids) {
    Block& b = blocks_.at(id);
    OMNI_CHECK_GT(b.ref_count, 0) << "block " << id << " released twice";
    if (--b.ref_count == 0) PushFree(id);
  }
}

void BlockPool::PushFree(BlockId id) {
  Block& b = blocks_[id];
  b.free_pos = b.hash ? free_list_.insert(free_list_.end(), id) : free_list_.insert(free_list_.begin(), id);
}

std::optional<BlockId> BlockPool::Lookup(BlockHash hash) const {
  auto it = cached_.find(hash);
  if (it == cached_.end()) return std::nullopt;
  return it->second;
}

bool BlockPool::Register(BlockId id, BlockHash hash) {
  Block& b = blocks_.at(id);
  OMNI_CHECK_GT(b.ref_count, 0) << "registering an unreferenced block " << id;
  if (b.hash || cached_.contains(hash)) return false;
  b.hash = hash;
  cached_.emplace(hash, id);
  return true;
}

bool BlockPool::ClearCache(std::vector<BlockHash>* cleared) {
  if (num_free() != num_blocks()) return false;
  for (Block& b : blocks_) {
    if (!b.hash) continue;
    cleared->push_back(*b.hash);
    b.hash.reset();
  }
  cached_.clear();
  // Every block is now uncached; the order of the free list no longer matters.
  return true;
}

}  // namespace omni
