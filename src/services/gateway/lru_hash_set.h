// A set of 64-bit block hashes with a capacity, evicting the least recently
// inserted-or-refreshed hash: one endpoint's view in the approximate prefix
// index. Not thread-safe; the owner locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <unordered_map>

namespace omni::gateway {

class LruHashSet {
 public:
  explicit LruHashSet(size_t capacity) : capacity_(capacity) {}

  bool Contains(uint64_t hash) const { return index_.contains(hash); }
  // Inserts or refreshes `hash`, evicting the oldest entries over capacity.
  void Touch(uint64_t hash);
  // Shrinking evicts at once; zero keeps nothing.
  void SetCapacity(size_t capacity);
  size_t size() const { return index_.size(); }
  size_t capacity() const { return capacity_; }
  void Clear();

 private:
  void EvictOverCapacity();

  size_t capacity_;
  std::list<uint64_t> order_;  // most recent first
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> index_;
};

}  // namespace omni::gateway
