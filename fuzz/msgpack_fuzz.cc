// libFuzzer target for the msgpack decoder and the KV-event decoder built on
// it (docs/KV_EVENTS.md). Seeds: fuzz/corpus/msgpack (EventBatch payloads in
// both vLLM forms, plus plain msgpack values).
//
// For any input both decoders must return a Status, never crash, read out of
// bounds or overflow the stack. Where the msgpack decoder accepts, the value
// re-encodes canonically: decoding that encoding gives the same encoding
// again (a fixpoint; compared as bytes so NaN is handled). Where the event
// decoder accepts, every event converts back to the engine's KvEvent (when
// its fields fit), the publisher's encoder writes it, and decoding that gives
// the same hashes, tokens and block sizes.
#include <bit>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "engine/kv_event_decoder.h"
#include "engine/kv_event_publisher.h"
#include "net/msgpack.h"

namespace {

using namespace omni;

void CheckMsgpackFixpoint(std::string_view input) {
  StatusOr<MsgpackValue> value = DecodeMsgpack(input);
  if (!value.ok()) {
    OMNI_CHECK(!value.status().message().empty());
    return;
  }
  MsgpackWriter first;
  EncodeMsgpack(*value, first);
  StatusOr<MsgpackValue> again = DecodeMsgpack(first.bytes());
  OMNI_CHECK(again.ok()) << again.status().ToString();
  MsgpackWriter second;
  EncodeMsgpack(*again, second);
  OMNI_CHECK(first.bytes() == second.bytes());
}

// The engine-side event for a decoded one, or nullopt when a field does not
// fit the engine's types (hashes sent as bytes, block sizes beyond int).
std::optional<KvEvent> ToEngineEvent(const WireKvEvent& wire) {
  auto keys = [](const std::vector<WireBlockHash>& hashes) {
    std::vector<BlockHash> out;
    for (const WireBlockHash& h : hashes) out.push_back(h.key);
    return out;
  };
  if (const auto* s = std::get_if<WireBlockStored>(&wire)) {
    if (s->block_size > std::numeric_limits<int>::max()) return std::nullopt;
    BlockStored e;
    e.block_hashes = keys(s->block_hashes);
    if (s->parent_block_hash) e.parent_hash = s->parent_block_hash->key;
    e.token_ids = s->token_ids;
    e.block_size = static_cast<int>(s->block_size);
    return e;
  }
  if (const auto* r = std::get_if<WireBlockRemoved>(&wire)) return BlockRemoved{keys(r->block_hashes)};
  return AllBlocksCleared{};
}

void CheckEventRoundTrip(std::string_view input) {
  StatusOr<KvEventBatch> batch = DecodeKvEventBatch(input);
  if (!batch.ok()) {
    OMNI_CHECK(!batch.status().message().empty());
    return;
  }
  std::vector<KvEvent> events;
  for (const WireKvEvent& w : batch->events) {
    std::optional<KvEvent> e = ToEngineEvent(w);
    if (!e) return;
    events.push_back(std::move(*e));
  }
  KvEventWireOptions options{.data_parallel_rank = batch->data_parallel_rank, .medium = "GPU"};
  StatusOr<KvEventBatch> back = DecodeKvEventBatch(EncodeKvEventBatch(batch->timestamp, events, options));
  OMNI_CHECK(back.ok()) << back.status().ToString();
  OMNI_CHECK_EQ(back->events.size(), batch->events.size());
  OMNI_CHECK(back->data_parallel_rank == batch->data_parallel_rank);
  OMNI_CHECK(std::bit_cast<uint64_t>(back->timestamp) == std::bit_cast<uint64_t>(batch->timestamp));
  for (size_t i = 0; i < events.size(); ++i) {
    const WireKvEvent& a = batch->events[i];
    const WireKvEvent& b = back->events[i];
    OMNI_CHECK_EQ(a.index(), b.index());
    if (const auto* s = std::get_if<WireBlockStored>(&a)) {
      const auto& t = std::get<WireBlockStored>(b);
      OMNI_CHECK(s->token_ids == t.token_ids);
      OMNI_CHECK_EQ(s->block_size, t.block_size);
      OMNI_CHECK_EQ(s->block_hashes.size(), t.block_hashes.size());
      for (size_t j = 0; j < s->block_hashes.size(); ++j) {
        OMNI_CHECK_EQ(s->block_hashes[j].key, t.block_hashes[j].key);
      }
      OMNI_CHECK_EQ(s->parent_block_hash.has_value(), t.parent_block_hash.has_value());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  CheckMsgpackFixpoint(input);
  CheckEventRoundTrip(input);
  return 0;
}
