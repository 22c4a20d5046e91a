#include "case_file.h"

#include <charconv>
#include <utility>

namespace omni::hostile {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Words(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

StatusOr<bool> ParseBool(std::string_view v, std::string_view key) {
  if (v == "true") return true;
  if (v == "false") return false;
  return InvalidArgument(std::string(key) + ": expected true or false, got '" + std::string(v) + "'");
}

StatusOr<size_t> ParseCount(std::string_view v, std::string_view what) {
  size_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty()) {
    return InvalidArgument(std::string(what) + ": expected a count, got '" + std::string(v) + "'");
  }
  return n;
}

// "400", "4xx".
StatusOr<StatusPattern> ParseStatusPattern(std::string_view w) {
  if (w.size() == 3 && w[0] >= '1' && w[0] <= '5' && w.substr(1) == "xx") {
    return StatusPattern{.code = (w[0] - '0') * 100, .any_of_class = true};
  }
  OMNI_ASSIGN_OR_RETURN(size_t code, ParseCount(w, "expect-status"));
  if (code < 100 || code > 599) return InvalidArgument("expect-status: " + std::string(w) + " is not a status");
  return StatusPattern{.code = static_cast<int>(code)};
}

Status ApplyDirective(std::string_view key, std::string_view value, HostileCase* c) {
  if (key == "servers") {
    for (std::string_view w : Words(value)) {
      if (w == "llm") {
        c->servers.push_back(Server::kLlm);
      } else if (w == "gateway") {
        c->servers.push_back(Server::kGateway);
      } else {
        return InvalidArgument("servers: unknown server '" + std::string(w) + "' (llm, gateway)");
      }
    }
  } else if (key == "expect-status") {
    for (std::string_view w : Words(value)) {
      OMNI_ASSIGN_OR_RETURN(StatusPattern p, ParseStatusPattern(w));
      c->status.push_back(p);
    }
  } else if (key == "expect-responses") {
    OMNI_ASSIGN_OR_RETURN(size_t n, ParseCount(value, key));
    c->responses = static_cast<int>(n);
  } else if (key == "expect-close") {
    OMNI_ASSIGN_OR_RETURN(c->close, ParseBool(value, key));
  } else if (key == "half-close") {
    OMNI_ASSIGN_OR_RETURN(c->half_close, ParseBool(value, key));
  } else if (key == "expect-body-contains") {
    c->body_contains.emplace_back(value);
  } else if (key == "expect-body-not-contains") {
    c->body_not_contains.emplace_back(value);
  } else if (key == "expect-body-max-bytes") {
    OMNI_ASSIGN_OR_RETURN(size_t n, ParseCount(value, key));
    c->body_max_bytes = n;
  } else if (key != "why") {
    return InvalidArgument("unknown directive '" + std::string(key) + "'");
  }
  return Status::Ok();
}

// A directive line is "# key: value" with key in [a-z-]; other "#" lines
// are prose.
bool SplitDirective(std::string_view line, std::string_view* key, std::string_view* value) {
  line.remove_prefix(1);
  line = Trim(line);
  size_t colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  for (char ch : line.substr(0, colon)) {
    if (!((ch >= 'a' && ch <= 'z') || ch == '-')) return false;
  }
  *key = line.substr(0, colon);
  *value = Trim(line.substr(colon + 1));
  return true;
}

int HexValue(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

// The expansion of `text` without {{LENGTH}}; the offsets where it stood go
// to `length_at`.
Status Expand(std::string_view text, const PayloadVars& vars, std::string* out, std::vector<size_t>* length_at) {
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '\n' || ch == '\r') continue;  // the file's own line breaks
    if (ch == '\\') {
      if (++i == text.size()) return InvalidArgument("a lone '\\' ends the payload");
      switch (text[i]) {
        case 'r': *out += '\r'; break;
        case 'n': *out += '\n'; break;
        case 't': *out += '\t'; break;
        case '0': *out += '\0'; break;
        case '\\': *out += '\\'; break;
        case '{': *out += '{'; break;
        case 'x': {
          int hi = i + 1 < text.size() ? HexValue(text[i + 1]) : -1;
          int lo = i + 2 < text.size() ? HexValue(text[i + 2]) : -1;
          if (hi < 0 || lo < 0) return InvalidArgument("\\x needs two hex digits");
          *out += static_cast<char>(hi * 16 + lo);
          i += 2;
          break;
        }
        default:
          return InvalidArgument(std::string("unknown escape '\\") + text[i] + "' (\\r \\n \\t \\0 \\\\ \\{ \\xHH)");
      }
      continue;
    }
    if (ch == '{' && i + 1 < text.size() && text[i + 1] == '{') {
      size_t end = text.find("}}", i + 2);
      if (end == std::string_view::npos) return InvalidArgument("unterminated '{{'");
      std::string_view ph = text.substr(i + 2, end - i - 2);
      i = end + 1;
      if (ph == "HOST") {
        *out += vars.host;
      } else if (ph == "PORT") {
        *out += std::to_string(vars.port);
      } else if (ph == "STORE") {
        *out += vars.store;
      } else if (ph == "LENGTH") {
        length_at->push_back(out->size());
      } else if (ph.starts_with("REPEAT:")) {
        std::string_view rest = ph.substr(7);
        size_t colon = rest.find(':');
        if (colon == std::string_view::npos) return InvalidArgument("{{REPEAT:N:TEXT}} needs N and TEXT");
        OMNI_ASSIGN_OR_RETURN(size_t n, ParseCount(rest.substr(0, colon), "REPEAT"));
        std::string unit;
        std::vector<size_t> inner_length;
        OMNI_RETURN_IF_ERROR(Expand(rest.substr(colon + 1), vars, &unit, &inner_length));
        if (!inner_length.empty()) return InvalidArgument("{{LENGTH}} inside {{REPEAT}}");
        out->reserve(out->size() + n * unit.size());
        for (size_t k = 0; k < n; ++k) *out += unit;
      } else {
        return InvalidArgument("unknown placeholder {{" + std::string(ph) + "}}");
      }
      continue;
    }
    *out += ch;
  }
  return Status::Ok();
}

}  // namespace

std::string_view ServerName(Server s) { return s == Server::kLlm ? "llm" : "gateway"; }

StatusOr<HostileCase> ParseCaseFile(std::string_view text, std::string name) {
  HostileCase c;
  c.name = std::move(name);
  size_t pos = 0;
  while (pos < text.size() && text[pos] == '#') {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    std::string_view key, value;
    if (SplitDirective(line, &key, &value)) {
      if (Status s = ApplyDirective(key, value, &c); !s.ok()) {
        return InvalidArgument(c.name + ": " + s.message());
      }
    }
    pos = eol + 1;
  }
  if (pos < text.size()) c.payload = std::string(text.substr(pos));
  if (c.servers.empty()) return InvalidArgument(c.name + ": no '# servers:' line");
  if (c.status.empty()) return InvalidArgument(c.name + ": no '# expect-status:' line");
  if (c.payload.empty()) return InvalidArgument(c.name + ": no request after the directives");
  return c;
}

StatusOr<std::string> ExpandPayload(std::string_view payload, const PayloadVars& vars) {
  std::string out;
  std::vector<size_t> length_at;
  OMNI_RETURN_IF_ERROR(Expand(payload, vars, &out, &length_at));
  if (!length_at.empty()) {
    size_t head_end = out.find("\r\n\r\n");
    if (head_end == std::string::npos) return InvalidArgument("{{LENGTH}} in a request without an empty line");
    if (length_at.back() > head_end) return InvalidArgument("{{LENGTH}} after the first request's head");
    const std::string length = std::to_string(out.size() - head_end - 4);
    for (auto it = length_at.rbegin(); it != length_at.rend(); ++it) out.insert(*it, length);
  }
  return out;
}

}  // namespace omni::hostile
