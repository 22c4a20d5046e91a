// The approximate and precise prefix indexes: hashes per spec/routing.md,
// LRU capacity, and the precise index rebuilt from KV events whose server
// hashes are arbitrary numbers.
#include <xxhash.h>

#include <gtest/gtest.h>

#include <numeric>
#include <string>

#include "services/gateway/approx_prefix_index.h"
#include "services/gateway/lru_hash_set.h"
#include "services/gateway/precise_prefix_index.h"

namespace omni::gateway {
namespace {

uint64_t Xxh64(const std::string& s) { return XXH64(s.data(), s.size(), 0); }

std::string Le64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(v >> (8 * i));
  return out;
}

TEST(ApproxPromptHashes, FollowTheSpecChain) {
  const std::string prompt = std::string(64, 'a') + std::string(64, 'b') + "tail shorter than a block";
  std::vector<uint64_t> got = ApproxPromptHashes("omni", "salt", prompt, 64, 256);
  ASSERT_EQ(got.size(), 2u);
  const uint64_t h0 = Xxh64("omnisalt");
  const uint64_t h1 = Xxh64(std::string(64, 'a') + Le64(h0));
  const uint64_t h2 = Xxh64(std::string(64, 'b') + Le64(h1));
  EXPECT_EQ(got[0], h1);
  EXPECT_EQ(got[1], h2);
  EXPECT_EQ(ApproxPromptHashes("omni", "salt", prompt, 64, 1).size(), 1u);
  EXPECT_NE(ApproxPromptHashes("other", "salt", prompt, 64, 256)[0], h1);
}

TEST(LruHashSet, EvictsLeastRecentlyTouched) {
  LruHashSet set(3);
  set.Touch(1);
  set.Touch(2);
  set.Touch(3);
  set.Touch(1);  // 2 is now the oldest
  set.Touch(4);
  EXPECT_TRUE(set.Contains(1));
  EXPECT_FALSE(set.Contains(2));
  EXPECT_TRUE(set.Contains(3));
  EXPECT_TRUE(set.Contains(4));
  set.SetCapacity(1);
  EXPECT_EQ(set.size(), 1u);
  EXPECT_TRUE(set.Contains(4));
}

TEST(ApproxPrefixIndex, ConsecutiveMatchFromBlockZero) {
  ApproxPrefixIndex index(2, 100);
  std::vector<uint64_t> a = {10, 11, 12, 13};
  index.Record(0, std::span(a).first(2));
  EXPECT_EQ(index.MatchLength(0, a), 2);
  EXPECT_EQ(index.MatchLength(1, a), 0);
  std::vector<uint64_t> gap = {10, 99, 12};
  EXPECT_EQ(index.MatchLength(0, gap), 1);
}

TEST(ApproxPrefixIndex, FullSetForgetsTailsBeforeHeads) {
  ApproxPrefixIndex index(1, 4);
  std::vector<uint64_t> first = {1, 2, 3};
  std::vector<uint64_t> second = {1, 5, 6};
  index.Record(0, first);
  index.Record(0, second);  // 5 entries over capacity 4: the oldest tail (3) goes
  EXPECT_EQ(index.MatchLength(0, second), 3);
  EXPECT_EQ(index.MatchLength(0, first), 2);
}

std::vector<int32_t> Tokens(int n, int start) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), start);
  return t;
}

KvEventBatch Batch(std::vector<WireKvEvent> events) {
  KvEventBatch b;
  b.events = std::move(events);
  return b;
}

WireBlockStored Stored(std::vector<uint64_t> server_hashes, std::optional<uint64_t> parent,
                       std::vector<int32_t> tokens, int block_size = 4) {
  WireBlockStored s;
  for (uint64_t h : server_hashes) s.block_hashes.push_back({.key = h});
  if (parent) s.parent_block_hash = WireBlockHash{.key = *parent};
  s.token_ids = std::move(tokens);
  s.block_size = block_size;
  return s;
}

const Clock::MonoTime kT0 = Clock::MonoTime(std::chrono::seconds(100));

TEST(PrecisePrefixIndex, RebuildsChainsFromTokenIdsAcrossEvents) {
  PrecisePrefixIndex index(3, 4);
  const std::vector<int32_t> prompt = Tokens(14, 100);  // 3 full blocks of 4
  std::vector<uint64_t> req = index.RequestHashes(prompt, {}, 256);
  ASSERT_EQ(req.size(), 3u);
  // Endpoint 1 stores blocks 0-1 in one event and block 2 in a second one
  // whose parent is given by the server's (arbitrary) hash.
  std::vector<int32_t> first8(prompt.begin(), prompt.begin() + 8);
  std::vector<int32_t> third(prompt.begin() + 8, prompt.begin() + 12);
  index.Apply(1, Batch({Stored({900, 901}, std::nullopt, first8)}));
  EXPECT_EQ(index.MatchLength(1, req, kT0), 2);
  index.Apply(1, Batch({Stored({777}, 901, third)}));
  EXPECT_EQ(index.MatchLength(1, req, kT0), 3);
  EXPECT_EQ(index.MatchLength(0, req, kT0), 0);
  // Endpoint 2 holds the same tokens under other server hashes.
  index.Apply(2, Batch({Stored({5, 6}, std::nullopt, first8)}));
  EXPECT_EQ(index.MatchLength(2, req, kT0), 2);
  // Removing block 1 on endpoint 1 cuts its run there.
  index.Apply(1, Batch({WireBlockRemoved{.block_hashes = {{.key = 901}}}}));
  EXPECT_EQ(index.MatchLength(1, req, kT0), 1);
  EXPECT_EQ(index.MatchLength(2, req, kT0), 2);
  index.Apply(2, Batch({WireAllBlocksCleared{}}));
  EXPECT_EQ(index.MatchLength(2, req, kT0), 0);
  EXPECT_EQ(index.blocks_held(2), 0u);
}

// A routed request's blocks count on its endpoint until the deadline, alone
// or extending what events stored; a renewal keeps them; a restart drops them.
TEST(PrecisePrefixIndex, RoutedBlocksArePendingUntilTheirDeadline) {
  using std::chrono::seconds;
  PrecisePrefixIndex index(2, 4);
  const std::vector<int32_t> prompt = Tokens(12, 300);
  const std::vector<uint64_t> req = index.RequestHashes(prompt, {}, 256);
  index.RecordRouted(0, req, kT0, kT0 + seconds(2));
  EXPECT_EQ(index.MatchLength(0, req, kT0 + seconds(1)), 3);
  EXPECT_EQ(index.MatchLength(1, req, kT0 + seconds(1)), 0);
  EXPECT_EQ(index.MatchLength(0, req, kT0 + seconds(2)), 0);  // the deadline is exclusive
  // Events stored block 0 meanwhile; pending blocks 1-2 extend it.
  std::vector<int32_t> first4(prompt.begin(), prompt.begin() + 4);
  index.Apply(0, Batch({Stored({40}, std::nullopt, first4)}));
  EXPECT_EQ(index.MatchLength(0, req, kT0 + seconds(1)), 3);
  EXPECT_EQ(index.MatchLength(0, req, kT0 + seconds(3)), 1);
  // A later routing renews the deadline; purging the old entries keeps it.
  index.RecordRouted(0, req, kT0 + seconds(1), kT0 + seconds(4));
  index.RecordRouted(1, {}, kT0 + seconds(3), kT0 + seconds(5));  // purges entries ended by t0 + 3
  EXPECT_EQ(index.blocks_pending(0), 3u);
  EXPECT_EQ(index.MatchLength(0, req, kT0 + seconds(3)), 3);
  index.RecordRouted(1, {}, kT0 + seconds(4), kT0 + seconds(6));
  EXPECT_EQ(index.blocks_pending(0), 0u);
  index.RecordRouted(1, req, kT0 + seconds(4), kT0 + seconds(6));
  index.ClearEndpoint(1);
  EXPECT_EQ(index.MatchLength(1, req, kT0 + seconds(5)), 0);
}

TEST(PrecisePrefixIndex, DifferentTokensDoNotMatch) {
  PrecisePrefixIndex index(1, 4);
  index.Apply(0, Batch({Stored({1, 2}, std::nullopt, Tokens(8, 0))}));
  std::vector<int32_t> other = Tokens(8, 0);
  other[5] = 999;  // second block differs
  EXPECT_EQ(index.MatchLength(0, index.RequestHashes(other, {}, 256), kT0), 1);
}

TEST(PrecisePrefixIndex, UnknownParentAndOtherBlockSizeAreSkipped) {
  PrecisePrefixIndex index(1, 4);
  index.Apply(0, Batch({Stored({1}, 12345, Tokens(4, 0))}));
  index.Apply(0, Batch({Stored({2}, std::nullopt, Tokens(8, 0), 8)}));
  EXPECT_EQ(index.stats().events_skipped, 2);
  EXPECT_EQ(index.blocks_held(0), 0u);
}

// Media positions: the ids the server hashed (an image's discrete ids) and
// the placeholder ids the gateway predicts are all media tokens, hashed as
// one value; the blocks are told apart by their keys.
TEST(PrecisePrefixIndex, MediaBlocksMatchByKeyNotByIds) {
  const std::vector<int32_t> media_ids = {50, 51, 52, 60};  // e.g. <|vision0..2|>, <|IMAGE_PAD|>
  PrecisePrefixIndex index(2, 4, media_ids);
  // Server: 2 text tokens, 4 discrete ids of image A, 2 text tokens.
  std::vector<int32_t> server = {1, 2, 51, 50, 52, 52, 3, 4};
  WireBlockStored ev = Stored({10, 11}, std::nullopt, server);
  ev.extra_keys = {{"aaaa"}, {"aaaa"}};
  index.Apply(0, Batch({ev}));
  // The gateway knows only the count and the key: pads in the same places.
  const std::vector<int32_t> predicted = {1, 2, 60, 60, 60, 60, 3, 4};
  const std::vector<MediaKeySpan> a = {{2, 4, "aaaa"}};
  const std::vector<MediaKeySpan> b = {{2, 4, "bbbb"}};
  EXPECT_EQ(index.MatchLength(0, index.RequestHashes(predicted, a, 256), kT0), 2);
  // Another image from its first block on.
  EXPECT_EQ(index.MatchLength(0, index.RequestHashes(predicted, b, 256), kT0), 0);
  // Events without keys (an older server) never match a media block.
  WireBlockStored bare = Stored({20, 21}, std::nullopt, server);
  index.Apply(1, Batch({bare}));
  EXPECT_EQ(index.MatchLength(1, index.RequestHashes(predicted, a, 256), kT0), 0);
  // (Only a request without keys would, which the gateway never makes for media.)
  EXPECT_EQ(index.MatchLength(1, index.RequestHashes(predicted, {}, 256), kT0), 2);
  // Text tokens are not canonical: another text token breaks the match.
  std::vector<int32_t> other_text = predicted;
  other_text[7] = 5;
  EXPECT_EQ(index.MatchLength(0, index.RequestHashes(other_text, a, 256), kT0), 1);
}

TEST(PrecisePrefixIndex, ExtraKeysOfAParentedEventChainOn) {
  PrecisePrefixIndex index(1, 4, std::vector<int32_t>{60});
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 60, 60, 60, 60, 60, 60, 7, 8};
  const std::vector<MediaKeySpan> media = {{4, 6, "k"}};
  const std::vector<uint64_t> req = index.RequestHashes(prompt, media, 256);
  ASSERT_EQ(req.size(), 3u);
  index.Apply(0, Batch({Stored({1}, std::nullopt, {1, 2, 3, 4})}));  // text only: no extra_keys
  WireBlockStored rest = Stored({2, 3}, 1, {60, 60, 60, 60, 60, 60, 7, 8});
  rest.extra_keys = {{"k"}, {"k"}};
  index.Apply(0, Batch({rest}));
  EXPECT_EQ(index.MatchLength(0, req, kT0), 3);
}

}  // namespace
}  // namespace omni::gateway
