#include "net/url.h"

#include <cctype>
#include <charconv>

namespace omni {

std::string Url::HostPort() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return h + ":" + std::to_string(port);
}

StatusOr<Url> ParseUrl(std::string_view url) {
  Url out;
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return InvalidArgument("url has no scheme: " + std::string(url));
  out.scheme = std::string(url.substr(0, scheme_end));
  for (char& c : out.scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (out.scheme != "http" && out.scheme != "https") return InvalidArgument("unsupported url scheme: " + out.scheme);

  std::string_view rest = url.substr(scheme_end + 3);
  size_t authority_end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, authority_end);
  std::string_view target = authority_end == std::string_view::npos ? "" : rest.substr(authority_end);
  if (authority.find('@') != std::string_view::npos) return InvalidArgument("url must not contain user info");

  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return InvalidArgument("unterminated IPv6 literal in url");
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return InvalidArgument("bad text after IPv6 literal in url");
      port_text = after.substr(1);
    }
  } else {
    size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (out.host.empty()) return InvalidArgument("url has no host: " + std::string(url));

  out.port = out.tls() ? 443 : 80;
  if (!port_text.empty()) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || value == 0 || value > 65535) {
      return InvalidArgument("bad port in url: " + std::string(port_text));
    }
    out.port = static_cast<uint16_t>(value);
  }

  // The fragment belongs to the client side and is never sent.
  target = target.substr(0, target.find('#'));
  out.target = target.empty() || target.front() != '/' ? "/" + std::string(target) : std::string(target);
  return out;
}

}  // namespace omni
