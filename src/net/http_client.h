// HttpClient: a blocking HTTP/1.1 client usable from any thread, with a
// keep-alive connection pool per host:port. It owns one io thread; Beast and
// Asio stay in http_client.cc.
//
//   HttpClient client;
//   auto r = client.Request({.method = HttpMethod::kPost, .url = "http://127.0.0.1:8000/v1/x", .body = json});
//   if (!r.ok()) return r.status();   // Unavailable, DeadlineExceeded, ...
//
// Plain http only for now; https URLs answer Unimplemented.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "net/http.h"

namespace omni {

struct HttpClientOptions {
  std::chrono::milliseconds connect_timeout{5'000};
  // Pooled keep-alive connections per host:port (per io thread for a client
  // on a server's io threads).
  size_t max_idle_per_host = 16;
  // A pooled connection is checked for a close by the server (one syscall)
  // before reuse, unless it went back to the pool less than this long ago.
  // Servers close idle keep-alive connections after seconds and announce
  // other closes with `Connection: close`, so a busy proxy can skip the check
  // for recently used connections.
  std::chrono::milliseconds trust_idle_for{0};
  size_t max_response_bytes = 256u << 20;  // Request() only; Stream() has no limit
  std::string user_agent = "omniserve";
  // https: the CA certificates (PEM) servers are verified against; empty:
  // the system's (Debian's ca-certificates). Every server's certificate
  // chain and name (or IP address) is checked; there is no way to skip it.
  std::string ca_file;
};

struct HttpClientRequest {
  HttpMethod method = HttpMethod::kGet;
  std::string url;  // "http(s)://host:port/path?query"
  HttpHeaders headers;
  std::string body;
  // Total time for connecting, sending and receiving the whole response.
  std::chrono::milliseconds timeout{30'000};
  // An IP literal to connect to instead of resolving the URL's host, which
  // still goes in the Host header: the address a fetch policy checked is the
  // one used (no second lookup to rebind). Pooled connections are kept apart
  // per address.
  std::string connect_address;
};

struct HttpClientResponse {
  int status = 0;
  HttpHeaders headers;
  std::string body;
};

// Callbacks of Stream(). They run on the client's io thread, must not block,
// and return false to abort the request (its connection is then closed).
struct HttpStreamCallbacks {
  std::function<bool(int status, const HttpHeaders& headers)> on_headers;
  std::function<bool(std::string_view chunk)> on_body;  // body bytes as they arrive, de-chunked
};

// Cancels an asynchronous exchange: its socket is closed, and its `done`
// callback gets Cancelled (unless the exchange already finished).
// Thread-safe; Cancel may be called from any thread, more than once.
class HttpCallHandle {
 public:
  virtual ~HttpCallHandle() = default;
  virtual void Cancel() = 0;
};

// Thread-safe. Errors: Unavailable (refused, reset, DNS, a TLS handshake or
// certificate that fails), DeadlineExceeded (connect or total timeout),
// InvalidArgument (bad URL), Internal (bad response), Cancelled (a callback
// returned false). https connections (TLS 1.2 or later, SNI, the peer's
// chain and host name verified) are not pooled: each exchange opens its own. A response with any
// HTTP status is a success at this level; the caller decides what 4xx means.
class HttpServer;

class HttpClient {
 public:
  // Owns one io thread.
  explicit HttpClient(HttpClientOptions options = {});
  // Runs its I/O on `server`'s io threads instead (no thread of its own): a
  // call started on an io thread runs on that thread with that thread's
  // pooled connections, so a proxy's upstream exchange and its downstream
  // reply never change threads; a call from any other thread takes the io
  // threads in turn. Only StreamAsync may be used, and only while
  // the server runs; destroy the client before the server.
  HttpClient(HttpServer& server, HttpClientOptions options = {});
  // Requests must have returned before the client is destroyed.
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  StatusOr<HttpClientResponse> Request(const HttpClientRequest& request);
  // Delivers the response incrementally; returns its HTTP status once the
  // body is complete. Must not be called from a callback (the io thread).
  StatusOr<int> Stream(const HttpClientRequest& request, const HttpStreamCallbacks& callbacks);
  // Stream() without a waiting thread: the callbacks and then `done` (with
  // the HTTP status or the error) run on the client's io thread, and must
  // not block. `done` runs exactly once, inline for a bad URL.
  std::shared_ptr<HttpCallHandle> StreamAsync(HttpClientRequest request, HttpStreamCallbacks callbacks,
                                              std::function<void(StatusOr<int>)> done);

  // Connections opened so far (pooled reuse does not count); for tests.
  uint64_t connections_opened() const;
  // Whether https can verify servers: Internal naming the CA file when it
  // did not load (then every https exchange fails with it). Check at start.
  Status tls_status() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace omni
