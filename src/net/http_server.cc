#include "net/http_server.h"

#include <csignal>
#include <cstdlib>
#include <future>

#include <boost/asio/signal_set.hpp>
#include <boost/beast/http/status.hpp>

#include "core/log.h"
#include "net/internal/server_impl.h"

namespace omni {
namespace net_internal {

std::string_view ReasonPhrase(int status) {
  if (status == 499) return "Client Closed Request";  // nginx's code; Beast does not know it
  std::string_view r = http::obsolete_reason(http::int_to_status(static_cast<unsigned>(status)));
  return r == "<unknown-status>" ? std::string_view("Unknown") : r;
}

}  // namespace net_internal

using namespace net_internal;  // NOLINT: the aliases above are private to src/net

HttpServer::Impl::Impl(HttpServerOptions options) : options_(std::move(options)) {
  OMNI_CHECK_GT(options_.io_threads, 0);
  OMNI_CHECK_GT(options_.worker_threads, 0);
  for (int i = 0; i < options_.io_threads; ++i) {
    // Hint 1: one thread runs this context.
    iocs_.push_back(std::make_unique<asio::io_context>(1));
  }
  if (options_.metrics == nullptr) owned_metrics_ = std::make_unique<MetricsRegistry>();
  metrics_ = options_.metrics != nullptr ? options_.metrics : owned_metrics_.get();
  requests_total_ = &metrics_->AddCounter("omni_http_requests_total",
                                          "HTTP requests served, by route and status.", {"path", "status"});
  request_seconds_ = &metrics_->AddHistogram("omni_http_request_duration_seconds",
                                             "Time from a request's last byte to its response's last byte.",
                                             {"path"}, DefaultLatencyBuckets());
  open_connections_gauge_ = &metrics_->AddGauge("omni_http_open_connections", "Open client connections.").Get();
  accepted_total_ = &metrics_->AddCounter("omni_http_connections_accepted_total", "Connections accepted.").Get();
}

void HttpServer::Impl::AddRoute(HttpMethod method, std::string pattern, RouteEntry entry) {
  std::lock_guard lock(mu_);
  OMNI_CHECK(state_ == State::kNew) << "routes must be added before Start()";
  router_.Add(method, std::move(pattern), std::move(entry));
}

void HttpServer::Impl::InstallBuiltinRoutes() {
  if (options_.health_endpoint && !router_.Find(HttpMethod::kGet, "/health").ok()) {
    router_.Add(HttpMethod::kGet, "/health",
                RouteEntry{RouteEntry::Kind::kInline, [this](const HttpRequest&) {
                             if (draining_) return ErrorResponse(Unavailable("server is shutting down"));
                             if (health_report_) return health_report_();
                             Status s = health_check_ ? health_check_() : Status::Ok();
                             return s.ok() ? JsonResponse(200, R"({"status":"ok"})") : ErrorResponse(s);
                           },
                           {}});
  }
  if (options_.metrics_endpoint && !router_.Find(HttpMethod::kGet, "/metrics").ok()) {
    router_.Add(HttpMethod::kGet, "/metrics",
                RouteEntry{RouteEntry::Kind::kInline, [this](const HttpRequest&) {
                             HttpResponse r;
                             r.headers.Set("content-type", kPrometheusContentType);
                             r.body = metrics_->Render();
                             return r;
                           },
                           {}});
  }
}

Status HttpServer::Impl::Start() {
  {
    std::lock_guard lock(mu_);
    OMNI_CHECK(state_ == State::kNew) << "HttpServer::Start called twice";
    InstallBuiltinRoutes();
  }
  boost::system::error_code ec;
  auto address = asio::ip::make_address(options_.host, ec);
  if (ec) return InvalidArgument("bad listen address '" + options_.host + "': " + ec.message());
  tcp::endpoint endpoint(address, options_.port);
  acceptor_.emplace(*iocs_[0]);
  if (acceptor_->open(endpoint.protocol(), ec); ec) return Internal("socket: " + ec.message());
  acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
  if (acceptor_->bind(endpoint, ec); ec) {
    return Unavailable("cannot bind " + options_.host + ":" + std::to_string(options_.port) + ": " + ec.message());
  }
  if (acceptor_->listen(asio::socket_base::max_listen_connections, ec); ec) {
    return Internal("listen: " + ec.message());
  }
  port_ = acceptor_->local_endpoint().port();

  workers_ = std::make_unique<ThreadPool>(options_.worker_threads);
  for (auto& ioc : iocs_) work_.push_back(asio::make_work_guard(*ioc));
  asio::co_spawn(acceptor_->get_executor(), AcceptLoop(), asio::detached);
  for (auto& ioc : iocs_) {
    io_threads_.emplace_back([ioc = ioc.get()] {
      SetOnIoThread(true);
      ioc->run();
    });
  }
  {
    std::lock_guard lock(mu_);
    state_ = State::kRunning;
  }
  OMNI_LOG(kInfo, "http server listening on {}:{}", options_.host, port_);
  return Status::Ok();
}

asio::awaitable<void> HttpServer::Impl::AcceptLoop() {
  for (;;) {
    asio::io_context& target = *iocs_[next_ioc_++ % iocs_.size()];
    auto [ec, socket] = co_await acceptor_->async_accept(target, kNoThrow);
    if (ec == asio::error::operation_aborted || !acceptor_->is_open()) co_return;
    if (ec) {
      // Out of descriptors or similar: back off instead of spinning.
      OMNI_LOG(kWarn, "accept failed: {}", ec.message());
      asio::steady_timer pause(acceptor_->get_executor(), std::chrono::milliseconds(50));
      co_await pause.async_wait(kNoThrow);
      continue;
    }
    accepted_.fetch_add(1, std::memory_order_relaxed);
    accepted_total_->Inc();
    socket.set_option(tcp::no_delay(true), ec);  // responses are small and latency-bound
    auto conn = std::make_shared<Connection>(std::move(socket));
    auto executor = conn->stream.get_executor();
    asio::co_spawn(executor, Session(std::move(conn)), [](std::exception_ptr e) {
      if (!e) return;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        OMNI_LOG(kError, "http connection failed: {}", ex.what());
      }
    });
  }
}

void HttpServer::Impl::ForEachConnection(std::function<void(Connection&)> fn) {
  std::lock_guard lock(mu_);
  for (auto& [id, weak] : connections_) {
    auto conn = weak.lock();
    if (!conn) continue;
    auto executor = conn->stream.get_executor();
    asio::post(executor, [conn, fn] { fn(*conn); });
  }
}

void HttpServer::Impl::Shutdown() {
  {
    std::unique_lock lock(mu_);
    if (state_ == State::kNew) {
      state_ = State::kStopped;
      return;
    }
    if (state_ != State::kRunning) {
      cv_.wait(lock, [&] { return state_ == State::kStopped; });
      return;
    }
    state_ = State::kStopping;
  }
  cv_.notify_all();  // wakes RunUntilSignal
  draining_ = true;

  // Close the listening socket before returning from here, so that a
  // connect after Shutdown() begins is refused rather than left hanging.
  std::promise<void> closed;
  asio::post(acceptor_->get_executor(), [&] {
    boost::system::error_code ec;
    acceptor_->close(ec);
    closed.set_value();
  });
  closed.get_future().wait();

  ForEachConnection([](Connection& c) {
    if (c.idle) c.stream.cancel();
  });
  auto all_closed = [&] { return connections_.empty(); };
  bool drained;
  {
    std::unique_lock lock(mu_);
    drained = cv_.wait_for(lock, options_.drain_timeout, all_closed);
  }
  if (!drained && drain_deadline_hook_) {
    OMNI_LOG(kWarn, "drain deadline ({} ms) passed with {} connections open; ending their work",
             options_.drain_timeout.count(), open_connections_gauge_->Value());
    drain_deadline_hook_();
    // Idle keep-alive connections left by the ended requests close at once.
    ForEachConnection([](Connection& c) {
      if (c.idle) c.stream.cancel();
    });
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, options_.drain_grace, all_closed);
  }
  ForEachConnection([](Connection& c) {
    c.force_closed = true;
    if (c.channel) c.channel->MarkGone();
    boost::system::error_code ec;
    c.stream.socket().close(ec);
    c.signal.cancel();
  });
  {
    std::unique_lock lock(mu_);
    // Closed sockets end their coroutines promptly; the bound only guards
    // against a bug turning shutdown into a hang.
    if (!cv_.wait_for(lock, std::chrono::seconds(5), all_closed)) {
      OMNI_LOG(kError, "{} connections did not close during shutdown", connections_.size());
    }
  }
  workers_->Shutdown();  // waits for handlers still running
  work_.clear();
  for (auto& ioc : iocs_) ioc->stop();
  for (auto& t : io_threads_) t.join();
  io_threads_.clear();
  {
    std::lock_guard lock(mu_);
    state_ = State::kStopped;
  }
  cv_.notify_all();
  OMNI_LOG(kInfo, "http server on port {} stopped", port_);
}

void HttpServer::Impl::RunUntilSignal() {
  {
    std::lock_guard lock(mu_);
    OMNI_CHECK(state_ != State::kNew) << "RunUntilSignal needs Start() first";
  }
  auto signals = std::make_shared<asio::signal_set>(*iocs_[0], SIGINT, SIGTERM);
  signals->async_wait([this, signals](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    OMNI_LOG(kInfo, "signal {} received, draining (a second one exits at once)", sig);
    {
      std::lock_guard lock(mu_);
      signal_received_ = true;
    }
    cv_.notify_all();
    signals->async_wait([](const boost::system::error_code& ec2, int sig2) {
      if (ec2) return;
      OMNI_LOG(kWarn, "signal {} received while draining: exiting now", sig2);
      std::_Exit(128 + sig2);
    });
  });
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return signal_received_ || state_ != State::kRunning; });
  }
  Shutdown();  // the signal set stays armed for a second signal until here
}

HttpServer::HttpServer(HttpServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

HttpServer::~HttpServer() { impl_->Shutdown(); }

void HttpServer::Route(HttpMethod method, std::string pattern, HttpHandler handler) {
  impl_->AddRoute(method, std::move(pattern), {RouteEntry::Kind::kPooled, std::move(handler), {}});
}

void HttpServer::RouteInline(HttpMethod method, std::string pattern, HttpHandler handler) {
  impl_->AddRoute(method, std::move(pattern), {RouteEntry::Kind::kInline, std::move(handler), {}});
}

void HttpServer::RouteStreaming(HttpMethod method, std::string pattern, StreamingHttpHandler handler) {
  impl_->AddRoute(method, std::move(pattern), {RouteEntry::Kind::kStreaming, {}, std::move(handler)});
}

void HttpServer::SetDrainDeadlineHook(std::function<void()> hook) {
  std::lock_guard lock(impl_->mu_);
  impl_->drain_deadline_hook_ = std::move(hook);
}

void HttpServer::SetHealthCheck(std::function<Status()> check) {
  std::lock_guard lock(impl_->mu_);
  impl_->health_check_ = std::move(check);
}

void HttpServer::SetHealthReport(std::function<HttpResponse()> report) {
  std::lock_guard lock(impl_->mu_);
  impl_->health_report_ = std::move(report);
}

Status HttpServer::Start() { return impl_->Start(); }
uint16_t HttpServer::port() const { return impl_->port_; }
void HttpServer::Shutdown() { impl_->Shutdown(); }
void HttpServer::RunUntilSignal() { impl_->RunUntilSignal(); }
MetricsRegistry& HttpServer::metrics() { return *impl_->metrics_; }
uint64_t HttpServer::accepted_connections() const { return impl_->accepted_.load(); }
uint64_t HttpServer::open_connections() const {
  std::lock_guard lock(impl_->mu_);
  return impl_->connections_.size();
}

}  // namespace omni
