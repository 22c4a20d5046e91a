// The real `omniserve gateway` in front of a fake upstream that breaks its
// responses on purpose: an SSE stream reset or closed after a few events
// (and in the middle of one), a chunked JSON body cut short, and a stream
// still running when SIGTERM's drain deadline passes. The client must see
// the gateway's error event and `data: [DONE]` at an event boundary, or an
// incomplete message, never a silently short one (docs/GATEWAY.md).
//
// The fake upstream is raw sockets on 127.0.0.1 (port chosen by the OS), so
// it can reset, half-close and send half a chunk, which no well-behaved
// server does.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "child_process.h"
#include "net/http_client.h"

namespace omni {
namespace {

using testing::Child;
using Json = nlohmann::json;

constexpr char kEvent1[] = "data: {\"n\":1}\n\n";
constexpr char kEvent2[] = "data: {\"n\":2}\n\n";
constexpr char kDone[] = "data: [DONE]\n\n";
constexpr char kPartial[] = "data: {\"n\":3,\"par";

bool SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string Chunk(std::string_view data) {
  char size[32];
  snprintf(size, sizeof size, "%zx\r\n", data.size());
  return std::string(size) + std::string(data) + "\r\n";
}

// One request per connection (every answer says Connection: close). What a
// chat request gets depends on the script name in its body's "content".
class FakeUpstream {
 public:
  FakeUpstream() {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    OMNI_CHECK(listen_fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    OMNI_CHECK(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    OMNI_CHECK(listen(listen_fd_, 64) == 0);
    socklen_t len = sizeof addr;
    OMNI_CHECK(getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }
  ~FakeUpstream() {
    stop_ = true;
    acceptor_.join();
    close(listen_fd_);
    std::lock_guard lock(mu_);
    for (auto& t : connections_) t.join();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  void AcceptLoop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      int fd = accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      std::lock_guard lock(mu_);
      connections_.emplace_back([this, fd] { Serve(fd); });
    }
  }

  // The head and the Content-Length body of one request ("" on failure).
  static std::string ReadRequest(int fd) {
    std::string in;
    char buf[4096];
    size_t head_end;
    while ((head_end = in.find("\r\n\r\n")) == std::string::npos) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 5000) <= 0) return "";
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return "";
      in.append(buf, static_cast<size_t>(n));
    }
    std::smatch m;
    std::string head = in.substr(0, head_end);
    size_t length = 0;
    if (std::regex_search(head, m, std::regex("content-length: *(\\d+)", std::regex::icase))) {
      length = std::stoul(m[1]);
    }
    while (in.size() < head_end + 4 + length) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 5000) <= 0) return "";
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return "";
      in.append(buf, static_cast<size_t>(n));
    }
    return in;
  }

  static void Pause() { usleep(30'000); }  // so each write is its own read at the gateway

  // Closes with an RST instead of a FIN.
  static void Reset(int fd) {
    linger l{.l_onoff = 1, .l_linger = 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close(fd);
  }

  void Serve(int fd) {
    const std::string request = ReadRequest(fd);
    const std::string sse_head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
        "Connection: close\r\n\r\n";
    if (request.starts_with("GET /health ")) {
      SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 15\r\nConnection: close\r\n\r\n{\"status\":\"ok\"}");
    } else if (request.starts_with("GET /metrics ")) {
      SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    } else if (request.find("\"whole\"") != std::string::npos) {
      SendAll(fd, sse_head + Chunk(kEvent1));
      Pause();
      SendAll(fd, Chunk(kEvent2) + Chunk(kDone) + "0\r\n\r\n");
    } else if (request.find("\"reset-mid-event\"") != std::string::npos) {
      SendAll(fd, sse_head + Chunk(kEvent1));
      Pause();
      SendAll(fd, Chunk(kEvent2));
      Pause();
      SendAll(fd, Chunk(kPartial));
      usleep(150'000);  // the gateway has read everything before the reset
      Reset(fd);
      return;
    } else if (request.find("\"close-mid-chunk\"") != std::string::npos) {
      SendAll(fd, sse_head + Chunk(kEvent1) + Chunk(kEvent2));
      Pause();
      // A chunk announced at 0x40 bytes, then a FIN after a few of them.
      SendAll(fd, std::string("40\r\n") + kPartial);
      usleep(100'000);
    } else if (request.find("\"json-cut\"") != std::string::npos) {
      SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                  "Connection: close\r\n\r\n" + Chunk("{\"id\":\"x\",\"choi"));
      usleep(100'000);
      Reset(fd);
      return;
    } else if (request.find("\"hold\"") != std::string::npos) {
      SendAll(fd, sse_head + Chunk(kEvent1));
      // Until the gateway closes this connection (bounded).
      char buf[256];
      for (int i = 0; i < 400 && !stop_; ++i) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 50) > 0 && recv(fd, buf, sizeof buf, 0) <= 0) break;
      }
    }
    close(fd);
  }

  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> connections_;  // guarded by mu_
};

struct Gateway {
  std::unique_ptr<Child> process;
  std::string base;
};

Gateway StartGateway(const FakeUpstream& upstream, const std::string& name, std::vector<std::string> extra = {}) {
  const std::string dir = ::testing::TempDir() + "omni-gw-midstream-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string config = dir + "/" + name + ".yaml";
  std::ofstream(config) << "pools: [{name: fake, role: llm, models: [fake], endpoints: [\"" << upstream.address()
                        << "\"]}]\n";
  std::vector<std::string> args = {"gateway", "--config", config, "--port", "0", "--health-interval-ms", "100"};
  args.insert(args.end(), extra.begin(), extra.end());
  Gateway g{std::make_unique<Child>(args), ""};
  std::string port = g.process->WaitForOutput(std::regex(R"(gateway: listening on http://127\.0\.0\.1:(\d+))"));
  OMNI_CHECK(!port.empty()) << g.process->output();
  g.base = "http://127.0.0.1:" + port;
  return g;
}

struct Streamed {
  StatusOr<int> status = Internal("not run");
  std::string content_type;
  std::string body;
};

Streamed StreamChat(HttpClient& client, const std::string& base, const std::string& script,
                    std::atomic<bool>* got_bytes = nullptr) {
  Json body = {{"model", "fake"}, {"stream", true}, {"messages", {{{"role", "user"}, {"content", script}}}}};
  Streamed out;
  out.status = client.Stream({.method = HttpMethod::kPost, .url = base + "/v1/chat/completions", .headers = {},
                              .body = body.dump()},
                             {.on_headers = [&](int, const HttpHeaders& h) {
                                out.content_type = std::string(h.GetOr("content-type", ""));
                                return true;
                              },
                              .on_body = [&](std::string_view c) {
                                out.body.append(c);
                                if (got_bytes != nullptr) *got_bytes = true;
                                return true;
                              }});
  return out;
}

// `body` is `prefix`, then exactly one error event, then [DONE]; returns
// the error event's JSON (null if the shape is wrong).
Json ErrorEventAfter(const std::string& body, const std::string& prefix) {
  if (!body.starts_with(prefix)) return Json();
  std::string rest = body.substr(prefix.size());
  std::smatch m;
  if (!std::regex_match(rest, m, std::regex("data: ([^\n]*)\n\ndata: \\[DONE\\]\n\n"))) return Json();
  return Json::parse(m[1].str(), nullptr, false);
}

TEST(GatewayMidStream, ResetUpstreamEndsTheStreamWithAnErrorEventAndTheGatewayServesOn) {
  FakeUpstream upstream;
  Gateway gw = StartGateway(upstream, "reset");
  HttpClient client;

  Streamed cut = StreamChat(client, gw.base, "reset-mid-event");
  // The chunked response ended properly: the client sees a complete message
  // whose last events say what happened.
  ASSERT_TRUE(cut.status.ok()) << cut.status.status().ToString() << "\n" << cut.body;
  EXPECT_EQ(*cut.status, 200);
  EXPECT_TRUE(cut.content_type.starts_with("text/event-stream")) << cut.content_type;
  // The partial third event is not forwarded, so it cannot be glued to the error.
  Json err = ErrorEventAfter(cut.body, std::string(kEvent1) + kEvent2);
  ASSERT_TRUE(err.is_object()) << cut.body;
  EXPECT_EQ(err["error"]["type"], "server_error");
  EXPECT_EQ(err["error"]["code"], "upstream_failed");
  EXPECT_TRUE(err["error"]["param"].is_null());
  const std::string message = err["error"]["message"];
  EXPECT_TRUE(message.starts_with("upstream " + upstream.address() + " failed mid-stream: ")) << message;
  EXPECT_EQ(err.size(), 1u);
  EXPECT_EQ(err["error"].size(), 4u);

  // The next request through the same gateway is served whole.
  Streamed next = StreamChat(client, gw.base, "whole");
  ASSERT_TRUE(next.status.ok()) << next.status.status().ToString();
  EXPECT_EQ(*next.status, 200);
  EXPECT_EQ(next.body, std::string(kEvent1) + kEvent2 + kDone);
}

TEST(GatewayMidStream, CloseInsideAChunkEndsTheStreamTheSameWay) {
  FakeUpstream upstream;
  Gateway gw = StartGateway(upstream, "close");
  HttpClient client;
  Streamed cut = StreamChat(client, gw.base, "close-mid-chunk");
  ASSERT_TRUE(cut.status.ok()) << cut.status.status().ToString() << "\n" << cut.body;
  Json err = ErrorEventAfter(cut.body, std::string(kEvent1) + kEvent2);
  ASSERT_TRUE(err.is_object()) << cut.body;
  EXPECT_EQ(err["error"]["code"], "upstream_failed");

  // A chunked JSON body cut short is never relayed as complete: the client's
  // read fails.
  Json body = {{"model", "fake"}, {"messages", {{{"role", "user"}, {"content", "json-cut"}}}}};
  auto plain = client.Request({.method = HttpMethod::kPost, .url = gw.base + "/v1/chat/completions",
                               .headers = {}, .body = body.dump()});
  EXPECT_FALSE(plain.ok()) << (plain.ok() ? plain->body : "");

  auto metrics = client.Request({.url = gw.base + "/metrics"});
  ASSERT_TRUE(metrics.ok());
  std::string escaped = std::regex_replace(upstream.address(), std::regex("\\."), "\\.");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(metrics->body, m,
                                std::regex("gateway_midstream_failures_total\\{pool=\"fake\",endpoint=\"" + escaped +
                                           "\",cause=\"upstream\"\\} (\\d+)")))
      << metrics->body;
  EXPECT_EQ(m[1], "2");

  Streamed next = StreamChat(client, gw.base, "whole");
  ASSERT_TRUE(next.status.ok()) << next.status.status().ToString();
  EXPECT_EQ(next.body, std::string(kEvent1) + kEvent2 + kDone);
}

// SIGTERM with a stream still running past --drain-timeout-ms: the stream
// ends with a server_shutdown error event and [DONE], and the gateway exits 0.
TEST(GatewayMidStream, DrainDeadlineEndsARunningStreamWithServerShutdown) {
  FakeUpstream upstream;
  Gateway gw = StartGateway(upstream, "drain", {"--drain-timeout-ms", "300"});
  HttpClient client;
  std::atomic<bool> got_bytes{false};
  Streamed held;
  std::thread reader([&] { held = StreamChat(client, gw.base, "hold", &got_bytes); });
  for (int i = 0; i < 200 && !got_bytes; ++i) usleep(25'000);
  ASSERT_TRUE(got_bytes.load());
  ASSERT_EQ(kill(gw.process->pid(), SIGTERM), 0);
  reader.join();
  ASSERT_TRUE(held.status.ok()) << held.status.status().ToString() << "\n" << held.body;
  Json err = ErrorEventAfter(held.body, kEvent1);
  ASSERT_TRUE(err.is_object()) << held.body;
  EXPECT_EQ(err["error"]["code"], "server_shutdown");
  EXPECT_EQ(err["error"]["type"], "server_error");
  int status = gw.process->Wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << gw.process->output();
}

}  // namespace
}  // namespace omni
