#include "net/http.h"

#include <algorithm>

#include "core/ascii.h"

namespace omni {
std::string_view HttpMethodName(HttpMethod method) {
  switch (method) {
    case HttpMethod::kGet: return "GET";
    case HttpMethod::kHead: return "HEAD";
    case HttpMethod::kPost: return "POST";
    case HttpMethod::kPut: return "PUT";
    case HttpMethod::kDelete: return "DELETE";
    case HttpMethod::kPatch: return "PATCH";
    case HttpMethod::kOptions: return "OPTIONS";
    case HttpMethod::kUnknown: break;
  }
  return "UNKNOWN";
}

HttpMethod ParseHttpMethod(std::string_view name) {
  for (HttpMethod m : {HttpMethod::kGet, HttpMethod::kHead, HttpMethod::kPost, HttpMethod::kPut,
                       HttpMethod::kDelete, HttpMethod::kPatch, HttpMethod::kOptions}) {
    if (name == HttpMethodName(m)) return m;
  }
  return HttpMethod::kUnknown;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (LowerAscii(a[i]) != LowerAscii(b[i])) return false;
  }
  return true;
}

std::optional<std::string_view> HttpHeaders::Get(std::string_view name) const {
  for (const auto& [k, v] : entries_) {
    if (EqualsIgnoreCase(k, name)) return std::string_view(v);
  }
  return std::nullopt;
}

std::string_view HttpHeaders::GetOr(std::string_view name, std::string_view fallback) const {
  auto v = Get(name);
  return v ? *v : fallback;
}

void HttpHeaders::Set(std::string_view name, std::string_view value) {
  Remove(name);
  Add(name, value);
}

void HttpHeaders::Add(std::string_view name, std::string_view value) {
  entries_.emplace_back(std::string(name), std::string(value));
}

void HttpHeaders::Remove(std::string_view name) {
  std::erase_if(entries_, [&](const Entry& e) { return EqualsIgnoreCase(e.first, name); });
}

std::optional<std::string_view> HttpRequest::QueryParam(std::string_view key) const {
  for (const auto& [k, v] : query) {
    if (k == key) return std::string_view(v);
  }
  return std::nullopt;
}

HttpResponse JsonResponse(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.headers.Set("content-type", "application/json");
  r.body = std::move(body);
  return r;
}

HttpResponse ErrorResponse(const Status& status) {
  OMNI_CHECK(!status.ok()) << "ErrorResponse needs an error status";
  return JsonResponse(status.http_status(), status.ToOpenAiJson());
}

std::string PercentDecode(std::string_view s, bool plus_as_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%' && i + 2 < s.size()) {
      int hi = HexDigitValue(s[i + 1]);
      int lo = HexDigitValue(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += (plus_as_space && c == '+') ? ' ' : c;
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> ParseQueryString(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (part.empty()) continue;
    size_t eq = part.find('=');
    std::string_view key = part.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1);
    out.emplace_back(PercentDecode(key, true), PercentDecode(value, true));
  }
  return out;
}

void SplitTarget(std::string_view target, std::string* path,
                 std::vector<std::pair<std::string, std::string>>* query) {
  size_t q = target.find('?');
  // A fragment is never sent by conforming clients; drop it if one is.
  size_t hash = target.find('#');
  std::string_view before_hash = target.substr(0, hash);
  *path = std::string(before_hash.substr(0, q));
  query->clear();
  if (q != std::string_view::npos && q < before_hash.size()) {
    *query = ParseQueryString(before_hash.substr(q + 1));
  }
}

}  // namespace omni
