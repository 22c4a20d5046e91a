// The precise prefix-cache index: which endpoint holds which KV block,
// learned from the endpoints' KV events (spec/routing.md).
//
// The index does not trust the servers' hash functions: for every
// BlockStored it recomputes its own chained hash from the event's token ids
// and extra keys, starting from a fixed root when the event has no parent,
// or from the hash it computed for the parent block. It remembers, per
// endpoint, server hash -> own hash so BlockRemoved and later parents can be
// resolved. A request's hashes come from its token ids and media keys the
// same way; its score on an endpoint is the longest run of blocks from
// block 0 that the endpoint holds, over the request's full blocks.
//
// Own hash of a block: XXH3-64 over the parent's own hash, the block's
// canonical token ids and its extra keys (count, then each key's length and
// bytes). Canonical ids replace every media token (the pool tokenizer's
// <|visionN|>, <|audioN|> and pad ids; media_token_ids) with one value: the
// gateway cannot know an image's 729 discrete ids without fetching its
// object, so media positions are told apart by their keys alone, which the
// servers send per block (the medium's object sha256, KV events'
// extra_keys) and the gateway reads from the object's metadata. A block of
// media whose event carries no keys (an older server) therefore never
// matches a request's block, which always has them: no false hits.
//
// Between a pick and the chosen endpoint's events (its prefill, then the
// publish) the index is blind to what that request will store, so a burst
// of requests that share a new prefix would score 0 everywhere and scatter.
// The router therefore records each routed request's hashes on its
// endpoint as pending until a deadline; they count as held until then, and
// the endpoint's own events take over (llm-d's approximate scorer does the
// same at pick time; here it only bridges the gap).
//
// Limits: a request with a cache_salt is not scored (its server-side chain
// starts from the salt, which events do not carry); a media part whose
// object the gateway cannot HEAD ends the scored prefix (prompt_tokens.h).
//
// Thread-safety: none; PoolRouter locks around it. RequestHashes only reads
// what the constructor set, so it may run outside that lock.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "engine/kv_event_decoder.h"

namespace omni::gateway {

struct PreciseIndexStats {
  int64_t blocks_stored = 0;
  int64_t blocks_removed = 0;
  int64_t events_skipped = 0;  // unknown parent or another block size
};

// A run of prompt positions that came from one medium, keyed as the LLM
// server keys the blocks it overlaps: by the sha256 of the medium's
// embedding object, in lower-case hex (KV events' extra_keys form).
struct MediaKeySpan {
  int32_t start = 0;
  int32_t length = 0;
  std::string key;
};

class PrecisePrefixIndex {
 public:
  // `media_token_ids`: the ids hashed as one canonical value (see above).
  PrecisePrefixIndex(int num_endpoints, int block_size, std::span<const int32_t> media_token_ids = {});

  // Own chained hashes of the full blocks of `tokens`, at most `max_blocks`;
  // `media` sorted by start, not overlapping.
  std::vector<uint64_t> RequestHashes(std::span<const int32_t> tokens, std::span<const MediaKeySpan> media,
                                      int max_blocks) const;
  // The run of `hashes` from block 0 that `e` holds, or has pending past `now`.
  int MatchLength(int e, std::span<const uint64_t> hashes, Clock::MonoTime now) const;
  // A request with these hashes was routed to `e`: pending on it until
  // `until`. Also drops pending entries that ended before `now`.
  void RecordRouted(int e, std::span<const uint64_t> hashes, Clock::MonoTime now, Clock::MonoTime until);
  size_t blocks_pending(int e) const { return pending_[e].size(); }
  void Apply(int e, const KvEventBatch& batch);
  // Forget everything about `e` (it restarted or was ejected).
  void ClearEndpoint(int e);
  size_t blocks_held(int e) const { return by_server_hash_[e].size(); }
  const PreciseIndexStats& stats() const { return stats_; }

 private:
  // One endpoint holding an own hash, under `refs` server hashes (two server
  // blocks map to one own hash when the server keyed them apart by media).
  struct Holder {
    uint16_t endpoint;
    uint32_t refs;
  };

  uint64_t ChainHash(uint64_t parent, std::span<const int32_t> tokens, std::span<const std::string> keys) const;
  void Store(int e, const WireBlockStored& ev);
  void Remove(int e, uint64_t server_hash);
  void AddHolder(uint64_t own, int e);
  void DropHolder(uint64_t own, int e, bool all_refs);

  int block_size_;
  std::vector<bool> is_media_token_;  // by token id; ids past the end are not media
  std::unordered_map<uint64_t, std::vector<Holder>> holders_;  // own hash -> sorted by endpoint
  std::vector<std::unordered_map<uint64_t, uint64_t>> by_server_hash_;  // per endpoint
  struct PendingEntry {
    Clock::MonoTime until;
    int endpoint;
    uint64_t hash;
  };
  std::vector<std::unordered_map<uint64_t, Clock::MonoTime>> pending_;  // per endpoint: own hash -> until
  std::deque<PendingEntry> pending_order_;                              // by `until` (one fixed TTL)
  PreciseIndexStats stats_;
};

}  // namespace omni::gateway
