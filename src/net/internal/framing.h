// HTTP/1.1 message framing as RFC 9112 requires it, for the server's request
// reader and the client's response reader: the checks Beast's parser leaves
// to its caller. Beast takes an unknown transfer coding as "no body" (so the
// bytes after the head would run as the next request), accepts a
// Transfer-Encoding that arrives before a Content-Length, and unfolds
// obsolete line folding silently. Private to src/net.
//
// The order is the same everywhere: ReadHeaderBlock collects the head in
// the buffer, CheckHeaderBlock looks at its raw bytes, Beast parses it, then
// CheckRequestFraming / CheckResponseFraming look at the parsed fields.
// ParseRequestBytes runs the server's sequence without a socket (fuzzing,
// tests).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "net/internal/asio.h"

namespace omni::net_internal {

// The length of the head (start line, fields and the empty line that ends
// them) at the start of `bytes`, or nullopt while it is incomplete. A bare
// LF ends it early, for CheckHeaderBlock to refuse at once. Empty
// lines before the start line are not skipped (RFC 9112 section 2.2 lets a
// server skip them; Beast refuses them, and so do we, consistently).
// `scanned`: a prefix already known to hold no end (a reader passes what it
// saw last time, so a head trickling in a byte at a time costs linear work,
// not quadratic).
std::optional<size_t> HeadLength(std::string_view bytes, size_t scanned = 0);

// The raw head: every line ends in CRLF (a bare CR or LF is refused) and no
// line after the start line begins with SP or HTAB (obs-fold, or whitespace
// before the first field; section 5.2 lets a server refuse both). NUL is
// refused anywhere. InvalidArgument naming what was wrong.
Status CheckHeaderBlock(std::string_view head);

// After the request head was parsed (`parser_chunked`: what Beast's parser
// concluded): one Host (none only in HTTP/1.0), and a Transfer-Encoding must be one field "chunked" (anything
// else is 501 Unimplemented: this server decodes no other coding), must
// not come with a Content-Length (400), and must not be in an HTTP/1.0
// request (400, section 6.1).
Status CheckRequestFraming(const http::request_header<>& head, bool parser_chunked);
// The same for a response, as a client reads it, plus a status in 100-599;
// every failure is Internal
// (the upstream's fault), and the connection must not be reused.
Status CheckResponseFraming(const http::response_header<>& head, bool parser_chunked);

// Reads into `buffer` until it holds a whole head or `limit` bytes without
// one. Returns the head's length; errors: the read's error code (eof with
// `*got_bytes` telling whether anything had arrived), or
// http::error::header_limit.
template <class Stream>
asio::awaitable<std::pair<boost::system::error_code, size_t>> ReadHeaderBlock(Stream& stream, beast::flat_buffer& buffer,
                                                                            size_t limit) {
  for (size_t scanned = 0;; ) {
    auto data = buffer.cdata();
    std::string_view bytes(static_cast<const char*>(data.data()), data.size());
    if (auto n = HeadLength(bytes, scanned)) co_return std::pair{boost::system::error_code{}, *n};
    scanned = bytes.size();
    if (bytes.size() >= limit) co_return std::pair{boost::system::error_code(http::error::header_limit), size_t{0}};
    const size_t want = std::min<size_t>(16 * 1024, limit - bytes.size() + 4);
    auto [ec, n] = co_await stream.async_read_some(buffer.prepare(want), kNoThrow);
    if (ec) co_return std::pair{ec, size_t{0}};
    buffer.commit(n);
  }
}

struct ParsedRequestBytes {
  http::request<http::string_body> message;
  size_t consumed = 0;  // bytes of `bytes` the request took
};

// One request from the start of `bytes`, through exactly the checks the
// server applies, with the same limits. Errors: InvalidArgument (malformed,
// or incomplete: the server would wait for more), Unimplemented (a transfer
// coding other than chunked), PayloadTooLarge.
StatusOr<ParsedRequestBytes> ParseRequestBytes(std::string_view bytes, size_t max_header_bytes, size_t max_body_bytes);

struct ParsedResponseBytes {
  int status = 0;
  std::string body;  // de-chunked
  size_t consumed = 0;
};

// One response from the start of `bytes` through the client's checks, for
// fuzzing and tests. Errors: Internal (bad framing, as the client reports
// it), InvalidArgument (incomplete), ResourceExhausted (over max_body_bytes).
StatusOr<ParsedResponseBytes> ParseResponseBytes(std::string_view bytes, size_t max_body_bytes);

}  // namespace omni::net_internal
