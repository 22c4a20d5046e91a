#include "engine/kv_event_publisher.h"

#include <gtest/gtest.h>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <chrono>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "engine/kv_event_decoder.h"

namespace omni {
namespace {

using std::chrono::steady_clock;

std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

TEST(EncodeKvEventBatchTest, ExactBytesOfVllmTaggedArrays) {
  std::vector<KvEvent> events;
  events.push_back(BlockStored{{1, 300}, std::nullopt, {1, 2}, 1});
  events.push_back(BlockRemoved{{300}});
  events.push_back(AllBlocksCleared{});
  std::string got = EncodeKvEventBatch(1.5, events, KvEventWireOptions{});
  std::string want = Bytes({0x93, 0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0x93});
  want += Bytes({0x97, 0xab}) + "BlockStored";
  want += Bytes({0x92, 0x01, 0xcd, 0x01, 0x2c, 0xc0, 0x92, 0x01, 0x02, 0x01, 0xc0, 0xa3}) + "GPU";
  want += Bytes({0x93, 0xac}) + "BlockRemoved";
  want += Bytes({0x91, 0xcd, 0x01, 0x2c, 0xa3}) + "GPU";
  want += Bytes({0x91, 0xb0}) + "AllBlocksCleared";
  want += Bytes({0x00});  // data_parallel_rank 0
  EXPECT_EQ(got, want);
}

TEST(EncodeKvEventBatchTest, NilRankMediumAndParent) {
  std::vector<KvEvent> events;
  events.push_back(BlockStored{{0xffffffffffffffffull}, 42, {7}, 1});
  KvEventWireOptions wire{.data_parallel_rank = std::nullopt, .medium = std::nullopt};
  StatusOr<KvEventBatch> batch = DecodeKvEventBatch(EncodeKvEventBatch(2.0, events, wire));
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(batch->data_parallel_rank, std::nullopt);
  const auto& stored = std::get<WireBlockStored>(batch->events[0]);
  EXPECT_EQ(stored.block_hashes[0].key, 0xffffffffffffffffull);
  EXPECT_EQ(stored.parent_block_hash->key, 42u);
  EXPECT_EQ(stored.medium, std::nullopt);
  EXPECT_EQ(stored.lora_id, std::nullopt);
}

TEST(EncodeKvEventBatchTest, ExtraKeysFollowVllmsFieldAndRoundTrip) {
  Sha256Digest a, b;
  a.fill(0xab);
  b.fill(0x01);
  BlockStored stored{{1, 2, 3}, std::nullopt, std::vector<int32_t>(3, 7), 1};
  stored.extra_keys = {{a}, {}, {a, b}};
  std::vector<KvEvent> events;
  events.push_back(stored);
  events.push_back(BlockStored{{4}, 3, {8}, 1});  // no media: the older shape
  const std::string payload = EncodeKvEventBatch(1.0, events, KvEventWireOptions{});
  // Tag + 8 fields: ..., medium, lora_name = nil, extra_keys.
  EXPECT_NE(payload.find(Bytes({0x99, 0xab}) + "BlockStored"), std::string::npos);
  EXPECT_NE(payload.find(Bytes({0x97, 0xab}) + "BlockStored"), std::string::npos);
  StatusOr<KvEventBatch> batch = DecodeKvEventBatch(payload);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  const auto& got = std::get<WireBlockStored>(batch->events[0]);
  EXPECT_EQ(got.lora_name, std::nullopt);
  EXPECT_EQ(got.medium, "GPU");
  ASSERT_EQ(got.extra_keys.size(), 3u);
  EXPECT_EQ(got.extra_keys[0], (std::vector<std::string>{Sha256DigestHex(a)}));
  EXPECT_EQ(Sha256DigestHex(a), "abababababababababababababababababababababababababababababababab");
  EXPECT_TRUE(got.extra_keys[1].empty());
  EXPECT_EQ(got.extra_keys[2], (std::vector<std::string>{Sha256DigestHex(a), Sha256DigestHex(b)}));
  EXPECT_TRUE(std::get<WireBlockStored>(batch->events[1]).extra_keys.empty());
}

TEST(KvEventTopicTest, Format) { EXPECT_EQ(KvEventTopic("10.0.0.7:8000", "hcx"), "kv@10.0.0.7:8000@hcx"); }

TEST(KvEventQueueTest, DropsOldestWhenFull) {
  KvEventQueue q(3);
  int dropped = 0;
  for (uint64_t i = 0; i < 5; ++i) dropped += q.Push(BlockRemoved{{i}});
  EXPECT_EQ(dropped, 2);
  std::vector<KvEvent> out;
  q.PopBatch(2, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(std::get<BlockRemoved>(out[0]).block_hashes[0], 2u);
  EXPECT_EQ(std::get<BlockRemoved>(out[1]).block_hashes[0], 3u);
  q.PopBatch(10, out);
  EXPECT_EQ(out.size(), 3u);
  EXPECT_TRUE(q.empty());
}

constexpr BlockHash kProbeHash = 0x5052'4f42'4550'524full;  // "PROBEPRO"

// A SUB socket on the publisher's endpoint. Every wait is bounded by a 10 s
// fail-fast deadline; nothing is asserted about how long delivery takes.
class TestSubscriber {
 public:
  explicit TestSubscriber(const std::string& endpoint) {
    sub_.set(zmq::sockopt::linger, 0);
    sub_.set(zmq::sockopt::subscribe, "");
    sub_.connect(endpoint);
  }

  std::optional<KvEventMessage> Receive(steady_clock::time_point deadline) {
    while (steady_clock::now() < deadline) {
      std::vector<zmq::message_t> parts;
      if (!zmq::recv_multipart(sub_, std::back_inserter(parts), zmq::recv_flags::dontwait)) {
        zmq::pollitem_t item{sub_.handle(), 0, ZMQ_POLLIN, 0};
        zmq::poll(&item, 1, std::chrono::milliseconds(20));
        continue;
      }
      std::vector<std::string_view> frames;
      for (const auto& p : parts) frames.push_back(p.to_string_view());
      StatusOr<KvEventMessage> msg = DecodeKvEventMessage(frames);
      EXPECT_TRUE(msg.ok()) << msg.status().ToString();
      if (!msg.ok()) return std::nullopt;
      return *std::move(msg);
    }
    return std::nullopt;
  }

  // Works around PUB/SUB's slow joiner: publishes probe events until one
  // arrives, so later messages are known to reach this subscriber.
  bool Join(KvEventPublisher& pub) {
    const auto deadline = steady_clock::now() + std::chrono::seconds(10);
    while (steady_clock::now() < deadline) {
      pub.Publish(BlockRemoved{{kProbeHash}});
      if (Receive(steady_clock::now() + std::chrono::milliseconds(50))) return true;
    }
    return false;
  }

  // Collects `n` non-probe events (probes may still be in flight after Join)
  // and checks that sequence numbers go up by one per message.
  std::vector<WireKvEvent> ReceiveEvents(size_t n, std::vector<KvEventMessage>* messages = nullptr) {
    const auto deadline = steady_clock::now() + std::chrono::seconds(10);
    std::vector<WireKvEvent> events;
    while (events.size() < n) {
      std::optional<KvEventMessage> msg = Receive(deadline);
      if (!msg) {
        ADD_FAILURE() << "timed out with " << events.size() << " of " << n << " events";
        break;
      }
      if (last_seq_) {
        EXPECT_EQ(msg->seq, *last_seq_ + 1);
      }
      last_seq_ = msg->seq;
      for (WireKvEvent& e : msg->batch.events) {
        const auto* removed = std::get_if<WireBlockRemoved>(&e);
        if (removed && removed->block_hashes.size() == 1 && removed->block_hashes[0].key == kProbeHash) continue;
        events.push_back(std::move(e));
      }
      if (messages) messages->push_back(std::move(*msg));
    }
    return events;
  }

 private:
  zmq::context_t ctx_{1};
  zmq::socket_t sub_{ctx_, zmq::socket_type::sub};
  std::optional<uint64_t> last_seq_;
};

KvEventPublisherOptions LocalOptions(const Clock* clock) {
  KvEventPublisherOptions options;
  options.endpoint = "tcp://127.0.0.1:*";
  options.topic = KvEventTopic("127.0.0.1:8000", "test-model");
  options.clock = clock;
  return options;
}

TEST(KvEventPublisherTest, RoundTripOverZeroMq) {
  FakeClock clock;
  StatusOr<std::unique_ptr<KvEventPublisher>> pub = KvEventPublisher::Create(LocalOptions(&clock));
  ASSERT_TRUE(pub.ok()) << pub.status().ToString();
  ASSERT_NE((*pub)->bound_endpoint().find("tcp://127.0.0.1:"), std::string::npos);
  TestSubscriber sub((*pub)->bound_endpoint());
  ASSERT_TRUE(sub.Join(**pub));

  (*pub)->Publish(BlockStored{{11, 12}, 10, {1, 2, 3, 4}, 2});
  (*pub)->Publish(BlockRemoved{{11}});
  (*pub)->Publish(AllBlocksCleared{});
  std::vector<KvEventMessage> messages;
  std::vector<WireKvEvent> events = sub.ReceiveEvents(3, &messages);
  ASSERT_EQ(events.size(), 3u);
  WireBlockStored want;
  want.block_hashes = {{11, ""}, {12, ""}};
  want.parent_block_hash = WireBlockHash{10, ""};
  want.token_ids = {1, 2, 3, 4};
  want.block_size = 2;
  want.medium = "GPU";
  EXPECT_EQ(std::get<WireBlockStored>(events[0]), want);
  EXPECT_EQ(std::get<WireBlockRemoved>(events[1]), (WireBlockRemoved{{{11, ""}}, "GPU"}));
  EXPECT_TRUE(std::holds_alternative<WireAllBlocksCleared>(events[2]));
  for (const KvEventMessage& m : messages) {
    EXPECT_EQ(m.topic, "kv@127.0.0.1:8000@test-model");
    EXPECT_EQ(m.batch.timestamp, 1'700'000'000.0);
    EXPECT_EQ(m.batch.data_parallel_rank, 0);
  }
  (*pub)->Shutdown();
  EXPECT_EQ((*pub)->dropped_events(), 0u);
  EXPECT_EQ((*pub)->sent_events(), (*pub)->published_events());
}

TEST(KvEventPublisherTest, ShutdownFlushesEverythingQueued) {
  KvEventPublisherOptions options = LocalOptions(nullptr);
  options.max_batch_events = 64;
  StatusOr<std::unique_ptr<KvEventPublisher>> pub = KvEventPublisher::Create(std::move(options));
  ASSERT_TRUE(pub.ok()) << pub.status().ToString();
  TestSubscriber sub((*pub)->bound_endpoint());
  ASSERT_TRUE(sub.Join(**pub));

  constexpr uint64_t kEvents = 1000;
  for (uint64_t i = 0; i < kEvents; ++i) (*pub)->Publish(BlockRemoved{{i}});
  (*pub)->Shutdown();  // returns after the queue is sent
  EXPECT_EQ((*pub)->dropped_events(), 0u);
  EXPECT_EQ((*pub)->sent_events(), (*pub)->published_events());

  std::vector<KvEventMessage> messages;
  std::vector<WireKvEvent> events = sub.ReceiveEvents(kEvents, &messages);
  ASSERT_EQ(events.size(), kEvents);
  for (uint64_t i = 0; i < kEvents; ++i) {
    EXPECT_EQ(std::get<WireBlockRemoved>(events[i]).block_hashes[0].key, i);
  }
  for (const KvEventMessage& m : messages) EXPECT_LE(m.batch.events.size(), 64u);

  (*pub)->Publish(AllBlocksCleared{});
  EXPECT_EQ((*pub)->dropped_events(), 1u);  // after shutdown: dropped, counted
}

TEST(KvEventPublisherTest, NoSubscriberNeverStallsPublish) {
  KvEventPublisherOptions options = LocalOptions(nullptr);
  options.max_queue_events = 16;
  options.close_linger = std::chrono::milliseconds(0);
  StatusOr<std::unique_ptr<KvEventPublisher>> pub = KvEventPublisher::Create(std::move(options));
  ASSERT_TRUE(pub.ok()) << pub.status().ToString();
  for (uint64_t i = 0; i < 20'000; ++i) (*pub)->Publish(BlockStored{{i}, std::nullopt, {1}, 1});
  (*pub)->Shutdown();
  EXPECT_EQ((*pub)->published_events(), 20'000u);
  EXPECT_EQ((*pub)->sent_events() + (*pub)->dropped_events(), 20'000u);
}

TEST(KvEventPublisherTest, BindErrors) {
  StatusOr<std::unique_ptr<KvEventPublisher>> first = KvEventPublisher::Create(LocalOptions(nullptr));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  KvEventPublisherOptions same = LocalOptions(nullptr);
  same.endpoint = (*first)->bound_endpoint();
  StatusOr<std::unique_ptr<KvEventPublisher>> second = KvEventPublisher::Create(std::move(same));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable) << second.status().ToString();

  KvEventPublisherOptions bad = LocalOptions(nullptr);
  bad.endpoint = "not-an-endpoint";
  StatusOr<std::unique_ptr<KvEventPublisher>> third = KvEventPublisher::Create(std::move(bad));
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.status().code(), StatusCode::kInvalidArgument) << third.status().ToString();
  EXPECT_NE(third.status().message().find("not-an-endpoint"), std::string::npos);
}

}  // namespace
}  // namespace omni
