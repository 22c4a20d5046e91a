// HttpClient against a real server: errors, timeouts, pooling.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "net/http_client.h"
#include "net/http_server.h"
#include "test_util.h"

namespace omni {
namespace {

using testing::BaseUrl;
using testing::kTestWait;
using testing::TestServerOptions;

TEST(HttpClientTest, ConnectionRefusedIsUnavailable) {
  uint16_t port;
  {
    HttpServer server(TestServerOptions());
    ASSERT_TRUE(server.Start().ok());
    port = server.port();
  }  // nothing listens on the port now
  HttpClient client;
  auto r = client.Request({.url = "http://127.0.0.1:" + std::to_string(port) + "/"});
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
}

TEST(HttpClientTest, BadUrlIsInvalidArgument) {
  HttpClient client;
  EXPECT_EQ(client.Request({.url = "not a url"}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(client.Request({.url = "ftp://127.0.0.1/"}).status().code(), StatusCode::kInvalidArgument);
}

TEST(HttpClientTest, TotalTimeoutAgainstSlowHandlerIsDeadlineExceeded) {
  HttpServer server(TestServerOptions());
  std::promise<void> release;
  std::shared_future<void> release_f = release.get_future().share();
  server.Route(HttpMethod::kGet, "/slow", [&](const HttpRequest&) {
    release_f.wait_for(kTestWait);
    return JsonResponse(200, "{}");
  });
  ASSERT_TRUE(server.Start().ok());
  HttpClient client;
  auto r = client.Request({.url = BaseUrl(server) + "/slow", .timeout = std::chrono::milliseconds(200)});
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().ToString();
  release.set_value();
  // The timed-out connection was dropped; the next request opens a new one.
  auto ok = client.Request({.url = BaseUrl(server) + "/slow"});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(client.connections_opened(), 2u);
}

TEST(HttpClientTest, StalePooledConnectionIsReplaced) {
  HttpServerOptions o = TestServerOptions();
  o.idle_timeout = std::chrono::milliseconds(50);
  HttpServer server(o);
  server.Route(HttpMethod::kPost, "/x", [](const HttpRequest& r) { return JsonResponse(200, r.body); });
  ASSERT_TRUE(server.Start().ok());
  HttpClient client;
  ASSERT_TRUE(client.Request({.method = HttpMethod::kPost, .url = BaseUrl(server) + "/x", .body = "1"}).ok());
  // Wait until the server has closed the pooled connection for idleness.
  auto until = std::chrono::steady_clock::now() + kTestWait;
  while (server.open_connections() > 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(server.open_connections(), 0u);
  auto r = client.Request({.method = HttpMethod::kPost, .url = BaseUrl(server) + "/x", .body = "2"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "2");
  EXPECT_EQ(client.connections_opened(), 2u);
}

TEST(HttpClientTest, ConcurrentRequestsFromManyThreads) {
  HttpServer server(TestServerOptions());
  server.Route(HttpMethod::kPost, "/x", [](const HttpRequest& r) { return JsonResponse(200, r.body); });
  ASSERT_TRUE(server.Start().ok());
  HttpClient client;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        std::string body = std::to_string(t * 100 + i);
        auto r = client.Request({.method = HttpMethod::kPost, .url = BaseUrl(server) + "/x", .body = body});
        if (r.ok() && r->body == body) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 100);
  EXPECT_LE(client.connections_opened(), 4u);
}

// The client writes the request head itself: the caller's headers arrive,
// framing is the client's, and a value carrying CR LF cannot add a header.
TEST(HttpClientTest, RequestHeadCarriesHeadersAndFramingButNoInjection) {
  HttpServer server(TestServerOptions());
  std::promise<HttpRequest> seen;
  server.Route(HttpMethod::kPost, "/echo", [&](const HttpRequest& r) {
    seen.set_value(r);
    return JsonResponse(200, "{}");
  });
  ASSERT_TRUE(server.Start().ok());
  HttpClient client;
  HttpClientRequest req{.method = HttpMethod::kPost, .url = BaseUrl(server) + "/echo?a=1", .body = "hello"};
  req.headers.Set("x-kept", "yes");
  req.headers.Set("x-evil", "v\r\nx-injected: 1");
  req.headers.Set("content-length", "999");  // framing is the client's, not the caller's
  auto r = client.Request(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  HttpRequest got = seen.get_future().get();
  EXPECT_EQ(got.target, "/echo?a=1");
  EXPECT_EQ(got.body, "hello");
  EXPECT_EQ(got.headers.GetOr("x-kept", ""), "yes");
  EXPECT_FALSE(got.headers.Has("x-evil"));
  EXPECT_FALSE(got.headers.Has("x-injected"));
  EXPECT_EQ(got.headers.GetOr("content-length", ""), "5");
  EXPECT_EQ(got.headers.GetOr("user-agent", ""), "omniserve");
  EXPECT_TRUE(got.headers.Has("host"));
}

// The client reads responses with the server's framing rules: an unknown
// transfer coding, Transfer-Encoding with Content-Length, or obs-fold is an
// error, never a body guessed at (a response-splitting upstream could
// otherwise hand the next caller of a pooled connection forged bytes).
TEST(HttpClientTest, ResponseWithBadFramingIsAnError) {
  const std::string bads[] = {
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\nhello",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\n folded\r\n\r\nhello",
      "HTTP/1.1 200 OK\nContent-Length: 5\r\n\r\nhello",
  };
  HttpClient client;
  for (const std::string& bad : bads) {
    testing::CannedServer upstream(bad);
    auto r = client.Request({.url = "http://127.0.0.1:" + std::to_string(upstream.port()) + "/x"});
    ASSERT_FALSE(r.ok()) << bad << " was accepted with body " << r->body;
    EXPECT_EQ(r.status().code(), StatusCode::kInternal) << bad << ": " << r.status().ToString();
    EXPECT_EQ(r.status().message().find("hello"), std::string::npos) << r.status().ToString();
  }
  // A 100 Continue before the real answer is skipped, never taken for it.
  testing::CannedServer interim("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  auto after_interim = client.Request({.url = "http://127.0.0.1:" + std::to_string(interim.port()) + "/x"});
  ASSERT_TRUE(after_interim.ok()) << after_interim.status().ToString();
  EXPECT_EQ(after_interim->status, 200);
  EXPECT_EQ(after_interim->body, "ok");
  testing::CannedServer good("HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
  auto r = client.Request({.url = "http://127.0.0.1:" + std::to_string(good.port()) + "/x"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "hello");
}

TEST(HttpClientTest, HeadRequestHasNoBody) {
  HttpServer server(TestServerOptions());
  server.Route(HttpMethod::kGet, "/x", [](const HttpRequest&) { return JsonResponse(200, "0123456789"); });
  ASSERT_TRUE(server.Start().ok());
  HttpClient client;
  auto r = client.Request({.method = HttpMethod::kHead, .url = BaseUrl(server) + "/x"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->headers.Get("content-length"), "10");
  EXPECT_TRUE(r->body.empty());
  ASSERT_TRUE(client.Request({.url = BaseUrl(server) + "/x"}).ok());  // connection still in sync
  EXPECT_EQ(client.connections_opened(), 1u);
}

}  // namespace
}  // namespace omni

namespace omni {
namespace {

using testing::BaseUrl;
using testing::kTestWait;
using testing::TestServerOptions;

// The result of one StreamAsync call, awaited by the test thread.
struct AsyncResult {
  std::promise<StatusOr<int>> done;
  std::string body;
};

TEST(HttpClientAsyncTest, StreamsAndCompletes) {
  HttpServer server(TestServerOptions());
  server.Route(HttpMethod::kPost, "/echo", [](const HttpRequest& r) { return JsonResponse(200, r.body); });
  ASSERT_TRUE(server.Start().ok());
  HttpClient client;
  auto result = std::make_shared<AsyncResult>();
  client.StreamAsync({.method = HttpMethod::kPost, .url = BaseUrl(server) + "/echo", .body = "{\"a\":1}"},
                     {.on_body = [result](std::string_view c) {
                       result->body.append(c);
                       return true;
                     }},
                     [result](StatusOr<int> s) { result->done.set_value(std::move(s)); });
  auto f = result->done.get_future();
  ASSERT_EQ(f.wait_for(kTestWait), std::future_status::ready);
  StatusOr<int> status = f.get();
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_EQ(*status, 200);
  EXPECT_EQ(result->body, "{\"a\":1}");
}

TEST(HttpClientAsyncTest, CancelClosesTheUpstreamConnection) {
  HttpServer server(TestServerOptions());
  std::promise<void> gone;
  std::shared_ptr<ResponseWriter> held;  // the stream never finishes
  server.RouteStreaming(HttpMethod::kGet, "/forever", [&](HttpRequest, std::shared_ptr<ResponseWriter> w) {
    w->StartStream(200, {});
    w->Write("first");
    w->OnClientGone([&gone] { gone.set_value(); });
    held = std::move(w);
  });
  ASSERT_TRUE(server.Start().ok());
  HttpClient client;
  auto result = std::make_shared<AsyncResult>();
  std::promise<void> first;
  auto handle = client.StreamAsync({.url = BaseUrl(server) + "/forever"},
                                   {.on_body = [&first](std::string_view) {
                                     first.set_value();
                                     return true;
                                   }},
                                   [result](StatusOr<int> s) { result->done.set_value(std::move(s)); });
  ASSERT_EQ(first.get_future().wait_for(kTestWait), std::future_status::ready);
  handle->Cancel();
  auto f = result->done.get_future();
  ASSERT_EQ(f.wait_for(kTestWait), std::future_status::ready);
  EXPECT_EQ(f.get().status().code(), StatusCode::kCancelled);
  EXPECT_EQ(gone.get_future().wait_for(kTestWait), std::future_status::ready);
}

// A proxy route whose upstream client runs on the proxy server's own io
// threads: many concurrent requests, each relayed, on pooled connections.
TEST(HttpClientAsyncTest, ClientOnServerIoThreadsRelaysConcurrentRequests) {
  HttpServer upstream(TestServerOptions());
  upstream.RouteInline(HttpMethod::kPost, "/echo", [](const HttpRequest& r) { return JsonResponse(200, r.body); });
  ASSERT_TRUE(upstream.Start().ok());
  HttpServerOptions proxy_options = TestServerOptions();
  proxy_options.io_threads = 3;
  HttpServer proxy(proxy_options);
  HttpClient relay(proxy);
  const std::string target = BaseUrl(upstream) + "/echo";
  proxy.RouteStreaming(HttpMethod::kPost, "/relay", [&](HttpRequest r, std::shared_ptr<ResponseWriter> w) {
    auto body = std::make_shared<std::string>();
    relay.StreamAsync({.method = HttpMethod::kPost, .url = target, .body = r.body},
                      {.on_body = [body](std::string_view c) {
                        body->append(c);
                        return true;
                      }},
                      [w, body](StatusOr<int> s) {
                        w->Send(s.ok() ? JsonResponse(*s, *body) : ErrorResponse(s.status()));
                      });
  });
  ASSERT_TRUE(proxy.Start().ok());
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      HttpClient client;
      for (int i = 0; i < 50; ++i) {
        std::string body = "{\"t\":" + std::to_string(t) + ",\"i\":" + std::to_string(i) + "}";
        auto r = client.Request({.method = HttpMethod::kPost, .url = BaseUrl(proxy) + "/relay", .body = body});
        if (r.ok() && r->status == 200 && r->body == body) ++ok;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 400);
  // Connections were pooled: at most one per concurrent request.
  EXPECT_LE(relay.connections_opened(), 8u);
}

}  // namespace
}  // namespace omni
