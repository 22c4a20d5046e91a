// S3Store: ObjectStore over the S3 REST API, signed with our SigV4
// (sigv4.h), sent with the net layer's pooled HttpClient.
//
//   auto store = S3Store::Open("s3://bucket/prefix?endpoint=http://127.0.0.1:9000&region=us-east-1",
//                              S3CredentialsFromEnv(), {});
//
// URI: s3://BUCKET[/PREFIX]?endpoint=http://HOST:PORT[&region=R][&style=path|virtual]
//   PREFIX is prepended to every key ("prefix/" + key) and stripped in List.
//   endpoint defaults to https://s3.REGION.amazonaws.com, which answers
//   Unimplemented until the HttpClient has TLS. region defaults to us-east-1,
//   style to path. Virtual style sends Host: BUCKET.HOST:PORT to the endpoint
//   address (no DNS for the bucket name needed); presigned URLs then name
//   BUCKET.HOST, which the URL's user must be able to resolve.
//
// Keys: anything ValidateObjectKey accepts (any UTF-8 without control
// characters). A key goes on the wire, in requests and presigned URLs alike,
// as UriEncodePath(bucket/prefix/key): A-Za-z0-9 "-._~" and '/' as they are,
// every other byte %XX, which is also exactly the canonical URI SigV4 signs
// (S3 encodes the path once, not twice). List asks for encoding-type=url and
// decodes, so keys come back byte for byte as they were put.
//
// Retries: transient failures (connection errors, timeouts, 5xx, SlowDown)
// are retried with full-jitter exponential backoff up to max_attempts; 4xx
// never. A GetStream is retried only before its first byte reached the sink.
//
// Thread-safe: all methods may be called from many threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/status.h"
#include "net/http_client.h"
#include "storage/object_store.h"
#include "storage/s3/sigv4.h"

namespace omni {

enum class S3AddressingStyle { kPath, kVirtual };

struct S3RetryPolicy {
  int max_attempts = 4;  // total tries, the first included
  std::chrono::milliseconds base_delay{100};
  std::chrono::milliseconds max_delay{5'000};
};

struct S3StoreOptions {
  // Per attempt: connect, send and receive the whole response.
  std::chrono::milliseconds request_timeout{120'000};
  // PutFile uploads files larger than this in parts of this size (S3's
  // minimum part is 5 MiB, its maximum part count 10000).
  uint64_t part_size = 8u << 20;
  S3RetryPolicy retry;
  // Sign the body's sha256 (integrity end to end) or send UNSIGNED-PAYLOAD.
  bool sign_payload = true;
  HttpClientOptions http;
  // Injected for tests; defaults: std::this_thread::sleep_for and a
  // thread-local uniform [0, 1) generator.
  std::function<void(std::chrono::milliseconds)> sleep;
  std::function<double()> random;
};

// What an s3:// URI names.
struct S3Location {
  std::string bucket;
  std::string prefix;        // "" or "a/b" (no leading or trailing '/')
  std::string endpoint;      // "http://127.0.0.1:9000" (no trailing '/')
  std::string region = "us-east-1";
  S3AddressingStyle style = S3AddressingStyle::kPath;
};

StatusOr<S3Location> ParseS3Uri(std::string_view uri);

// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN (optional).
// For the CLI edge only; libraries take S3Credentials.
S3Credentials S3CredentialsFromEnv();

// The delay before retry number `retry` (1 = the first retry): a uniform
// draw in [0, min(max_delay, base_delay * 2^(retry-1))] ("full jitter").
std::chrono::milliseconds S3BackoffDelay(const S3RetryPolicy& policy, int retry, double uniform01);

class S3Store final : public ObjectStore {
 public:
  static StatusOr<std::unique_ptr<S3Store>> Open(std::string_view uri, S3Credentials creds,
                                                 S3StoreOptions opts = {}, const Clock& clock = Clock::Real());
  ~S3Store() override;

  Status Put(std::string_view key, std::string_view data, const PutOptions& options = {}) override;
  Status PutFile(std::string_view key, const std::string& path, const PutOptions& options = {}) override;
  StatusOr<std::string> Get(std::string_view key, std::optional<ByteRange> range = std::nullopt) override;
  Status GetStream(std::string_view key, std::optional<ByteRange> range, const ByteSink& sink) override;
  StatusOr<ObjectInfo> Head(std::string_view key) override;
  Status Delete(std::string_view key) override;
  StatusOr<std::vector<ObjectInfo>> List(std::string_view prefix) override;
  StatusOr<std::string> Presign(std::string_view key, PresignMethod method, std::chrono::seconds ttl) override;
  const std::string& uri() const override { return uri_; }

  // Creates the bucket of the URI (for tests and setup tools; not part of
  // ObjectStore). A bucket this account already owns is not an error.
  Status CreateBucket();
  // Deletes every object under the prefix, then the bucket (tests only).
  Status DeleteBucketAndContents();

  const S3Location& location() const { return loc_; }
  // For tests: connections the pool has opened.
  uint64_t connections_opened() const { return http_->connections_opened(); }

  // One S3 call before signing; public so the retry test can drive it.
  struct Call {
    HttpMethod method = HttpMethod::kGet;
    std::string object_path;  // decoded key below the bucket ("" for the bucket itself)
    QueryParams query;
    SignedHeaderList headers;  // signed and sent
    std::string body;
    std::string what;  // "GET key", for messages
  };
  // Signs and sends `call` with retries; a non-2xx answer becomes a Status.
  StatusOr<HttpClientResponse> Execute(const Call& call);

 private:
  S3Store(std::string uri, S3Location loc, S3Credentials creds, S3StoreOptions opts, const Clock& clock);

  struct Target {
    std::string url;
    std::string host;  // Host header value
    std::string path;  // decoded path that is signed
  };
  Target TargetFor(std::string_view object_path, bool for_presign) const;
  std::string FullKey(std::string_view key) const;
  // Signs `call` now and returns the request to send.
  HttpClientRequest Prepare(const Call& call, const std::string& payload_hash) const;
  // Runs `attempt` up to max_attempts while it fails transiently.
  template <typename T>
  StatusOr<T> WithRetries(const std::function<StatusOr<T>(int attempt)>& attempt);
  Status PutMultipart(const std::string& full_key, const std::string& path, uint64_t size,
                      const PutOptions& options);

  const std::string uri_;
  const S3Location loc_;
  const S3Credentials creds_;
  const S3StoreOptions opts_;
  const Clock& clock_;
  std::unique_ptr<HttpClient> http_;  // thread-safe, pools connections per host
};

}  // namespace omni
