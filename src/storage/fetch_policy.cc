#include "storage/fetch_policy.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include <fmt/core.h>

#include "core/log.h"

namespace omni {
namespace {

bool HasPrefix(const std::array<uint8_t, 16>& b, std::initializer_list<uint8_t> prefix) {
  size_t i = 0;
  for (uint8_t byte : prefix) {
    if (b[i++] != byte) return false;
  }
  return true;
}

IpAddress V4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  IpAddress out;
  out.bytes = {a, b, c, d};
  return out;
}

AddressKind ClassifyV4(const std::array<uint8_t, 16>& b) {
  const uint8_t a = b[0], s = b[1];
  if (a == 0) return AddressKind::kUnspecified;  // "this network", 0.0.0.0 included
  if (a == 127) return AddressKind::kLoopback;
  if (a == 10 || (a == 172 && (s & 0xf0) == 16) || (a == 192 && s == 168)) return AddressKind::kPrivate;
  if (a == 100 && (s & 0xc0) == 64) return AddressKind::kSharedCgnat;
  if (a == 169 && s == 254) return AddressKind::kLinkLocal;
  if ((a & 0xf0) == 224) return AddressKind::kMulticast;
  if (a == 255 && s == 255 && b[2] == 255 && b[3] == 255) return AddressKind::kBroadcast;
  if ((a & 0xf0) == 240) return AddressKind::kReserved;
  // IETF protocol assignments, documentation, benchmarking (RFC 6890).
  if ((a == 192 && s == 0 && (b[2] == 0 || b[2] == 2)) || (a == 198 && (s & 0xfe) == 18) ||
      (a == 198 && s == 51 && b[2] == 100) || (a == 203 && s == 0 && b[2] == 113)) {
    return AddressKind::kReserved;
  }
  return AddressKind::kPublic;
}

AddressKind ClassifyV6(const std::array<uint8_t, 16>& b) {
  bool zero_high = true;
  for (int i = 0; i < 15; ++i) zero_high = zero_high && b[i] == 0;
  if (zero_high && b[15] == 0) return AddressKind::kUnspecified;
  if (zero_high && b[15] == 1) return AddressKind::kLoopback;
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return AddressKind::kLinkLocal;
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return AddressKind::kPrivate;  // site-local (deprecated)
  if ((b[0] & 0xfe) == 0xfc) return AddressKind::kUniqueLocal;
  if (b[0] == 0xff) return AddressKind::kMulticast;
  if (HasPrefix(b, {0x20, 0x01, 0x0d, 0xb8})) return AddressKind::kReserved;  // documentation
  if (HasPrefix(b, {0x01, 0x00, 0, 0, 0, 0, 0, 0})) return AddressKind::kReserved;  // discard-only
  return AddressKind::kPublic;
}

std::string_view AllowHint(AddressKind kind) {
  switch (kind) {
    case AddressKind::kLoopback:
      return "allow it with --fetch-allow-loopback";
    case AddressKind::kPrivate: case AddressKind::kSharedCgnat: case AddressKind::kUniqueLocal:
      return "allow it with --fetch-allow-private";
    default:
      return "allow it with --fetch-allow CIDR";
  }
}

// Host names: letters, digits, '-', '.', '_' (what resolvers accept); IP
// literals are parsed separately. Anything else (spaces, CR/LF, '%') could
// only be an injection attempt.
bool IsHostNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_';
}

// Bytes that must never reach a request line: controls, space, DEL, non-ASCII.
bool HasUnsafeByte(std::string_view url) {
  for (unsigned char c : url) {
    if (c <= 0x20 || c >= 0x7f) return true;
  }
  return false;
}

}  // namespace

std::optional<IpAddress> IpAddress::Parse(std::string_view text) {
  std::string s(text);
  IpAddress out;
  if (::inet_pton(AF_INET, s.c_str(), out.bytes.data()) == 1) return out;
  out.is_v4 = false;
  if (::inet_pton(AF_INET6, s.c_str(), out.bytes.data()) == 1) return out;
  return std::nullopt;
}

std::string IpAddress::ToString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(is_v4 ? AF_INET : AF_INET6, bytes.data(), buf, sizeof(buf));
  return buf;
}

IpAddress IpAddress::Embedded() const {
  if (is_v4) return *this;
  const auto& b = bytes;
  bool zero80 = true;
  for (int i = 0; i < 10; ++i) zero80 = zero80 && b[i] == 0;
  if (zero80 && b[10] == 0xff && b[11] == 0xff) return V4(b[12], b[13], b[14], b[15]);  // ::ffff:a.b.c.d
  if (zero80 && b[10] == 0 && b[11] == 0 && (b[12] | b[13]) != 0) return V4(b[12], b[13], b[14], b[15]);  // ::a.b.c.d
  if (HasPrefix(b, {0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0})) return V4(b[12], b[13], b[14], b[15]);  // NAT64
  if (b[0] == 0x20 && b[1] == 0x02) return V4(b[2], b[3], b[4], b[5]);  // 6to4
  return *this;
}

StatusOr<IpCidr> IpCidr::Parse(std::string_view text) {
  auto bad = [&] {
    return InvalidArgument(fmt::format("invalid CIDR '{}': expected ADDRESS/BITS, e.g. 10.0.0.0/8 or fd00::/8",
                                       text.substr(0, 64)));
  };
  size_t slash = text.find('/');
  std::optional<IpAddress> base = IpAddress::Parse(text.substr(0, slash));
  if (!base) return bad();
  IpCidr out{.base = *base, .prefix_len = base->is_v4 ? 32 : 128};
  if (slash != std::string_view::npos) {
    std::string_view bits = text.substr(slash + 1);
    auto [end, ec] = std::from_chars(bits.data(), bits.data() + bits.size(), out.prefix_len);
    if (bits.empty() || ec != std::errc() || end != bits.data() + bits.size() || out.prefix_len < 0 ||
        out.prefix_len > (base->is_v4 ? 32 : 128)) {
      return bad();
    }
  }
  return out;
}

bool IpCidr::Contains(const IpAddress& address) const {
  // An IPv4 range also matches the IPv6 forms that carry an IPv4 address;
  // an IPv6 range matches IPv6 addresses as written.
  IpAddress a = base.is_v4 ? address.Embedded() : address;
  if (a.is_v4 != base.is_v4) return false;
  for (int i = 0; i < prefix_len; ++i) {
    uint8_t mask = static_cast<uint8_t>(0x80 >> (i % 8));
    if ((a.bytes[i / 8] & mask) != (base.bytes[i / 8] & mask)) return false;
  }
  return true;
}

AddressKind ClassifyAddress(const IpAddress& address) {
  IpAddress a = address.Embedded();
  return a.is_v4 ? ClassifyV4(a.bytes) : ClassifyV6(a.bytes);
}

std::string_view AddressKindName(AddressKind kind) {
  switch (kind) {
    case AddressKind::kPublic: return "public";
    case AddressKind::kLoopback: return "loopback";
    case AddressKind::kPrivate: return "private";
    case AddressKind::kSharedCgnat: return "shared (CGNAT)";
    case AddressKind::kUniqueLocal: return "unique-local";
    case AddressKind::kLinkLocal: return "link-local";
    case AddressKind::kMulticast: return "multicast";
    case AddressKind::kUnspecified: return "unspecified";
    case AddressKind::kBroadcast: return "broadcast";
    case AddressKind::kReserved: return "reserved";
  }
  return "unknown";
}

StatusOr<std::vector<IpAddress>> ResolveHost(const std::string& host, std::chrono::milliseconds timeout) {
  struct Answer {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;              // guarded by mu
    int rc = 0;                     // guarded by mu
    std::vector<IpAddress> result;  // guarded by mu
  };
  // Each lookup holds a thread until getaddrinfo returns, even past the
  // timeout; a cap keeps slow names from piling threads up.
  constexpr int kMaxLookupsInFlight = 16;
  static std::atomic<int> in_flight{0};
  if (in_flight.fetch_add(1) >= kMaxLookupsInFlight) {
    in_flight.fetch_sub(1);
    return ResourceExhausted(fmt::format("resolving {}: {} lookups already in flight", host, kMaxLookupsInFlight));
  }
  auto answer = std::make_shared<Answer>();
  try {
    // Detached: getaddrinfo cannot be interrupted, so a timed-out lookup
    // finishes on its own and drops its answer into `answer`.
    std::thread([answer, host] {
      addrinfo hints{};
      hints.ai_family = AF_UNSPEC;
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* list = nullptr;
      int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &list);
      std::vector<IpAddress> result;
      for (addrinfo* ai = list; rc == 0 && ai != nullptr; ai = ai->ai_next) {
        IpAddress a;
        if (ai->ai_family == AF_INET) {
          const auto* sin = reinterpret_cast<const sockaddr_in*>(ai->ai_addr);
          std::memcpy(a.bytes.data(), &sin->sin_addr, 4);
        } else if (ai->ai_family == AF_INET6) {
          const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(ai->ai_addr);
          a.is_v4 = false;
          std::memcpy(a.bytes.data(), &sin6->sin6_addr, 16);
        } else {
          continue;
        }
        result.push_back(a);
      }
      if (list != nullptr) ::freeaddrinfo(list);
      in_flight.fetch_sub(1);
      std::lock_guard lock(answer->mu);
      answer->rc = rc;
      answer->result = std::move(result);
      answer->done = true;
      answer->cv.notify_all();
    }).detach();
  } catch (const std::system_error& e) {
    in_flight.fetch_sub(1);
    return Unavailable(std::string("resolving a host: cannot start a thread: ") + e.what());
  }
  std::unique_lock lock(answer->mu);
  if (!answer->cv.wait_for(lock, timeout, [&] { return answer->done; })) {
    return DeadlineExceeded(fmt::format("resolving {} took over {} ms", host, timeout.count()));
  }
  if (answer->rc != 0) return Unavailable(fmt::format("cannot resolve {}: {}", host, ::gai_strerror(answer->rc)));
  if (answer->result.empty()) return Unavailable(fmt::format("{} has no IPv4 or IPv6 address", host));
  return std::move(answer->result);
}

std::optional<std::string> RefusalReason(const IpAddress& address, const FetchPolicy& policy) {
  for (const IpCidr& cidr : policy.allow) {
    if (cidr.Contains(address)) return std::nullopt;
  }
  AddressKind kind = ClassifyAddress(address);
  switch (kind) {
    case AddressKind::kPublic:
      return std::nullopt;
    case AddressKind::kLoopback:
      if (policy.allow_loopback) return std::nullopt;
      break;
    case AddressKind::kPrivate: case AddressKind::kSharedCgnat: case AddressKind::kUniqueLocal:
      if (policy.allow_private) return std::nullopt;
      break;
    default:
      break;
  }
  return fmt::format("the address {} is {} ({})", address.ToString(), AddressKindName(kind), AllowHint(kind));
}

std::string UrlForDisplay(std::string_view url) {
  url = url.substr(0, 512);
  size_t query = url.find('?');
  if (query == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, query)) + "?...";
}

StatusOr<FetchTarget> CheckFetchTarget(std::string_view url, const FetchPolicy& policy) {
  auto refuse = [&](std::string_view why) {
    return InvalidArgument(fmt::format("fetching {} is not allowed: {}", UrlForDisplay(url), why));
  };
  if (HasUnsafeByte(url)) return refuse("the URL contains spaces, control or non-ASCII bytes");
  StatusOr<Url> parsed = ParseUrl(url);
  if (!parsed.ok()) return refuse("only http:// and https:// URLs with a host are fetched");
  FetchTarget target{.url = *std::move(parsed)};
  if (std::optional<IpAddress> literal = IpAddress::Parse(target.url.host)) {
    if (std::optional<std::string> why = RefusalReason(*literal, policy)) return refuse(*why);
    target.address = *literal;
    return target;
  }
  const std::string& host = target.url.host;
  bool name_ok = host.size() <= 253;
  for (char c : host) name_ok = name_ok && IsHostNameChar(c);
  if (!name_ok) return refuse("the host is not a valid host name or IP address");
  // One answer for "does not resolve" and "resolves to a refused address":
  // telling them apart would let a client map internal DNS names.
  constexpr std::string_view kNameRefused = "the host does not resolve to an address the server may fetch from";
  StatusOr<std::vector<IpAddress>> addresses =
      policy.resolver ? policy.resolver(host, policy.resolve_timeout) : ResolveHost(host, policy.resolve_timeout);
  if (!addresses.ok() || addresses->empty()) {
    OMNI_LOG(kDebug, "fetch policy: {}: {}", host, addresses.ok() ? "no address" : addresses.status().ToString());
    return refuse(kNameRefused);
  }
  // Every address must pass: a name with one public and one internal
  // address could otherwise be steered to the internal one.
  for (const IpAddress& a : *addresses) {
    if (std::optional<std::string> why = RefusalReason(a, policy)) {
      OMNI_LOG(kDebug, "fetch policy: {} resolves to a refused address: {}", host, *why);
      return refuse(kNameRefused);
    }
  }
  target.address = addresses->front();
  return target;
}

}  // namespace omni
