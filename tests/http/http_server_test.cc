// Server behaviour over real sockets: routing, errors, limits, timeouts,
// keep-alive and graceful shutdown.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <chrono>
#include <thread>

#include "net/http_client.h"
#include "net/http_server.h"
#include "test_util.h"

namespace omni {
namespace {

using testing::BaseUrl;
using testing::kTestWait;
using testing::RawExchange;
using testing::TestServerOptions;

HttpResponse Echo(const HttpRequest& r) {
  HttpResponse resp = JsonResponse(200, r.body);
  resp.headers.Set("x-path", r.path);
  resp.headers.Set("x-q", std::string(r.QueryParam("q").value_or("")));
  resp.headers.Set("x-method", HttpMethodName(r.method));
  return resp;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer(HttpServerOptions options) {
    server_ = std::make_unique<HttpServer>(std::move(options));
    server_->Route(HttpMethod::kPost, "/v1/echo", Echo);
    server_->Route(HttpMethod::kGet, "/v1/echo", Echo);
    ASSERT_TRUE(server_->Start().ok());
  }
  void StartServer() { StartServer(TestServerOptions()); }
  std::string Url(const std::string& path) { return BaseUrl(*server_) + path; }

  std::unique_ptr<HttpServer> server_;
  HttpClient client_;
};

TEST_F(HttpServerTest, JsonRoundTripWithQueryAndRequestId) {
  StartServer();
  HttpClientRequest req{.method = HttpMethod::kPost, .url = Url("/v1/echo?q=a%20b&z=1"), .body = R"({"x":[1,2]})"};
  req.headers.Set("X-Request-Id", "req-123");
  auto r = client_.Request(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, R"({"x":[1,2]})");
  EXPECT_EQ(r->headers.Get("content-type"), "application/json");
  EXPECT_EQ(r->headers.Get("x-path"), "/v1/echo");
  EXPECT_EQ(r->headers.Get("x-q"), "a b");
  EXPECT_EQ(r->headers.Get("x-request-id"), "req-123");

  auto generated = client_.Request({.url = Url("/v1/echo")});
  ASSERT_TRUE(generated.ok());
  EXPECT_EQ(generated->headers.GetOr("x-request-id", "").size(), 16u);
}

TEST_F(HttpServerTest, UnknownRouteIs404WrongMethodIs405) {
  StartServer();
  auto r = client_.Request({.url = Url("/nope")});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);
  EXPECT_NE(r->body.find(R"("type":"not_found_error")"), std::string::npos) << r->body;
  auto m = client_.Request({.method = HttpMethod::kDelete, .url = Url("/v1/echo")});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->status, 405);
  EXPECT_NE(m->body.find(R"("code":"method_not_allowed")"), std::string::npos) << m->body;
  EXPECT_EQ(m->headers.Get("content-type"), "application/json");
}

TEST_F(HttpServerTest, OversizeBodyGets413AndServerKeepsServing) {
  HttpServerOptions o = TestServerOptions();
  o.max_body_bytes = 1024;
  StartServer(o);
  auto r = client_.Request({.method = HttpMethod::kPost, .url = Url("/v1/echo"), .body = std::string(4096, 'x')});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 413);
  EXPECT_NE(r->body.find(R"("code":"payload_too_large")"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find(R"("type":"invalid_request_error")"), std::string::npos) << r->body;

  // A chunked body over the limit is caught while reading, not from a header.
  std::string chunked = "POST /v1/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 4; ++i) chunked += "200\r\n" + std::string(512, 'y') + "\r\n";
  chunked += "0\r\n\r\n";
  std::string raw = RawExchange(server_->port(), chunked);
  EXPECT_TRUE(raw.starts_with("HTTP/1.1 413")) << raw;

  auto ok = client_.Request({.method = HttpMethod::kPost, .url = Url("/v1/echo"), .body = "small"});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "small");
}

TEST_F(HttpServerTest, MalformedRequestsGet400AndServerKeepsServing) {
  StartServer();
  for (std::string bad : {"GARBAGE\r\n\r\n", "GET /v1/echo HTTP/1.1\r\nBad Header Line\r\n\r\n",
                          "GET /v1/echo HTTP/9.9\r\nHost: x\r\n\r\n",
                          "POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n"}) {
    std::string raw = RawExchange(server_->port(), bad);
    EXPECT_TRUE(raw.starts_with("HTTP/1.1 400")) << bad << " -> " << raw;
    EXPECT_NE(raw.find(R"("error":{)"), std::string::npos) << raw;
    EXPECT_NE(raw.find("connection: close"), std::string::npos) << raw;
  }
  auto ok = client_.Request({.url = Url("/v1/echo")});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->status, 200);
}

// RFC 9112 framing: a transfer coding other than a lone "chunked" is 501,
// Transfer-Encoding with Content-Length and obs-fold are 400, and in every
// case the connection closes, so the bytes after the head (here a whole
// second request) never run. Before the fix, "identity" was taken as no body
// and the smuggled GET answered 200.
TEST_F(HttpServerTest, SmuggledRequestBehindBadFramingNeverRuns) {
  StartServer();
  const std::string smuggled = "GET /v1/echo?q=smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
  struct Case {
    std::string headers;
    std::string status;
  };
  const Case cases[] = {
      {"Transfer-Encoding: identity\r\n", "501"},
      {"Transfer-Encoding: xchunked\r\n", "501"},
      {"Transfer-Encoding: chunked, identity\r\n", "501"},
      {"Transfer-Encoding: gzip, chunked\r\n", "501"},
      {"Transfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n", "501"},
      {"Transfer-Encoding: chunked\r\nContent-Length: 0\r\n", "400"},
      {"Content-Length: 0\r\nTransfer-Encoding: chunked\r\n", "400"},
      {"Transfer-Encoding: identity\r\nContent-Length: 0\r\n", "400"},
      {"X-A: 1\r\n folded: yes\r\n", "400"},
      {"X-A: 1\r\n\tfolded\r\n", "400"},
  };
  for (const Case& c : cases) {
    std::string raw = RawExchange(server_->port(), "POST /v1/echo HTTP/1.1\r\nHost: x\r\n" + c.headers + "\r\n" + smuggled);
    EXPECT_TRUE(raw.starts_with("HTTP/1.1 " + c.status)) << c.headers << " -> " << raw;
    EXPECT_NE(raw.find("connection: close"), std::string::npos) << raw;
    EXPECT_EQ(raw.find("smuggled"), std::string::npos) << c.headers << " ran the smuggled request: " << raw;
    EXPECT_EQ(raw.find("HTTP/1.1 200"), std::string::npos) << raw;
  }
  // Transfer-Encoding in HTTP/1.0, a bare LF and whitespace before the first field.
  for (std::string bad : {"POST /v1/echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                          "GET /v1/echo HTTP/1.1\nHost: x\r\n\r\n", "GET /v1/echo HTTP/1.1\r\n Host: x\r\n\r\n"}) {
    std::string raw = RawExchange(server_->port(), bad);
    EXPECT_TRUE(raw.starts_with("HTTP/1.1 400")) << bad << " -> " << raw;
  }
  auto ok = client_.Request({.url = Url("/v1/echo")});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->status, 200);
}

// A client that sends part of a request and then FIN gets a 400 rather
// than a silent close.
TEST_F(HttpServerTest, TruncatedRequestThenFinGets400) {
  StartServer();
  for (std::string partial : {"POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly-a-little",
                              "POST /v1/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
                              "POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Le"}) {
    int fd = testing::ConnectRaw(server_->port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(testing::SendAll(fd, partial));
    ::shutdown(fd, SHUT_WR);
    std::string raw = testing::ReadUntilClose(fd);
    ::close(fd);
    EXPECT_TRUE(raw.starts_with("HTTP/1.1 400")) << partial << " -> " << raw;
  }
}

// Request bodies alive at once are bounded: while a handler holds one
// 600 KB body, a second that would pass the 1 MiB budget gets 503 with
// Retry-After, by its Content-Length or, chunked, as it grows; once the
// first request is gone the budget is free again.
TEST_F(HttpServerTest, BodyBytesInFlightAreBudgeted) {
  HttpServerOptions o = TestServerOptions();
  o.max_inflight_body_bytes = 1u << 20;
  server_ = std::make_unique<HttpServer>(o);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> holding;
  server_->Route(HttpMethod::kPost, "/hold", [&](const HttpRequest& r) {
    holding.set_value();
    released.wait();
    return JsonResponse(200, std::to_string(r.body.size()));
  });
  server_->Route(HttpMethod::kPost, "/v1/echo", Echo);
  ASSERT_TRUE(server_->Start().ok());
  const std::string body(600 * 1024, 'b');
  auto held = std::async(std::launch::async, [&] {
    return client_.Request({.method = HttpMethod::kPost, .url = Url("/hold"), .body = body});
  });
  holding.get_future().wait();
  auto over = client_.Request({.method = HttpMethod::kPost, .url = Url("/v1/echo"), .body = body});
  ASSERT_TRUE(over.ok()) << over.status().ToString();
  EXPECT_EQ(over->status, 503) << over->body;
  EXPECT_EQ(over->headers.GetOr("retry-after", ""), "1");
  std::string chunked = "POST /v1/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 10; ++i) chunked += "10000\r\n" + std::string(0x10000, 'c') + "\r\n";
  chunked += "0\r\n\r\n";
  std::string raw = RawExchange(server_->port(), chunked);
  EXPECT_TRUE(raw.starts_with("HTTP/1.1 503")) << raw.substr(0, 200);
  auto small = client_.Request({.method = HttpMethod::kPost, .url = Url("/v1/echo"), .body = "small"});
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->status, 200);  // under the budget beside the held body
  release.set_value();
  auto h = held.get();
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->body, std::to_string(body.size()));
  // The held body's bytes are given back once the server is done with that
  // request, which may be a moment after its client has read the answer:
  // the big body fits again within a bounded wait (a 503 until then).
  auto after = client_.Request({.method = HttpMethod::kPost, .url = Url("/v1/echo"), .body = body});
  for (int i = 0; i < 100 && after.ok() && after->status == 503; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    after = client_.Request({.method = HttpMethod::kPost, .url = Url("/v1/echo"), .body = body});
  }
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(after->body.size(), body.size());
}

TEST_F(HttpServerTest, ChunkedRequestBodyIsAccepted) {
  StartServer();
  std::string raw = RawExchange(server_->port(),
                                "POST /v1/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                                "Connection: close\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
  EXPECT_TRUE(raw.starts_with("HTTP/1.1 200")) << raw;
  EXPECT_TRUE(raw.ends_with("\r\n\r\nhello world")) << raw;
}

TEST_F(HttpServerTest, HeaderTimeoutClosesSlowClient) {
  HttpServerOptions o = TestServerOptions();
  o.header_timeout = std::chrono::milliseconds(200);
  StartServer(o);
  int fd = testing::ConnectRaw(server_->port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(testing::SendAll(fd, "GET /v1/echo HTTP/1.1\r\nHost: x\r\n"));  // never finished
  char c;
  errno = 0;
  ssize_t n = ::recv(fd, &c, 1, 0);  // returns when the server closes (or after kTestWait)
  EXPECT_EQ(n, 0) << "expected EOF, errno " << errno;
  ::close(fd);
  auto ok = client_.Request({.url = Url("/v1/echo")});
  ASSERT_TRUE(ok.ok());
}

TEST_F(HttpServerTest, KeepAliveReusesOneConnection) {
  StartServer();
  for (int i = 0; i < 5; ++i) {
    auto r = client_.Request({.method = HttpMethod::kPost, .url = Url("/v1/echo"), .body = std::to_string(i)});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->body, std::to_string(i));
  }
  EXPECT_EQ(server_->accepted_connections(), 1u);
  EXPECT_EQ(client_.connections_opened(), 1u);
}

TEST_F(HttpServerTest, HealthAndMetricsEndpoints) {
  std::atomic<bool> ready{false};
  server_ = std::make_unique<HttpServer>(TestServerOptions());
  server_->RouteInline(HttpMethod::kGet, "/v1/ping", [](const HttpRequest&) { return JsonResponse(200, "{}"); });
  server_->SetHealthCheck([&] { return ready ? Status::Ok() : Unavailable("loading"); });
  ASSERT_TRUE(server_->Start().ok());

  auto loading = client_.Request({.url = Url("/health")});
  ASSERT_TRUE(loading.ok());
  EXPECT_EQ(loading->status, 503);
  EXPECT_NE(loading->body.find("loading"), std::string::npos);
  ready = true;
  auto healthy = client_.Request({.url = Url("/health")});
  ASSERT_TRUE(healthy.ok());
  EXPECT_EQ(healthy->status, 200);
  EXPECT_EQ(healthy->body, R"({"status":"ok"})");

  ASSERT_TRUE(client_.Request({.url = Url("/v1/ping")}).ok());
  ASSERT_TRUE(client_.Request({.url = Url("/missing")}).ok());
  auto metrics = client_.Request({.url = Url("/metrics")});
  ASSERT_TRUE(metrics.ok());
  EXPECT_EQ(metrics->status, 200);
  EXPECT_TRUE(metrics->headers.GetOr("content-type", "").starts_with("text/plain; version=0.0.4"));
  const std::string& text = metrics->body;
  EXPECT_NE(text.find(R"(omni_http_requests_total{path="/v1/ping",status="200"} 1)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(omni_http_requests_total{path="/health",status="503"} 1)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"x(omni_http_requests_total{path="(unmatched)",status="404"} 1)x"), std::string::npos);
  EXPECT_NE(text.find(R"(omni_http_request_duration_seconds_count{path="/v1/ping"} 1)"), std::string::npos);
  EXPECT_NE(text.find("omni_http_open_connections 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("omni_http_connections_accepted_total 1\n"), std::string::npos) << text;
}

TEST_F(HttpServerTest, HandlerExceptionBecomes500) {
  auto server = std::make_unique<HttpServer>(TestServerOptions());
  server->Route(HttpMethod::kGet, "/boom", [](const HttpRequest&) -> HttpResponse {
    throw std::runtime_error("boom");
  });
  ASSERT_TRUE(server->Start().ok());
  auto r = client_.Request({.url = BaseUrl(*server) + "/boom"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 500);
  EXPECT_NE(r->body.find(R"("type":"server_error")"), std::string::npos);
}

TEST_F(HttpServerTest, ShutdownDrainsInFlightThenRefuses) {
  HttpServerOptions o = TestServerOptions();
  server_ = std::make_unique<HttpServer>(o);
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> release_f = release.get_future().share();
  server_->Route(HttpMethod::kGet, "/slow", [&](const HttpRequest&) {
    entered.set_value();
    release_f.wait_for(kTestWait);
    return JsonResponse(200, R"({"done":true})");
  });
  server_->Route(HttpMethod::kGet, "/fast", [](const HttpRequest&) { return JsonResponse(200, "{}"); });
  ASSERT_TRUE(server_->Start().ok());
  uint16_t port = server_->port();

  // An idle keep-alive connection from another client must not hold up shutdown.
  HttpClient idle_client;
  ASSERT_TRUE(idle_client.Request({.url = Url("/fast")}).ok());

  auto in_flight = std::async(std::launch::async, [&] { return client_.Request({.url = Url("/slow")}); });
  ASSERT_EQ(entered.get_future().wait_for(kTestWait), std::future_status::ready);
  auto shutdown = std::async(std::launch::async, [&] { server_->Shutdown(); });
  // Shutdown closes the listener first; wait for that to become visible.
  auto until = std::chrono::steady_clock::now() + kTestWait;
  while (!testing::ConnectionRefused(port) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(testing::ConnectionRefused(port));
  EXPECT_NE(shutdown.wait_for(std::chrono::milliseconds(0)), std::future_status::ready);  // still draining

  release.set_value();
  auto r = in_flight.get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, R"({"done":true})");
  EXPECT_EQ(r->headers.Get("connection"), "close");
  ASSERT_EQ(shutdown.wait_for(kTestWait), std::future_status::ready);
  EXPECT_EQ(server_->open_connections(), 0u);
  EXPECT_TRUE(testing::ConnectionRefused(port));
  auto after = client_.Request({.url = Url("/fast")});
  EXPECT_EQ(after.status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace omni
