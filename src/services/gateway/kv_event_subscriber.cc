#include "services/gateway/kv_event_subscriber.h"

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <optional>
#include <vector>

#include "core/log.h"
#include "engine/kv_event_decoder.h"

namespace omni::gateway {

struct KvEventSubscriber::Sockets {
  struct Source {
    PoolState* pool;
    int endpoint;
    std::string address;
    std::optional<uint64_t> last_seq;
  };
  zmq::context_t context{1};
  std::vector<zmq::socket_t> subs;
  std::vector<Source> sources;  // parallel to subs
};

KvEventSubscriber::KvEventSubscriber(GatewayService& service, MetricsRegistry& metrics) : service_(service) {
  batches_ = &metrics.AddCounter("gateway_kv_event_batches_total", "KV-event batches applied.", {}).Get();
  bad_messages_ = &metrics.AddCounter("gateway_kv_event_errors_total", "Undecodable KV-event messages.", {}).Get();
  gaps_ = &metrics.AddCounter("gateway_kv_event_gaps_total", "Sequence gaps (dropped KV events).", {}).Get();
}

KvEventSubscriber::~KvEventSubscriber() { Stop(); }

Status KvEventSubscriber::Start() {
  auto sockets = std::make_unique<Sockets>();
  try {
    for (const auto& pool : service_.pools()) {
      for (size_t i = 0; i < pool->config.kv_events.size() && i < pool->config.endpoints.size(); ++i) {
        zmq::socket_t sub(sockets->context, zmq::socket_type::sub);
        sub.set(zmq::sockopt::linger, 0);
        sub.set(zmq::sockopt::subscribe, "");
        sub.connect(pool->config.kv_events[i]);
        sockets->subs.push_back(std::move(sub));
        sockets->sources.push_back({pool.get(), static_cast<int>(i), pool->config.kv_events[i], std::nullopt});
      }
    }
  } catch (const zmq::error_t& e) {
    return InvalidArgument(std::string("kvEvents: ") + e.what());
  }
  if (sockets->subs.empty()) return Status::Ok();
  sockets_ = std::move(sockets);
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void KvEventSubscriber::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void KvEventSubscriber::Run() {
  std::vector<zmq::pollitem_t> items;
  for (auto& s : sockets_->subs) items.push_back({s.handle(), 0, ZMQ_POLLIN, 0});
  while (!stop_) {
    // Short polls so Stop() is prompt.
    zmq::poll(items.data(), items.size(), std::chrono::milliseconds(50));
    for (size_t i = 0; i < items.size(); ++i) {
      if ((items[i].revents & ZMQ_POLLIN) == 0) continue;
      auto& source = sockets_->sources[i];
      for (;;) {
        std::vector<zmq::message_t> parts;
        if (!zmq::recv_multipart(sockets_->subs[i], std::back_inserter(parts), zmq::recv_flags::dontwait)) break;
        std::vector<std::string_view> frames;
        for (const auto& p : parts) frames.emplace_back(static_cast<const char*>(p.data()), p.size());
        StatusOr<KvEventMessage> message = DecodeKvEventMessage(frames);
        if (!message.ok()) {
          bad_messages_->Inc();
          OMNI_LOG(kWarn, "gateway: bad KV-event message from {}: {}", source.address, message.status().message());
          continue;
        }
        if (source.last_seq && message->seq != *source.last_seq + 1) {
          gaps_->Inc();
          OMNI_LOG(kWarn, "gateway: KV events from {} skipped from seq {} to {}", source.address,
                   *source.last_seq + 1, message->seq);
        }
        source.last_seq = message->seq;
        source.pool->router->ApplyKvEvents(source.endpoint, message->batch);
        batches_->Inc();
      }
    }
  }
}

}  // namespace omni::gateway
