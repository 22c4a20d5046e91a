#include "net/multipart.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <utility>

#include "core/ascii.h"
#include "net/http.h"

namespace omni {
namespace {

constexpr size_t kMaxBoundaryBytes = 70;  // RFC 2046 section 5.1.1
constexpr std::string_view kCrlf = "\r\n";

// Client text as an error message quotes it: at most 64 bytes, anything but
// printable ASCII (and the quote and backslash) escaped, so a message never
// carries a megabyte or a terminal escape back to the client or the log.
std::string Shown(std::string_view text) {
  constexpr size_t kShown = 64;
  std::string out = "'";
  for (char c : text.substr(0, kShown)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f || c == '\'' || c == '\\') {
      out += "\\x" + HexLower(&byte, 1);
    } else {
      out += c;
    }
  }
  out += "'";
  if (text.size() > kShown) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string ByteHex(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return "0x" + HexLower(&byte, 1);
}

Status Malformed(std::string why) {
  return InvalidArgument("invalid multipart/form-data body: " + std::move(why));
}

std::string PartLabel(size_t index) { return "part " + std::to_string(index + 1); }

bool IsOws(char c) { return c == ' ' || c == '\t'; }

// RFC 9110 section 5.6.2.
bool IsTchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// RFC 2046 section 5.1.1 `bchars`.
bool IsBchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("'()+_,-./:=? ").find(c) != std::string_view::npos;
}

// A control byte other than HTAB: never valid in a header value.
std::optional<char> FindControl(std::string_view s) {
  for (char c : s) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\t') || byte == 0x7f) return c;
  }
  return std::nullopt;
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && IsOws(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsOws(s.back())) s.remove_suffix(1);
  return s;
}

void SkipOws(std::string_view s, size_t* pos) {
  while (*pos < s.size() && IsOws(s[*pos])) ++*pos;
}

struct Parameter {
  std::string name;  // lower-cased
  std::string value;  // unquoted, escapes decoded
};

// A quoted-string (RFC 9110 section 5.6.4) starting at s[*pos] == '"';
// backslash escapes decoded. False if it does not end inside `s`.
bool ReadQuotedString(std::string_view s, size_t* pos, std::string* out) {
  for (size_t i = *pos + 1; i < s.size(); ++i) {
    if (s[i] == '"') {
      *pos = i + 1;
      return true;
    }
    if (s[i] == '\\') {
      if (++i == s.size()) return false;
    }
    *out += s[i];
  }
  return false;
}

// `*( OWS ";" OWS [ name OWS "=" OWS value ] )` after a media or disposition
// type. Values are quoted strings or, more leniently than a token, any run of
// bytes up to OWS, ';' or '"' (unquoted boundaries often hold '=' or '/').
// `where` names the header in messages.
StatusOr<std::vector<Parameter>> ParseParameters(std::string_view s, std::string_view where) {
  std::vector<Parameter> params;
  size_t pos = 0;
  while (true) {
    SkipOws(s, &pos);
    if (pos == s.size()) return params;
    if (s[pos] != ';') {
      return InvalidArgument(std::string(where) + ": expected ';' before " + Shown(s.substr(pos)));
    }
    ++pos;
    SkipOws(s, &pos);
    if (pos == s.size() || s[pos] == ';') continue;  // an empty parameter
    const size_t name_start = pos;
    while (pos < s.size() && IsTchar(s[pos])) ++pos;
    Parameter param;
    param.name.reserve(pos - name_start);
    for (char c : s.substr(name_start, pos - name_start)) param.name += LowerAscii(c);
    SkipOws(s, &pos);
    if (param.name.empty() || pos == s.size() || s[pos] != '=') {
      return InvalidArgument(std::string(where) + ": malformed parameter " + Shown(s.substr(name_start)));
    }
    ++pos;
    SkipOws(s, &pos);
    if (pos < s.size() && s[pos] == '"') {
      if (!ReadQuotedString(s, &pos, &param.value)) {
        return InvalidArgument(std::string(where) + ": unterminated quoted string in parameter " +
                               Shown(param.name));
      }
    } else {
      const size_t value_start = pos;
      while (pos < s.size() && !IsOws(s[pos]) && s[pos] != ';' && s[pos] != '"') ++pos;
      if (pos == value_start) {
        return InvalidArgument(std::string(where) + ": parameter " + Shown(param.name) + " has no value");
      }
      param.value = std::string(s.substr(value_start, pos - value_start));
    }
    params.push_back(std::move(param));
  }
}

// The one parameter called `name`, or nullptr; a second one is an error,
// since two parsers could each take a different one.
StatusOr<const Parameter*> UniqueParameter(const std::vector<Parameter>& params, std::string_view name,
                                           std::string_view where) {
  const Parameter* found = nullptr;
  for (const Parameter& p : params) {
    if (p.name != name) continue;
    if (found != nullptr) {
      return InvalidArgument(std::string(where) + " has more than one " + std::string(name) + " parameter");
    }
    found = &p;
  }
  return found;
}

Status ValidateBoundary(std::string_view boundary) {
  if (boundary.empty()) return InvalidArgument("multipart/form-data boundary is empty");
  if (boundary.size() > kMaxBoundaryBytes) {
    return InvalidArgument("multipart/form-data boundary is " + std::to_string(boundary.size()) +
                           " bytes long; RFC 2046 allows at most 70");
  }
  for (char c : boundary) {
    if (!IsBchar(c)) {
      return InvalidArgument("multipart/form-data boundary " + Shown(boundary) + " contains the byte " +
                             ByteHex(c) + ", which RFC 2046 does not allow");
    }
  }
  if (boundary.back() == ' ') {
    return InvalidArgument("multipart/form-data boundary " + Shown(boundary) + " ends with a space");
  }
  return Status::Ok();
}

StatusOr<std::string> BoundaryFromContentType(std::string_view content_type) {
  if (auto c = FindControl(content_type)) {
    return InvalidArgument("Content-Type contains the control byte " + ByteHex(*c));
  }
  const size_t semicolon = std::min(content_type.find(';'), content_type.size());
  const std::string_view media_type = TrimOws(content_type.substr(0, semicolon));
  if (!EqualsIgnoreCase(media_type, "multipart/form-data")) {
    return InvalidArgument("Content-Type " + Shown(media_type) + " is not multipart/form-data");
  }
  OMNI_ASSIGN_OR_RETURN(std::vector<Parameter> params,
                        ParseParameters(content_type.substr(semicolon), "Content-Type"));
  OMNI_ASSIGN_OR_RETURN(const Parameter* boundary, UniqueParameter(params, "boundary", "Content-Type"));
  if (boundary == nullptr) return InvalidArgument("Content-Type multipart/form-data has no boundary parameter");
  OMNI_RETURN_IF_ERROR(ValidateBoundary(boundary->value));
  return boundary->value;
}

// RFC 7578 section 4.2: `form-data; name="..."[; filename="..."]`.
Status ApplyContentDisposition(std::string_view value, size_t index, MultipartPart* part) {
  const std::string where = PartLabel(index) + " Content-Disposition";
  const size_t semicolon = std::min(value.find(';'), value.size());
  const std::string_view type = TrimOws(value.substr(0, semicolon));
  if (!EqualsIgnoreCase(type, "form-data")) {
    return Malformed(where + " type " + Shown(type) + " is not form-data");
  }
  auto params = ParseParameters(value.substr(semicolon), where);
  if (!params.ok()) return Malformed(params.status().message());
  auto name = UniqueParameter(*params, "name", where);
  if (!name.ok()) return Malformed(name.status().message());
  auto filename = UniqueParameter(*params, "filename", where);
  if (!filename.ok()) return Malformed(filename.status().message());
  if (*name == nullptr) return Malformed(where + " has no name parameter");
  if ((*name)->value.empty()) return Malformed(where + " has an empty name");
  part->name = (*name)->value;
  if (*filename != nullptr) part->filename = (*filename)->value;
  return Status::Ok();
}

// The part headers this parser acts on. Others (e.g. Content-Length, which
// some clients add) are ignored, as RFC 7578 section 4.8 allows.
struct PartHeaderState {
  bool has_disposition = false;
  bool has_content_type = false;
};

Status ApplyPartHeader(std::string_view line, size_t index, PartHeaderState* state, MultipartPart* part) {
  const std::string where = PartLabel(index);
  if (IsOws(line.front())) return Malformed(where + " uses obsolete header line folding");
  const size_t colon = line.find(':');
  const std::string_view name = line.substr(0, std::min(colon, line.size()));
  if (colon == std::string_view::npos || name.empty() || !std::all_of(name.begin(), name.end(), IsTchar)) {
    return Malformed(where + " has a malformed header line " + Shown(line));
  }
  const std::string_view value = TrimOws(line.substr(colon + 1));
  if (auto c = FindControl(value)) {
    return Malformed(where + " header " + Shown(name) + " contains the control byte " + ByteHex(*c));
  }
  if (EqualsIgnoreCase(name, "content-disposition")) {
    if (state->has_disposition) return Malformed(where + " has more than one Content-Disposition header");
    state->has_disposition = true;
    return ApplyContentDisposition(value, index, part);
  }
  if (EqualsIgnoreCase(name, "content-type")) {
    if (state->has_content_type) return Malformed(where + " has more than one Content-Type header");
    state->has_content_type = true;
    part->content_type = std::string(value);
    return Status::Ok();
  }
  if (EqualsIgnoreCase(name, "content-transfer-encoding") && !EqualsIgnoreCase(value, "binary") &&
      !EqualsIgnoreCase(value, "8bit") && !EqualsIgnoreCase(value, "7bit")) {
    return Malformed(where + " has Content-Transfer-Encoding " + Shown(value) +
                     "; only 7bit, 8bit and binary are supported");
  }
  return Status::Ok();
}

// The delimiters of one body: "--boundary" opens a line, "\r\n--boundary"
// ends a part's data (RFC 2046: the CRLF before a delimiter belongs to it).
class Delimiters {
 public:
  explicit Delimiters(std::string_view boundary)
      : delimiter_("\r\n--" + std::string(boundary)),
        searcher_(delimiter_.data(), delimiter_.data() + delimiter_.size()) {}
  // searcher_ points into delimiter_.
  Delimiters(const Delimiters&) = delete;
  Delimiters& operator=(const Delimiters&) = delete;

  // "--boundary".
  std::string_view dash_boundary() const { return std::string_view(delimiter_).substr(2); }

  // The offset of the next "\r\n--boundary" in `body` at or after `from`,
  // or npos.
  size_t Find(std::string_view body, size_t from) const {
    const char* end = body.data() + body.size();
    const char* found = searcher_(body.data() + from, end).first;
    return found == end ? std::string_view::npos : static_cast<size_t>(found - body.data());
  }

 private:
  std::string delimiter_;
  std::boyer_moore_horspool_searcher<const char*> searcher_;  // over delimiter_
};

// Reads the header block of part `index` that starts at body[start]; returns
// the offset of the part's data, just past the blank line.
StatusOr<size_t> ParsePartHeaders(std::string_view body, size_t start, size_t index, const Delimiters& delimiters,
                                  const MultipartLimits& limits, MultipartPart* part) {
  // Every line, blank line included, must end inside the window.
  const size_t window_end = start + std::min(limits.max_header_bytes, body.size() - start);
  const std::string_view window = body.substr(0, window_end);
  PartHeaderState state;
  size_t line_start = start;
  while (true) {
    const size_t eol = window.find(kCrlf, line_start);
    if (eol == std::string_view::npos) {
      if (window_end < body.size()) {
        return Malformed(PartLabel(index) + " header block is over " + std::to_string(limits.max_header_bytes) +
                         " bytes");
      }
      return Malformed("the body ends inside the header block of " + PartLabel(index) +
                       "; the closing delimiter is missing");
    }
    const std::string_view line = body.substr(line_start, eol - line_start);
    if (line.empty()) break;
    if (line.starts_with(delimiters.dash_boundary())) {
      return Malformed(PartLabel(index) + " ends before the blank line that closes its header block");
    }
    OMNI_RETURN_IF_ERROR(ApplyPartHeader(line, index, &state, part));
    line_start = eol + kCrlf.size();
  }
  if (!state.has_disposition) return Malformed(PartLabel(index) + " has no Content-Disposition header");
  return line_start + kCrlf.size();
}

enum class DelimiterKind { kPartFollows, kClose };

// Checks the rest of the delimiter line whose "--boundary" ends at body[pos]
// (RFC 2046: "--" closes; otherwise transport padding then CRLF). For
// kPartFollows, *next is where the part's headers start.
StatusOr<DelimiterKind> ReadDelimiterLine(std::string_view body, size_t pos, size_t* next) {
  if (body.substr(pos).starts_with("--")) return DelimiterKind::kClose;
  SkipOws(body, &pos);
  if (body.substr(pos).starts_with(kCrlf)) {
    *next = pos + kCrlf.size();
    return DelimiterKind::kPartFollows;
  }
  if (pos >= body.size() || body.substr(pos) == "\r") {
    return Malformed("the body ends after a delimiter; the closing delimiter is missing");
  }
  return Malformed("a delimiter line goes on with " + Shown(body.substr(pos, 16)) +
                   " (the boundary must not begin a line inside a part)");
}

}  // namespace

StatusOr<std::vector<MultipartPart>> ParseMultipartFormData(std::string_view content_type, std::string_view body,
                                                            const MultipartLimits& limits) {
  OMNI_ASSIGN_OR_RETURN(const std::string boundary, BoundaryFromContentType(content_type));
  const Delimiters delimiters(boundary);
  // The first delimiter may open the body; otherwise it follows a preamble.
  size_t pos = 0;
  if (!body.starts_with(delimiters.dash_boundary())) {
    pos = delimiters.Find(body, 0);
    if (pos == std::string_view::npos) {
      return Malformed("no delimiter line '--' + boundary " + Shown(boundary) + " found");
    }
    pos += kCrlf.size();
  }
  std::vector<MultipartPart> parts;
  while (true) {
    size_t headers_start = 0;
    OMNI_ASSIGN_OR_RETURN(const DelimiterKind kind,
                          ReadDelimiterLine(body, pos + delimiters.dash_boundary().size(), &headers_start));
    if (kind == DelimiterKind::kClose) return parts;  // the epilogue is ignored
    if (parts.size() == limits.max_parts) {
      return Malformed("more than " + std::to_string(limits.max_parts) + " parts");
    }
    const size_t index = parts.size();
    MultipartPart part;
    OMNI_ASSIGN_OR_RETURN(const size_t data_start,
                          ParsePartHeaders(body, headers_start, index, delimiters, limits, &part));
    const size_t data_end = delimiters.Find(body, data_start);
    if (data_end == std::string_view::npos) {
      return Malformed("the body ends inside " + PartLabel(index) + " (" + Shown(part.name) +
                       "); the closing delimiter is missing");
    }
    part.data = std::string(body.substr(data_start, data_end - data_start));
    parts.push_back(std::move(part));
    pos = data_end + kCrlf.size();
  }
}

const MultipartPart* FindPart(const std::vector<MultipartPart>& parts, std::string_view name) {
  for (const MultipartPart& part : parts) {
    if (part.name == name) return &part;
  }
  return nullptr;
}

}  // namespace omni
