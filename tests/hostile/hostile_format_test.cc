// The corpus format and the response splitter, without servers: a bug here
// would make every replay check something other than what its file says.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "case_file.h"
#include "raw_exchange.h"

namespace omni::hostile {
namespace {

namespace fs = std::filesystem;

TEST(HostileCaseFormat, EscapesAndFileLineBreaks) {
  auto bytes = ExpandPayload("GET / HTTP/1.1\\r\\n\nHost: x\\r\\n\\r\\n\\x00\\t\\\\\\{{\\0", {});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(*bytes, std::string("GET / HTTP/1.1\r\nHost: x\r\n\r\n\0\t\\{{\0", 33));
  EXPECT_FALSE(ExpandPayload("\\q", {}).ok());
  EXPECT_FALSE(ExpandPayload("\\x4", {}).ok());
  EXPECT_FALSE(ExpandPayload("{{NOPE}}", {}).ok());
  EXPECT_FALSE(ExpandPayload("{{HOST", {}).ok());
}

TEST(HostileCaseFormat, PlaceholdersAndLength) {
  PayloadVars vars{.host = "127.0.0.1", .port = 8123, .store = "/tmp/s"};
  auto bytes = ExpandPayload(
      "POST / HTTP/1.1\\r\\nContent-Length: {{LENGTH}}\\r\\n\\r\\n{{HOST}}:{{PORT}} {{STORE}} {{REPEAT:3:a\\x62}}", vars);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  const std::string body = "127.0.0.1:8123 /tmp/s ababab";
  EXPECT_EQ(*bytes, "POST / HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_FALSE(ExpandPayload("Content-Length: {{LENGTH}}", vars).ok());  // no empty line
  EXPECT_FALSE(ExpandPayload("{{REPEAT:x:a}}", vars).ok());
}

TEST(HostileCaseFormat, Directives) {
  auto c = ParseCaseFile(
      "# why: a test\n# a prose line: with a colon\n# servers: llm gateway\n# expect-status: 400 4xx\n"
      "# expect-close: true\n# expect-responses: 1\n# half-close: true\n# expect-body-contains: a b\n"
      "# expect-body-not-contains: root:\n# expect-body-max-bytes: 4096\nGET / HTTP/1.1\\r\\n\\r\\n",
      "001_x");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->servers.size(), 2u);
  ASSERT_EQ(c->status.size(), 2u);
  EXPECT_TRUE(c->status[0].Matches(400));
  EXPECT_FALSE(c->status[0].Matches(404));
  EXPECT_TRUE(c->status[1].Matches(431));
  EXPECT_FALSE(c->status[1].Matches(501));
  EXPECT_TRUE(c->close);
  EXPECT_TRUE(c->half_close);
  EXPECT_EQ(c->body_contains, std::vector<std::string>{"a b"});
  EXPECT_EQ(c->body_not_contains, std::vector<std::string>{"root:"});
  EXPECT_EQ(c->body_max_bytes, 4096u);
  EXPECT_EQ(c->payload, "GET / HTTP/1.1\\r\\n\\r\\n");

  EXPECT_FALSE(ParseCaseFile("# servers: llm\n# expect-status: 400\n# expect-clsoe: true\nGET\n", "x").ok());
  EXPECT_FALSE(ParseCaseFile("# expect-status: 400\nGET\n", "x").ok());
  EXPECT_FALSE(ParseCaseFile("# servers: llm\nGET\n", "x").ok());
  EXPECT_FALSE(ParseCaseFile("# servers: llm\n# expect-status: 40\nGET\n", "x").ok());
}

TEST(HostileResponses, SplitsLengthChunkedInterimAndCloseDelimited) {
  const std::string bytes =
      "HTTP/1.1 100 Continue\r\n\r\n"
      "HTTP/1.1 400 Bad Request\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: v\r\n\r\n"
      "HTTP/1.0 200 OK\r\n\r\nuntil close";
  ParsedResponses open = ParseResponses(bytes, false);
  EXPECT_TRUE(open.error.empty()) << open.error;
  ASSERT_EQ(open.final.size(), 2u);
  EXPECT_EQ(open.interim.size(), 1u);
  EXPECT_EQ(open.final[0].status, 400);
  EXPECT_EQ(open.final[0].body, "hello");
  EXPECT_TRUE(open.final[0].ConnectionClose());
  EXPECT_EQ(open.final[1].body, "abc");
  EXPECT_GT(open.pending_bytes, 0u);

  ParsedResponses closed = ParseResponses(bytes, true);
  ASSERT_EQ(closed.final.size(), 3u);
  EXPECT_EQ(closed.final[2].body, "until close");
  EXPECT_EQ(closed.pending_bytes, 0u);

  EXPECT_FALSE(ParseResponses("garbage", true).error.empty());
  EXPECT_FALSE(ParseResponses("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false).error.empty());
  ParsedResponses partial = ParseResponses("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", true);
  EXPECT_TRUE(partial.final.empty());
  EXPECT_EQ(partial.pending_bytes, 41u);
}

// A one-connection server on 127.0.0.1 that reads one request head and
// writes `first`, then after a pause `second`, then closes: what a server
// that answers smuggled bytes looks like from the client.
class ScriptedServer {
 public:
  ScriptedServer(std::string first, std::string second) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    listen(listen_fd_, 1);
    socklen_t len = sizeof addr;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, first = std::move(first), second = std::move(second)] {
      int fd = accept(listen_fd_, nullptr, nullptr);
      std::string got;
      char buf[4096];
      while (got.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        got.append(buf, n);
      }
      send(fd, first.data(), first.size(), MSG_NOSIGNAL);
      usleep(200'000);
      send(fd, second.data(), second.size(), MSG_NOSIGNAL);
      close(fd);
    });
  }
  ~ScriptedServer() {
    thread_.join();
    close(listen_fd_);
  }
  int port() const { return port_; }

 private:
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

constexpr char kRejected[] = "HTTP/1.1 501 Not Implemented\r\ncontent-length: 2\r\nconnection: close\r\n\r\nno";
constexpr char kRejectedKeepAlive[] = "HTTP/1.1 501 Not Implemented\r\ncontent-length: 2\r\n\r\nno";
constexpr char kSmuggledAnswer[] = "HTTP/1.1 200 OK\r\ncontent-length: 17\r\n\r\n{\"object\":\"list\"}";

TEST(HostileReplay, SeesAResponseToSmuggledBytesAfterAClose) {
  ScriptedServer server(kRejected, kSmuggledAnswer);
  Exchange x = Replay({.port = server.port(), .request = "GET / HTTP/1.1\r\n\r\n", .responses = 1});
  EXPECT_EQ(x.parsed.final.size(), 2u);
  EXPECT_NE(x.received.find("\"object\":\"list\""), std::string::npos);
}

TEST(HostileReplay, SeesAResponseToSmuggledBytesWithinTheGrace) {
  ScriptedServer server(kRejectedKeepAlive, kSmuggledAnswer);
  Exchange x = Replay({.port = server.port(), .request = "GET / HTTP/1.1\r\n\r\n", .responses = 1,
                       .grace = std::chrono::milliseconds(1000)});
  EXPECT_EQ(x.parsed.final.size(), 2u);
  EXPECT_FALSE(x.timed_out);
}

TEST(HostileReplay, StopsAtACompleteKeepAliveResponseWithoutGrace) {
  ScriptedServer server(kRejectedKeepAlive, kSmuggledAnswer);
  Exchange x = Replay({.port = server.port(), .request = "GET / HTTP/1.1\r\n\r\n", .responses = 1});
  ASSERT_EQ(x.parsed.final.size(), 1u);
  EXPECT_EQ(x.parsed.final[0].status, 501);
  EXPECT_FALSE(x.peer_closed);
}

// The corpus itself: enough cases, NNN_ names unique, every file parses and
// expands (placeholders filled with stand-ins).
TEST(HostileCorpus, EveryCaseParsesAndExpands) {
  std::set<std::string> numbers;
  int cases = 0;
  for (const auto& entry : fs::directory_iterator(OMNI_HOSTILE_CASES)) {
    if (entry.path().extension() != ".http") continue;
    ++cases;
    const std::string stem = entry.path().stem().string();
    ASSERT_GE(stem.size(), 5u) << stem;
    EXPECT_TRUE(std::isdigit(stem[0]) && std::isdigit(stem[1]) && std::isdigit(stem[2]) && stem[3] == '_') << stem;
    EXPECT_TRUE(numbers.insert(stem.substr(0, 3)).second) << "number used twice: " << stem;
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    auto c = ParseCaseFile(text.str(), stem);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    auto bytes = ExpandPayload(c->payload, {.host = "127.0.0.1", .port = 1, .store = "/s"});
    EXPECT_TRUE(bytes.ok()) << stem << ": " << bytes.status().ToString();
  }
  EXPECT_GE(cases, 60);
}

}  // namespace
}  // namespace omni::hostile
