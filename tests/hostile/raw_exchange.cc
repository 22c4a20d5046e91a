#include "raw_exchange.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>

namespace omni::hostile {
namespace {

using Clock = std::chrono::steady_clock;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) {
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  }
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The end of a chunked body starting at `pos` (after its trailers), or
// nullopt while incomplete; `error` set when the framing is broken.
std::optional<size_t> ParseChunked(std::string_view bytes, size_t pos, std::string* body, std::string* error) {
  for (;;) {
    size_t eol = bytes.find("\r\n", pos);
    if (eol == std::string_view::npos) return std::nullopt;
    std::string_view size_field = bytes.substr(pos, eol - pos);
    size_field = Trim(size_field.substr(0, size_field.find(';')));
    size_t size = 0;
    auto [end, ec] = std::from_chars(size_field.data(), size_field.data() + size_field.size(), size, 16);
    if (size_field.empty() || ec != std::errc() || end != size_field.data() + size_field.size()) {
      *error = "bad chunk size line '" + std::string(bytes.substr(pos, eol - pos)) + "'";
      return std::nullopt;
    }
    pos = eol + 2;
    if (size == 0) {
      // Trailers, then the empty line.
      for (;;) {
        size_t t = bytes.find("\r\n", pos);
        if (t == std::string_view::npos) return std::nullopt;
        if (t == pos) return t + 2;
        pos = t + 2;
      }
    }
    if (bytes.size() < pos + size + 2) return std::nullopt;
    body->append(bytes.substr(pos, size));
    if (bytes.substr(pos + size, 2) != "\r\n") {
      *error = "chunk data not followed by CRLF";
      return std::nullopt;
    }
    pos += size + 2;
  }
}

// One response at `pos`. Returns its end, or nullopt while incomplete (or on
// `error`).
std::optional<size_t> ParseOne(std::string_view bytes, size_t pos, bool eof, RawResponse* r, std::string* error) {
  std::string_view rest = bytes.substr(pos);
  std::string_view prefix = rest.substr(0, std::min<size_t>(rest.size(), 7));
  if (std::string_view("HTTP/1.").substr(0, prefix.size()) != prefix) {
    *error = "not an HTTP/1.x response at byte " + std::to_string(pos);
    return std::nullopt;
  }
  size_t head_end = bytes.find("\r\n\r\n", pos);
  if (head_end == std::string_view::npos) return std::nullopt;
  size_t line_end = bytes.find("\r\n", pos);
  r->status_line = std::string(bytes.substr(pos, line_end - pos));
  // "HTTP/1.1 404 Not Found"
  if (r->status_line.size() < 12 || r->status_line[8] != ' ' ||
      std::from_chars(r->status_line.data() + 9, r->status_line.data() + 12, r->status).ec != std::errc()) {
    *error = "bad status line '" + r->status_line + "'";
    return std::nullopt;
  }
  for (size_t p = line_end + 2; p < head_end + 2;) {
    size_t e = bytes.find("\r\n", p);
    std::string_view line = bytes.substr(p, e - p);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      *error = "header line without ':' '" + std::string(line) + "'";
      return std::nullopt;
    }
    r->headers.emplace_back(Lower(line.substr(0, colon)), std::string(Trim(line.substr(colon + 1))));
    p = e + 2;
  }
  const size_t body_start = head_end + 4;
  if (r->status < 200 || r->status == 204 || r->status == 304) return body_start;
  if (Lower(r->Header("transfer-encoding")).find("chunked") != std::string::npos) {
    return ParseChunked(bytes, body_start, &r->body, error);
  }
  std::string length = r->Header("content-length");
  if (!length.empty()) {
    size_t n = 0;
    auto [end, ec] = std::from_chars(length.data(), length.data() + length.size(), n);
    if (ec != std::errc() || end != length.data() + length.size()) {
      *error = "bad content-length '" + length + "'";
      return std::nullopt;
    }
    if (bytes.size() < body_start + n) return std::nullopt;
    r->body = std::string(bytes.substr(body_start, n));
    return body_start + n;
  }
  if (!eof) return std::nullopt;  // the close ends the body
  r->body = std::string(bytes.substr(body_start));
  return bytes.size();
}

}  // namespace

std::string RawResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return v;
  }
  return "";
}

bool RawResponse::ConnectionClose() const { return Lower(Header("connection")).find("close") != std::string::npos; }

ParsedResponses ParseResponses(std::string_view bytes, bool eof) {
  ParsedResponses out;
  size_t pos = 0;
  while (pos < bytes.size()) {
    RawResponse r;
    std::optional<size_t> end = ParseOne(bytes, pos, eof, &r, &out.error);
    if (!out.error.empty()) break;
    if (!end) {
      out.pending_bytes = bytes.size() - pos;
      break;
    }
    (r.status < 200 ? out.interim : out.final).push_back(std::move(r));
    pos = *end;
  }
  return out;
}

Exchange Replay(const ExchangeOptions& options) {
  Exchange x;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    x.connect_error = std::strerror(errno);
    return x;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(options.port));
  inet_pton(AF_INET, options.host.c_str(), &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    x.connect_error = std::strerror(errno);
    close(fd);
    return x;
  }
  // A server that stops reading must not hang the test in send().
  timeval send_timeout{.tv_sec = options.timeout.count() / 1000, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
  for (size_t sent = 0; sent < options.request.size();) {
    ssize_t n = send(fd, options.request.data() + sent, options.request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      x.send_error = std::string(std::strerror(errno)) + " after " + std::to_string(sent) + " of " +
                     std::to_string(options.request.size()) + " bytes";
      break;
    }
    sent += static_cast<size_t>(n);
  }
  if (options.half_close && x.send_error.empty()) shutdown(fd, SHUT_WR);

  Clock::time_point deadline = Clock::now() + options.timeout;
  bool in_grace = false;
  char buf[64 * 1024];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || poll(&p, 1, static_cast<int>(left)) == 0) {
      x.timed_out = !in_grace;
      break;
    }
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n == 0) {
      x.peer_closed = true;
      break;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      x.peer_closed = true;
      x.reset = errno == ECONNRESET;
      break;
    }
    x.received.append(buf, static_cast<size_t>(n));
    ParsedResponses parsed = ParseResponses(x.received, false);
    const int complete = static_cast<int>(parsed.final.size());
    if (!parsed.error.empty() || complete > options.responses) break;
    if (complete == options.responses && parsed.pending_bytes == 0 && !parsed.final.back().ConnectionClose()) {
      if (options.grace.count() == 0) break;
      if (!in_grace) deadline = std::min(deadline, Clock::now() + options.grace);
      in_grace = true;
    }
  }
  close(fd);
  x.parsed = ParseResponses(x.received, x.peer_closed);
  return x;
}

std::string Printable(std::string_view s, size_t max) {
  std::string out;
  const size_t n = std::min(s.size(), max);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char ch = static_cast<unsigned char>(s[i]);
    if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\n') {
      out += "\\n\n";
    } else if (ch == '\\') {
      out += "\\\\";
    } else if (ch < 0x20 || ch >= 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[ch >> 4];
      out += kHex[ch & 15];
    } else {
      out += static_cast<char>(ch);
    }
  }
  if (s.size() > max) out += "... (" + std::to_string(s.size() - max) + " more bytes)";
  return out;
}

}  // namespace omni::hostile
