// ResponseRelay: carries one upstream HTTP response (an HttpClient::StreamAsync
// exchange) to a client's ResponseWriter, for the proxies (the gateway, the
// orchestrator).
//
// A plain answer with a Content-Length is buffered and sent whole when it is
// complete, so a failed attempt can still be retried or answered with an
// error. Anything else streams through as it arrives; an event stream
// (text/event-stream) one whole event at a time (SseEventFramer), so that a
// stream whose upstream fails can be ended with an OpenAI error event and
// `data: [DONE]` at an event boundary, as the LLM server ends a stream it
// cannot finish. Hop-by-hop headers are not relayed (EndToEndHeaders).
//
//   auto relay = ...;  // owned by the proxy's per-request state
//   client.StreamAsync(request, relay->Callbacks(state), [=](StatusOr<int> s) {
//     if (s.ok()) relay->Deliver();
//     else if (!relay->responded()) relay->Fail(BadGateway(...));
//     else if (relay->event_stream()) relay->EndEventStream(error);
//     else relay->Cut();
//   });
//
// Thread-safety: not thread-safe; an exchange's callbacks, then its end, use
// it in turn (they run on one io thread).
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "net/http.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "net/sse_event_framer.h"

namespace omni {

// `in` without the connection-scoped headers (RFC 9110 section 7.6.1) and the
// framing ones a proxy sets itself (Content-Length, Transfer-Encoding, Host).
HttpHeaders EndToEndHeaders(const HttpHeaders& in);

// The X-Forwarded-For a proxy sends upstream: the client's own chain, if it
// sent one, then the address the request came from.
std::string ForwardedFor(const HttpRequest& request);

class ResponseRelay {
 public:
  explicit ResponseRelay(std::shared_ptr<ResponseWriter> writer) : writer_(std::move(writer)) {}

  // Callbacks that feed the upstream response into this relay. They hold
  // `owner` (the state the relay lives in) until the exchange ends.
  HttpStreamCallbacks Callbacks(std::shared_ptr<void> owner);

  // Bytes went to the client: the status is sent, no retry or error answer
  // is possible any more.
  bool responded() const { return streaming_; }
  bool event_stream() const { return event_stream_; }
  int status() const { return status_; }
  ResponseWriter& writer() { return *writer_; }

  // The upstream response is complete: sends it (the buffered body, or the
  // end of the stream).
  void Deliver();
  // Forgets a failed attempt's buffered answer before a retry. Only before
  // responded().
  void Reset();
  // Answers `error` as the whole response. Only before responded().
  void Fail(const Status& error);
  // Ends an event stream after its last whole event with `error` as an
  // OpenAI error event, then `data: [DONE]`.
  void EndEventStream(const Status& error);
  // Drops the writer in the middle of a stream: the connection closes
  // without the last chunk, so the client sees an incomplete message, never
  // a complete one.
  void Cut();

 private:
  bool OnHeaders(int status, const HttpHeaders& headers);
  bool OnBody(std::string_view chunk);

  std::shared_ptr<ResponseWriter> writer_;
  bool streaming_ = false;     // the status and headers went out; the body streams
  bool event_stream_ = false;  // streaming text/event-stream, through `events_`
  int status_ = 0;
  HttpHeaders headers_;
  std::string body_;  // a plain answer, sent whole when complete
  SseEventFramer events_;
};

}  // namespace omni
