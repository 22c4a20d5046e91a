#include "storage/url_fetch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include <fmt/core.h>

#include "core/log.h"
#include "storage/fs_io.h"
#include "storage/path_confine.h"

namespace omni {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Error bodies are read this far, for the debug log only.
constexpr size_t kMaxErrorBodyBytes = 4096;

// "<Code>AccessDenied</Code>" -> "AccessDenied" from an S3 XML error body.
std::string_view XmlElement(std::string_view body, std::string_view name) {
  std::string open = fmt::format("<{}>", name);
  std::string close = fmt::format("</{}>", name);
  size_t begin = body.find(open);
  if (begin == std::string_view::npos) return {};
  begin += open.size();
  size_t end = body.find(close, begin);
  if (end == std::string_view::npos) return {};
  return body.substr(begin, std::min<size_t>(end - begin, 200));
}

std::string CouldNotFetch(std::string_view url, std::string_view why) {
  return fmt::format("could not fetch {}: {}", UrlForDisplay(url), why);
}

// The Status of a non-2xx answer to `method` on `url`. The body is the
// other side's bytes: the client-facing message never quotes it.
Status HttpError(std::string_view method, std::string_view url, int status, std::string_view body) {
  std::string_view code = XmlElement(body, "Code");
  if (!code.empty()) {
    OMNI_LOG(kDebug, "{} {} answered HTTP {}: {} ({})", method, UrlForDisplay(url), status, code,
             XmlElement(body, "Message"));
  }
  std::string text = CouldNotFetch(url, fmt::format("the server answered HTTP {}", status));
  if (status == 401 || status == 403) {
    return PermissionDenied(text + "; the URL may have expired or been altered");
  }
  if (status == 404) return NotFound(std::move(text));
  if (status == 408 || status == 429 || status >= 500) return Unavailable(std::move(text));
  if (status == 400 || status == 416) return InvalidArgument(std::move(text));
  return Status(StatusCodeFromHttp(status), std::move(text));
}

// A failed exchange with an address the policy allowed. Refused, reset,
// timed out and "not HTTP" all read the same (see url_fetch.h).
Status TransportError(std::string_view url, const FetchTarget& target, const Status& detail) {
  OMNI_LOG(kDebug, "fetch {} ({}): {}", UrlForDisplay(url), target.address.ToString(), detail.ToString());
  return Unavailable(CouldNotFetch(url, "no valid HTTP response from " + target.url.HostPort()));
}

Status TooLarge(std::string_view url, std::string_view size, size_t max_bytes) {
  return PayloadTooLarge(fmt::format("object at {} is {} bytes, over the limit of {} bytes", UrlForDisplay(url),
                                     size, max_bytes));
}

bool IsRedirect(int status) { return status == 301 || status == 302 || status == 303 || status == 307 || status == 308; }

// A Location header resolved against the URL it came from (RFC 3986 section
// 5.2, for the forms servers send: absolute, "//authority...", "/path",
// "?query" and a relative path). The result is checked by the policy again.
std::string ResolveRedirect(std::string_view base, std::string_view location) {
  location = location.substr(0, location.find('#'));
  size_t colon = location.find(':');
  if (colon != std::string_view::npos && location.find_first_of("/?") > colon) return std::string(location);
  size_t scheme_end = base.find("://");
  std::string_view scheme = base.substr(0, scheme_end);
  if (location.starts_with("//")) return fmt::format("{}:{}", scheme, location);
  size_t path_start = base.find_first_of("/?", scheme_end + 3);
  std::string_view origin = base.substr(0, path_start);
  std::string_view path = path_start == std::string_view::npos ? "/" : base.substr(path_start);
  path = path.substr(0, path.find('?'));
  if (path.empty()) path = "/";
  if (location.starts_with('/')) return fmt::format("{}{}", origin, location);
  if (location.empty() || location.starts_with('?')) return fmt::format("{}{}{}", origin, path, location);
  return fmt::format("{}{}{}", origin, path.substr(0, path.rfind('/') + 1), location);
}

// The policy with its lookup bounded by what is left of the fetch's time.
FetchPolicy WithinDeadline(const FetchPolicy& policy, SteadyClock::time_point deadline) {
  FetchPolicy bounded = policy;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
  bounded.resolve_timeout = std::clamp(left, std::chrono::milliseconds(1), policy.resolve_timeout);
  return bounded;
}

struct HopResult {
  int status = 0;
  std::string location;  // of a redirect
  std::string body;      // the object, or the start of an error body
};

// One GET of a checked target; redirects are returned, not followed.
StatusOr<HopResult> GetOnce(std::string_view url, const FetchTarget& target, const FetchOptions& options,
                            SteadyClock::time_point deadline, HttpClient* client) {
  HopResult hop;
  std::string too_large;  // the size to report, once over the limit
  bool redirected = false;
  HttpStreamCallbacks callbacks;
  callbacks.on_headers = [&](int s, const HttpHeaders& headers) {
    hop.status = s;
    if (IsRedirect(s) && headers.Has("location")) {
      hop.location = std::string(headers.GetOr("location", ""));
      redirected = true;
      return false;  // its body is of no use
    }
    if (s < 200 || s >= 300) return true;
    std::string_view length = headers.GetOr("content-length", "");
    bool numeric = !length.empty() && length.size() <= 19 && length.find_first_not_of("0123456789") == std::string_view::npos;
    if (numeric && std::stoull(std::string(length)) > options.max_bytes) {
      too_large = std::string(length);
      return false;
    }
    return true;
  };
  callbacks.on_body = [&](std::string_view chunk) {
    if (hop.status < 200 || hop.status >= 300) {
      hop.body.append(chunk.substr(0, kMaxErrorBodyBytes - std::min(hop.body.size(), kMaxErrorBodyBytes)));
      return true;
    }
    if (hop.body.size() + chunk.size() > options.max_bytes) {
      too_large = fmt::format("more than {}", options.max_bytes);
      return false;
    }
    hop.body.append(chunk);
    return true;
  };
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
  HttpClientRequest request{.method = HttpMethod::kGet, .url = std::string(url),
                            .timeout = std::max(left, std::chrono::milliseconds(1)),
                            .connect_address = target.address.ToString()};
  StatusOr<int> result = client->Stream(request, callbacks);
  if (!too_large.empty()) return TooLarge(url, too_large, options.max_bytes);
  if (redirected) return hop;
  if (!result.ok()) return TransportError(url, target, result.status());
  return hop;
}

StatusOr<std::string> FetchHttp(std::string_view url, const FetchOptions& options, HttpClient* client) {
  const SteadyClock::time_point deadline = SteadyClock::now() + options.timeout;
  std::string current(url);
  for (int redirects = 0;; ++redirects) {
    StatusOr<FetchTarget> target = CheckFetchTarget(current, WithinDeadline(options.policy, deadline));
    if (!target.ok()) {
      if (redirects == 0) return target.status();
      const Status refused = target.status();
      std::string_view why = refused.message();
      std::string hop_prefix = fmt::format("fetching {} is not allowed: ", UrlForDisplay(current));
      if (why.starts_with(hop_prefix)) why.remove_prefix(hop_prefix.size());
      return Status(refused.code(), fmt::format("fetching {} is not allowed: it redirects to {}: {}",
                                                        UrlForDisplay(url), UrlForDisplay(current), why));
    }
    if (client == nullptr) return InvalidArgument(CouldNotFetch(url, "this server has no HTTP client"));
    OMNI_ASSIGN_OR_RETURN(HopResult hop, GetOnce(current, *target, options, deadline, client));
    if (!hop.location.empty()) {
      if (redirects >= options.policy.max_redirects) {
        return InvalidArgument(CouldNotFetch(url, fmt::format("more than {} redirects", options.policy.max_redirects)));
      }
      current = ResolveRedirect(current, hop.location);
      continue;
    }
    if (hop.status < 200 || hop.status >= 300) return HttpError("GET", current, hop.status, hop.body);
    return std::move(hop.body);
  }
}

StatusOr<std::string> FetchFile(std::string_view url, const FetchOptions& options) {
  OMNI_ASSIGN_OR_RETURN(std::string rel, ConfinedPathOfFileUrl(url, options.file_root));
  OMNI_ASSIGN_OR_RETURN(UniqueFd root, OpenRootDir(options.file_root));
  OMNI_ASSIGN_OR_RETURN(ConfinedFile file, OpenFileBeneath(root.get(), rel));
  uint64_t size = static_cast<uint64_t>(file.st.st_size);
  if (size > options.max_bytes) return TooLarge(url, std::to_string(size), options.max_bytes);
  std::string bytes;
  OMNI_RETURN_IF_ERROR(ReadAt(file.file.get(), 0, size, &bytes, rel));
  return bytes;
}

Status PutHttp(std::string_view url, std::string_view data, const PutUrlOptions& options, HttpClient* client) {
  const SteadyClock::time_point deadline = SteadyClock::now() + options.timeout;
  OMNI_ASSIGN_OR_RETURN(FetchTarget target, CheckFetchTarget(url, WithinDeadline(options.policy, deadline)));
  if (client == nullptr) return InvalidArgument(CouldNotFetch(url, "this server has no HTTP client"));
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
  HttpClientRequest request{.method = HttpMethod::kPut, .url = std::string(url), .body = std::string(data),
                            .timeout = std::max(left, std::chrono::milliseconds(1)),
                            .connect_address = target.address.ToString()};
  request.headers.Set("content-type", options.content_type);
  StatusOr<HttpClientResponse> response = client->Request(request);
  if (!response.ok()) return TransportError(url, target, response.status());
  if (response->status < 200 || response->status >= 300) {
    return HttpError("PUT", url, response->status, std::string_view(response->body).substr(0, kMaxErrorBodyBytes));
  }
  return Status::Ok();
}

Status PutFile(std::string_view url, std::string_view data, const PutUrlOptions& options) {
  OMNI_ASSIGN_OR_RETURN(std::string rel, ConfinedPathOfFileUrl(url, options.file_root));
  size_t slash = rel.rfind('/');
  std::string dir = slash == std::string::npos ? "" : rel.substr(0, slash);
  std::string name = slash == std::string::npos ? rel : rel.substr(slash + 1);
  if (name.find('#') != std::string::npos) {
    return InvalidArgument(fmt::format("{}: names containing '#' are reserved for FsStore's own files", rel));
  }
  OMNI_ASSIGN_OR_RETURN(UniqueFd root, OpenRootDir(options.file_root));
  OMNI_ASSIGN_OR_RETURN(UniqueFd dir_fd, OpenDirBeneath(root.get(), dir, /*create=*/false));
  struct stat old;
  bool had_old = ::fstatat(dir_fd.get(), name.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(old.st_mode);
  OMNI_RETURN_IF_ERROR(AtomicReplaceFile(dir_fd.get(), name, data, options.sync));
  if (had_old) ::unlinkat(dir_fd.get(), SidecarName(name, old.st_ino).c_str(), 0);
  return Status::Ok();
}

}  // namespace

StatusOr<std::string> FetchUrl(std::string_view url, const FetchOptions& options, HttpClient* client) {
  if (url.starts_with("file:")) return FetchFile(url, options);
  return FetchHttp(url, options, client);
}

Status PutToUrl(std::string_view url, std::string_view data, const PutUrlOptions& options, HttpClient* client) {
  if (url.starts_with("file:")) return PutFile(url, data, options);
  return PutHttp(url, data, options, client);
}

}  // namespace omni
