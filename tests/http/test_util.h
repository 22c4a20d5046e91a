// Helpers for the socket tests: raw POSIX sockets (to send bytes no real
// client would) and a started server fixture.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "net/http_server.h"

namespace omni::testing {

// Fail-fast bound for waits in tests; never a performance assertion.
inline constexpr auto kTestWait = std::chrono::seconds(10);

// Connects to 127.0.0.1:port; -1 if refused. Reads time out after kTestWait.
int ConnectRaw(uint16_t port);
bool SendAll(int fd, const std::string& bytes);
// Reads until the peer closes (or the read times out); the bytes read.
std::string ReadUntilClose(int fd);
// Connect, send `bytes`, read until close.
std::string RawExchange(uint16_t port, const std::string& bytes);
// True if a TCP connect to the port is refused.
bool ConnectionRefused(uint16_t port);

// A raw TCP peer on 127.0.0.1 (OS-chosen port) that answers each of the
// next `connections` connections with `reply` after reading a request head,
// then closes; for responses no real server would send. Joins in the
// destructor.
class CannedServer {
 public:
  CannedServer(std::string reply, int connections = 1);
  ~CannedServer();
  uint16_t port() const { return port_; }

 private:
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

// A server on 127.0.0.1 port 0 with test-friendly defaults: quiet logs.
HttpServerOptions TestServerOptions();
std::string BaseUrl(const HttpServer& server);

}  // namespace omni::testing
