// One hostile request and what a correct server answers to it, read from a
// tests/hostile/cases/NNN_name.http file. The format is in
// tests/hostile/README.md; in short: `# key: value` directives, then the
// request as escaped text in which the file's own line breaks mean nothing
// and every byte that matters is spelt out (`\r\n`, `\xHH`), so CR and LF
// stay exact whatever an editor or git does to line endings.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace omni::hostile {

enum class Server { kLlm, kGateway };

std::string_view ServerName(Server s);

// A status code a response may have: `code` exactly, or any code of the class
// when `code` is 100, 200, ... 500 and `any_of_class` is set ("4xx").
struct StatusPattern {
  int code = 0;
  bool any_of_class = false;

  bool Matches(int status) const { return any_of_class ? status / 100 == code / 100 : status == code; }
};

struct HostileCase {
  std::string name;  // the file's stem, e.g. "042_te_identity_smuggle"
  std::vector<Server> servers;
  std::vector<StatusPattern> status;  // every response must match one of these
  int responses = 1;                  // exactly this many final (non-1xx) responses
  bool close = false;                 // `connection: close` on the last response, then the server closes
  bool half_close = false;            // the client shuts down its write side after sending
  std::vector<std::string> body_contains;      // in the first response's body
  std::vector<std::string> body_not_contains;  // anywhere in the bytes that came back
  std::optional<size_t> body_max_bytes;        // the first response's body
  std::string payload;                         // escaped; see ExpandPayload
};

// Parses a case file. Unknown directives are errors, so a misspelt
// expectation cannot silently check nothing.
StatusOr<HostileCase> ParseCaseFile(std::string_view text, std::string name);

// Values for the payload's placeholders, known once the servers run.
struct PayloadVars {
  std::string host;   // {{HOST}}: the address the servers listen on
  int port = 0;       // {{PORT}}: the port of the server under test
  std::string store;  // {{STORE}}: the llm server's --store directory, no trailing slash
};

// The request bytes: drops the file's line breaks, decodes the escapes (a
// backslash before r n t 0 { xHH or itself), and replaces {{HOST}},
// {{PORT}}, {{STORE}}, {{REPEAT:N:TEXT}} (TEXT, itself escaped, N times)
// and {{LENGTH}} (the number of bytes after the first CRLFCRLF, so a
// body's Content-Length stays right whatever the other placeholders
// expand to).
StatusOr<std::string> ExpandPayload(std::string_view payload, const PayloadVars& vars);

}  // namespace omni::hostile
