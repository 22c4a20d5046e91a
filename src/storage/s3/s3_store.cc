#include "storage/s3/s3_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <thread>

#include "core/log.h"
#include "net/http.h"
#include "net/url.h"
#include "storage/s3/s3_xml.h"

namespace omni {
namespace {

constexpr std::string_view kMetaPrefix = "x-amz-meta-";
constexpr size_t kMaxErrorBody = 64 << 10;

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && EqualsIgnoreCase(s.substr(0, prefix.size()), prefix);
}

// S3's bucket naming rules, the DNS-compatible subset: 3-63 of [a-z0-9.-],
// starting and ending with a letter or digit.
bool IsValidBucket(std::string_view b) {
  if (b.size() < 3 || b.size() > 63) return false;
  for (char c : b) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) return false;
  }
  return b.front() != '.' && b.front() != '-' && b.back() != '.' && b.back() != '-';
}

// Metadata names travel as header names: lower-case token characters.
Status ValidateMetadata(const ObjectMetadata& md) {
  for (const auto& [name, value] : md) {
    if (name.empty()) return InvalidArgument("empty metadata name").WithParam("metadata");
    for (char c : name) {
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) {
        return InvalidArgument("metadata name '" + name + "' is not lower-case [a-z0-9_-]").WithParam("metadata");
      }
    }
    for (unsigned char c : value) {
      if (c < 0x20 || c == 0x7f) return InvalidArgument("metadata value of '" + name + "' has a control character");
    }
  }
  return Status::Ok();
}

SignedHeaderList PutHeaders(const PutOptions& options) {
  SignedHeaderList h;
  h.emplace_back("content-type", options.content_type.empty() ? "application/octet-stream" : options.content_type);
  for (const auto& [name, value] : options.metadata) h.emplace_back(std::string(kMetaPrefix) + name, value);
  return h;
}

std::string RangeHeader(const ByteRange& r) {
  std::string v = "bytes=" + std::to_string(r.offset) + "-";
  if (r.length) v += std::to_string(r.offset + *r.length - 1);
  return v;
}

bool Is2xx(int status) { return status >= 200 && status < 300; }

double DefaultRandom() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

std::string Unquote(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') return std::string(etag.substr(1, etag.size() - 2));
  return std::string(etag);
}

// ListObjectsV2 asks for encoding-type=url, so that every key S3 can hold
// survives the XML (U+FFFE, say, cannot appear in XML 1.0 at all); the
// answer then carries <EncodingType>url</EncodingType> and percent-encoded
// keys, a space written as '+' by AWS and as %20 by Swift, a '+' always as
// %2B. A server that ignores the parameter sends plain (XML-escaped) keys.
constexpr std::string_view kListEncoding = "url";

bool ListIsUrlEncoded(std::string_view body) { return XmlText(body, "EncodingType").value_or("") == kListEncoding; }

// The full key of one <Contents> of a ListObjectsV2 answer, decoded.
std::string ListedKey(std::string_view contents, bool url_encoded) {
  std::string key = XmlText(contents, "Key").value_or("");
  return url_encoded ? PercentDecode(key, /*plus_as_space=*/true) : key;
}

}  // namespace

StatusOr<S3Location> ParseS3Uri(std::string_view uri) {
  constexpr std::string_view kScheme = "s3://";
  if (uri.substr(0, kScheme.size()) != kScheme) return InvalidArgument("not an s3:// URI: " + std::string(uri));
  std::string_view rest = uri.substr(kScheme.size());
  std::string_view query;
  if (size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  S3Location loc;
  size_t slash = rest.find('/');
  loc.bucket = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) {
    std::string_view prefix = rest.substr(slash + 1);
    while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
    loc.prefix = std::string(prefix);
  }
  if (!IsValidBucket(loc.bucket)) return InvalidArgument("invalid S3 bucket name '" + loc.bucket + "'").WithParam("uri");
  if (!loc.prefix.empty()) {
    Status st = ValidateObjectKey(loc.prefix);
    if (!st.ok()) return InvalidArgument("invalid S3 key prefix in URI: " + st.message()).WithParam("uri");
  }
  for (const auto& [name, value] : ParseQueryString(query)) {
    if (name == "endpoint") {
      loc.endpoint = value;
    } else if (name == "region") {
      loc.region = value;
    } else if (name == "style") {
      if (value == "path") {
        loc.style = S3AddressingStyle::kPath;
      } else if (value == "virtual") {
        loc.style = S3AddressingStyle::kVirtual;
      } else {
        return InvalidArgument("style must be path or virtual, not '" + value + "'").WithParam("uri");
      }
    } else {
      return InvalidArgument("unknown S3 URI parameter '" + name + "'").WithParam("uri");
    }
  }
  if (loc.region.empty()) return InvalidArgument("empty region in S3 URI").WithParam("uri");
  if (loc.endpoint.empty()) loc.endpoint = "https://s3." + loc.region + ".amazonaws.com";
  while (!loc.endpoint.empty() && loc.endpoint.back() == '/') loc.endpoint.pop_back();
  return loc;
}

S3Credentials S3CredentialsFromEnv() {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  return S3Credentials{env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), env("AWS_SESSION_TOKEN")};
}

std::chrono::milliseconds S3BackoffDelay(const S3RetryPolicy& policy, int retry, double uniform01) {
  double cap = static_cast<double>(policy.base_delay.count()) * std::ldexp(1.0, std::min(retry - 1, 30));
  cap = std::min(cap, static_cast<double>(policy.max_delay.count()));
  return std::chrono::milliseconds(static_cast<int64_t>(cap * std::clamp(uniform01, 0.0, 1.0)));
}

StatusOr<std::unique_ptr<S3Store>> S3Store::Open(std::string_view uri, S3Credentials creds, S3StoreOptions opts,
                                                 const Clock& clock) {
  OMNI_ASSIGN_OR_RETURN(S3Location loc, ParseS3Uri(uri));
  OMNI_ASSIGN_OR_RETURN(Url ep, ParseUrl(loc.endpoint));
  if (ep.target != "/") return InvalidArgument("S3 endpoint must not have a path: " + loc.endpoint).WithParam("uri");
  if (creds.access_key_id.empty() || creds.secret_access_key.empty()) {
    return InvalidArgument("S3 credentials missing (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)");
  }
  if (opts.part_size < (5u << 20)) return InvalidArgument("S3 part_size must be at least 5 MiB");
  if (opts.retry.max_attempts < 1) opts.retry.max_attempts = 1;
  if (!opts.sleep) opts.sleep = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
  if (!opts.random) opts.random = DefaultRandom;
  return std::unique_ptr<S3Store>(new S3Store(std::string(uri), std::move(loc), std::move(creds), std::move(opts), clock));
}

S3Store::S3Store(std::string uri, S3Location loc, S3Credentials creds, S3StoreOptions opts, const Clock& clock)
    : uri_(std::move(uri)),
      loc_(std::move(loc)),
      creds_(std::move(creds)),
      opts_(std::move(opts)),
      clock_(clock),
      http_(std::make_unique<HttpClient>(opts_.http)) {}

S3Store::~S3Store() = default;

std::string S3Store::FullKey(std::string_view key) const {
  if (loc_.prefix.empty()) return std::string(key);
  return loc_.prefix + "/" + std::string(key);
}

S3Store::Target S3Store::TargetFor(std::string_view object_path, bool for_presign) const {
  const std::string hostport = loc_.endpoint.substr(loc_.endpoint.find("://") + 3);
  Target t;
  if (loc_.style == S3AddressingStyle::kPath) {
    t.host = hostport;
    t.path = "/" + loc_.bucket + (object_path.empty() ? "" : "/" + std::string(object_path));
    t.url = loc_.endpoint + UriEncodePath(t.path);
  } else {
    // The connection goes to the endpoint's address; only Host names the
    // bucket, so no DNS entry per bucket is needed. A presigned URL has to
    // carry the virtual host itself.
    t.host = loc_.bucket + "." + hostport;
    t.path = "/" + std::string(object_path);
    const std::string scheme = loc_.endpoint.substr(0, loc_.endpoint.find("://") + 3);
    t.url = (for_presign ? scheme + t.host : loc_.endpoint) + UriEncodePath(t.path);
  }
  return t;
}

template <typename T>
StatusOr<T> S3Store::WithRetries(const std::function<StatusOr<T>(int attempt)>& attempt) {
  for (int i = 1;; ++i) {
    StatusOr<T> r = attempt(i);
    if (r.ok() || !IsTransient(r.status()) || i >= opts_.retry.max_attempts) return r;
    auto delay = S3BackoffDelay(opts_.retry, i, opts_.random());
    OMNI_LOG(kDebug, "S3 retry {} after {} ms: {}", i, delay.count(), r.status().ToString());
    opts_.sleep(delay);
  }
}

StatusOr<HttpClientResponse> S3Store::Execute(const Call& call) {
  const Target target = TargetFor(call.object_path, /*for_presign=*/false);
  const std::string payload_hash = !opts_.sign_payload      ? std::string(kUnsignedPayload)
                                   : call.body.empty()      ? std::string(kEmptyPayloadSha256)
                                                            : Sha256Hex(call.body);
  HttpClientRequest req;
  req.method = call.method;
  req.url = target.url;
  if (!call.query.empty()) req.url += "?" + CanonicalQueryString(call.query);
  req.body = call.body;  // one copy: HttpClientRequest owns its body
  req.timeout = opts_.request_timeout;
  SigV4Request to_sign{std::string(HttpMethodName(call.method)), target.host, target.path, call.query, call.headers,
                       payload_hash};
  return WithRetries<HttpClientResponse>([&](int) -> StatusOr<HttpClientResponse> {
    // Signed afresh per attempt: x-amz-date must stay within the server's skew window.
    SigV4Signed s = SignRequest(to_sign, creds_, {loc_.region, "s3"}, clock_.WallNow());
    req.headers = HttpHeaders();
    req.headers.Set("host", target.host);
    for (const auto& [n, v] : call.headers) req.headers.Set(n, v);
    for (const auto& [n, v] : s.headers_to_send) req.headers.Set(n, v);
    OMNI_ASSIGN_OR_RETURN(HttpClientResponse resp, http_->Request(req));
    if (!Is2xx(resp.status)) return S3ErrorToStatus(resp.status, resp.body, call.what);
    return resp;
  });
}

Status S3Store::Put(std::string_view key, std::string_view data, const PutOptions& options) {
  OMNI_RETURN_IF_ERROR(ValidateObjectKey(key));
  OMNI_RETURN_IF_ERROR(ValidateMetadata(options.metadata));
  Call call{HttpMethod::kPut, FullKey(key), {}, PutHeaders(options), std::string(data), "PUT " + std::string(key)};
  return Execute(call).status();
}

Status S3Store::PutFile(std::string_view key, const std::string& path, const PutOptions& options) {
  OMNI_RETURN_IF_ERROR(ValidateObjectKey(key));
  OMNI_RETURN_IF_ERROR(ValidateMetadata(options.metadata));
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return NotFound("cannot read file " + path);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > opts_.part_size) return PutMultipart(FullKey(key), path, size, options);

  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound("cannot open " + path);
  std::string data(size, '\0');
  ssize_t n = ::pread(fd, data.data(), size, 0);
  ::close(fd);
  if (n != static_cast<ssize_t>(size)) return Internal("short read of " + path);
  return Put(key, data, options);
}

Status S3Store::PutMultipart(const std::string& full_key, const std::string& path, uint64_t size,
                             const PutOptions& options) {
  const std::string what = "multipart upload of " + full_key;
  Call create{HttpMethod::kPost, full_key, {{"uploads", ""}}, PutHeaders(options), "", "CreateMultipartUpload " + full_key};
  OMNI_ASSIGN_OR_RETURN(HttpClientResponse created, Execute(create));
  std::optional<std::string> upload_id = XmlText(created.body, "UploadId");
  if (!upload_id || upload_id->empty()) return Internal(what + ": no UploadId in the response");

  auto abort = [&](Status cause) {
    Call call{HttpMethod::kDelete, full_key, {{"uploadId", *upload_id}}, {}, "", "AbortMultipartUpload " + full_key};
    Status st = Execute(call).status();
    if (!st.ok()) OMNI_LOG(kWarn, "aborting {} failed: {}", what, st.ToString());
    return std::move(cause).Annotate(what);
  };

  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return abort(NotFound("cannot open " + path));
  std::string xml = "<CompleteMultipartUpload>";
  Status failed;
  for (uint64_t offset = 0, part = 1; offset < size; offset += opts_.part_size, ++part) {
    const uint64_t len = std::min<uint64_t>(opts_.part_size, size - offset);
    Call call{HttpMethod::kPut, full_key, {{"partNumber", std::to_string(part)}, {"uploadId", *upload_id}}, {},
              std::string(len, '\0'), "UploadPart " + std::to_string(part) + " " + full_key};
    if (::pread(fd, call.body.data(), len, static_cast<off_t>(offset)) != static_cast<ssize_t>(len)) {
      failed = Internal("short read of " + path);
      break;
    }
    StatusOr<HttpClientResponse> r = Execute(call);
    if (!r.ok()) {
      failed = r.status();
      break;
    }
    std::optional<std::string_view> etag = r->headers.Get("etag");
    if (!etag) {
      failed = Internal("UploadPart answered without an ETag");
      break;
    }
    xml += "<Part><PartNumber>" + std::to_string(part) + "</PartNumber><ETag>" + XmlEscape(*etag) + "</ETag></Part>";
  }
  ::close(fd);
  if (!failed.ok()) return abort(std::move(failed));
  xml += "</CompleteMultipartUpload>";

  Call complete{HttpMethod::kPost, full_key, {{"uploadId", *upload_id}}, {{"content-type", "application/xml"}},
                std::move(xml), "CompleteMultipartUpload " + full_key};
  StatusOr<HttpClientResponse> done = Execute(complete);
  if (!done.ok()) return abort(done.status());
  // S3 may answer 200 and still fail: the error is then in the body.
  if (done->body.find("<Error>") != std::string::npos) return abort(S3ErrorToStatus(500, done->body, complete.what));
  return Status::Ok();
}

StatusOr<std::string> S3Store::Get(std::string_view key, std::optional<ByteRange> range) {
  OMNI_RETURN_IF_ERROR(ValidateObjectKey(key));
  if (range && range->length && *range->length == 0) return std::string();
  Call call{HttpMethod::kGet, FullKey(key), {}, {}, "", "GET " + std::string(key)};
  if (range) call.headers.emplace_back("range", RangeHeader(*range));
  OMNI_ASSIGN_OR_RETURN(HttpClientResponse resp, Execute(call));
  if (range && resp.status == 200 && range->offset > 0) {  // a server that ignored Range
    if (range->offset >= resp.body.size()) return InvalidArgument("range starts past the end of " + std::string(key));
    resp.body = resp.body.substr(range->offset, range->length.value_or(std::string::npos));
  }
  return std::move(resp.body);
}

Status S3Store::GetStream(std::string_view key, std::optional<ByteRange> range, const ByteSink& sink) {
  OMNI_RETURN_IF_ERROR(ValidateObjectKey(key));
  if (range && range->length && *range->length == 0) return Status::Ok();
  Call call{HttpMethod::kGet, FullKey(key), {}, {}, "", "GET " + std::string(key)};
  if (range) call.headers.emplace_back("range", RangeHeader(*range));
  const Target target = TargetFor(call.object_path, false);
  SigV4Request to_sign{"GET", target.host, target.path, {}, call.headers, std::string(kEmptyPayloadSha256)};

  bool delivered = false;  // once bytes reached the sink, a retry would repeat them
  StatusOr<int> r = WithRetries<int>([&](int) -> StatusOr<int> {
    if (delivered) return Unavailable("stream of " + call.what + " broke after data was delivered");
    SigV4Signed s = SignRequest(to_sign, creds_, {loc_.region, "s3"}, clock_.WallNow());
    HttpClientRequest req{HttpMethod::kGet, target.url, {}, "", opts_.request_timeout};
    req.headers.Set("host", target.host);
    for (const auto& [n, v] : call.headers) req.headers.Set(n, v);
    for (const auto& [n, v] : s.headers_to_send) req.headers.Set(n, v);
    int status = 0;
    bool sink_stopped = false;
    std::string error_body;
    HttpStreamCallbacks cb;
    cb.on_headers = [&](int st, const HttpHeaders&) {
      status = st;
      return true;
    };
    cb.on_body = [&](std::string_view chunk) {
      if (!Is2xx(status)) {
        if (error_body.size() < kMaxErrorBody) error_body.append(chunk.substr(0, kMaxErrorBody - error_body.size()));
        return true;
      }
      delivered = true;
      if (!sink(chunk)) sink_stopped = true;
      return !sink_stopped;
    };
    StatusOr<int> done = http_->Stream(req, cb);
    if (sink_stopped) return Cancelled("reading " + call.what + ": the sink stopped");
    if (!done.ok()) {
      if (delivered) return std::move(done).status().Annotate(call.what + " (after partial data; not retried)");
      return done.status();
    }
    if (!Is2xx(*done)) return S3ErrorToStatus(*done, error_body, call.what);
    return *done;
  });
  return r.status();
}

StatusOr<ObjectInfo> S3Store::Head(std::string_view key) {
  OMNI_RETURN_IF_ERROR(ValidateObjectKey(key));
  Call call{HttpMethod::kHead, FullKey(key), {}, {}, "", "HEAD " + std::string(key)};
  OMNI_ASSIGN_OR_RETURN(HttpClientResponse resp, Execute(call));
  ObjectInfo info;
  info.key = std::string(key);
  std::string_view len = resp.headers.GetOr("content-length", "0");
  info.size = std::strtoull(std::string(len).c_str(), nullptr, 10);
  info.content_type = std::string(resp.headers.GetOr("content-type", ""));
  info.etag = Unquote(resp.headers.GetOr("etag", ""));
  if (auto lm = resp.headers.Get("last-modified")) info.last_modified = ParseHttpDate(*lm).value_or(Clock::WallTime{});
  for (const auto& [name, value] : resp.headers) {
    if (StartsWithIgnoreCase(name, kMetaPrefix)) info.metadata.emplace_back(ToLower(name.substr(kMetaPrefix.size())), value);
  }
  std::sort(info.metadata.begin(), info.metadata.end());
  return info;
}

Status S3Store::Delete(std::string_view key) {
  OMNI_RETURN_IF_ERROR(ValidateObjectKey(key));
  Call call{HttpMethod::kDelete, FullKey(key), {}, {}, "", "DELETE " + std::string(key)};
  Status st = Execute(call).status();
  if (st.code() == StatusCode::kNotFound && st.error_code() != "NoSuchBucket") return Status::Ok();
  return st;
}

StatusOr<std::vector<ObjectInfo>> S3Store::List(std::string_view prefix) {
  const std::string full_prefix = loc_.prefix.empty() ? std::string(prefix) : loc_.prefix + "/" + std::string(prefix);
  const size_t strip = loc_.prefix.empty() ? 0 : loc_.prefix.size() + 1;
  std::vector<ObjectInfo> out;
  std::string token;
  do {
    Call call{HttpMethod::kGet,
              "",
              {{"list-type", "2"}, {"prefix", full_prefix}, {"encoding-type", std::string(kListEncoding)}},
              {},
              "",
              "LIST " + full_prefix};
    if (!token.empty()) call.query.emplace_back("continuation-token", token);
    OMNI_ASSIGN_OR_RETURN(HttpClientResponse resp, Execute(call));
    const bool url_encoded = ListIsUrlEncoded(resp.body);
    for (std::string_view entry : XmlElements(resp.body, "Contents")) {
      ObjectInfo info;
      std::string key = ListedKey(entry, url_encoded);
      if (key.size() < strip || key.compare(0, full_prefix.size(), full_prefix) != 0) continue;
      info.key = key.substr(strip);
      info.size = std::strtoull(XmlText(entry, "Size").value_or("0").c_str(), nullptr, 10);
      info.etag = Unquote(XmlText(entry, "ETag").value_or(""));
      info.last_modified = ParseIso8601(XmlText(entry, "LastModified").value_or("")).value_or(Clock::WallTime{});
      out.push_back(std::move(info));
    }
    const bool truncated = XmlText(resp.body, "IsTruncated").value_or("false") == "true";
    token = truncated ? XmlText(resp.body, "NextContinuationToken").value_or("") : "";
    if (truncated && token.empty()) return Internal("ListObjectsV2 truncated without a NextContinuationToken");
  } while (!token.empty());
  std::sort(out.begin(), out.end(), [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  return out;
}

StatusOr<std::string> S3Store::Presign(std::string_view key, PresignMethod method, std::chrono::seconds ttl) {
  OMNI_RETURN_IF_ERROR(ValidateObjectKey(key));
  if (ttl < std::chrono::seconds(1) || ttl > kMaxPresignTtl) {
    return InvalidArgument("presign ttl must be 1 s to 7 days, not " + std::to_string(ttl.count()) + " s").WithParam("ttl");
  }
  const Target target = TargetFor(FullKey(key), /*for_presign=*/true);
  SigV4Request r{method == PresignMethod::kGet ? "GET" : "PUT", target.host, target.path};
  SigV4Presigned p = PresignRequest(r, creds_, {loc_.region, "s3"}, clock_.WallNow(), ttl);
  return target.url + "?" + p.query;
}

Status S3Store::CreateBucket() {
  Call call{HttpMethod::kPut, "", {}, {}, "", "CreateBucket " + loc_.bucket};
  Status st = Execute(call).status();
  if (st.error_code() == "BucketAlreadyOwnedByYou") return Status::Ok();
  return st;
}

Status S3Store::DeleteBucketAndContents() {
  std::string token;
  do {
    Call list{HttpMethod::kGet, "", {{"list-type", "2"}, {"encoding-type", std::string(kListEncoding)}}, {}, "",
              "LIST " + loc_.bucket};
    if (!token.empty()) list.query.emplace_back("continuation-token", token);
    OMNI_ASSIGN_OR_RETURN(HttpClientResponse resp, Execute(list));
    const bool url_encoded = ListIsUrlEncoded(resp.body);
    for (std::string_view entry : XmlElements(resp.body, "Contents")) {
      std::string key = ListedKey(entry, url_encoded);
      Call del{HttpMethod::kDelete, key, {}, {}, "", "DELETE " + key};
      OMNI_RETURN_IF_ERROR(Execute(del).status());
    }
    token = XmlText(resp.body, "IsTruncated").value_or("false") == "true"
                ? XmlText(resp.body, "NextContinuationToken").value_or("")
                : "";
  } while (!token.empty());
  Call call{HttpMethod::kDelete, "", {}, {}, "", "DeleteBucket " + loc_.bucket};
  return Execute(call).status();
}

}  // namespace omni
