// Streaming and asynchronous replies: SSE read incrementally, client
// disconnects noticed by the server, replies from other threads.
#include <gtest/gtest.h>

#include <unistd.h>

#include <future>
#include <thread>

#include "net/http_client.h"
#include "net/http_server.h"
#include "net/sse.h"
#include "test_util.h"

namespace omni {
namespace {

using testing::BaseUrl;
using testing::kTestWait;
using testing::TestServerOptions;

HttpHeaders SseHeaders() {
  HttpHeaders h;
  h.Set("content-type", "text/event-stream");
  h.Set("cache-control", "no-cache");
  return h;
}

TEST(HttpStreamingTest, ClientSeesFirstEventBeforeServerSendsLast) {
  HttpServer server(TestServerOptions());
  std::promise<void> client_saw_first;
  std::shared_future<void> saw_first_f = client_saw_first.get_future().share();
  std::atomic<bool> first_seen_before_last{false};
  std::vector<std::thread> producers;
  server.RouteStreaming(HttpMethod::kPost, "/v1/stream", [&](HttpRequest req, std::shared_ptr<ResponseWriter> w) {
    producers.emplace_back([&, w] {
      w->StartStream(200, SseHeaders());
      w->WriteSseEvent("first", "delta");
      // The last event goes out only once the client has parsed the first,
      // which is only possible if the body reached it incrementally.
      first_seen_before_last = saw_first_f.wait_for(kTestWait) == std::future_status::ready;
      w->WriteSseEvent("multi\nline");
      w->WriteSseEvent("[DONE]");
      w->Finish();
    });
  });
  ASSERT_TRUE(server.Start().ok());

  HttpClient client;
  SseParser parser;
  std::vector<SseEvent> events;
  int status = 0;
  std::string content_type;
  HttpStreamCallbacks cb;
  cb.on_headers = [&](int s, const HttpHeaders& h) {
    status = s;
    content_type = std::string(h.GetOr("content-type", ""));
    return true;
  };
  cb.on_body = [&](std::string_view chunk) {
    parser.Feed(chunk, [&](SseEvent&& e) {
      if (events.empty()) client_saw_first.set_value();
      events.push_back(std::move(e));
    });
    return true;
  };
  auto r = client.Stream({.method = HttpMethod::kPost, .url = BaseUrl(server) + "/v1/stream", .body = "{}"}, cb);
  for (auto& t : producers) t.join();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, 200);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(content_type, "text/event-stream");
  EXPECT_TRUE(first_seen_before_last.load());
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].event, "delta");
  EXPECT_EQ(events[0].data, "first");
  EXPECT_EQ(events[1].data, "multi\nline");
  EXPECT_EQ(events[2].data, "[DONE]");
  // The chunked stream ended cleanly, so the connection was kept.
  auto again = client.Stream({.method = HttpMethod::kPost, .url = BaseUrl(server) + "/v1/stream"}, {});
  for (auto& t : producers) {
    if (t.joinable()) t.join();
  }
  EXPECT_TRUE(again.ok());
  EXPECT_EQ(client.connections_opened(), 1u);
}

TEST(HttpStreamingTest, ServerNoticesClientGoneMidStream) {
  HttpServer server(TestServerOptions());
  std::promise<void> gone_callback;
  std::shared_ptr<ResponseWriter> kept;
  server.RouteStreaming(HttpMethod::kGet, "/stream", [&](HttpRequest, std::shared_ptr<ResponseWriter> w) {
    w->OnClientGone([&] { gone_callback.set_value(); });
    w->StartStream(200, SseHeaders());
    w->WriteSseEvent("one");
    kept = w;  // the stream stays open; only the client can end it
  });
  ASSERT_TRUE(server.Start().ok());

  HttpClient client;
  HttpStreamCallbacks cb;
  cb.on_body = [](std::string_view) { return false; };  // hang up after the first bytes
  auto r = client.Stream({.url = BaseUrl(server) + "/stream"}, cb);
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);

  ASSERT_EQ(gone_callback.get_future().wait_for(kTestWait), std::future_status::ready);
  EXPECT_TRUE(kept->client_gone());
  EXPECT_FALSE(kept->WriteSseEvent("two"));
  kept.reset();
}

// The hang-up watch runs while the handler has not answered at all: a client
// that closes then is noticed without any write.
TEST(HttpStreamingTest, ServerNoticesClientGoneBeforeAnyReply) {
  HttpServer server(TestServerOptions());
  std::promise<void> gone_callback;
  std::shared_ptr<ResponseWriter> kept;
  std::promise<void> handler_ran;
  server.RouteStreaming(HttpMethod::kPost, "/slow", [&](HttpRequest, std::shared_ptr<ResponseWriter> w) {
    w->OnClientGone([&] { gone_callback.set_value(); });
    kept = w;  // no reply yet
    handler_ran.set_value();
  });
  ASSERT_TRUE(server.Start().ok());
  int fd = testing::ConnectRaw(server.port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(testing::SendAll(fd, "POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"));
  ASSERT_EQ(handler_ran.get_future().wait_for(kTestWait), std::future_status::ready);
  close(fd);
  ASSERT_EQ(gone_callback.get_future().wait_for(kTestWait), std::future_status::ready);
  EXPECT_TRUE(kept->client_gone());
  EXPECT_FALSE(kept->Send(HttpResponse{.status = 200, .body = "late"}));
  kept.reset();
}

// A request pipelined behind a slow reply is neither lost nor taken for a
// hang-up: both are answered, in order.
TEST(HttpStreamingTest, PipelinedRequestBehindSlowReplyIsServed) {
  HttpServer server(TestServerOptions());
  std::vector<std::thread> repliers;
  std::atomic<int> calls{0};
  server.RouteStreaming(HttpMethod::kGet, "/n", [&](HttpRequest, std::shared_ptr<ResponseWriter> w) {
    const int n = ++calls;
    repliers.emplace_back([w, n] {
      if (n == 1) std::this_thread::sleep_for(std::chrono::milliseconds(200));
      w->Send(HttpResponse{.status = 200, .body = "reply-" + std::to_string(n)});
    });
  });
  ASSERT_TRUE(server.Start().ok());
  int fd = testing::ConnectRaw(server.port());
  ASSERT_GE(fd, 0);
  // The second request arrives while the first is in the handler, so it sits
  // in the kernel rather than in the server's read buffer.
  ASSERT_TRUE(testing::SendAll(fd, "GET /n HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(testing::SendAll(fd, "GET /n HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  std::string all = testing::ReadUntilClose(fd);
  close(fd);
  for (auto& t : repliers) t.join();
  size_t first = all.find("reply-1");
  size_t second = all.find("reply-2");
  ASSERT_NE(first, std::string::npos) << all;
  ASSERT_NE(second, std::string::npos) << all;
  EXPECT_LT(first, second);
}

// A client that sends its request and then never reads: once the socket
// buffers fill, the stall timeout must mark it gone so the producer's Write()
// returns false instead of blocking forever.
TEST(HttpStreamingTest, ClientThatStopsReadingIsGoneAfterStallTimeout) {
  HttpServerOptions options = TestServerOptions();
  options.stream_write_timeout = std::chrono::milliseconds(200);
  options.stream_buffer_bytes = 64 << 10;
  HttpServer server(options);
  std::promise<uint64_t> producer_done;
  std::thread producer;
  server.RouteStreaming(HttpMethod::kGet, "/firehose", [&](HttpRequest, std::shared_ptr<ResponseWriter> w) {
    producer = std::thread([w, &producer_done] {
      w->StartStream(200, HttpHeaders());
      const std::string chunk(256 << 10, 'z');
      uint64_t sent = 0;
      // Bounded: 4 GiB would take far longer than any socket buffer holds.
      while (sent < (4ull << 30) && w->Write(chunk)) sent += chunk.size();
      producer_done.set_value(sent);
    });
  });
  ASSERT_TRUE(server.Start().ok());
  int fd = testing::ConnectRaw(server.port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(testing::SendAll(fd, "GET /firehose HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto done = producer_done.get_future();
  ASSERT_EQ(done.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_LT(done.get(), 4ull << 30);  // stopped by the timeout, not by the bound
  producer.join();
  close(fd);
}

TEST(HttpStreamingTest, UnaryReplyFromAnotherThread) {
  HttpServer server(TestServerOptions());
  std::vector<std::thread> threads;
  server.RouteStreaming(HttpMethod::kPost, "/async", [&](HttpRequest req, std::shared_ptr<ResponseWriter> w) {
    threads.emplace_back([w, body = std::move(req.body)] { w->Send(JsonResponse(201, body)); });
  });
  ASSERT_TRUE(server.Start().ok());
  HttpClient client;
  auto r = client.Request({.method = HttpMethod::kPost, .url = BaseUrl(server) + "/async", .body = "hi"});
  for (auto& t : threads) t.join();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->body, "hi");
}

TEST(HttpStreamingTest, DroppedWriterGives500) {
  HttpServer server(TestServerOptions());
  server.RouteStreaming(HttpMethod::kGet, "/drop", [](HttpRequest, std::shared_ptr<ResponseWriter>) {});
  ASSERT_TRUE(server.Start().ok());
  HttpClient client;
  auto r = client.Request({.url = BaseUrl(server) + "/drop"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 500);
  EXPECT_NE(r->body.find("without a response"), std::string::npos);
}

TEST(HttpStreamingTest, LargeStreamWithBackpressureArrivesIntact) {
  HttpServerOptions o = TestServerOptions();
  o.stream_buffer_bytes = 64 * 1024;  // the producer must wait for the socket many times
  HttpServer server(o);
  std::vector<std::thread> producers;
  server.RouteStreaming(HttpMethod::kGet, "/big", [&](HttpRequest, std::shared_ptr<ResponseWriter> w) {
    producers.emplace_back([w] {
      w->StartStream(200, {});
      std::string block(16 * 1024, 'a');
      for (int i = 0; i < 256; ++i) {
        block[0] = static_cast<char>('a' + i % 26);
        if (!w->Write(block)) return;
      }
      w->Finish();
    });
  });
  ASSERT_TRUE(server.Start().ok());
  HttpClient client;
  auto r = client.Request({.url = BaseUrl(server) + "/big"});
  for (auto& t : producers) t.join();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->body.size(), 256u * 16 * 1024);
  for (int i = 0; i < 256; ++i) ASSERT_EQ(r->body[i * 16 * 1024], 'a' + i % 26);
}

}  // namespace
}  // namespace omni
