// The outbound-fetch policy: which addresses the server may connect to when
// a request hands it a URL (embedding objects now, media later). Without it
// a client could make the server reach its own ports, other loopback
// services, the cloud metadata address or the private network (server-side
// request forgery), and learn from the answers which ports are open.
//
//   FetchPolicy policy{.allow_loopback = true};          // tests, one host
//   auto target = CheckFetchTarget(url, policy);         // resolve + check
//   request.connect_address = target->address.ToString();  // pin it
//
// Every address a host name resolves to is checked, and the connection is
// then made to the checked address (HttpClientRequest::connect_address), so
// a second DNS answer cannot swap in another one (DNS rebinding). Redirects
// are re-checked hop by hop by FetchUrl (url_fetch.h).
//
// Refused by default, unless allowed below: loopback (127/8, ::1), private
// (10/8, 172.16/12, 192.168/16), shared CGNAT (100.64/10), unique-local
// (fc00::/7), link-local (169.254/16 with the metadata address
// 169.254.169.254, fe80::/10), multicast, unspecified (0/8, ::), broadcast
// and other reserved ranges; IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible,
// NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses count as the IPv4
// address they carry.
//
// Thread-safety: free functions; a FetchPolicy is read-only once built.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "net/url.h"

namespace omni {

struct IpAddress {
  bool is_v4 = true;
  std::array<uint8_t, 16> bytes{};  // network order; IPv4 uses the first 4

  // An IPv4 or IPv6 literal (inet_pton: no "127.1", no zone); nullopt else.
  static std::optional<IpAddress> Parse(std::string_view text);
  std::string ToString() const;
  // The IPv4 address an IPv4-mapped, -compatible, NAT64 or 6to4 address
  // carries; the address itself otherwise.
  IpAddress Embedded() const;
  bool operator==(const IpAddress&) const = default;
};

struct IpCidr {
  IpAddress base;
  int prefix_len = 0;

  // "10.0.0.0/8", "fd00::/8", or an address alone (/32, /128).
  static StatusOr<IpCidr> Parse(std::string_view text);
  // An IPv4 range matches Embedded() forms: 127.0.0.0/8 matches ::ffff:127.0.0.1.
  bool Contains(const IpAddress& address) const;
};

enum class AddressKind {
  kPublic,
  kLoopback,
  kPrivate,
  kSharedCgnat,
  kUniqueLocal,
  kLinkLocal,
  kMulticast,
  kUnspecified,
  kBroadcast,
  kReserved,
};

AddressKind ClassifyAddress(const IpAddress& address);
std::string_view AddressKindName(AddressKind kind);  // "loopback", "link-local", ...

// Resolves a host name to its addresses; DeadlineExceeded after `timeout`.
using HostResolver =
    std::function<StatusOr<std::vector<IpAddress>>(const std::string& host, std::chrono::milliseconds timeout)>;

// getaddrinfo on a helper thread, bounded by `timeout` (getaddrinfo itself
// cannot be cancelled; a late answer is dropped). At most 16 lookups run at
// once; more get ResourceExhausted.
StatusOr<std::vector<IpAddress>> ResolveHost(const std::string& host, std::chrono::milliseconds timeout);

struct FetchPolicy {
  bool allow_loopback = false;  // 127/8, ::1
  bool allow_private = false;   // 10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7
  // Allowed whatever their kind (e.g. one link-local host, an internal store).
  std::vector<IpCidr> allow;
  int max_redirects = 3;  // FetchUrl follows at most this many, each re-checked
  std::chrono::milliseconds resolve_timeout{5'000};
  HostResolver resolver;  // empty: ResolveHost; tests inject fixed answers
};

// Why `address` is refused ("the address 127.0.0.1 is loopback (allow it
// with --fetch-allow-loopback)"), or nullopt when the policy allows it.
std::optional<std::string> RefusalReason(const IpAddress& address, const FetchPolicy& policy);

struct FetchTarget {
  Url url;            // the parsed URL; its host goes in the Host header
  IpAddress address;  // checked: connect here and nowhere else
};

// Parses `url` (http:// only: https is Unimplemented, anything else
// InvalidArgument), resolves its host and checks every address it resolves
// to; the first one is the target. Refusals are InvalidArgument "fetching
// URL is not allowed: ...", naming the address for an IP literal. For a host
// name the reason is the same whether the name did not resolve or resolved
// to a refused address, so the answer does not map internal names; the
// detail goes to the debug log. The URL's query is never shown.
StatusOr<FetchTarget> CheckFetchTarget(std::string_view url, const FetchPolicy& policy);

// `url` without its query ("?..." instead): presigned signatures stay out
// of messages and logs.
std::string UrlForDisplay(std::string_view url);

}  // namespace omni
