// A thread-safe LRU map from string keys to values, bounded by a total cost
// (bytes, or 1 per entry): the caches of immutable, content-addressed things
// (the LLM's embedding objects, the gateway's object metadata).
//
//   LruCache<std::shared_ptr<const T>> cache(512 << 20, [](const auto& v) { return v->nbytes; });
//   if (auto hit = cache.Get(key)) ...;   // a copy of the value, now the most recent
//   cache.Put(key, value);                // evicts the least recent beyond the bound
//
// A value whose cost alone is over the bound is not kept. A key already
// present keeps its first value (the things cached are immutable).
// Thread-safety: thread-safe; values are copied out under the lock, so keep
// them cheap to copy (a shared_ptr, a small struct).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace omni {

template <typename V>
class LruCache {
 public:
  using CostFn = std::function<size_t(const V&)>;

  // `cost`: null counts each entry as 1.
  explicit LruCache(size_t max_cost, CostFn cost = nullptr) : max_cost_(max_cost), cost_(std::move(cost)) {}

  std::optional<V> Get(const std::string& key) {
    std::lock_guard lock(mu_);
    auto it = index_.find(key);
    if (it == index_.end()) {
      ++misses_;
      return std::nullopt;
    }
    lru_.splice(lru_.begin(), lru_, it->second);
    ++hits_;
    return it->second->value;
  }

  void Put(const std::string& key, V value) {
    const size_t cost = cost_ ? cost_(value) : 1;
    if (cost > max_cost_) return;
    std::lock_guard lock(mu_);
    if (index_.contains(key)) return;
    lru_.push_front(Entry{key, std::move(value), cost});
    index_[key] = lru_.begin();
    total_ += cost;
    while (total_ > max_cost_ && !lru_.empty()) {
      total_ -= lru_.back().cost;
      index_.erase(lru_.back().key);
      lru_.pop_back();
    }
  }

  size_t total_cost() const {
    std::lock_guard lock(mu_);
    return total_;
  }
  uint64_t hits() const {
    std::lock_guard lock(mu_);
    return hits_;
  }
  uint64_t misses() const {
    std::lock_guard lock(mu_);
    return misses_;
  }

 private:
  struct Entry {
    std::string key;
    V value;
    size_t cost;
  };

  const size_t max_cost_;
  const CostFn cost_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;                                               // guarded by mu_; most recent first
  std::unordered_map<std::string, typename std::list<Entry>::iterator> index_;  // guarded by mu_
  size_t total_ = 0;                                                   // guarded by mu_
  uint64_t hits_ = 0;                                                  // guarded by mu_
  uint64_t misses_ = 0;                                                // guarded by mu_
};

}  // namespace omni
