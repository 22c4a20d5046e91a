#include "storage/s3/s3_xml.h"

#include <charconv>
#include <cstdint>
#include <ctime>

#include "core/utf8.h"

namespace omni {
namespace {

// Decodes one reference body ("amp", "#65", "#x41"); false if unknown.
bool DecodeEntity(std::string_view name, std::string* out) {
  if (name == "amp") return out->push_back('&'), true;
  if (name == "lt") return out->push_back('<'), true;
  if (name == "gt") return out->push_back('>'), true;
  if (name == "quot") return out->push_back('"'), true;
  if (name == "apos") return out->push_back('\''), true;
  if (name.size() < 2 || name[0] != '#') return false;
  int base = 10;
  name.remove_prefix(1);
  if (name[0] == 'x' || name[0] == 'X') {
    base = 16;
    name.remove_prefix(1);
  }
  uint32_t cp = 0;
  auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), cp, base);
  if (ec != std::errc() || p != name.data() + name.size() || cp > 0x10FFFF) return false;
  AppendCodePoint(cp, out);
  return true;
}

std::optional<Clock::WallTime> FromTm(std::tm* tm) {
  time_t t = timegm(tm);
  if (t == static_cast<time_t>(-1)) return std::nullopt;
  return Clock::WallTime(std::chrono::seconds(t));
}

}  // namespace

std::string XmlDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '&') {
      size_t semi = text.find(';', i + 1);
      if (semi != std::string_view::npos && semi - i <= 10 && DecodeEntity(text.substr(i + 1, semi - i - 1), &out)) {
        i = semi;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::vector<std::string_view> XmlElements(std::string_view xml, std::string_view tag) {
  std::vector<std::string_view> out;
  const std::string open = "<" + std::string(tag);
  const std::string close = "</" + std::string(tag) + ">";
  size_t pos = 0;
  while ((pos = xml.find(open, pos)) != std::string_view::npos) {
    size_t after = pos + open.size();
    if (after >= xml.size()) break;
    char next = xml[after];
    if (next != '>' && next != ' ' && next != '/' && next != '\t' && next != '\n' && next != '\r') {
      pos = after;  // a longer tag name sharing this prefix (<Key> vs <KeyCount>)
      continue;
    }
    size_t gt = xml.find('>', after);
    if (gt == std::string_view::npos) break;
    if (xml[gt - 1] == '/') {  // <Tag/> or <Tag attr="x"/>
      out.emplace_back();
      pos = gt + 1;
      continue;
    }
    size_t end = xml.find(close, gt + 1);
    if (end == std::string_view::npos) break;
    out.push_back(xml.substr(gt + 1, end - gt - 1));
    pos = end + close.size();
  }
  return out;
}

std::optional<std::string> XmlText(std::string_view xml, std::string_view tag) {
  auto all = XmlElements(xml, tag);
  if (all.empty()) return std::nullopt;
  return XmlDecode(all.front());
}

std::optional<Clock::WallTime> ParseIso8601(std::string_view s) {
  std::tm tm{};
  std::string str(s);
  if (strptime(str.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return std::nullopt;
  return FromTm(&tm);
}

std::optional<Clock::WallTime> ParseHttpDate(std::string_view s) {
  std::tm tm{};
  std::string str(s);
  if (strptime(str.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm) == nullptr) return std::nullopt;
  return FromTm(&tm);
}

Status S3ErrorToStatus(int http_status, std::string_view body, std::string_view what) {
  const std::string code = XmlText(body, "Code").value_or("");
  std::string message = std::string(what) + ": HTTP " + std::to_string(http_status);
  if (!code.empty()) message += " " + code;
  if (auto m = XmlText(body, "Message"); m && !m->empty()) message += ": " + *m;

  StatusCode sc;
  if (code == "NoSuchKey" || code == "NoSuchBucket" || code == "NoSuchUpload") {
    sc = StatusCode::kNotFound;
  } else if (code == "AccessDenied" || code == "SignatureDoesNotMatch" || code == "InvalidAccessKeyId" ||
             code == "RequestTimeTooSkewed" || code == "ExpiredToken" || code == "InvalidToken") {
    sc = StatusCode::kPermissionDenied;
  } else if (code == "PreconditionFailed") {
    sc = StatusCode::kFailedPrecondition;
  } else if (code == "SlowDown" || code == "InternalError" || code == "ServiceUnavailable") {
    sc = StatusCode::kUnavailable;
  } else if (code == "RequestTimeout") {
    sc = StatusCode::kDeadlineExceeded;
  } else if (http_status == 404) {
    sc = StatusCode::kNotFound;
  } else if (http_status == 401 || http_status == 403) {
    sc = StatusCode::kPermissionDenied;
  } else if (http_status == 412) {
    sc = StatusCode::kFailedPrecondition;
  } else if (http_status == 409) {
    sc = StatusCode::kAlreadyExists;
  } else if (http_status == 408) {
    sc = StatusCode::kDeadlineExceeded;
  } else if (http_status == 429 || http_status >= 500) {
    sc = StatusCode::kUnavailable;
  } else {
    sc = StatusCode::kInvalidArgument;
  }
  Status st(sc, std::move(message));
  if (!code.empty()) st.WithErrorCode(code);
  return st;
}

}  // namespace omni
