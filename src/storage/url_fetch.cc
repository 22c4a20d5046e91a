#include "storage/url_fetch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include <fmt/core.h>

#include "storage/fs_io.h"

namespace omni {
namespace {

constexpr size_t kMaxErrorBodyBytes = 4096;

// The URL without its query: a presigned URL's signature stays out of logs.
std::string Displayed(std::string_view url) {
  size_t query = url.find('?');
  if (query == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, query)) + "?...";
}

// "<Code>AccessDenied</Code>" -> "AccessDenied" from an S3 XML error body.
std::string_view XmlElement(std::string_view body, std::string_view name) {
  std::string open = fmt::format("<{}>", name);
  std::string close = fmt::format("</{}>", name);
  size_t begin = body.find(open);
  if (begin == std::string_view::npos) return {};
  begin += open.size();
  size_t end = body.find(close, begin);
  if (end == std::string_view::npos) return {};
  return body.substr(begin, end - begin);
}

// The Status of a non-2xx answer to `method` on `url`.
Status HttpError(std::string_view method, std::string_view url, int status, std::string_view body) {
  std::string detail;
  std::string_view code = XmlElement(body, "Code");
  std::string_view message = XmlElement(body, "Message");
  if (!code.empty()) detail = fmt::format(": {}", code);
  if (!message.empty()) detail += fmt::format(" ({})", message);
  std::string text = fmt::format("{} {} answered HTTP {}{}", method, Displayed(url), status, detail);
  if (status == 401 || status == 403) {
    return PermissionDenied(text + "; the URL may have expired or been altered");
  }
  if (status == 404) return NotFound(std::move(text));
  if (status == 408 || status == 429 || status >= 500) return Unavailable(std::move(text));
  if (status == 400 || status == 416) return InvalidArgument(std::move(text));
  return Status(StatusCodeFromHttp(status), std::move(text));
}

Status CheckHttpUrl(std::string_view url, HttpClient* client) {
  if (url.starts_with("https://")) {
    return Unimplemented(fmt::format("cannot fetch {}: https is not supported yet (the HTTP client has no TLS)",
                                     Displayed(url)));
  }
  if (!url.starts_with("http://")) {
    return InvalidArgument(fmt::format("unsupported URL {}: expected http:// or file://", Displayed(url)));
  }
  if (client == nullptr) return InvalidArgument(fmt::format("fetching {} needs an HTTP client", Displayed(url)));
  return Status::Ok();
}

Status TooLarge(std::string_view url, std::string_view size, size_t max_bytes) {
  return PayloadTooLarge(fmt::format("object at {} is {} bytes, over the limit of {} bytes", Displayed(url), size,
                                     max_bytes));
}

StatusOr<std::string> FetchHttp(std::string_view url, const FetchOptions& options, HttpClient* client) {
  OMNI_RETURN_IF_ERROR(CheckHttpUrl(url, client));
  int status = 0;
  std::string body;
  std::string too_large;  // the size to report, once over the limit
  HttpStreamCallbacks callbacks;
  callbacks.on_headers = [&](int s, const HttpHeaders& headers) {
    status = s;
    if (status < 200 || status >= 300) return true;
    std::string_view length = headers.GetOr("content-length", "");
    uint64_t declared = 0;
    bool numeric = !length.empty() && length.size() <= 19 && length.find_first_not_of("0123456789") == std::string_view::npos;
    if (numeric) declared = std::stoull(std::string(length));
    if (numeric && declared > options.max_bytes) {
      too_large = std::string(length);
      return false;
    }
    return true;
  };
  callbacks.on_body = [&](std::string_view chunk) {
    if (status < 200 || status >= 300) {
      body.append(chunk.substr(0, kMaxErrorBodyBytes - std::min(body.size(), kMaxErrorBodyBytes)));
      return true;
    }
    if (body.size() + chunk.size() > options.max_bytes) {
      too_large = fmt::format("more than {}", options.max_bytes);
      return false;
    }
    body.append(chunk);
    return true;
  };
  HttpClientRequest request{.method = HttpMethod::kGet, .url = std::string(url), .timeout = options.timeout};
  StatusOr<int> result = client->Stream(request, callbacks);
  if (!too_large.empty()) return TooLarge(url, too_large, options.max_bytes);
  if (!result.ok()) return Status(result.status()).Annotate(fmt::format("GET {}", Displayed(url)));
  if (*result < 200 || *result >= 300) return HttpError("GET", url, *result, body);
  return body;
}

StatusOr<std::string> FetchFile(std::string_view url, const FetchOptions& options) {
  OMNI_ASSIGN_OR_RETURN(std::string path, FileUrlToPath(url));
  // O_NONBLOCK: opening a FIFO must not hang; it is refused below.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return ErrnoStatus(errno, "opening " + path);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus(errno, "stat " + path);
  if (!S_ISREG(st.st_mode)) return InvalidArgument(fmt::format("{} is not a regular file", path));
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > options.max_bytes) return TooLarge(url, std::to_string(size), options.max_bytes);
  std::string bytes;
  OMNI_RETURN_IF_ERROR(ReadAt(fd.get(), 0, size, &bytes, path));
  return bytes;
}

Status PutHttp(std::string_view url, std::string_view data, const PutUrlOptions& options, HttpClient* client) {
  OMNI_RETURN_IF_ERROR(CheckHttpUrl(url, client));
  HttpClientRequest request{.method = HttpMethod::kPut, .url = std::string(url), .body = std::string(data),
                            .timeout = options.timeout};
  request.headers.Set("content-type", options.content_type);
  OMNI_ASSIGN_OR_RETURN(HttpClientResponse response, client->Request(request));
  if (response.status < 200 || response.status >= 300) {
    return HttpError("PUT", url, response.status, std::string_view(response.body).substr(0, kMaxErrorBodyBytes));
  }
  return Status::Ok();
}

Status PutFile(std::string_view url, std::string_view data, const PutUrlOptions& options) {
  OMNI_ASSIGN_OR_RETURN(std::string path, FileUrlToPath(url));
  size_t slash = path.rfind('/');
  std::string dir = slash == 0 ? "/" : path.substr(0, slash);
  std::string name = path.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") return InvalidArgument(fmt::format("{} names no file", path));
  if (name.find('#') != std::string::npos) {
    return InvalidArgument(fmt::format("{}: names containing '#' are reserved for FsStore's own files", path));
  }
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd.valid()) return ErrnoStatus(errno, "opening directory " + dir);
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
