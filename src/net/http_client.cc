#include "net/http_client.h"

#include <sys/socket.h>

#include <array>
#include <atomic>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <openssl/ssl.h>

#include "net/internal/asio.h"
#include "net/internal/framing.h"
#include "net/internal/server_impl.h"
#include "net/url.h"

namespace omni {

using namespace net_internal;  // NOLINT: aliases private to src/net

namespace {

using TcpStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;
using Deadline = std::chrono::steady_clock::time_point;

// How one attempt on one connection ended.
struct AttemptResult {
  Status status;
  int http_status = 0;
  bool keep_alive = false;  // the connection may go back to the pool
  // Failed before any response byte arrived, on a connection that may have
  // been closed by the server while it sat in the pool.
  bool stale_connection = false;
  bool request_sent = false;
};

// Methods that RFC 9110 section 9.2.2 lets a client repeat without changing
// the outcome.
bool IsIdempotent(HttpMethod m) {
  return m == HttpMethod::kGet || m == HttpMethod::kHead || m == HttpMethod::kPut || m == HttpMethod::kDelete ||
         m == HttpMethod::kOptions;
}

bool IsConnectionDrop(const boost::system::error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == asio::error::not_connected;
}

// A response head larger than this is refused, as the server refuses a
// request head over its max_header_bytes default.
constexpr size_t kMaxResponseHeadBytes = 64 * 1024;

Status NetworkError(const boost::system::error_code& ec, std::string_view what, const Url& url) {
  std::string msg = std::string(what) + " " + url.HostPort() + ": " + ec.message();
  // A response Beast could not parse is the upstream's fault, not a network
  // failure to retry; a close mid-message is the network's.
  const bool malformed = ec.category() == http::make_error_code(http::error::bad_version).category() &&
                         ec != http::error::end_of_stream && ec != http::error::partial_message;
  if (malformed) return Internal(std::string(what) + " " + url.HostPort() + ": malformed response: " + ec.message());
  if (ec == beast::error::timeout) return DeadlineExceeded(msg);
  return Unavailable(msg);
}

// Connections are pooled per host:port, and per address when pinned, so a
// pinned request never reuses one that a lookup connected elsewhere.
std::string PoolKey(const HttpClientRequest& request, const Url& url) {
  if (request.connect_address.empty()) return url.HostPort();
  return url.HostPort() + "@" + request.connect_address;
}

// A head "HTTP/1.x 1yz" other than 101: an interim response.
bool IsInterimHead(const beast::flat_buffer& buffer, size_t head_len) {
  auto data = buffer.cdata();
  std::string_view head(static_cast<const char*>(data.data()), head_len);
  return head.size() > 12 && head.starts_with("HTTP/1.") && head[8] == ' ' && head[9] == '1' &&
         head.substr(9, 3) != "101";
}

// A pooled connection the server has closed (or sent stray bytes on) shows
// as readable; catching that here avoids most retries.
bool LooksReusable(TcpStream& stream) {
  char byte;
  ssize_t n = ::recv(stream.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

}  // namespace

// The io-thread side of an HttpCallHandle.
// Every io context here is run by exactly one thread (the client's own, or
// one of a server's io threads), so its executor serializes like a strand.
// An asynchronous exchange runs on the context of the thread that started
// it and takes pooled connections from that context's pool only: the
// exchange, its connection's operations, its Beast timer and Cancel never
// run concurrently, and a proxied request never changes threads.
class AsyncCall final : public HttpCallHandle, public std::enable_shared_from_this<AsyncCall> {
 public:
  using Executor = asio::any_io_executor;
  explicit AsyncCall(Executor executor) : executor_(std::move(executor)) {}

  const Executor& executor() const { return executor_; }

  void Cancel() override {
    if (cancelled_.exchange(true)) return;
    asio::post(executor_, [self = shared_from_this()] {
      if (self->stream_ != nullptr) self->stream_->socket().close();
    });
  }
  bool cancelled() const { return cancelled_.load(); }
  // The connection in use, for Cancel to close; on the executor only.
  void Attach(TcpStream* stream) { stream_ = stream; }

 private:
  Executor executor_;  // the exchange's coroutine and Cancel run on it
  std::atomic<bool> cancelled_{false};
  TcpStream* stream_ = nullptr;  // on the executor only
};

class HttpClient::Impl {
 public:
  explicit Impl(HttpClientOptions options) : options_(std::move(options)), owned_ioc_(std::in_place, 1) {
    MakeTlsContext();
    iocs_.push_back(&*owned_ioc_);
    pools_.push_back(std::make_unique<Pool>());
    work_.emplace(owned_ioc_->get_executor());
    thread_ = std::thread([this] { owned_ioc_->run(); });
  }
  Impl(const std::vector<std::unique_ptr<asio::io_context>>& shared, HttpClientOptions options)
      : options_(std::move(options)) {
    MakeTlsContext();
    for (const auto& ioc : shared) {
      iocs_.push_back(ioc.get());
      pools_.push_back(std::make_unique<Pool>());
    }
  }

  ~Impl() {
    if (owned_ioc_) {
      work_.reset();
      owned_ioc_->stop();
      thread_.join();
    }
  }

  StatusOr<int> Run(const HttpClientRequest& request, const HttpStreamCallbacks& callbacks, size_t body_limit) {
    OMNI_CHECK(owned_ioc_.has_value()) << "a client on a server's io threads is asynchronous only";
    OMNI_CHECK(!owned_ioc_->get_executor().running_in_this_thread()) << "HttpClient called from its own io thread";
    OMNI_ASSIGN_OR_RETURN(Url url, ParseUrl(request.url));
    Deadline deadline = std::chrono::steady_clock::now() + request.timeout;
    std::future<AttemptResult> done =
        asio::co_spawn(*owned_ioc_, Exchange(0, request, url, callbacks, body_limit, deadline), asio::use_future);
    AttemptResult r;
    try {
      r = done.get();
    } catch (const std::exception& e) {
      return Internal(std::string("http client: ") + e.what());
    }
    if (!r.status.ok()) return r.status;
    return r.http_status;
  }

  std::shared_ptr<HttpCallHandle> RunAsync(HttpClientRequest request, HttpStreamCallbacks callbacks,
                                           std::function<void(StatusOr<int>)> done) {
    const size_t ctx = ContextForThisThread();
    auto url = ParseUrl(request.url);
    if (!url.ok()) {
      done(url.status());
      return std::make_shared<AsyncCall>(iocs_[ctx]->get_executor());
    }
    std::unique_ptr<TcpStream> pooled = url->tls() ? nullptr : TakeIdle(ctx, PoolKey(request, *url));
    auto call = std::make_shared<AsyncCall>(iocs_[ctx]->get_executor());
    Deadline deadline = std::chrono::steady_clock::now() + request.timeout;
    asio::co_spawn(call->executor(),
                   OwnedExchange(ctx, std::move(request), *std::move(url), std::move(callbacks), deadline, call,
                                 std::move(pooled)),
                   [done = std::move(done), call](std::exception_ptr e, AttemptResult r) {
                     if (e) {
                       done(Internal("http client: exception in exchange"));
                     } else if (!r.status.ok()) {
                       done(call->cancelled() ? Cancelled("request cancelled") : r.status);
                     } else {
                       done(r.http_status);
                     }
                   });
    return call;
  }

  uint64_t connections_opened() const { return opened_.load(); }
  const Status& tls_status() const { return tls_error_; }
  size_t max_response_bytes() const { return options_.max_response_bytes; }

 private:
  // Exchange with the arguments owned by the coroutine frame.
  asio::awaitable<AttemptResult> OwnedExchange(size_t ctx, HttpClientRequest request, Url url,
                                               HttpStreamCallbacks callbacks, Deadline deadline,
                                               std::shared_ptr<AsyncCall> call, std::unique_ptr<TcpStream> pooled) {
    co_return co_await Exchange(ctx, request, url, callbacks, std::numeric_limits<size_t>::max(), deadline,
                                call.get(), std::move(pooled));
  }

  // The io context the calling thread runs, if it runs one of ours (a
  // server io thread starting a proxied call); otherwise the next in turn.
  size_t ContextForThisThread() {
    for (size_t i = 0; i < iocs_.size(); ++i) {
      if (iocs_[i]->get_executor().running_in_this_thread()) return i;
    }
    return next_ctx_.fetch_add(1, std::memory_order_relaxed) % iocs_.size();
  }

  // The TLS client context, made once: TLS 1.2 or later, peers verified
  // against options_.ca_file or the system's CAs. A CA file that does not
  // load fails every https exchange with the reason.
  void MakeTlsContext() {
    tls_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
    tls_->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                      asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
    tls_->set_verify_mode(asio::ssl::verify_peer);
    boost::system::error_code ec;
    if (options_.ca_file.empty()) {
      tls_->set_default_verify_paths(ec);
    } else {
      tls_->load_verify_file(options_.ca_file, ec);
    }
    if (ec) {
      // Our configuration, not the peer: a 500 to whoever asked, not a 503 or a client's 400.
      tls_error_ = Internal("https: cannot load the CA certificates" +
                               (options_.ca_file.empty() ? std::string() : " from " + options_.ca_file) + ": " +
                               ec.message());
    }
  }

  // One exchange over a new TLS connection (not pooled): TCP connect, the
  // handshake with SNI and the peer's chain and name verified, the request.
  asio::awaitable<AttemptResult> TlsExchange(const HttpClientRequest& request, const Url& url,
                                             const HttpStreamCallbacks& callbacks, size_t body_limit,
                                             Deadline deadline, AsyncCall* call) {
    if (!tls_error_.ok()) co_return AttemptResult{tls_error_};
    auto connected = co_await Connect(url, request.connect_address, deadline);
    if (!connected.ok()) co_return AttemptResult{connected.status()};
    TlsStream stream(std::move(*connected.value()), *tls_);
    boost::system::error_code ec;
    (void)asio::ip::make_address(url.host, ec);
    const bool literal = !ec;
    // SNI carries names only (RFC 6066), never an IP literal.
    if (!literal && SSL_set_tlsext_host_name(stream.native_handle(), url.host.c_str()) != 1) {
      co_return AttemptResult{Internal("https: cannot set the server name " + url.host)};
    }
    stream.set_verify_callback(asio::ssl::host_name_verification(url.host));
    beast::get_lowest_layer(stream).expires_at(deadline);
    if (call != nullptr) {
      if (call->cancelled()) co_return AttemptResult{Cancelled("request cancelled")};
      call->Attach(&beast::get_lowest_layer(stream));
    }
    auto [hec] = co_await stream.async_handshake(asio::ssl::stream_base::client, kNoThrow);
    if (hec) {
      if (call != nullptr) call->Attach(nullptr);
      if (hec == beast::error::timeout) co_return AttemptResult{NetworkError(hec, "TLS handshake with", url)};
      co_return AttemptResult{Unavailable("TLS handshake with " + url.HostPort() + " failed: " + hec.message())};
    }
    AttemptResult r = co_await Attempt(stream, request, url, callbacks, body_limit, deadline);
    if (call != nullptr) call->Attach(nullptr);
    co_return r;
  }

  // Runs on io context `ctx` and pools its connections there. `pooled`: for
  // an asynchronous call, the idle connection RunAsync took; synchronous
  // calls take their own.
  asio::awaitable<AttemptResult> Exchange(size_t ctx, const HttpClientRequest& request, const Url& url,
                                          const HttpStreamCallbacks& callbacks, size_t body_limit, Deadline deadline,
                                          AsyncCall* call = nullptr, std::unique_ptr<TcpStream> pooled = nullptr) {
    if (url.tls()) co_return co_await TlsExchange(request, url, callbacks, body_limit, deadline, call);
    std::string key = PoolKey(request, url);
    for (int attempt = 0;; ++attempt) {
      // A retry always takes a fresh connection.
      std::unique_ptr<TcpStream> stream =
          attempt > 0 ? nullptr : (call != nullptr ? std::move(pooled) : TakeIdle(ctx, key));
      bool reused = stream != nullptr;
      if (!reused) {
        auto connected = co_await Connect(url, request.connect_address, deadline);
        if (!connected.ok()) co_return AttemptResult{connected.status()};
        stream = std::move(connected).value();
      }
      if (call != nullptr) {
        if (call->cancelled()) co_return AttemptResult{Cancelled("request cancelled")};
        call->Attach(stream.get());
      }
      AttemptResult r = co_await Attempt(*stream, request, url, callbacks, body_limit, deadline);
      // Retry once, on a fresh connection, when a pooled connection turned
      // out to be closed: always if the request never fully left, otherwise
      // only for idempotent methods (the server may have acted on it).
      bool retry = reused && attempt == 0 && r.stale_connection &&
                   (!r.request_sent || IsIdempotent(request.method)) && std::chrono::steady_clock::now() < deadline;
      if (call != nullptr) call->Attach(nullptr);
      if (retry) continue;
      if (r.status.ok() && r.keep_alive && (call == nullptr || !call->cancelled())) PutIdle(ctx, key, std::move(stream));
      co_return r;
    }
  }

  asio::awaitable<StatusOr<std::unique_ptr<TcpStream>>> Connect(const Url& url, const std::string& connect_address,
                                                                Deadline deadline) {
    auto stream = std::make_unique<TcpStream>(co_await asio::this_coro::executor);
    boost::system::error_code ec;
    std::vector<tcp::endpoint> endpoints;
    auto address = asio::ip::make_address(connect_address.empty() ? url.host : connect_address, ec);
    if (ec && !connect_address.empty()) co_return InvalidArgument("connect_address is not an IP address");
    if (!ec) {
      endpoints.emplace_back(address, url.port);
    } else {
      tcp::resolver resolver(co_await asio::this_coro::executor);
      auto [rec, results] = co_await resolver.async_resolve(url.host, std::to_string(url.port), kNoThrow);
      if (rec) co_return Unavailable("cannot resolve " + url.host + ": " + rec.message());
      for (const auto& entry : results) endpoints.push_back(entry.endpoint());
    }
    auto connect_deadline = std::min(deadline, std::chrono::steady_clock::now() + options_.connect_timeout);
    stream->expires_at(connect_deadline);
    auto [cec, endpoint] = co_await stream->async_connect(endpoints, kNoThrow);
    if (cec) co_return NetworkError(cec, "connect to", url);
    stream->socket().set_option(tcp::no_delay(true), ec);
    opened_.fetch_add(1);
    co_return std::move(stream);
  }

  // The request line and headers, serialized by hand: Beast's serializer and
  // its field container cost more than the rest of a proxied request's send.
  // The body follows as a second buffer. Framing headers are ours to set; a
  // caller's name or value with CR or LF is dropped (header injection).
  std::string SerializeHead(const HttpClientRequest& request, const Url& url) const {
    std::string head;
    head.reserve(128 + url.target.size() + 32 * request.headers.size());
    head += HttpMethodName(request.method);
    head += ' ';
    head += url.target;
    head += " HTTP/1.1\r\n";
    auto add = [&head](std::string_view name, std::string_view value) {
      head += name;
      head += ": ";
      head += value;
      head += "\r\n";
    };
    for (const auto& [name, value] : request.headers) {
      // Expect: this client sends the body at once, so a 100 Continue would
      // only be an extra response to skip.
      if (EqualsIgnoreCase(name, "content-length") || EqualsIgnoreCase(name, "transfer-encoding") ||
          EqualsIgnoreCase(name, "expect") ||
          name.find_first_of("\r\n:") != std::string::npos || value.find_first_of("\r\n") != std::string::npos) {
        continue;
      }
      add(name, value);
    }
    if (!request.headers.Has("host")) add("host", url.HostPort());
    if (!request.headers.Has("user-agent")) add("user-agent", options_.user_agent);
    // As RFC 9110 section 8.6 asks: a length for any body, and for methods
    // whose requests are expected to carry one even when it is empty.
    const bool wants_length = request.method == HttpMethod::kPost || request.method == HttpMethod::kPut ||
                              request.method == HttpMethod::kPatch;
    if (!request.body.empty() || wants_length) add("content-length", std::to_string(request.body.size()));
    head += "\r\n";
    return head;
  }

  template <class Stream>  // TcpStream or TlsStream
  asio::awaitable<AttemptResult> Attempt(Stream& stream, const HttpClientRequest& request, const Url& url,
                                         const HttpStreamCallbacks& callbacks, size_t body_limit, Deadline deadline) {
    AttemptResult r;
    const std::string head = SerializeHead(request, url);
    const std::array<asio::const_buffer, 2> out{asio::buffer(head), asio::buffer(request.body)};
    beast::get_lowest_layer(stream).expires_at(deadline);
    auto [wec, wn] = co_await asio::async_write(stream, out, kNoThrow);
    if (wec) {
      r.status = NetworkError(wec, "send to", url);
      r.stale_connection = IsConnectionDrop(wec);
      co_return r;
    }
    r.request_sent = true;

    beast::flat_buffer buffer;
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(body_limit);
    parser.header_limit(static_cast<uint32_t>(kMaxResponseHeadBytes));
    if (request.method == HttpMethod::kHead) parser.skip(true);  // HEAD answers carry no body
    // The whole head first, so its raw bytes are checked before Beast
    // parses (and unfolds) them (net/internal/framing.h).
    auto [rec, head_len] = co_await ReadHeaderBlock(stream, buffer, kMaxResponseHeadBytes);
    // Interim 1xx responses (a 100 Continue the server sent unasked) come
    // before the real one and are skipped (RFC 9110 section 15.2); 101 is
    // final but this client never asks to switch protocols.
    while (!rec && IsInterimHead(buffer, head_len)) {
      buffer.consume(head_len);
      std::tie(rec, head_len) = co_await ReadHeaderBlock(stream, buffer, kMaxResponseHeadBytes);
    }
    if (rec) {
      r.status = NetworkError(rec, "read response from", url);
      r.stale_connection = IsConnectionDrop(rec) && buffer.size() == 0;
      co_return r;
    }
    {
      auto data = buffer.cdata();
      Status s = CheckHeaderBlock(std::string_view(static_cast<const char*>(data.data()), head_len));
      if (!s.ok()) {
        r.status = Internal("bad response from " + url.HostPort() + ": " + s.message());
        co_return r;
      }
    }
    auto [hec, hn] = co_await http::async_read_header(stream, buffer, parser, kNoThrow);
    if (hec) {
      r.status = NetworkError(hec, "read response from", url);
      co_return r;
    }
    if (Status s = CheckResponseFraming(parser.get(), parser.chunked()); !s.ok()) {
      r.status = Internal(s.message() + " (from " + url.HostPort() + ")");
      co_return r;
    }
    r.http_status = static_cast<int>(parser.get().result_int());
    HttpHeaders headers;
    for (const auto& field : parser.get()) headers.Add(field.name_string(), field.value());
    if (callbacks.on_headers && !callbacks.on_headers(r.http_status, headers)) {
      r.status = Cancelled("request aborted by the caller");
      co_return r;
    }

    // Not zero-filled: a 64 KiB memset per request was the proxy's top cost.
    constexpr size_t kChunkBytes = 16 * 1024;
    auto chunk = std::make_unique_for_overwrite<char[]>(kChunkBytes);
    while (!parser.is_done()) {
      parser.get().body().data = chunk.get();
      parser.get().body().size = kChunkBytes;
      // read_some rather than read: deliver whatever arrived, so a caller
      // sees each SSE event when it comes rather than when a buffer fills.
      auto [ec, n] = co_await http::async_read_some(stream, buffer, parser, kNoThrow);
      if (ec == http::error::need_buffer) ec = {};
      if (ec == http::error::body_limit) {
        r.status = Status(StatusCode::kResourceExhausted, "response from " + url.HostPort() + " is over " +
                                                              std::to_string(body_limit) + " bytes");
        co_return r;
      }
      if (ec) {
        r.status = NetworkError(ec, "read response body from", url);
        co_return r;
      }
      size_t got = kChunkBytes - parser.get().body().size;
      if (got > 0 && callbacks.on_body && !callbacks.on_body(std::string_view(chunk.get(), got))) {
        r.status = Cancelled("request aborted by the caller");
        co_return r;
      }
    }
    r.keep_alive = parser.get().keep_alive() && buffer.size() == 0;
    co_return r;
  }

  std::unique_ptr<TcpStream> TakeIdle(size_t ctx, const std::string& key) {
    Pool& pool = *pools_[ctx];
    for (;;) {
      IdleConnection idle;
      {
        std::lock_guard lock(pool.mu);
        auto it = pool.idle.find(key);
        if (it == pool.idle.end() || it->second.empty()) return nullptr;
        idle = std::move(it->second.back());
        it->second.pop_back();
      }
      if (std::chrono::steady_clock::now() - idle.since < options_.trust_idle_for || LooksReusable(*idle.stream)) {
        return std::move(idle.stream);
      }
    }
  }

  void PutIdle(size_t ctx, const std::string& key, std::unique_ptr<TcpStream> stream) {
    stream->expires_never();
    Pool& pool = *pools_[ctx];
    std::lock_guard lock(pool.mu);
    auto& list = pool.idle[key];
    if (list.size() < options_.max_idle_per_host) {
      list.push_back({std::move(stream), std::chrono::steady_clock::now()});
    }
  }

  struct IdleConnection {
    std::unique_ptr<TcpStream> stream;
    std::chrono::steady_clock::time_point since;  // when it went back to the pool
  };
  // The idle connections of one io context. The lock is uncontended on a
  // server's io threads (each takes from its own pool) and is kept for the
  // client's own context, where callers' threads start exchanges.
  struct Pool {
    std::mutex mu;
    std::map<std::string, std::vector<IdleConnection>> idle;  // guarded by mu; most recent last
  };

  const HttpClientOptions options_;
  std::unique_ptr<asio::ssl::context> tls_;  // shared by every https exchange (thread-safe for that)
  Status tls_error_;                          // why tls_ cannot verify peers; ok when it can
  std::optional<asio::io_context> owned_ioc_;  // empty when on a server's io threads
  std::vector<asio::io_context*> iocs_;        // owned_ioc_, or the server's
  std::vector<std::unique_ptr<Pool>> pools_;   // one per io context
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::thread thread_;
  std::atomic<uint64_t> opened_{0};
  std::atomic<size_t> next_ctx_{0};
};

HttpClient::HttpClient(HttpClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
HttpClient::HttpClient(HttpServer& server, HttpClientOptions options)
    : impl_(std::make_unique<Impl>(server.impl_->iocs_, std::move(options))) {}
HttpClient::~HttpClient() = default;

StatusOr<HttpClientResponse> HttpClient::Request(const HttpClientRequest& request) {
  HttpClientResponse response;
  HttpStreamCallbacks callbacks;
  callbacks.on_headers = [&](int status, const HttpHeaders& headers) {
    response.status = status;
    response.headers = headers;
    return true;
  };
  callbacks.on_body = [&](std::string_view chunk) {
    response.body.append(chunk);
    return true;
  };
  auto status = impl_->Run(request, callbacks, impl_->max_response_bytes());
  if (!status.ok()) return status.status();
  return response;
}

StatusOr<int> HttpClient::Stream(const HttpClientRequest& request, const HttpStreamCallbacks& callbacks) {
  return impl_->Run(request, callbacks, std::numeric_limits<size_t>::max());
}

std::shared_ptr<HttpCallHandle> HttpClient::StreamAsync(HttpClientRequest request, HttpStreamCallbacks callbacks,
                                                        std::function<void(StatusOr<int>)> done) {
  return impl_->RunAsync(std::move(request), std::move(callbacks), std::move(done));
}

uint64_t HttpClient::connections_opened() const { return impl_->connections_opened(); }
Status HttpClient::tls_status() const { return impl_->tls_status(); }

}  // namespace omni
