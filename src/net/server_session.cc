// One coroutine per connection: read a request, dispatch it, write the reply,
// repeat while the connection is kept alive.
#include <sys/socket.h>

#include <cerrno>

#include "core/log.h"
#include "core/memory.h"
#include "net/internal/framing.h"
#include "net/internal/server_impl.h"

namespace omni {

using namespace net_internal;  // NOLINT: aliases private to src/net

namespace {

constexpr size_t kReadChunk = 16 * 1024;
// After an error reply we read and drop at most this much of what the client
// is still sending (a lingering close, see Reject).
constexpr size_t kMaxLingerBytes = 1 << 20;
constexpr auto kLingerTimeout = std::chrono::seconds(2);

using Impl = HttpServer::Impl;

// Body bytes counted against max_inflight_body_bytes while a request lives.
class BodyLease {
 public:
  explicit BodyLease(std::shared_ptr<std::atomic<size_t>> pool) : pool_(std::move(pool)) {}
  ~BodyLease() {
    if (bytes_ == 0) return;
    pool_->fetch_sub(bytes_);
    // The allocator would keep a large body's pages for good.
    if (bytes_ >= kLargeBufferBytes) ReleaseFreeMemory();
  }
  BodyLease(const BodyLease&) = delete;
  BodyLease& operator=(const BodyLease&) = delete;

  // Counts `n` more bytes; false (nothing counted) if that would pass `limit`.
  bool Grow(size_t n, size_t limit) {
    size_t current = pool_->load();
    do {
      if (current + n > limit) return false;
    } while (!pool_->compare_exchange_weak(current, current + n));
    bytes_ += n;
    return true;
  }
  size_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<std::atomic<size_t>> pool_;
  size_t bytes_ = 0;
};

// Chunked bodies are counted as they grow, in steps of this much.
constexpr size_t kLeaseStep = 256 * 1024;

// What the request asked of the reply, fixed when it was read.
struct ReplyContext {
  std::string request_id;
  unsigned version = 11;  // 10 or 11
  bool head = false;      // HEAD: headers only
  bool client_keep_alive = true;
};

struct Outcome {
  int status = 0;         // the status sent, 0 if none
  bool complete = false;  // the whole reply reached the socket
  bool keep_alive = false;  // what the reply's headers promised
};

// Framing headers are the server's job; a handler's copy would conflict.
bool IsManagedHeader(std::string_view name) {
  return EqualsIgnoreCase(name, "content-length") || EqualsIgnoreCase(name, "transfer-encoding") ||
         EqualsIgnoreCase(name, "connection");
}

bool HasLineBreak(std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; }

// Status line and headers. `content_length` empty means a streamed body.
std::string SerializeHead(int status, const HttpHeaders& headers, const ReplyContext& ctx, bool keep_alive,
                          std::optional<size_t> content_length) {
  std::string out;
  out.reserve(256);
  out += ctx.version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  out += std::to_string(status);
  out += ' ';
  out += ReasonPhrase(status);
  out += "\r\n";
  for (const auto& [name, value] : headers) {
    // A CR or LF from a handler would let it forge headers (response splitting).
    if (IsManagedHeader(name) || HasLineBreak(name) || HasLineBreak(value)) continue;
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  if (!headers.Has("x-request-id")) {
    out += "x-request-id: ";
    out += ctx.request_id;
    out += "\r\n";
  }
  // 1xx, 204 and 304 never carry a body or its length (RFC 9110 section 8.6).
  bool bodiless = status < 200 || status == 204 || status == 304;
  if (content_length && !bodiless) {
    out += "content-length: ";
    out += std::to_string(*content_length);
    out += "\r\n";
  } else if (!content_length && ctx.version >= 11) {
    out += "transfer-encoding: chunked\r\n";
  }
  if (!keep_alive) {
    out += "connection: close\r\n";
  } else if (ctx.version == 10) {
    out += "connection: keep-alive\r\n";
  }
  out += "\r\n";
  return out;
}

std::string SerializeUnary(const HttpResponse& r, const ReplyContext& ctx, bool keep_alive) {
  std::string out = SerializeHead(r.status, r.headers, ctx, keep_alive, r.body.size());
  bool bodiless = r.status < 200 || r.status == 204 || r.status == 304;
  if (!ctx.head && !bodiless) out += r.body;
  return out;
}

void AppendChunk(std::string& out, std::string_view data, bool chunked) {
  if (!chunked) {
    out += data;
    return;
  }
  char size[20];
  int n = std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  out.append(size, n);
  out += data;
  out += "\r\n";
}

// Request ids end up in headers and logs; odd ones are replaced, not trusted.
bool IsUsableRequestId(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

HttpResponse CallSafely(const HttpHandler& handler, const HttpRequest& req) {
  try {
    return handler(req);
  } catch (const std::bad_alloc&) {
    log::RequestLog(req.request_id).Error("handler ran out of memory");
    return ErrorResponse(Unavailable("the server is out of memory for this request; retry later"));
  } catch (const std::exception& e) {
    log::RequestLog(req.request_id).Error("handler threw: {}", e.what());
  } catch (...) {
    log::RequestLog(req.request_id).Error("handler threw a non-standard exception");
  }
  return ErrorResponse(Internal("internal error"));
}

void Record(Impl& srv, std::string_view route, HttpMethod method, std::string_view path, int status,
            std::chrono::steady_clock::time_point start, const std::string& request_id) {
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  srv.requests_total_->WithLabels({std::string(route), std::to_string(status)}).Inc();
  srv.request_seconds_->WithLabels({std::string(route)}).Observe(seconds);
  // Health probes and metric scrapes that succeed come many times a second
  // from a gateway or a supervisor: debug level, so they do not drown the log.
  const bool probe = method == HttpMethod::kGet && status == 200 && (path == "/health" || path == "/metrics");
  const log::Level level = probe ? log::Level::kDebug : log::Level::kInfo;
  if (srv.options_.access_log && log::Enabled(level)) {
    const log::RequestLog entry(request_id);
    if (probe) {
      entry.Debug("access method={} path={} status={} duration_ms={:.3f}", HttpMethodName(method), path, status,
                  seconds * 1000);
    } else {
      entry.Info("access method={} path={} status={} duration_ms={:.3f}", HttpMethodName(method), path, status,
                 seconds * 1000);
    }
  }
}

// Writes the reply items a handler queues until the reply is complete, the
// client is gone, or the server gives up on the connection.
asio::awaitable<void> Pump(Impl& srv, std::shared_ptr<Connection> conn, ReplyChannel& ch, const ReplyContext& ctx,
                           Outcome* out) {
  const bool chunked = ctx.version >= 11;
  for (;;) {
    if (conn->force_closed) co_return;
    std::vector<ReplyChannel::Item> items = ch.Take();
    if (items.empty()) {
      if (ch.gone()) co_return;
      co_await conn->signal.async_wait(kNoThrow);  // woken by ReplyChannel's wake()
      continue;
    }
    std::string bytes;
    size_t chunk_bytes = 0;
    bool done = false;
    bool abort = false;
    for (auto& item : items) {
      switch (item.kind) {
        case ReplyChannel::Kind::kUnary:
          out->keep_alive = ctx.client_keep_alive && !srv.draining_;
          bytes += SerializeUnary(item.response, ctx, out->keep_alive);
          out->status = item.response.status;
          done = true;
          break;
        case ReplyChannel::Kind::kStreamHead:
          // Without chunked framing (HTTP/1.0) only the close ends the body.
          out->keep_alive = chunked && ctx.client_keep_alive && !srv.draining_;
          bytes += SerializeHead(item.response.status, item.response.headers, ctx, out->keep_alive, std::nullopt);
          out->status = item.response.status;
          break;
        case ReplyChannel::Kind::kChunk:
          if (!ctx.head) AppendChunk(bytes, item.chunk, chunked);
          chunk_bytes += item.chunk.size();
          break;
        case ReplyChannel::Kind::kFinish:
          if (chunked && !ctx.head) bytes += "0\r\n\r\n";
          done = true;
          break;
        case ReplyChannel::Kind::kAbort:
          abort = true;
          break;
      }
      if (done || abort) break;
    }
    if (!bytes.empty()) {
      // Through the timed stream (WatchForHangup reads the raw socket), so a
      // stalled reader times out; the timeout closes the socket, which also
      // ends the watch.
      conn->stream.expires_after(srv.options_.stream_write_timeout);
      auto [ec, n] = co_await asio::async_write(conn->stream, asio::buffer(bytes), kNoThrow);
      if (ec) co_return;
    }
    if (chunk_bytes > 0) ch.Consumed(chunk_bytes);
    if (abort) co_return;
    if (done) {
      out->complete = true;
      co_return;
    }
  }
}

// Waits for the client's socket to become readable while a handler works, so
// a client that closes or resets the connection is noticed at once rather
// than at the next write. Nothing is read: bytes of a pipelined next request
// stay in the kernel for the next ServeOne, and the watch ends there (as it
// does when the reply finishes and Pump's caller cancels it). A plain
// completion handler rather than a coroutine raced against Pump: the race's
// spawned coroutines cost more than the rest of a small proxied reply.
void WatchForHangup(const std::shared_ptr<Connection>& conn, const std::shared_ptr<ReplyChannel>& ch) {
  conn->stream.socket().async_wait(tcp::socket::wait_read, [conn, ch](const boost::system::error_code& ec) {
    if (ec == asio::error::operation_aborted || conn->channel != ch) return;  // the reply finished first
    if (!ec) {
      char byte;
      ssize_t n = ::recv(conn->stream.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n > 0) return;  // a pipelined request, not a hang-up
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        WatchForHangup(conn, ch);  // a spurious wake-up
        return;
      }
    }
    ch->MarkGone();
    conn->signal.cancel();  // Pump sees gone() and stops
  });
}

// Runs a pooled or streaming handler and relays its ReplyChannel.
asio::awaitable<Outcome> RunWithChannel(Impl& srv, std::shared_ptr<Connection> conn, const RouteEntry& entry,
                                        HttpRequest req, const ReplyContext& ctx) {
  std::weak_ptr<Connection> weak = conn;
  auto executor = conn->stream.get_executor();
  auto channel = std::make_shared<ReplyChannel>(ctx.request_id, srv.options_.stream_buffer_bytes, [weak, executor] {
    asio::post(executor, [weak] {
      if (auto c = weak.lock()) c->signal.cancel();
    });
  });
  conn->channel = channel;
  conn->signal.expires_at(asio::steady_timer::time_point::max());
  {
    auto writer = std::make_shared<ChannelWriter>(channel);
    if (entry.kind == RouteEntry::Kind::kPooled) {
      const HttpHandler* handler = &entry.handler;  // routes outlive the worker pool
      bool posted = srv.workers_->Post([handler, req = std::move(req), writer] {
        writer->Send(CallSafely(*handler, req));
      });
      if (!posted) writer->Send(ErrorResponse(Unavailable("server is shutting down")));
    } else {
      try {
        entry.streaming(std::move(req), writer);
      } catch (const std::bad_alloc&) {
        log::RequestLog(ctx.request_id).Error("streaming handler ran out of memory");
        writer->Send(ErrorResponse(Unavailable("the server is out of memory for this request; retry later")));
      } catch (const std::exception& e) {
        log::RequestLog(ctx.request_id).Error("streaming handler threw: {}", e.what());
        writer->Send(ErrorResponse(Internal("internal error")));
      }
    }
  }  // if the handler kept no reference, the channel now holds its reply (or a 500)

  Outcome out;
  WatchForHangup(conn, channel);
  co_await Pump(srv, conn, *channel, ctx, &out);
  boost::system::error_code ignored;
  conn->stream.socket().cancel(ignored);  // ends the watch; Pump's writes are done
  if (!out.complete) {
    channel->MarkGone();
    if (out.status == 0) out.status = 499;
  }
  channel->Close();
  conn->channel.reset();
  co_return out;
}

asio::awaitable<Outcome> WriteUnary(Impl& srv, Connection& conn, const HttpResponse& resp, const ReplyContext& ctx) {
  Outcome out;
  out.status = resp.status;
  out.keep_alive = ctx.client_keep_alive && !srv.draining_;
  std::string bytes = SerializeUnary(resp, ctx, out.keep_alive);
  conn.stream.expires_after(srv.options_.idle_timeout);  // a client that never reads must not pin us
  auto [ec, n] = co_await asio::async_write(conn.stream, asio::buffer(bytes), kNoThrow);
  conn.stream.expires_never();
  out.complete = !ec;
  co_return out;
}

asio::awaitable<bool> Dispatch(Impl& srv, std::shared_ptr<Connection> conn, http::request<http::string_body> breq,
                               std::shared_ptr<BodyLease> lease) {
  auto start = std::chrono::steady_clock::now();
  HttpRequest req;
  req.method = ParseHttpMethod(breq.method_string());
  req.target = std::string(breq.target());
  SplitTarget(req.target, &req.path, &req.query);
  for (const auto& field : breq) req.headers.Add(field.name_string(), field.value());
  req.body_lease = std::move(lease);
  req.body = std::move(breq.body());
  auto id = req.headers.Get("x-request-id");
  req.request_id = id && IsUsableRequestId(*id) ? std::string(*id) : log::NewRequestId();
  req.remote_address = conn->remote_address;
  ReplyContext ctx{req.request_id, breq.version(), req.method == HttpMethod::kHead, breq.keep_alive()};
  const HttpMethod method = req.method;
  const std::string path = req.path;

  Outcome out;
  auto match = srv.router_.Find(req.method, req.path);
  std::string_view route = match.ok() ? match->pattern : std::string_view("(unmatched)");
  if (!match.ok()) {
    out = co_await WriteUnary(srv, *conn, ErrorResponse(match.status()), ctx);
  } else if (match->value->kind == RouteEntry::Kind::kInline) {
    out = co_await WriteUnary(srv, *conn, CallSafely(match->value->handler, req), ctx);
  } else {
    out = co_await RunWithChannel(srv, conn, *match->value, std::move(req), ctx);
  }
  Record(srv, route, method, path, out.status, start, ctx.request_id);
  co_return out.complete && out.keep_alive && !srv.draining_ && !conn->force_closed;
}

// Answers a request that could not be read with an error, then closes.
asio::awaitable<bool> Reject(Impl& srv, Connection& conn, Status status, int retry_after_seconds = 0) {
  auto start = std::chrono::steady_clock::now();
  ReplyContext ctx{log::NewRequestId(), 11, false, false};
  HttpResponse reply = ErrorResponse(status);
  if (retry_after_seconds > 0) reply.headers.Set("retry-after", std::to_string(retry_after_seconds));
  std::string bytes = SerializeUnary(reply, ctx, /*keep_alive=*/false);
  conn.stream.expires_after(kLingerTimeout);
  co_await asio::async_write(conn.stream, asio::buffer(bytes), kNoThrow);
  // Lingering close: if we closed with unread request bytes in the kernel
  // buffer, the kernel would send RST, and the client could lose our reply
  // before reading it. So stop sending and drain until the client closes.
  boost::system::error_code ec;
  conn.stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  size_t drained = 0;
  while (drained < kMaxLingerBytes) {
    conn.stream.expires_after(kLingerTimeout);
    conn.buffer.consume(conn.buffer.size());
    auto [rec, n] = co_await conn.stream.async_read_some(conn.buffer.prepare(kReadChunk), kNoThrow);
    if (rec) break;
    drained += n;
  }
  Record(srv, "(invalid)", HttpMethod::kUnknown, "", status.http_status(), start, ctx.request_id);
  co_return false;
}

// Network-level ends of a request read: the connection just closes.
bool IsQuietReadError(const boost::system::error_code& ec) {
  return ec == beast::error::timeout || ec == http::error::end_of_stream || ec == http::error::partial_message ||
         ec == asio::error::eof || ec == asio::error::operation_aborted || ec == asio::error::connection_reset ||
         ec == asio::error::bad_descriptor;
}

// Reads the body after its head, counting it against max_inflight_body_bytes
// (a declared length before a byte of it is read, a chunked body as it
// grows). OK, Cancelled for a network end (close without a reply), or the
// error to reject the request with.
asio::awaitable<Status> ReadBody(Impl& srv, Connection& conn, http::request_parser<http::string_body>& parser,
                                 BodyLease& lease) {
  const size_t budget = srv.options_.max_inflight_body_bytes;
  auto over_budget = [&] {
    return Unavailable("the server is buffering its limit of request bodies (" + std::to_string(budget) +
                       " bytes); retry shortly");
  };
  if (auto length = parser.content_length(); length && *length > 0) {
    if (!lease.Grow(static_cast<size_t>(*length), budget)) co_return over_budget();
  }
  auto expect = parser.get()[http::field::expect];
  if (EqualsIgnoreCase(expect, "100-continue")) {
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    co_await asio::async_write(conn.stream, asio::buffer(kContinue), kNoThrow);
  }
  conn.stream.expires_after(srv.options_.body_timeout);
  while (!parser.is_done()) {
    auto [ec, n] = co_await http::async_read_some(conn.stream, conn.buffer, parser, kNoThrow);
    if (ec == http::error::body_limit) {
      co_return PayloadTooLarge("request body is larger than " + std::to_string(srv.options_.max_body_bytes) +
                                " bytes");
    }
    if (ec == http::error::partial_message || ec == asio::error::eof) {
      co_return InvalidArgument("the request body ended before its declared length");
    }
    if (ec && IsQuietReadError(ec)) co_return Cancelled("connection closed");
    if (ec) co_return InvalidArgument("malformed HTTP request body: " + ec.message());
    const size_t have = parser.get().body().size();
    if (have > lease.bytes() && !lease.Grow(std::max(kLeaseStep, have - lease.bytes()), budget)) {
      co_return over_budget();
    }
  }
  conn.stream.expires_never();
  co_return Status::Ok();
}

// Reads one request and serves it; false when the connection should close.
asio::awaitable<bool> ServeOne(Impl& srv, std::shared_ptr<Connection> conn, bool first) {
  auto& stream = conn->stream;
  if (conn->buffer.size() == 0) {
    if (srv.draining_) co_return false;
    conn->idle = true;
    stream.expires_after(first ? srv.options_.header_timeout : srv.options_.idle_timeout);
    auto [ec, n] = co_await stream.async_read_some(conn->buffer.prepare(kReadChunk), kNoThrow);
    conn->idle = false;
    if (ec) co_return false;
    conn->buffer.commit(n);
  }
  // The whole head first, so its raw bytes can be checked before Beast
  // parses (and unfolds) them.
  stream.expires_after(srv.options_.header_timeout);
  auto [rec, head_len] = co_await ReadHeaderBlock(stream, conn->buffer, srv.options_.max_header_bytes);
  if (rec == http::error::header_limit) co_return co_await Reject(srv, *conn, InvalidArgument("request headers too large"));
  if (rec == asio::error::eof && conn->buffer.size() > 0) {
    // Part of a request, then the client stopped sending (FIN): say so
    // rather than close without a word.
    co_return co_await Reject(srv, *conn, InvalidArgument("the request head ended before its empty line"));
  }
  if (rec) co_return false;
  {
    auto data = conn->buffer.cdata();
    std::string_view head(static_cast<const char*>(data.data()), head_len);
    if (Status s = CheckHeaderBlock(head); !s.ok()) co_return co_await Reject(srv, *conn, std::move(s));
  }
  http::request_parser<http::string_body> parser;
  parser.header_limit(static_cast<uint32_t>(srv.options_.max_header_bytes));
  parser.body_limit(srv.options_.max_body_bytes);
  auto [hec, hn] = co_await http::async_read_header(stream, conn->buffer, parser, kNoThrow);
  if (hec == http::error::body_limit) {
    co_return co_await Reject(srv, *conn, PayloadTooLarge("request body is larger than " +
                                                          std::to_string(srv.options_.max_body_bytes) + " bytes"));
  }
  if (hec == http::error::header_limit) co_return co_await Reject(srv, *conn, InvalidArgument("request headers too large"));
  if (hec && IsQuietReadError(hec)) co_return false;
  if (hec) co_return co_await Reject(srv, *conn, InvalidArgument("malformed HTTP request: " + hec.message()));
  // Nothing after a framing error is read as a request: Reject closes.
  if (Status s = CheckRequestFraming(parser.get(), parser.chunked()); !s.ok()) co_return co_await Reject(srv, *conn, std::move(s));

  auto lease = std::make_shared<BodyLease>(srv.body_bytes_);
  Status body = co_await ReadBody(srv, *conn, parser, *lease);
  if (body.code() == StatusCode::kCancelled) co_return false;
  if (!body.ok()) {
    const bool retry = body.code() == StatusCode::kUnavailable;  // the budget: a retry may fit
    co_return co_await Reject(srv, *conn, std::move(body), retry ? 1 : 0);
  }
  co_return co_await Dispatch(srv, conn, parser.release(), std::move(lease));
}

// Unregisters a connection however its coroutine ends, so Shutdown() can
// count on the connection table.
class ConnectionRegistration {
 public:
  ConnectionRegistration(Impl& srv, const std::shared_ptr<Connection>& conn) : srv_(srv) {
    std::lock_guard lock(srv_.mu_);
    id_ = srv_.next_connection_id_++;
    srv_.connections_[id_] = conn;
    srv_.open_connections_gauge_->Inc();
  }
  ~ConnectionRegistration() {
    {
      std::lock_guard lock(srv_.mu_);
      srv_.connections_.erase(id_);
      srv_.open_connections_gauge_->Dec();
    }
    srv_.cv_.notify_all();
  }
  ConnectionRegistration(const ConnectionRegistration&) = delete;
  ConnectionRegistration& operator=(const ConnectionRegistration&) = delete;

 private:
  Impl& srv_;
  uint64_t id_ = 0;
};

}  // namespace

asio::awaitable<void> HttpServer::Impl::Session(std::shared_ptr<Connection> conn) {
  ConnectionRegistration registration(*this, conn);
  boost::system::error_code ec;
  auto remote = conn->stream.socket().remote_endpoint(ec);
  if (!ec) conn->remote_address = remote.address().to_string() + ":" + std::to_string(remote.port());
  for (bool first = true;; first = false) {
    if (!co_await ServeOne(*this, conn, first)) break;
  }
  conn->stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  conn->stream.socket().close(ec);
}

}  // namespace omni
