// Publishes the engine's KV-cache events over ZeroMQ in vLLM's wire format
// (spec/routing.md "KV-cache events"; docs/KV_EVENTS.md), so cache-aware
// routers built for vLLM index omniserve servers unchanged.
//
// Each message is three frames: topic, sequence number (uint64 big-endian,
// one per message, from 0) and a msgpack EventBatch
//   [timestamp float64 seconds, [event, ...], data_parallel_rank int|nil]
// whose events are msgspec tagged arrays:
//   ["BlockStored", [hash, ...], parent|nil, [token, ...], block_size, lora_id=nil, medium]
//   ["BlockStored", ..., medium, lora_name=nil, extra_keys]   (a run with media)
//   ["BlockRemoved", [hash, ...], medium]
//   ["AllBlocksCleared"]
// Hashes are uint64 msgpack ints (vLLM's int form). extra_keys is vLLM's
// field (newer vLLM, same position): one entry per block, nil or an array of
// the block's media keys, each the medium's sha256 as 64 lower-case hex
// digits (the embedding object's, prefix_cache.h); sent only when a block of
// the run has one, so text-only events keep the older 7-element shape.
//
// Publish() only queues: a background thread batches queued events (up to
// max_batch_events per message, or whatever arrived within flush_interval)
// and sends them. The queue is bounded; when full the oldest event is dropped
// and counted, so a slow or absent subscriber never stalls the engine (a ZMQ
// PUB socket never blocks either: past its high-water mark it drops whole
// messages, which we cannot count).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "engine/kv_events.h"

namespace omni {

// The fields of an EventBatch that do not come from the events themselves.
struct KvEventWireOptions {
  // Third EventBatch element. vLLM fills in its DP rank (0 without data
  // parallelism); nullopt sends nil.
  std::optional<int64_t> data_parallel_rank = 0;
  // The `medium` field of BlockStored/BlockRemoved. vLLM's GPU block pool
  // sends "GPU"; routers that tier by medium treat it as the primary tier.
  // nullopt sends nil.
  std::optional<std::string> medium = "GPU";
};

// The msgpack EventBatch payload (frame 3) for `events`, stamped
// `timestamp_s` (seconds since the Unix epoch).
std::string EncodeKvEventBatch(double timestamp_s, std::span<const KvEvent> events,
                               const KvEventWireOptions& wire);

// The topic routers such as llm-d expect: "kv@<host:port>@<model>".
std::string KvEventTopic(std::string_view host_port, std::string_view model);

// A FIFO of events with a capacity; pushing onto a full queue drops the
// oldest event. Not thread-safe (the publisher guards it).
class KvEventQueue {
 public:
  explicit KvEventQueue(size_t capacity);
  // Returns true if an old event was dropped to make room.
  bool Push(KvEvent&& event);
  // Moves up to `max_events` of the oldest events onto `out`.
  void PopBatch(size_t max_events, std::vector<KvEvent>& out);
  size_t size() const { return events_.size(); }
  bool empty() const { return events_.empty(); }

 private:
  size_t capacity_;
  std::deque<KvEvent> events_;
};

struct KvEventPublisherOptions {
  // ZeroMQ endpoint the PUB socket binds, e.g. "tcp://127.0.0.1:5557" (the
  // --kv-events flag) or "tcp://127.0.0.1:*" for a port chosen by the OS.
  std::string endpoint;
  std::string topic;  // frame 1; see KvEventTopic
  KvEventWireOptions wire;
  size_t max_queue_events = 100'000;  // vLLM's default max_queue_size
  size_t max_batch_events = 512;      // events per message at most
  // How long the sender waits for more events before sending a partial batch.
  std::chrono::milliseconds flush_interval{5};
  int send_high_water_mark = 100'000;  // ZMQ_SNDHWM in messages (vLLM's hwm)
  // On shutdown, how long ZeroMQ may keep trying to deliver sent messages.
  std::chrono::milliseconds close_linger{1000};
  const Clock* clock = nullptr;  // timestamps; Clock::Real() when null
};

// Thread-safety: Publish() may be called from any thread (in practice the
// engine thread) and only takes a mutex for a deque push. The ZeroMQ socket
// is used only by the sender thread (ZeroMQ sockets are not thread-safe).
// Shutdown() and the destructor must not race with Publish().
class KvEventPublisher final : public KvEventSink {
 public:
  // Binds the PUB socket and starts the sender thread. Unavailable if the
  // endpoint cannot be bound (port in use), InvalidArgument if malformed.
  static StatusOr<std::unique_ptr<KvEventPublisher>> Create(KvEventPublisherOptions options);
  ~KvEventPublisher() override;  // Shutdown()

  KvEventPublisher(const KvEventPublisher&) = delete;
  KvEventPublisher& operator=(const KvEventPublisher&) = delete;

  void Publish(KvEvent&& event) override;

  // Sends everything still queued, closes the socket (lingering up to
  // close_linger for delivery) and joins the sender. Idempotent; events
  // published afterwards are dropped and counted.
  void Shutdown();

  // The endpoint actually bound, e.g. "tcp://127.0.0.1:40123".
  const std::string& bound_endpoint() const { return bound_endpoint_; }
  // Counters, readable from any thread.
  uint64_t published_events() const { return published_events_.load(std::memory_order_relaxed); }
  uint64_t dropped_events() const { return dropped_events_.load(std::memory_order_relaxed); }
  uint64_t sent_events() const { return sent_events_.load(std::memory_order_relaxed); }
  uint64_t sent_messages() const { return sent_messages_.load(std::memory_order_relaxed); }

 private:
  struct Socket;  // keeps zmq.hpp out of this header

  KvEventPublisher(KvEventPublisherOptions options, std::unique_ptr<Socket> socket, std::string bound);
  void RunSender();  // the sender thread
  void SendBatch(std::span<const KvEvent> events);

  const KvEventPublisherOptions options_;
  const Clock& clock_;
  std::unique_ptr<Socket> socket_;  // used by the sender thread only
  std::string bound_endpoint_;
  uint64_t next_seq_ = 0;  // sender thread only

  std::mutex mu_;
  std::condition_variable cv_;
  KvEventQueue queue_;     // guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  std::thread sender_;

  std::atomic<uint64_t> published_events_{0};
  std::atomic<uint64_t> dropped_events_{0};
  std::atomic<uint64_t> sent_events_{0};
  std::atomic<uint64_t> sent_messages_{0};
};

}  // namespace omni
