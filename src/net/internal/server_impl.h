// HttpServer::Impl and the per-connection state, shared by http_server.cc
// (lifecycle, accept loop, routing) and server_session.cc (one coroutine per
// connection). Private to src/net.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <variant>
#include <vector>

#include "core/thread_pool.h"
#include "net/http_server.h"
#include "net/internal/asio.h"
#include "net/internal/reply_channel.h"
#include "net/router.h"

namespace omni::net_internal {

// One accepted connection. Lives in a shared_ptr so that Shutdown() and
// wake-ups posted from other threads can reach it safely; every member is
// touched only on the connection's io thread (each io context is run by
// exactly one thread, so its executor serializes like a strand).
struct Connection {
  explicit Connection(tcp::socket socket)
      : stream(std::move(socket)), signal(stream.get_executor()) {}

  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  // Woken (cancelled) when a reply channel has something to send.
  asio::steady_timer signal;
  std::string remote_address;
  // Waiting for the next request on a kept-alive connection; Shutdown closes
  // connections in this state at once.
  bool idle = false;
  bool force_closed = false;
  std::shared_ptr<ReplyChannel> channel;  // the request in flight, if any
};

struct RouteEntry {
  enum class Kind { kPooled, kInline, kStreaming };
  Kind kind;
  HttpHandler handler;             // kPooled, kInline
  StreamingHttpHandler streaming;  // kStreaming
};

}  // namespace omni::net_internal

namespace omni {

class HttpServer::Impl {
 public:
  using Connection = net_internal::Connection;
  using RouteEntry = net_internal::RouteEntry;

  explicit Impl(HttpServerOptions options);

  void AddRoute(HttpMethod method, std::string pattern, RouteEntry entry);
  Status Start();
  void Shutdown();
  void RunUntilSignal();

  // Connection coroutine (server_session.cc).
  net_internal::asio::awaitable<void> Session(std::shared_ptr<Connection> conn);

  const HttpServerOptions options_;
  Router<RouteEntry> router_;
  std::function<Status()> health_check_;
  std::function<HttpResponse()> health_report_;
  std::function<void()> drain_deadline_hook_;
  std::unique_ptr<MetricsRegistry> owned_metrics_;
  MetricsRegistry* metrics_;
  CounterFamily* requests_total_;
  HistogramFamily* request_seconds_;
  Gauge* open_connections_gauge_;
  Counter* accepted_total_;

  std::atomic<bool> draining_{false};
  // Body bytes of requests alive now (HttpServerOptions::max_inflight_body_bytes).
  // Shared with the leases, which may outlive the server.
  std::shared_ptr<std::atomic<size_t>> body_bytes_ = std::make_shared<std::atomic<size_t>>(0);
  std::atomic<uint64_t> accepted_{0};

  enum class State { kNew, kRunning, kStopping, kStopped };
  std::mutex mu_;
  std::condition_variable cv_;
  State state_ = State::kNew;  // guarded by mu_
  bool signal_received_ = false;  // guarded by mu_
  uint64_t next_connection_id_ = 0;  // guarded by mu_
  std::unordered_map<uint64_t, std::weak_ptr<Connection>> connections_;  // guarded by mu_

  // Declared after the state above so it is destroyed before it: destroying
  // the io contexts destroys suspended connection coroutines, whose cleanup
  // still uses mu_, connections_ and the metrics.
  //
  // One io context per io thread, each run by that thread alone: a
  // connection and everything it does (its upstream calls included, see
  // HttpClient) stay on one thread, with no strand and no cross-thread
  // wake-up per request. Accepted connections are dealt out round-robin.
  std::vector<std::unique_ptr<net_internal::asio::io_context>> iocs_;
  std::vector<net_internal::asio::executor_work_guard<net_internal::asio::io_context::executor_type>> work_;
  std::optional<net_internal::tcp::acceptor> acceptor_;  // on iocs_[0]
  size_t next_ioc_ = 0;                                   // on iocs_[0]'s thread
  std::vector<std::thread> io_threads_;
  std::unique_ptr<ThreadPool> workers_;
  uint16_t port_ = 0;

 private:
  net_internal::asio::awaitable<void> AcceptLoop();
  // Runs `fn` on each open connection's io thread.
  void ForEachConnection(std::function<void(Connection&)> fn);
  void InstallBuiltinRoutes();
};

}  // namespace omni
