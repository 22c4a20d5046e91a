// Raw HTTP/1.1 over TCP for the hostile corpus: the request goes out as the
// exact bytes given (most are malformed, so no HTTP library could send
// them), and what comes back is split into responses by a small parser that
// knows Content-Length, chunked bodies and bodies ended by the close.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace omni::hostile {

struct RawResponse {
  int status = 0;
  std::string status_line;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, in order
  std::string body;                                          // de-chunked

  // The first value of `name` (lower-case), or "" when absent.
  std::string Header(std::string_view name) const;
  bool ConnectionClose() const;
};

struct ParsedResponses {
  std::vector<RawResponse> interim;  // 1xx, e.g. 100 Continue
  std::vector<RawResponse> final;    // complete responses, in order
  size_t pending_bytes = 0;          // bytes after the last complete response (a partial one)
  std::string error;                 // set when the bytes are not HTTP/1.x responses
};

// Splits `bytes` into responses. `eof`: the server closed, so a response
// without Content-Length or chunked framing ends here.
ParsedResponses ParseResponses(std::string_view bytes, bool eof);

struct ExchangeOptions {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string_view request;
  bool half_close = false;  // shutdown(SHUT_WR) once the bytes are sent
  // Reading stops when this many final responses are complete and the last
  // does not say `connection: close`; when it does, reading goes on until
  // the server closes, so any response that should not exist is seen.
  int responses = 1;
  // After the responses are complete and the last one keeps the connection
  // alive, read this much longer (0: stop at once). Cases that expect a close
  // set it, so a server that goes on to answer smuggled bytes is caught.
  std::chrono::milliseconds grace{0};
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
};

struct Exchange {
  std::string received;
  bool peer_closed = false;  // FIN or RST from the server
  bool reset = false;        // RST (recv said ECONNRESET)
  bool timed_out = false;    // `timeout` passed before reading could stop
  std::string send_error;    // the send failed part-way (e.g. the server closed early)
  std::string connect_error;
  ParsedResponses parsed;
};

// One fresh connection: connect, send, read as ExchangeOptions says. Never
// throws; socket errors land in the result.
Exchange Replay(const ExchangeOptions& options);

// `s` with control bytes and non-ASCII as \r, \n, \xHH, cut to `max` bytes
// (with a note of how much was left out), for failure messages.
std::string Printable(std::string_view s, size_t max = 2048);

}  // namespace omni::hostile
