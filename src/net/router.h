// Maps (method, path) to a route. Pure code, so routing rules are tested
// without sockets; HttpServer owns one.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "net/http.h"

namespace omni {

// Looks routes up by exact path first, then by the longest matching prefix
// pattern ("/v1/*" matches "/v1/" and everything below it). A path that
// matches but not for this method is 405, a path that matches nothing is 404.
// `Value` is what the caller attaches to a route (the server: its handler).
// Not thread-safe: fill it before serving, then only call Find.
template <typename Value>
class Router {
 public:
  struct Match {
    const Value* value = nullptr;
    std::string_view pattern;  // the route as registered, used as a metrics label
  };

  // `pattern` is an exact path, or a prefix ending in "/*". Registering the
  // same (method, pattern) twice is a bug.
  void Add(HttpMethod method, std::string pattern, Value value) {
    bool is_prefix = pattern.size() >= 2 && pattern.ends_with("/*");
    auto& table = is_prefix ? prefixes_ : exact_;
    auto& methods = table[pattern];
    OMNI_CHECK(methods.find(method) == methods.end())
        << "route registered twice: " << HttpMethodName(method) << " " << pattern;
    methods.emplace(method, std::move(value));
  }

  StatusOr<Match> Find(HttpMethod method, std::string_view path) const {
    auto exact = exact_.find(std::string(path));
    if (exact != exact_.end()) return Pick(exact->first, exact->second, method, path);
    const typename decltype(prefixes_)::value_type* best = nullptr;
    for (const auto& entry : prefixes_) {
      std::string_view prefix = std::string_view(entry.first).substr(0, entry.first.size() - 1);  // keeps the '/'
      if (path.starts_with(prefix) && (best == nullptr || entry.first.size() > best->first.size())) best = &entry;
    }
    if (best != nullptr) return Pick(best->first, best->second, method, path);
    return NotFound("no route for " + std::string(path)).WithErrorCode("not_found");
  }

 private:
  using MethodMap = std::map<HttpMethod, Value>;

  static StatusOr<Match> Pick(const std::string& pattern, const MethodMap& methods, HttpMethod method,
                              std::string_view path) {
    auto it = methods.find(method);
    // HEAD is GET without a body (RFC 9110 section 9.3.2).
    if (it == methods.end() && method == HttpMethod::kHead) it = methods.find(HttpMethod::kGet);
    if (it == methods.end()) {
      std::string allowed;
      for (const auto& [m, v] : methods) allowed += (allowed.empty() ? "" : ", ") + std::string(HttpMethodName(m));
      return Status(StatusCode::kMethodNotAllowed,
                    std::string(HttpMethodName(method)) + " is not allowed on " + std::string(path) +
                        " (allowed: " + allowed + ")");
    }
    return Match{&it->second, pattern};
  }

  std::map<std::string, MethodMap> exact_;
  std::map<std::string, MethodMap> prefixes_;
};

}  // namespace omni
