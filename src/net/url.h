// Parsing of the absolute URLs the HTTP client accepts. Pure code.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace omni {

struct Url {
  std::string scheme;  // "http" or "https"
  std::string host;    // "127.0.0.1", "example.com", "::1" (brackets removed)
  uint16_t port = 0;   // explicit or the scheme's default
  std::string target;  // path and query, "/" when the URL has no path

  // "host:port" with brackets around IPv6 literals, as in a Host header.
  std::string HostPort() const;
  bool tls() const { return scheme == "https"; }
};

// Parses "http(s)://host[:port][/path][?query]" (default ports 80 and 443).
// User info is rejected because credentials in URLs end up in logs.
StatusOr<Url> ParseUrl(std::string_view url);

}  // namespace omni
