// The reply path of one request, shared between the ResponseWriter a handler
// holds (any thread) and the connection coroutine that writes to the socket
// (its io thread). No Asio here: the connection supplies a `wake` function
// that posts to its io context. Private to src/net.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "net/http.h"
#include "net/http_server.h"

namespace omni::net_internal {

// Marks the calling thread as an io thread, where Write() never blocks.
void SetOnIoThread(bool on);
bool OnIoThread();

class ReplyChannel {
 public:
  enum class Kind { kUnary, kStreamHead, kChunk, kFinish, kAbort };
  struct Item {
    Kind kind;
    HttpResponse response;  // kUnary: the whole response; kStreamHead: status and headers
    std::string chunk;      // kChunk
  };

  ReplyChannel(std::string request_id, size_t buffer_limit, std::function<void()> wake);

  // Producer side (any thread); see ResponseWriter for the contract.
  bool Send(HttpResponse response);
  bool StartStream(int status, HttpHeaders headers);
  bool Write(std::string_view chunk);
  bool WriteNoWait(std::string_view chunk);
  bool Finish();
  // The handler's last reference went away.
  void Release();
  bool gone() const;
  void OnGone(std::function<void()> cb);
  const std::string& request_id() const { return request_id_; }

  // Consumer side (the connection's io thread).
  std::vector<Item> Take();
  // `bytes` of chunks were written; wakes producers blocked in Write().
  void Consumed(size_t bytes);
  // The client went away (or the server gave up on it): fail producers and
  // run the OnGone callback.
  void MarkGone();
  // The connection is done with this channel; `wake` is never called again,
  // so it may refer to state that dies with the connection.
  void Close();

 private:
  enum class Phase { kIdle, kStreaming, kDone };
  // Queues an item and wakes the consumer. Requires mu_.
  void PushLocked(Item item);

  const std::string request_id_;
  const size_t buffer_limit_;
  std::function<void()> wake_;

  mutable std::mutex mu_;
  std::condition_variable drained_;
  Phase phase_ = Phase::kIdle;           // guarded by mu_
  std::deque<Item> queue_;               // guarded by mu_
  size_t queued_bytes_ = 0;              // guarded by mu_
  bool gone_ = false;                    // guarded by mu_
  bool closed_ = false;                  // guarded by mu_
  std::function<void()> on_gone_;        // guarded by mu_
};

// The ResponseWriter handed to handlers: a thin owner of the channel whose
// destructor tells the channel the handler has let go.
class ChannelWriter final : public ResponseWriter {
 public:
  explicit ChannelWriter(std::shared_ptr<ReplyChannel> channel) : channel_(std::move(channel)) {}
  ~ChannelWriter() override { channel_->Release(); }

  bool Send(HttpResponse response) override { return channel_->Send(std::move(response)); }
  bool StartStream(int status, HttpHeaders headers) override {
    return channel_->StartStream(status, std::move(headers));
  }
  bool Write(std::string_view chunk) override { return channel_->Write(chunk); }
  bool WriteNoWait(std::string_view chunk) override { return channel_->WriteNoWait(chunk); }
  bool Finish() override { return channel_->Finish(); }
  bool client_gone() const override { return channel_->gone(); }
  void OnClientGone(std::function<void()> cb) override { channel_->OnGone(std::move(cb)); }
  const std::string& request_id() const override { return channel_->request_id(); }

 private:
  std::shared_ptr<ReplyChannel> channel_;
};

}  // namespace omni::net_internal
