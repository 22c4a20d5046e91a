// HttpServer: HTTP/1.1 server behind omniserve's own types. Beast and Asio
// stay in http_server.cc and internal/; this header is cheap to include.
//
//   HttpServer server(options);
//   server.Route(HttpMethod::kPost, "/v1/echo", [](const HttpRequest& r) { return JsonResponse(200, r.body); });
//   OMNI_RETURN_IF_ERROR(server.Start());     // binds; server.port() is now known
//   server.RunUntilSignal();                  // SIGINT/SIGTERM -> graceful drain
//
// Threading: io threads run the event loop; simple handlers run on a worker
// pool; streaming handlers are called on an io thread and must return
// quickly, answering later through their ResponseWriter from any thread.
// All public methods are thread-safe; Route/SetHealthCheck only before Start.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "net/http.h"
#include "net/metrics.h"

namespace omni {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;            // 0: the OS picks one; see HttpServer::port()
  int io_threads = 1;           // event-loop threads
  int worker_threads = 4;       // pool for simple (blocking) handlers
  size_t max_body_bytes = 64u << 20;   // larger bodies get 413
  // Request body bytes buffered at once, across connections, from the
  // moment a body starts arriving until its request is destroyed. A body
  // that would go over gets 503 with Retry-After (and the connection
  // closes), so a burst of large uploads cannot take the process's memory.
  size_t max_inflight_body_bytes = 256u << 20;
  size_t max_header_bytes = 64u << 10; // larger headers get 431-as-400
  // Time allowed to receive a request's headers once its first byte arrived
  // (and for the first request of a new connection, from accept). Slow or
  // silent clients are closed without a response.
  std::chrono::milliseconds header_timeout{10'000};
  // Time allowed to receive the request body after the headers.
  std::chrono::milliseconds body_timeout{60'000};
  // How long a keep-alive connection may sit idle between requests.
  std::chrono::milliseconds idle_timeout{60'000};
  // Shutdown() waits this long for in-flight requests and streams, then
  // runs the drain-deadline hook (SetDrainDeadlineHook) and waits up to
  // drain_grace more for what the hook ended to be written, then closes
  // every connection.
  std::chrono::milliseconds drain_timeout{30'000};
  std::chrono::milliseconds drain_grace{2'000};
  // A streaming writer's Write() blocks its caller once this many bytes wait
  // to be sent to a slow client (backpressure).
  size_t stream_buffer_bytes = 1u << 20;
  // A client that accepts none of a pending write for this long (it stopped
  // reading) counts as gone: the connection is closed, the writer's Write()
  // returns false and OnClientGone fires, so a producer never blocks forever.
  std::chrono::milliseconds stream_write_timeout{30'000};
  bool health_endpoint = true;   // GET /health
  bool metrics_endpoint = true;  // GET /metrics
  bool access_log = true;        // one info line per request
  // Where the server's own metrics go (and what /metrics serves). If null,
  // the server owns a registry; see HttpServer::metrics().
  MetricsRegistry* metrics = nullptr;
};

// The reply channel of one request. Shared and usable from any thread; calls
// after the response is complete or the client is gone do nothing and return
// false. Dropping the last reference without replying sends 500; dropping it
// in the middle of a stream closes the connection without the terminating
// chunk, so the client sees a truncated stream rather than a clean end.
class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;

  // A complete (non-streamed) response. Only valid before StartStream.
  virtual bool Send(HttpResponse response) = 0;
  // Starts a chunked response with these headers.
  virtual bool StartStream(int status, HttpHeaders headers) = 0;
  // Queues one chunk. Blocks while more than stream_buffer_bytes are queued
  // (never on an io thread, where it only queues). False once the client is gone.
  virtual bool Write(std::string_view chunk) = 0;
  // Queues one chunk without ever blocking, for producers that serve many
  // streams from one thread (an engine's output loop). A client too slow to
  // keep the queue under stream_buffer_bytes is dropped: false, the
  // connection closes and OnClientGone fires.
  virtual bool WriteNoWait(std::string_view chunk) = 0;
  // Write(EncodeSseEvent(data, event)).
  bool WriteSseEvent(std::string_view data, std::string_view event = {});
  // WriteNoWait(EncodeSseEvent(data, event)).
  bool WriteSseEventNoWait(std::string_view data, std::string_view event = {});
  // Ends the stream with the terminating chunk.
  virtual bool Finish() = 0;

  // True once the server saw the client close or reset the connection.
  virtual bool client_gone() const = 0;
  // Runs `cb` once when the client goes away (at once, on this thread, if it
  // already has). `cb` runs on an io thread and must not block.
  virtual void OnClientGone(std::function<void()> cb) = 0;
  virtual const std::string& request_id() const = 0;
};

// A blocking handler; runs on the worker pool.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;
// A streaming or asynchronous handler; runs on an io thread, must not block.
using StreamingHttpHandler = std::function<void(HttpRequest, std::shared_ptr<ResponseWriter>)>;

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options);
  ~HttpServer();  // Shutdown() if still running
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // `pattern` is an exact path or a prefix ending in "/*" (e.g. "/v1/*").
  void Route(HttpMethod method, std::string pattern, HttpHandler handler);
  // For cheap handlers that never block (no I/O, no locks held for long): runs
  // on the io thread and skips the hop to the worker pool.
  void RouteInline(HttpMethod method, std::string pattern, HttpHandler handler);
  void RouteStreaming(HttpMethod method, std::string pattern, StreamingHttpHandler handler);
  // What GET /health reports: OK -> 200 {"status":"ok"}; an error -> its
  // code and OpenAI body (e.g. Unavailable("loading") -> 503). Called on an
  // io thread. While draining, /health answers 503 regardless.
  void SetHealthCheck(std::function<Status()> check);
  // Instead of SetHealthCheck: GET /health answers whatever `report`
  // returns (a body that details the state). Called on an io thread; must
  // not block. While draining, /health answers 503 regardless.
  void SetHealthReport(std::function<HttpResponse()> report);
  // Runs once, on the thread in Shutdown(), when the drain deadline passes
  // with requests still in flight: the place to end long work (abort
  // generations) so that streams close with a final event rather than be
  // cut. Must not block for long.
  void SetDrainDeadlineHook(std::function<void()> hook);

  // Binds, listens and starts the io and worker threads.
  Status Start();
  // The bound port, valid after Start().
  uint16_t port() const;
  // Graceful stop: stop accepting (new connections are refused), close idle
  // keep-alive connections, let in-flight requests and streams finish for up
  // to drain_timeout, then close what is left and join all threads. Handlers
  // still running on the worker pool are waited for (threads cannot be
  // killed); their replies go nowhere. Idempotent; must not be called from a
  // handler or an io thread.
  void Shutdown();
  // Blocks until SIGINT or SIGTERM arrives (or Shutdown() is called from
  // another thread), then shuts down gracefully. A second signal during the
  // drain exits the process at once (status 128 + signal). Signals are
  // caught with an Asio signal_set, so no thread needs a particular signal
  // mask.
  void RunUntilSignal();

  MetricsRegistry& metrics();
  // Connections accepted since Start(); tests use it to check keep-alive reuse.
  uint64_t accepted_connections() const;
  uint64_t open_connections() const;

  class Impl;

 private:
  friend class HttpClient;  // HttpClient(HttpServer&) runs on this server's io threads

  std::unique_ptr<Impl> impl_;
};

}  // namespace omni
