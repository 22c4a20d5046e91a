#include "net/internal/framing.h"

#include "net/http.h"

namespace omni::net_internal {
namespace {

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Shown in an error: a coding is attacker-chosen text, so keep it short.
std::string Shown(std::string_view s) {
  std::string out(s.substr(0, 40));
  for (char& c : out) {
    if (c < ' ' || c > '~') c = '?';
  }
  return s.size() > 40 ? out + "..." : out;
}

// OK if the Transfer-Encoding fields are one field line "chunked" (any
// case) and Beast's parser also took the body as chunked. Stricter than the
// RFC's list syntax on purpose: every extra form (empty list elements, a
// second field line, parameters) is one more way for two parsers on a path
// to disagree about where the body ends.
template <class Fields>
Status CheckCodings(const Fields& fields, bool parser_chunked) {
  auto [begin, end] = fields.equal_range(http::field::transfer_encoding);
  std::string list;
  int lines = 0;
  for (auto it = begin; it != end; ++it, ++lines) list += (list.empty() ? "" : ", ") + Shown(it->value());
  if (lines == 1 && EqualsIgnoreCase(TrimOws(begin->value()), "chunked") && parser_chunked) return Status::Ok();
  return Unimplemented("Transfer-Encoding '" + list + "' is not supported: only 'chunked' is");
}

}  // namespace

std::optional<size_t> HeadLength(std::string_view bytes, size_t scanned) {
  // The end may straddle what was scanned before: back up three bytes.
  size_t end = bytes.find("\r\n\r\n", scanned < 3 ? 0 : scanned - 3);
  // A bare LF before the end: the head ends there for CheckHeaderBlock to
  // refuse, rather than after a wait for a CRLFCRLF that may never come.
  size_t lf = bytes.find('\n', scanned);
  while (lf != std::string_view::npos && (end == std::string_view::npos || lf < end)) {
    if (lf == 0 || bytes[lf - 1] != '\r') return lf + 1;
    lf = bytes.find('\n', lf + 1);
  }
  if (end == std::string_view::npos) return std::nullopt;
  return end + 4;
}

Status CheckHeaderBlock(std::string_view head) {
  bool start_line = true;
  for (size_t i = 0; i < head.size(); ++i) {
    const char c = head[i];
    if (c == '\0') return InvalidArgument("malformed HTTP head: NUL byte");
    if (c == '\r' && (i + 1 >= head.size() || head[i + 1] != '\n')) {
      return InvalidArgument("malformed HTTP head: CR without LF");
    }
    if (c != '\n') continue;
    if (i == 0 || head[i - 1] != '\r') return InvalidArgument("malformed HTTP head: line ends in LF without CR");
    if (i + 1 < head.size() && (head[i + 1] == ' ' || head[i + 1] == '\t')) {
      return InvalidArgument(start_line ? "malformed HTTP head: whitespace before the first header field"
                                        : "malformed HTTP head: obsolete line folding (obs-fold) is not accepted");
    }
    start_line = false;
  }
  return Status::Ok();
}

Status CheckRequestFraming(const http::request_header<>& head, bool parser_chunked) {
  // RFC 9112 section 3.2: a server MUST answer 400 to an HTTP/1.1 request
  // without a Host, and to any request with more than one.
  const auto hosts = head.count(http::field::host);
  if (hosts > 1) return InvalidArgument("more than one Host header");
  if (hosts == 0 && head.version() >= 11) return InvalidArgument("an HTTP/1.1 request needs a Host header");
  if (head.find(http::field::transfer_encoding) == head.end()) return Status::Ok();
  if (head.find(http::field::content_length) != head.end()) {
    return InvalidArgument("a request must not carry both Transfer-Encoding and Content-Length");
  }
  if (head.version() < 11) return InvalidArgument("Transfer-Encoding in an HTTP/1.0 request");
  return CheckCodings(head, parser_chunked);
}

Status CheckResponseFraming(const http::response_header<>& head, bool parser_chunked) {
  // Beast takes any three digits; RFC 9110 section 15 defines 1xx-5xx only.
  if (head.result_int() < 100 || head.result_int() > 599) {
    return Internal("the upstream answered status " + std::to_string(head.result_int()) + ", outside 100-599");
  }
  if (head.find(http::field::transfer_encoding) == head.end()) return Status::Ok();
  if (head.find(http::field::content_length) != head.end()) {
    return Internal("the upstream response carries both Transfer-Encoding and Content-Length");
  }
  Status s = CheckCodings(head, parser_chunked);
  if (!s.ok()) return Internal("upstream response: " + s.message());
  return Status::Ok();
}

StatusOr<ParsedRequestBytes> ParseRequestBytes(std::string_view bytes, size_t max_header_bytes,
                                               size_t max_body_bytes) {
  std::optional<size_t> head_len = HeadLength(bytes);
  if (!head_len) {
    if (bytes.size() >= max_header_bytes) return InvalidArgument("request headers too large");
    return InvalidArgument("incomplete request head");
  }
  if (*head_len > max_header_bytes) return InvalidArgument("request headers too large");
  OMNI_RETURN_IF_ERROR(CheckHeaderBlock(bytes.substr(0, *head_len)));
  http::request_parser<http::string_body> parser;
  parser.header_limit(static_cast<uint32_t>(max_header_bytes));
  parser.body_limit(max_body_bytes);
  boost::system::error_code ec;
  size_t used = parser.put(asio::buffer(bytes.data(), *head_len), ec);
  if (ec == http::error::body_limit) return PayloadTooLarge("request body too large");
  if (ec || !parser.is_header_done()) return InvalidArgument("malformed HTTP request");
  OMNI_RETURN_IF_ERROR(CheckRequestFraming(parser.get(), parser.chunked()));
  while (!parser.is_done()) {
    if (used >= bytes.size()) return InvalidArgument("incomplete request body");
    size_t n = parser.put(asio::buffer(bytes.data() + used, bytes.size() - used), ec);
    if (ec == http::error::need_more) {
      if (n == 0) return InvalidArgument("incomplete request body");
      ec = {};
    }
    if (ec == http::error::body_limit) return PayloadTooLarge("request body too large");
    if (ec) return InvalidArgument("malformed HTTP request body");
    used += n;
  }
  return ParsedRequestBytes{parser.release(), used};
}

StatusOr<ParsedResponseBytes> ParseResponseBytes(std::string_view bytes, size_t max_body_bytes) {
  std::optional<size_t> head_len = HeadLength(bytes);
  if (!head_len) return InvalidArgument("incomplete response head");
  if (Status s = CheckHeaderBlock(bytes.substr(0, *head_len)); !s.ok()) return Internal(s.message());
  http::response_parser<http::string_body> parser;
  parser.body_limit(max_body_bytes);
  boost::system::error_code ec;
  size_t used = parser.put(asio::buffer(bytes.data(), *head_len), ec);
  if (ec || !parser.is_header_done()) return Internal("malformed HTTP response");
  OMNI_RETURN_IF_ERROR(CheckResponseFraming(parser.get(), parser.chunked()));
  while (!parser.is_done()) {
    if (used >= bytes.size()) {
      // A body delimited by the close ends where the bytes end.
      parser.put_eof(ec);
      if (ec) return InvalidArgument("incomplete response body");
      break;
    }
    size_t n = parser.put(asio::buffer(bytes.data() + used, bytes.size() - used), ec);
    if (ec == http::error::need_more) {
      if (n == 0) return InvalidArgument("incomplete response body");
      ec = {};
    }
    if (ec == http::error::body_limit) return ResourceExhausted("response body too large");
    if (ec) return Internal("malformed HTTP response body");
    used += n;
  }
  ParsedResponseBytes out;
  out.status = static_cast<int>(parser.get().result_int());
  out.body = std::move(parser.get().body());
  out.consumed = used;
  return out;
}

}  // namespace omni::net_internal
