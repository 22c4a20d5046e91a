// KV-cache events in vLLM's shape (spec/routing.md) and the sink interface
// the engine publishes them through. The ZeroMQ + msgpack publisher is one
// sink; tests record them.
#pragma once

#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

#include "engine/block_pool.h"
#include "engine/kv_cache.h"
#include "engine/sha256_digest.h"

namespace omni {

// vLLM's KV events (spec/routing.md). Hashes are this server's; token_ids
// let a router recompute its own.
struct BlockStored {
  std::vector<BlockHash> block_hashes;
  std::optional<BlockHash> parent_hash;  // nullopt for a run starting at block 0
  std::vector<int32_t> token_ids;        // block_hashes.size() * block_size ids
  int block_size = kBlockSize;
  // The extra keys each block's hash includes (prefix_cache.h: the sha256 of
  // every MediaSpan overlapping it, in span order), one entry per block of
  // block_hashes; empty when no block of the run has any.
  std::vector<std::vector<Sha256Digest>> extra_keys;
};
struct BlockRemoved {
  std::vector<BlockHash> block_hashes;
};
struct AllBlocksCleared {};
using KvEvent = std::variant<BlockStored, BlockRemoved, AllBlocksCleared>;

// Receives events on the engine thread; must not block (queue and return).
class KvEventSink {
 public:
  virtual ~KvEventSink() = default;
  virtual void Publish(KvEvent&& event) = 0;
};

// Keeps every event; for tests.
class RecordingKvEventSink final : public KvEventSink {
 public:
  void Publish(KvEvent&& event) override;
  std::vector<KvEvent> events;
};

}  // namespace omni
