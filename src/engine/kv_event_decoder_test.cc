#include "engine/kv_event_decoder.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

namespace omni {
namespace {

// A BlockStored event as the tagged array older vLLM sends (7 fields + tag).
void WriteStoredArray(MsgpackWriter& w) {
  w.ArrayHeader(7).Str("BlockStored");
  w.ArrayHeader(2).Uint(0xfffffffffffffff0ull).Uint(7);
  w.Uint(5);  // parent
  w.ArrayHeader(4).Uint(1).Uint(2).Uint(3).Uint(100000);
  w.Uint(2).Nil().Str("GPU");
}

TEST(KvEventDecoderTest, ArrayFormBatch) {
  MsgpackWriter w;
  w.ArrayHeader(3).Double(1700000000.5).ArrayHeader(3);
  WriteStoredArray(w);
  w.ArrayHeader(3).Str("BlockRemoved").ArrayHeader(1).Uint(7).Nil();
  w.ArrayHeader(1).Str("AllBlocksCleared");
  w.Uint(2);

  StatusOr<KvEventBatch> batch = DecodeKvEventBatch(w.bytes());
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(batch->timestamp, 1700000000.5);
  EXPECT_EQ(batch->data_parallel_rank, 2);
  EXPECT_EQ(batch->skipped_unknown_events, 0);
  ASSERT_EQ(batch->events.size(), 3u);

  WireBlockStored want;
  want.block_hashes = {{0xfffffffffffffff0ull, ""}, {7, ""}};
  want.parent_block_hash = WireBlockHash{5, ""};
  want.token_ids = {1, 2, 3, 100000};
  want.block_size = 2;
  want.medium = "GPU";
  EXPECT_EQ(std::get<WireBlockStored>(batch->events[0]), want);
  EXPECT_EQ(std::get<WireBlockRemoved>(batch->events[1]), (WireBlockRemoved{{{7, ""}}, std::nullopt}));
  EXPECT_TRUE(std::holds_alternative<WireAllBlocksCleared>(batch->events[2]));
}

TEST(KvEventDecoderTest, MapFormBatchWithBytesHashes) {
  // Newer vLLM: structs without array_like become maps, tagged by "type";
  // hashes are 32-byte sha256 digests sent as bin.
  std::array<uint8_t, 32> digest{};
  for (size_t i = 0; i < digest.size(); ++i) digest[i] = static_cast<uint8_t>(i);
  std::array<uint8_t, 3> short_hash = {0x01, 0x02, 0x03};
  MsgpackWriter w;
  w.MapHeader(2).Str("ts").Double(12.25).Str("events").ArrayHeader(3);
  w.MapHeader(9).Str("type").Str("BlockStored");
  w.Str("block_hashes").ArrayHeader(1).Bin(digest);
  w.Str("parent_block_hash").Bin(short_hash);
  w.Str("token_ids").ArrayHeader(2).Int(9).Int(10);
  w.Str("block_size").Uint(2);
  w.Str("lora_id").Nil();
  w.Str("medium").Str("CPU");
  w.Str("lora_name").Str("adapter-a");
  w.Str("extra_keys").ArrayHeader(1).Nil();  // unknown to us: ignored
  w.MapHeader(2).Str("type").Str("BlockRemoved").Str("block_hashes").ArrayHeader(1).Int(-2);
  w.MapHeader(1).Str("type").Str("AllBlocksCleared");

  StatusOr<KvEventBatch> batch = DecodeKvEventBatch(w.bytes());
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(batch->timestamp, 12.25);
  EXPECT_EQ(batch->data_parallel_rank, std::nullopt);
  ASSERT_EQ(batch->events.size(), 3u);
  const auto& stored = std::get<WireBlockStored>(batch->events[0]);
  ASSERT_EQ(stored.block_hashes.size(), 1u);
  // The low 64 bits of the big-endian digest: bytes 24..31.
  EXPECT_EQ(stored.block_hashes[0].key, 0x18191a1b1c1d1e1full);
  EXPECT_EQ(stored.block_hashes[0].bytes.size(), 32u);
  EXPECT_EQ(stored.parent_block_hash->key, 0x010203u);
  EXPECT_EQ(stored.token_ids, (std::vector<int32_t>{9, 10}));
  EXPECT_EQ(stored.medium, "CPU");
  EXPECT_EQ(stored.lora_name, "adapter-a");
  // A negative (Python hash()) int is taken modulo 2^64.
  EXPECT_EQ(std::get<WireBlockRemoved>(batch->events[1]).block_hashes[0].key, 0xfffffffffffffffeull);
  EXPECT_TRUE(std::holds_alternative<WireAllBlocksCleared>(batch->events[2]));
}

TEST(KvEventDecoderTest, ShortFormsFromOlderVersionsAndExtraTrailingFields) {
  MsgpackWriter w;
  // [ts, events] with the rank omitted; int timestamp.
  w.ArrayHeader(2).Uint(3).ArrayHeader(3);
  // BlockStored before lora_id/medium existed.
  w.ArrayHeader(5).Str("BlockStored").ArrayHeader(1).Uint(1).Nil().ArrayHeader(1).Uint(4).Uint(1);
  // BlockRemoved without medium.
  w.ArrayHeader(2).Str("BlockRemoved").ArrayHeader(0);
  // A future vLLM with more trailing fields.
  w.ArrayHeader(10).Str("BlockStored").ArrayHeader(1).Uint(2).Uint(1).ArrayHeader(1).Uint(4).Uint(1);
  w.Nil().Str("GPU").Nil().ArrayHeader(0).Uint(0);

  StatusOr<KvEventBatch> batch = DecodeKvEventBatch(w.bytes());
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(batch->timestamp, 3.0);
  EXPECT_EQ(batch->data_parallel_rank, std::nullopt);
  ASSERT_EQ(batch->events.size(), 3u);
  EXPECT_FALSE(std::get<WireBlockStored>(batch->events[0]).parent_block_hash.has_value());
  EXPECT_FALSE(std::get<WireBlockStored>(batch->events[0]).medium.has_value());
  EXPECT_FALSE(std::get<WireBlockRemoved>(batch->events[1]).medium.has_value());
  EXPECT_EQ(std::get<WireBlockStored>(batch->events[2]).medium, "GPU");
}

TEST(KvEventDecoderTest, UnknownEventTypesAreSkippedAndCounted) {
  MsgpackWriter w;
  w.ArrayHeader(3).Double(1).ArrayHeader(3);
  w.ArrayHeader(2).Str("BlockMoved").Uint(1);
  w.ArrayHeader(1).Str("AllBlocksCleared");
  w.MapHeader(1).Str("type").Str("SomethingNew");
  w.Nil();
  StatusOr<KvEventBatch> batch = DecodeKvEventBatch(w.bytes());
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(batch->events.size(), 1u);
  EXPECT_EQ(batch->skipped_unknown_events, 2);
}

TEST(KvEventDecoderTest, DecodesThreeFrameMessage) {
  MsgpackWriter w;
  w.ArrayHeader(3).Double(1).ArrayHeader(0).Uint(0);
  const std::string seq("\x00\x00\x00\x00\x00\x00\x01\x02", 8);
  const std::array<std::string_view, 3> frames = {"kv@10.0.0.1:8000@m", seq, w.bytes()};
  StatusOr<KvEventMessage> msg = DecodeKvEventMessage(frames);
  ASSERT_TRUE(msg.ok()) << msg.status().ToString();
  EXPECT_EQ(msg->topic, "kv@10.0.0.1:8000@m");
  EXPECT_EQ(msg->seq, 0x102u);
  EXPECT_EQ(msg->batch.data_parallel_rank, 0);

  const std::array<std::string_view, 2> two = {"t", seq};
  EXPECT_EQ(DecodeKvEventMessage(two).status().message(),
            "kv event message: expected 3 frames (topic, seq, payload), got 2");
  const std::array<std::string_view, 3> short_seq = {"t", "1234", w.bytes()};
  EXPECT_EQ(DecodeKvEventMessage(short_seq).status().message(),
            "kv event message: sequence frame is 4 bytes, expected 8 (uint64 big-endian)");
}

std::string ErrorOf(const MsgpackWriter& w) {
  StatusOr<KvEventBatch> batch = DecodeKvEventBatch(w.bytes());
  EXPECT_FALSE(batch.ok());
  if (batch.ok()) return "";
  EXPECT_EQ(batch.status().code(), StatusCode::kInvalidArgument);
  return batch.status().message();
}

// The batch [1.0, [<event>], nil] around one event written by `fn`.
template <typename Fn>
MsgpackWriter OneEvent(Fn fn) {
  MsgpackWriter w;
  w.ArrayHeader(3).Double(1).ArrayHeader(1);
  fn(w);
  w.Nil();
  return w;
}

TEST(KvEventDecoderTest, MalformedBatches) {
  MsgpackWriter w;
  w.Uint(3);
  EXPECT_EQ(ErrorOf(w), "kv event batch: expected array or map, got int");
  w.Clear();
  w.ArrayHeader(1).Double(1);
  EXPECT_EQ(ErrorOf(w), "kv event batch.events: missing");
  w.Clear();
  w.ArrayHeader(2).Str("now").ArrayHeader(0);
  EXPECT_EQ(ErrorOf(w), "kv event batch.ts: expected float, got str");
  w.Clear();
  w.ArrayHeader(3).Double(1).MapHeader(0).Nil();
  EXPECT_EQ(ErrorOf(w), "kv event batch.events: expected array, got map");
  w.Clear();
  w.ArrayHeader(3).Double(1).ArrayHeader(0).Str("0");
  EXPECT_EQ(ErrorOf(w), "kv event batch.data_parallel_rank: expected int or nil, got str");
  w.Clear();
  w.MapHeader(1).Str("events").ArrayHeader(0);
  EXPECT_EQ(ErrorOf(w), "kv event batch.ts: missing");
  // Bad msgpack is reported with the msgpack decoder's message.
  StatusOr<KvEventBatch> truncated = DecodeKvEventBatch(std::string_view("\x91\xcb", 2));
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.status().message(),
            "kv event batch: msgpack: truncated float 64 at offset 1: needs 8 bytes, 0 remain");
}

TEST(KvEventDecoderTest, MalformedEvents) {
  EXPECT_EQ(ErrorOf(OneEvent([](auto& w) { w.Uint(1); })),
            "kv event events[0]: expected tagged array or map, got int");
  EXPECT_EQ(ErrorOf(OneEvent([](auto& w) { w.ArrayHeader(0); })), "kv event events[0]: empty array, no type tag");
  EXPECT_EQ(ErrorOf(OneEvent([](auto& w) { w.ArrayHeader(1).Uint(0); })),
            "kv event events[0] type tag: expected str, got int");
  EXPECT_EQ(ErrorOf(OneEvent([](auto& w) { w.MapHeader(1).Str("block_hashes").ArrayHeader(0); })),
            "kv event events[0].type: missing");
  EXPECT_EQ(ErrorOf(OneEvent([](auto& w) { w.ArrayHeader(2).Str("BlockStored").ArrayHeader(0); })),
            "kv event events[0] (BlockStored).token_ids: missing");
  EXPECT_EQ(ErrorOf(OneEvent([](auto& w) {
              w.ArrayHeader(5).Str("BlockStored").ArrayHeader(1).Str("h").Nil().ArrayHeader(0).Uint(1);
            })),
            "kv event events[0] (BlockStored).block_hashes[0]: expected int or bin block hash, got str");
  EXPECT_EQ(ErrorOf(OneEvent([](auto& w) {
              w.ArrayHeader(5).Str("BlockStored").ArrayHeader(0).Nil().ArrayHeader(2).Uint(1).Double(2).Uint(1);
            })),
            "kv event events[0] (BlockStored).token_ids[1]: expected int token id, got float");
  EXPECT_EQ(ErrorOf(OneEvent([](auto& w) {
              w.ArrayHeader(5).Str("BlockStored").ArrayHeader(0).Nil().ArrayHeader(1).Uint(1ull << 31).Uint(1);
            })),
            "kv event events[0] (BlockStored).token_ids[0]: token id 2147483648 is outside int32");
  EXPECT_EQ(ErrorOf(OneEvent([](auto& w) {
              w.ArrayHeader(5).Str("BlockStored").ArrayHeader(0).Nil().ArrayHeader(0).Int(0);
            })),
            "kv event events[0] (BlockStored).block_size: 0 is not positive");
  EXPECT_EQ(ErrorOf(OneEvent([](auto& w) {
              w.ArrayHeader(6).Str("BlockStored").ArrayHeader(0).Nil().ArrayHeader(0).Int(1).Str("lora");
            })),
            "kv event events[0] (BlockStored).lora_id: expected int or nil, got str");
  EXPECT_EQ(ErrorOf(OneEvent([](auto& w) { w.ArrayHeader(3).Str("BlockRemoved").ArrayHeader(0).Uint(1); })),
            "kv event events[0] (BlockRemoved).medium: expected str or nil, got int");
  EXPECT_EQ(ErrorOf(OneEvent([](auto& w) { w.ArrayHeader(2).Str("BlockRemoved").Nil(); })),
            "kv event events[0] (BlockRemoved).block_hashes: expected array of block hashes, got nil");
  EXPECT_EQ(ErrorOf(OneEvent([](auto& w) {
              w.MapHeader(3).Str("type").Str("BlockRemoved").Str("block_hashes").ArrayHeader(0);
              w.Str("block_hashes").ArrayHeader(0);
            })),
            "kv event events[0] (BlockRemoved).block_hashes: duplicate key");
}

TEST(KvEventDecoderTest, ExtraKeysPerBlockAsVllmSendsThem) {
  // vLLM: extra_keys is list[tuple | None] | None, one entry per block; its
  // multimodal identifiers are str, prompt-embedding hashes bytes.
  const std::array<uint8_t, 2> bin_key = {0x01, 0xab};
  MsgpackWriter w;
  w.MapHeader(2).Str("ts").Double(1).Str("events").ArrayHeader(2);
  w.MapHeader(10).Str("type").Str("BlockStored");
  w.Str("block_hashes").ArrayHeader(3).Uint(1).Uint(2).Uint(3);
  w.Str("parent_block_hash").Nil();
  w.Str("token_ids").ArrayHeader(3).Int(9).Int(9).Int(9);
  w.Str("block_size").Uint(1);
  w.Str("lora_id").Nil();
  w.Str("medium").Str("GPU");
  w.Str("lora_name").Nil();
  w.Str("extra_keys").ArrayHeader(3);
  w.ArrayHeader(1).Str("9f86d081");
  w.Nil();
  w.ArrayHeader(3).Str("9f86d081").Bin(bin_key).Int(-3);
  w.Str("group_idx").Uint(0);
  // The tagged-array form with extra_keys nil (vLLM without media).
  w.ArrayHeader(9).Str("BlockStored").ArrayHeader(1).Uint(4).Nil().ArrayHeader(1).Uint(4).Uint(1);
  w.Nil().Str("GPU").Nil().Nil();

  StatusOr<KvEventBatch> batch = DecodeKvEventBatch(w.bytes());
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  const auto& stored = std::get<WireBlockStored>(batch->events[0]);
  ASSERT_EQ(stored.extra_keys.size(), 3u);
  EXPECT_EQ(stored.extra_keys[0], (std::vector<std::string>{"9f86d081"}));
  EXPECT_TRUE(stored.extra_keys[1].empty());
  EXPECT_EQ(stored.extra_keys[2], (std::vector<std::string>{"9f86d081", "01ab", "-3"}));
  EXPECT_TRUE(std::get<WireBlockStored>(batch->events[1]).extra_keys.empty());

  EXPECT_EQ(ErrorOf(OneEvent([](auto& w) {
              w.ArrayHeader(9).Str("BlockStored").ArrayHeader(0).Nil().ArrayHeader(0).Uint(1);
              w.Nil().Nil().Nil().Str("key");
            })),
            "kv event events[0] (BlockStored).extra_keys: expected array of per-block extra keys or nil, got str");
  EXPECT_EQ(ErrorOf(OneEvent([](auto& w) {
              w.ArrayHeader(9).Str("BlockStored").ArrayHeader(0).Nil().ArrayHeader(0).Uint(1);
              w.Nil().Nil().Nil().ArrayHeader(1).ArrayHeader(1).Double(1.5);
            })),
            "kv event events[0] (BlockStored).extra_keys[0][0]: expected str, bin or int extra key, got float");
}

TEST(KvEventDecoderTest, LimitsApply) {
  MsgpackWriter w;
  w.ArrayHeader(3).Double(1).ArrayHeader(0).Nil();
  MsgpackLimits limits;
  limits.max_input_bytes = 4;
  StatusOr<KvEventBatch> batch = DecodeKvEventBatch(w.bytes(), limits);
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.status().code(), StatusCode::kPayloadTooLarge);
}

}  // namespace
}  // namespace omni
