// Decodes KV-cache event messages published by vLLM-compatible servers
// (vLLM itself, or omniserve's KvEventPublisher) for the gateway's
// prefix-cache index. docs/KV_EVENTS.md lists what is accepted:
//
// - frames: [topic, sequence (8 bytes big-endian), msgpack EventBatch]
// - EventBatch as an array [ts, events, dp_rank?] (vLLM with array_like
//   structs; a trailing nil rank may be omitted) or a map
//   {"ts", "events", "data_parallel_rank"?} (newer vLLM).
// - each event as a tagged array ["BlockStored", ...] or a map with a "type"
//   key; trailing array fields and unknown map keys are ignored; an event
//   whose tag is unknown is skipped and counted, not an error.
// - block hashes as msgpack ints (older vLLM, omniserve) or bin (newer vLLM).
// - BlockStored's extra_keys (field 8, newer vLLM and omniserve): nil or one
//   entry per block, each nil or an array of str, bin or int keys.
//
// Malformed input is InvalidArgument with a message that names the field
// (e.g. "events[2] (BlockStored).token_ids[5]: expected int, got str").
// All functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/status.h"
#include "net/msgpack.h"

namespace omni {

// A block hash as sent. `key` is the hash as a uint64: the int itself (a
// negative int, from vLLM versions that used Python's hash(), is taken modulo
// 2^64), or for bytes the low 64 bits of the big-endian number they spell,
// i.e. the last 8 bytes; that is vLLM's own rule for
// VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES, so one server's int and bytes hashes
// agree. `bytes` keeps the raw hash when it was sent as bytes, else empty.
struct WireBlockHash {
  uint64_t key = 0;
  std::string bytes;
  bool operator==(const WireBlockHash&) const = default;
};

struct WireBlockStored {
  std::vector<WireBlockHash> block_hashes;
  std::optional<WireBlockHash> parent_block_hash;
  std::vector<int32_t> token_ids;  // not checked against block_hashes.size() * block_size
  int64_t block_size = 0;          // > 0
  std::optional<int64_t> lora_id;
  std::optional<std::string> medium;
  std::optional<std::string> lora_name;
  // vLLM's extra_keys: per block (in block_hashes order), the keys its hash
  // included besides the tokens (media identifiers; vLLM also puts LoRA
  // names and the cache salt here). A str key as sent, a bin key as its
  // lower-case hex, an int key as its decimal text. An entry that is nil, a
  // missing entry, or an absent field: no extra keys.
  std::vector<std::vector<std::string>> extra_keys;
  bool operator==(const WireBlockStored&) const = default;
};
struct WireBlockRemoved {
  std::vector<WireBlockHash> block_hashes;
  std::optional<std::string> medium;
  bool operator==(const WireBlockRemoved&) const = default;
};
struct WireAllBlocksCleared {
  bool operator==(const WireAllBlocksCleared&) const = default;
};
using WireKvEvent = std::variant<WireBlockStored, WireBlockRemoved, WireAllBlocksCleared>;

// The decoded payload (frame 3).
struct KvEventBatch {
  double timestamp = 0;  // seconds since the Unix epoch, as the server stamped it
  std::optional<int64_t> data_parallel_rank;
  std::vector<WireKvEvent> events;
  int64_t skipped_unknown_events = 0;  // events with a tag this decoder does not know
};

// A whole message: the three frames.
struct KvEventMessage {
  std::string topic;
  uint64_t seq = 0;
  KvEventBatch batch;
};

// Decodes the msgpack EventBatch payload.
StatusOr<KvEventBatch> DecodeKvEventBatch(std::string_view payload, const MsgpackLimits& limits = {});

// Decodes one multipart message; anything but exactly three frames, or a
// sequence frame that is not 8 bytes, is InvalidArgument.
StatusOr<KvEventMessage> DecodeKvEventMessage(std::span<const std::string_view> frames,
                                              const MsgpackLimits& limits = {});

}  // namespace omni
