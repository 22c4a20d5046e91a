#include "net/internal/reply_channel.h"

#include "net/sse.h"

namespace omni {

bool ResponseWriter::WriteSseEvent(std::string_view data, std::string_view event) {
  return Write(EncodeSseEvent(data, event));
}

bool ResponseWriter::WriteSseEventNoWait(std::string_view data, std::string_view event) {
  return WriteNoWait(EncodeSseEvent(data, event));
}

namespace net_internal {
namespace {
thread_local bool tls_on_io_thread = false;
}  // namespace

void SetOnIoThread(bool on) { tls_on_io_thread = on; }
bool OnIoThread() { return tls_on_io_thread; }

ReplyChannel::ReplyChannel(std::string request_id, size_t buffer_limit, std::function<void()> wake)
    : request_id_(std::move(request_id)), buffer_limit_(buffer_limit), wake_(std::move(wake)) {}

void ReplyChannel::PushLocked(Item item) {
  queue_.push_back(std::move(item));
  // Posting under mu_ orders the wake before Close(), after which the
  // connection state `wake_` refers to may be gone.
  if (!closed_) wake_();
}

bool ReplyChannel::Send(HttpResponse response) {
  std::lock_guard lock(mu_);
  if (gone_ || phase_ != Phase::kIdle) return false;
  phase_ = Phase::kDone;
  PushLocked({Kind::kUnary, std::move(response), {}});
  return true;
}

bool ReplyChannel::StartStream(int status, HttpHeaders headers) {
  std::lock_guard lock(mu_);
  if (gone_ || phase_ != Phase::kIdle) return false;
  phase_ = Phase::kStreaming;
  HttpResponse head;
  head.status = status;
  head.headers = std::move(headers);
  PushLocked({Kind::kStreamHead, std::move(head), {}});
  return true;
}

bool ReplyChannel::Write(std::string_view chunk) {
  std::unique_lock lock(mu_);
  if (gone_ || phase_ != Phase::kStreaming) return false;
  if (chunk.empty()) return true;  // an empty chunk would end the chunked body
  queued_bytes_ += chunk.size();
  PushLocked({Kind::kChunk, {}, std::string(chunk)});
  // Backpressure: the producer waits for a slow client instead of growing
  // the queue without bound. An io thread must not wait on itself.
  if (!OnIoThread()) {
    drained_.wait(lock, [&] { return gone_ || closed_ || queued_bytes_ <= buffer_limit_; });
  }
  return !gone_;
}

bool ReplyChannel::WriteNoWait(std::string_view chunk) {
  {
    std::lock_guard lock(mu_);
    if (gone_ || phase_ != Phase::kStreaming) return false;
    if (chunk.empty()) return true;
    if (queued_bytes_ + chunk.size() <= buffer_limit_) {
      queued_bytes_ += chunk.size();
      PushLocked({Kind::kChunk, {}, std::string(chunk)});
      return true;
    }
  }
  // Waiting would stall every other stream of the producer, and queueing
  // without bound would let one stalled reader hold any amount of memory.
  MarkGone();
  return false;
}

bool ReplyChannel::Finish() {
  std::lock_guard lock(mu_);
  if (gone_ || phase_ != Phase::kStreaming) return false;
  phase_ = Phase::kDone;
  PushLocked({Kind::kFinish, {}, {}});
  return true;
}

void ReplyChannel::Release() {
  std::lock_guard lock(mu_);
  if (phase_ == Phase::kIdle) {
    PushLocked({Kind::kUnary, ErrorResponse(Internal("handler finished without a response")), {}});
  } else if (phase_ == Phase::kStreaming) {
    PushLocked({Kind::kAbort, {}, {}});
  }
  phase_ = Phase::kDone;
}

bool ReplyChannel::gone() const {
  std::lock_guard lock(mu_);
  return gone_;
}

void ReplyChannel::OnGone(std::function<void()> cb) {
  {
    std::lock_guard lock(mu_);
    if (!gone_) {
      on_gone_ = std::move(cb);
      return;
    }
  }
  cb();
}

std::vector<ReplyChannel::Item> ReplyChannel::Take() {
  std::lock_guard lock(mu_);
  std::vector<Item> out;
  out.reserve(queue_.size());
  for (auto& item : queue_) out.push_back(std::move(item));
  queue_.clear();
  return out;
}

void ReplyChannel::Consumed(size_t bytes) {
  {
    std::lock_guard lock(mu_);
    queued_bytes_ -= std::min(bytes, queued_bytes_);
  }
  drained_.notify_all();
}

void ReplyChannel::MarkGone() {
  std::function<void()> cb;
  {
    std::lock_guard lock(mu_);
    if (gone_) return;
    gone_ = true;
    cb = std::move(on_gone_);
    if (!closed_) wake_();  // a producer gave up: the connection must notice
  }
  drained_.notify_all();
  if (cb) cb();
}

void ReplyChannel::Close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    wake_ = nullptr;
  }
  drained_.notify_all();
}

}  // namespace net_internal
}  // namespace omni
