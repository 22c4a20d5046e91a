#include "services/gateway/lru_hash_set.h"

namespace omni::gateway {

void LruHashSet::Touch(uint64_t hash) {
  auto it = index_.find(hash);
  if (it != index_.end()) {
    order_.splice(order_.begin(), order_, it->second);
    return;
  }
  order_.push_front(hash);
  index_.emplace(hash, order_.begin());
  EvictOverCapacity();
}

void LruHashSet::SetCapacity(size_t capacity) {
  capacity_ = capacity;
  EvictOverCapacity();
}

void LruHashSet::Clear() {
  order_.clear();
  index_.clear();
}

void LruHashSet::EvictOverCapacity() {
  while (index_.size() > capacity_) {
    index_.erase(order_.back());
    order_.pop_back();
  }
}

}  // namespace omni::gateway
