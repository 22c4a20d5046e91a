#include "services/gateway/precise_prefix_index.h"

#include <algorithm>

#include <xxhash.h>

#include <cstring>

namespace omni::gateway {
namespace {

// The router's own chain: XXH3-64 (seed 0) in host byte order (the index
// never leaves the process).
constexpr uint64_t kRootHash = 0x6f6d6e6967617465;  // "omnigate"
constexpr int32_t kCanonicalMediaToken = -1;         // no real token id is negative

}  // namespace

PrecisePrefixIndex::PrecisePrefixIndex(int num_endpoints, int block_size, std::span<const int32_t> media_token_ids)
    : block_size_(block_size), by_server_hash_(num_endpoints), pending_(num_endpoints) {
  for (int32_t id : media_token_ids) {
    if (id < 0) continue;
    if (static_cast<size_t>(id) >= is_media_token_.size()) is_media_token_.resize(static_cast<size_t>(id) + 1);
    is_media_token_[id] = true;
  }
}

uint64_t PrecisePrefixIndex::ChainHash(uint64_t parent, std::span<const int32_t> tokens,
                                       std::span<const std::string> keys) const {
  std::vector<char> buf(8 + 4 * tokens.size() + 4);
  std::memcpy(buf.data(), &parent, 8);
  char* p = buf.data() + 8;
  for (int32_t t : tokens) {
    const bool media = t >= 0 && static_cast<size_t>(t) < is_media_token_.size() && is_media_token_[t];
    const int32_t v = media ? kCanonicalMediaToken : t;
    std::memcpy(p, &v, 4);
    p += 4;
  }
  const uint32_t n = static_cast<uint32_t>(keys.size());
  std::memcpy(p, &n, 4);
  for (const std::string& k : keys) {
    const uint32_t len = static_cast<uint32_t>(k.size());
    buf.insert(buf.end(), reinterpret_cast<const char*>(&len), reinterpret_cast<const char*>(&len) + 4);
    buf.insert(buf.end(), k.begin(), k.end());
  }
  return XXH3_64bits(buf.data(), buf.size());
}

std::vector<uint64_t> PrecisePrefixIndex::RequestHashes(std::span<const int32_t> tokens,
                                                        std::span<const MediaKeySpan> media, int max_blocks) const {
  std::vector<uint64_t> hashes;
  const size_t n = std::min<size_t>(tokens.size() / block_size_, std::max(max_blocks, 0));
  hashes.reserve(n);
  uint64_t parent = kRootHash;
  std::vector<std::string> keys;
  for (size_t i = 0; i < n; ++i) {
    const int64_t begin = static_cast<int64_t>(i) * block_size_;
    const int64_t end = begin + block_size_;
    keys.clear();
    for (const MediaKeySpan& m : media) {  // as the server's BlockExtraKeys: every span overlapping, in order
      if (m.start < end && int64_t{m.start} + m.length > begin) keys.push_back(m.key);
    }
    parent = ChainHash(parent, tokens.subspan(begin, block_size_), keys);
    hashes.push_back(parent);
  }
  return hashes;
}

int PrecisePrefixIndex::MatchLength(int e, std::span<const uint64_t> hashes, Clock::MonoTime now) const {
  const auto& pending = pending_[e];
  auto held = [&](uint64_t h) {
    if (auto it = holders_.find(h); it != holders_.end()) {
      const auto& who = it->second;
      auto pos = std::lower_bound(who.begin(), who.end(), e, [](const Holder& x, int v) { return x.endpoint < v; });
      if (pos != who.end() && pos->endpoint == e) return true;
    }
    auto p = pending.find(h);
    return p != pending.end() && p->second > now;
  };
  int n = 0;
  for (uint64_t h : hashes) {
    if (!held(h)) break;
    ++n;
  }
  return n;
}

void PrecisePrefixIndex::RecordRouted(int e, std::span<const uint64_t> hashes, Clock::MonoTime now,
                                      Clock::MonoTime until) {
  while (!pending_order_.empty() && pending_order_.front().until <= now) {
    const PendingEntry& old = pending_order_.front();
    auto& map = pending_[old.endpoint];
    // Erase only if not renewed since (a renewal queued a later entry).
    if (auto it = map.find(old.hash); it != map.end() && it->second <= now) map.erase(it);
    pending_order_.pop_front();
  }
  for (uint64_t h : hashes) {
    pending_[e][h] = until;
    pending_order_.push_back({until, e, h});
  }
}

void PrecisePrefixIndex::Apply(int e, const KvEventBatch& batch) {
  for (const WireKvEvent& event : batch.events) {
    if (const auto* stored = std::get_if<WireBlockStored>(&event)) {
      Store(e, *stored);
    } else if (const auto* removed = std::get_if<WireBlockRemoved>(&event)) {
      for (const WireBlockHash& h : removed->block_hashes) Remove(e, h.key);
    } else {
      ClearEndpoint(e);
    }
  }
}

void PrecisePrefixIndex::Store(int e, const WireBlockStored& ev) {
  auto& own_of = by_server_hash_[e];
  const size_t n = ev.block_hashes.size();
  if (ev.block_size != block_size_ || ev.token_ids.size() < n * block_size_) {
    ++stats_.events_skipped;
    return;
  }
  uint64_t parent = kRootHash;
  if (ev.parent_block_hash) {
    auto it = own_of.find(ev.parent_block_hash->key);
    if (it == own_of.end()) {  // a missed event; the chain cannot be rebuilt
      ++stats_.events_skipped;
      return;
    }
    parent = it->second;
  }
  const std::span<const int32_t> tokens(ev.token_ids);
  for (size_t i = 0; i < n; ++i) {
    const std::span<const std::string> keys =
        i < ev.extra_keys.size() ? std::span<const std::string>(ev.extra_keys[i]) : std::span<const std::string>();
    parent = ChainHash(parent, tokens.subspan(i * block_size_, block_size_), keys);
    auto [slot, fresh] = own_of.try_emplace(ev.block_hashes[i].key, parent);
    if (!fresh) {
      if (slot->second == parent) continue;
      Remove(e, ev.block_hashes[i].key);  // the server reused a hash; take the new meaning
      own_of.emplace(ev.block_hashes[i].key, parent);
    }
    AddHolder(parent, e);
    ++stats_.blocks_stored;
  }
}

void PrecisePrefixIndex::Remove(int e, uint64_t server_hash) {
  auto& own_of = by_server_hash_[e];
  auto it = own_of.find(server_hash);
  if (it == own_of.end()) return;
  DropHolder(it->second, e, /*all_refs=*/false);
  own_of.erase(it);
  ++stats_.blocks_removed;
}

void PrecisePrefixIndex::ClearEndpoint(int e) {
  auto& own_of = by_server_hash_[e];
  for (const auto& [server, own] : own_of) DropHolder(own, e, /*all_refs=*/true);
  own_of.clear();
  pending_[e].clear();  // entries left in pending_order_ find nothing to erase
}

void PrecisePrefixIndex::AddHolder(uint64_t own, int e) {
  auto& who = holders_[own];
  auto pos = std::lower_bound(who.begin(), who.end(), e, [](const Holder& x, int v) { return x.endpoint < v; });
  if (pos != who.end() && pos->endpoint == e) {
    ++pos->refs;
  } else {
    who.insert(pos, Holder{static_cast<uint16_t>(e), 1});
  }
}

void PrecisePrefixIndex::DropHolder(uint64_t own, int e, bool all_refs) {
  auto holders = holders_.find(own);
  if (holders == holders_.end()) return;
  auto& who = holders->second;
  auto pos = std::lower_bound(who.begin(), who.end(), e, [](const Holder& x, int v) { return x.endpoint < v; });
  if (pos == who.end() || pos->endpoint != e) return;
  if (!all_refs && --pos->refs > 0) return;
  who.erase(pos);
  if (who.empty()) holders_.erase(holders);
}

}  // namespace omni::gateway
