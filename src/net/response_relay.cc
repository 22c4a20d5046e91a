#include "net/response_relay.h"

#include <string_view>

namespace omni {

HttpHeaders EndToEndHeaders(const HttpHeaders& in) {
  static constexpr std::string_view kHopByHop[] = {"connection", "keep-alive", "proxy-connection",
                                                   "transfer-encoding", "te", "trailer", "upgrade",
                                                   "content-length", "host"};
  HttpHeaders out;
  for (const auto& [name, value] : in) {
    bool hop = false;
    for (std::string_view h : kHopByHop) hop = hop || EqualsIgnoreCase(name, h);
    if (!hop) out.Add(name, value);
  }
  return out;
}

namespace {

// "127.0.0.1:54321" -> "127.0.0.1"; "[::1]:80" -> "::1" (X-Forwarded-For carries the address only).
std::string_view HostOf(std::string_view remote) {
  if (remote.starts_with('[')) {
    size_t close = remote.find(']');
    return close == std::string_view::npos ? remote : remote.substr(1, close - 1);
  }
  size_t colon = remote.rfind(':');
  return colon == std::string_view::npos ? remote : remote.substr(0, colon);
}

}  // namespace

std::string ForwardedFor(const HttpRequest& request) {
  std::string forwarded(HostOf(request.remote_address));
  if (auto prior = request.headers.Get("x-forwarded-for")) forwarded = std::string(*prior) + ", " + forwarded;
  return forwarded;
}

HttpStreamCallbacks ResponseRelay::Callbacks(std::shared_ptr<void> owner) {
  HttpStreamCallbacks callbacks;
  callbacks.on_headers = [this, owner](int status, const HttpHeaders& headers) { return OnHeaders(status, headers); };
  callbacks.on_body = [this, owner](std::string_view chunk) { return OnBody(chunk); };
  return callbacks;
}

bool ResponseRelay::OnHeaders(int status, const HttpHeaders& headers) {
  status_ = status;
  headers_ = EndToEndHeaders(headers);
  const bool sse = headers.GetOr("content-type", "").starts_with("text/event-stream");
  if (!sse && headers.Has("content-length")) return true;  // small and whole: sent at the end
  streaming_ = true;
  event_stream_ = sse;
  return writer_->StartStream(status, headers_);
}

bool ResponseRelay::OnBody(std::string_view chunk) {
  if (!streaming_) {
    body_.append(chunk);
    return true;
  }
  if (event_stream_) {
    // Whole events only, so that a cut stream can still end on an event boundary.
    std::string_view whole = events_.Feed(chunk);
    return whole.empty() || writer_->Write(whole);
  }
  return writer_->Write(chunk);
}

void ResponseRelay::Deliver() {
  if (streaming_) {
    // An upstream that ends its last event without a blank line: those bytes
    // go out as they are.
    if (std::string rest = events_.TakeHeld(); !rest.empty()) writer_->Write(rest);
    writer_->Finish();
    return;
  }
  writer_->Send(HttpResponse{.status = status_, .headers = std::move(headers_), .body = std::move(body_)});
}

void ResponseRelay::Reset() {
  status_ = 0;
  headers_ = HttpHeaders();
  body_.clear();
  events_ = SseEventFramer();
}

void ResponseRelay::Fail(const Status& error) { writer_->Send(ErrorResponse(error)); }

void ResponseRelay::EndEventStream(const Status& error) {
  // The held partial event, if any, is dropped; the prefix is non-empty only
  // if an oversized event was already going out.
  std::string_view close = events_.CloseEventPrefix();
  if (!close.empty()) writer_->Write(close);
  // The LLM server's own shape for a stream it cannot finish (llm_http.cc).
  writer_->WriteSseEvent(error.ToOpenAiJson());
  writer_->WriteSseEvent("[DONE]");
  writer_->Finish();
}

void ResponseRelay::Cut() { writer_.reset(); }

}  // namespace omni
