#include "engine/kv_event_publisher.h"

#include <zmq.hpp>

#include <array>
#include <utility>

#include "core/log.h"
#include "net/msgpack.h"

namespace omni {
namespace {

void WriteHashes(const std::vector<BlockHash>& hashes, MsgpackWriter& w) {
  w.ArrayHeader(static_cast<uint32_t>(hashes.size()));
  for (BlockHash h : hashes) w.Uint(h);
}

void WriteMedium(const KvEventWireOptions& wire, MsgpackWriter& w) {
  if (wire.medium) {
    w.Str(*wire.medium);
  } else {
    w.Nil();
  }
}

// Field order follows vLLM's msgspec structs (vllm/distributed/kv_events.py):
// array_like, tag=True puts the class name first, then fields in declaration
// order: block_hashes, parent_block_hash, token_ids, block_size, lora_id,
// medium, lora_name, extra_keys, group_idx, ... We stop at `medium`, or at
// `extra_keys` when a block of the run has extra keys; the later fields are
// defaulted there, and decoders ignore trailing fields.
void WriteEvent(const KvEvent& event, const KvEventWireOptions& wire, MsgpackWriter& w) {
  if (const auto* stored = std::get_if<BlockStored>(&event)) {
    const bool with_keys = !stored->extra_keys.empty();
    w.ArrayHeader(with_keys ? 9 : 7).Str("BlockStored");
    WriteHashes(stored->block_hashes, w);
    if (stored->parent_hash) {
      w.Uint(*stored->parent_hash);
    } else {
      w.Nil();
    }
    w.ArrayHeader(static_cast<uint32_t>(stored->token_ids.size()));
    for (int32_t t : stored->token_ids) w.Int(t);
    w.Int(stored->block_size);
    w.Nil();  // lora_id: the engine has no LoRA adapters
    WriteMedium(wire, w);
    if (with_keys) {
      w.Nil();  // lora_name
      // vLLM: list[tuple | None], one per block; its multimodal keys are the
      // media identifiers as hex strings, and so are ours.
      w.ArrayHeader(static_cast<uint32_t>(stored->extra_keys.size()));
      for (const std::vector<Sha256Digest>& keys : stored->extra_keys) {
        if (keys.empty()) {
          w.Nil();
          continue;
        }
        w.ArrayHeader(static_cast<uint32_t>(keys.size()));
        for (const Sha256Digest& k : keys) w.Str(Sha256DigestHex(k));
      }
    }
  } else if (const auto* removed = std::get_if<BlockRemoved>(&event)) {
    w.ArrayHeader(3).Str("BlockRemoved");
    WriteHashes(removed->block_hashes, w);
    WriteMedium(wire, w);
  } else {
    w.ArrayHeader(1).Str("AllBlocksCleared");
  }
}

}  // namespace

std::string EncodeKvEventBatch(double timestamp_s, std::span<const KvEvent> events,
                               const KvEventWireOptions& wire) {
  MsgpackWriter w;
  w.ArrayHeader(3).Double(timestamp_s);
  w.ArrayHeader(static_cast<uint32_t>(events.size()));
  for (const KvEvent& e : events) WriteEvent(e, wire, w);
  if (wire.data_parallel_rank) {
    w.Int(*wire.data_parallel_rank);
  } else {
    w.Nil();
  }
  return std::move(w).Take();
}

std::string KvEventTopic(std::string_view host_port, std::string_view model) {
  std::string topic = "kv@";
  topic.append(host_port).append("@").append(model);
  return topic;
}

KvEventQueue::KvEventQueue(size_t capacity) : capacity_(capacity) {
  OMNI_CHECK_GT(capacity, 0u) << "KvEventQueue needs room for one event";
}

bool KvEventQueue::Push(KvEvent&& event) {
  bool dropped = false;
  if (events_.size() >= capacity_) {
    events_.pop_front();
    dropped = true;
  }
  events_.push_back(std::move(event));
  return dropped;
}

void KvEventQueue::PopBatch(size_t max_events, std::vector<KvEvent>& out) {
  while (!events_.empty() && max_events-- > 0) {
    out.push_back(std::move(events_.front()));
    events_.pop_front();
  }
}

struct KvEventPublisher::Socket {
  zmq::context_t context{1};
  zmq::socket_t pub{context, zmq::socket_type::pub};
};

StatusOr<std::unique_ptr<KvEventPublisher>> KvEventPublisher::Create(KvEventPublisherOptions options) {
  if (options.endpoint.empty()) return InvalidArgument("kv events: empty ZeroMQ endpoint");
  if (options.max_queue_events == 0 || options.max_batch_events == 0) {
    return InvalidArgument("kv events: max_queue_events and max_batch_events must be positive");
  }
  auto socket = std::make_unique<Socket>();
  std::string bound;
  try {
    socket->pub.set(zmq::sockopt::sndhwm, options.send_high_water_mark);
    socket->pub.set(zmq::sockopt::linger, static_cast<int>(options.close_linger.count()));
    socket->pub.bind(options.endpoint);
    bound = socket->pub.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    const std::string message = "kv events: cannot bind " + options.endpoint + ": " + e.what();
    if (e.num() == EINVAL || e.num() == EPROTONOSUPPORT) return InvalidArgument(message);
    return Unavailable(message);
  }
  return std::unique_ptr<KvEventPublisher>(
      new KvEventPublisher(std::move(options), std::move(socket), std::move(bound)));
}

KvEventPublisher::KvEventPublisher(KvEventPublisherOptions options, std::unique_ptr<Socket> socket,
                                   std::string bound)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : Clock::Real()),
      socket_(std::move(socket)),
      bound_endpoint_(std::move(bound)),
      queue_(options_.max_queue_events) {
  // Starting the thread is a full memory barrier, which is what ZeroMQ asks
  // for before a socket moves to another thread.
  sender_ = std::thread([this] { RunSender(); });
}

KvEventPublisher::~KvEventPublisher() { Shutdown(); }

void KvEventPublisher::Publish(KvEvent&& event) {
  published_events_.fetch_add(1, std::memory_order_relaxed);
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      dropped_events_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (queue_.Push(std::move(event))) dropped_events_.fetch_add(1, std::memory_order_relaxed);
    // The sender sleeps until the queue becomes non-empty, then until a full
    // batch or the flush interval; only those two transitions need a wake-up.
    wake = queue_.size() == 1 || queue_.size() == options_.max_batch_events;
  }
  if (wake) cv_.notify_one();
}

void KvEventPublisher::Shutdown() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (sender_.joinable()) sender_.join();
  if (socket_ != nullptr) {
    // close() lingers up to close_linger for queued messages to go out.
    socket_->pub.close();
    socket_->context.close();
    socket_.reset();
  }
}

void KvEventPublisher::RunSender() {
  std::vector<KvEvent> batch;
  batch.reserve(options_.max_batch_events);
  for (;;) {
    bool done = false;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      cv_.wait_for(lock, options_.flush_interval,
                   [&] { return stopping_ || queue_.size() >= options_.max_batch_events; });
      queue_.PopBatch(options_.max_batch_events, batch);
      done = stopping_ && queue_.empty();
    }
    if (!batch.empty()) SendBatch(batch);
    batch.clear();
    if (done) return;
  }
}

void KvEventPublisher::SendBatch(std::span<const KvEvent> events) {
  const double now_s =
      std::chrono::duration<double>(clock_.WallNow().time_since_epoch()).count();
  const std::string payload = EncodeKvEventBatch(now_s, events, options_.wire);
  std::array<uint8_t, 8> seq;
  for (int i = 0; i < 8; ++i) seq[i] = static_cast<uint8_t>(next_seq_ >> (8 * (7 - i)));
  try {
    // A PUB socket never blocks: past the high-water mark it drops messages
    // itself; dontwait only guards against a would-block we do not expect.
    const auto more = zmq::send_flags::sndmore | zmq::send_flags::dontwait;
    const bool sent = socket_->pub.send(zmq::buffer(options_.topic), more) &&
                      socket_->pub.send(zmq::buffer(seq), more) &&
                      socket_->pub.send(zmq::buffer(payload), zmq::send_flags::dontwait);
    if (!sent) {
      dropped_events_.fetch_add(events.size(), std::memory_order_relaxed);
      return;
    }
  } catch (const zmq::error_t& e) {
    dropped_events_.fetch_add(events.size(), std::memory_order_relaxed);
    OMNI_LOG(kWarn, "kv events: send failed, dropped {} events: {}", events.size(), e.what());
    return;
  }
  ++next_seq_;
  sent_events_.fetch_add(events.size(), std::memory_order_relaxed);
  sent_messages_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace omni
