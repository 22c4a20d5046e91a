#include "services/llm/embedding_fetcher.h"

#include <stdlib.h>

#include <utility>

#include "core/ascii.h"
#include "core/log.h"
#include "storage/fs_io.h"
#include "storage/content_hash.h"
#include "storage/url_fetch.h"

namespace omni::llm {
namespace {

// "s3://bucket/prefix?query" -> bucket, prefix (no slashes at the ends).
void SplitS3Uri(std::string_view uri, std::string* bucket, std::string* prefix) {
  uri.remove_prefix(5);
  uri = uri.substr(0, uri.find('?'));
  size_t slash = uri.find('/');
  *bucket = std::string(uri.substr(0, slash));
  prefix->clear();
  if (slash != std::string_view::npos) {
    std::string_view p = uri.substr(slash + 1);
    while (!p.empty() && p.back() == '/') p.remove_suffix(1);
    *prefix = std::string(p);
  }
}

// The directory of a file:// store URI, links resolved; empty if none.
std::string FileStoreRoot(const std::string& store_uri) {
  if (!store_uri.starts_with("file://")) return "";
  StatusOr<std::string> path = FileUrlToPath(store_uri);
  if (!path.ok()) return "";
  char* resolved = ::realpath(path->c_str(), nullptr);
  if (resolved == nullptr) return "";
  std::string root(resolved);
  ::free(resolved);
  return root;
}

// A content-addressed object (.../<sha256>.safetensors) names the medium it
// was encoded from; an encoder records that medium's sha256 in the object's
// metadata. They must agree, or the object under the key is not that
// medium's (copied, replaced or tampered with) and would answer about
// another image.
Status CheckKeyMatchesMedium(std::string_view url, const EmbeddingObject& object, const std::string& shown) {
  std::string_view path = url.substr(0, url.find('?'));
  std::string_view name = path.substr(path.rfind('/') + 1);
  constexpr std::string_view kSuffix = ".safetensors";
  if (!name.ends_with(kSuffix) || name.size() != 64 + kSuffix.size()) return Status::Ok();
  std::string_view hex = name.substr(0, 64);
  if (hex.find_first_not_of("0123456789abcdef") != std::string_view::npos) return Status::Ok();
  for (const auto& [k, v] : object.metadata) {
    if (k == "sha256" && v != hex) {
      return InvalidArgument("embedding object " + shown + " was encoded from the medium " + v.substr(0, 64) +
                             ", not the one its name says (" + std::string(hex) + ")");
    }
  }
  return Status::Ok();
}

}  // namespace

bool Sha256FromHex(std::string_view hex, Sha256Digest* out) {
  if (hex.size() != 64) return false;
  for (size_t i = 0; i < 32; ++i) {
    int hi = HexDigitValue(hex[2 * i]);
    int lo = HexDigitValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return true;
}

EmbeddingFetcher::EmbeddingFetcher(EmbeddingFetcherOptions options)
    : options_(std::move(options)),
      file_root_(FileStoreRoot(options_.store_uri)),
      cache_(options_.cache_bytes, [](const std::shared_ptr<const FetchedEmbedding>& e) { return e->nbytes; }) {}

StatusOr<std::string> EmbeddingFetcher::ReadBytes(std::string_view url, std::string* cache_key) {
  ObjectStore* store = options_.store;
  if (url.starts_with("s3://")) {
    if (store == nullptr || !options_.store_uri.starts_with("s3://")) {
      return InvalidArgument("s3:// media need the server to run with --store s3://BUCKET...");
    }
    std::string bucket, prefix, url_bucket, key;
    SplitS3Uri(options_.store_uri, &bucket, &prefix);
    SplitS3Uri(url, &url_bucket, &key);
    if (url_bucket != bucket) {
      return InvalidArgument("s3://" + url_bucket + " is not this server's store bucket (" + bucket + ")");
    }
    // The store prepends its prefix to every key; the URL names the full key.
    if (!prefix.empty()) {
      if (!key.starts_with(prefix + "/")) return InvalidArgument("the object is outside the store prefix " + prefix);
      key = key.substr(prefix.size() + 1);
    }
    *cache_key = "s3://" + bucket + "/" + (prefix.empty() ? "" : prefix + "/") + key;
    return store->Get(key);
  }
  FetchOptions fetch{.max_bytes = options_.max_object_bytes, .timeout = options_.fetch_timeout,
                     .policy = options_.fetch_policy};
  if (url.starts_with("file:")) {
    if (file_root_.empty()) {
      return InvalidArgument("file:// media are only read from the server's --store file:// directory");
    }
    *cache_key = std::string(url);
    fetch.file_root = file_root_;
    StatusOr<std::string> bytes = FetchUrl(url, fetch, nullptr);
    // Outside the store, a link, a directory, a FIFO, a bad escape: all
    // read as "not found", or the answer would tell which files exist.
    if (!bytes.ok() && bytes.status().code() != StatusCode::kPayloadTooLarge) {
      OMNI_LOG(kDebug, "embedding object {}: {}", UrlForDisplay(url), bytes.status().ToString());
      return NotFound("no such object");
    }
    return bytes;
  }
  if (url.starts_with("http://") || url.starts_with("https://")) {
    if (options_.http_client == nullptr) return InvalidArgument("this server does not fetch http:// media");
    *cache_key = std::string(url.substr(0, url.find('?')));
    return FetchUrl(url, fetch, options_.http_client);
  }
  return InvalidArgument("unsupported media URL scheme (expected s3://, file:// or http://)");
}

StatusOr<std::shared_ptr<const FetchedEmbedding>> EmbeddingFetcher::Fetch(std::string_view url) {
  std::string key;
  // Resolve the cache key cheaply for the lookup: the same rules as ReadBytes.
  if (url.starts_with("http")) {
    key = std::string(url.substr(0, url.find('?')));
  } else {
    key = std::string(url);
  }
  if (std::optional<std::shared_ptr<const FetchedEmbedding>> hit = cache_.Get(key)) return *std::move(hit);
  std::string resolved_key;
  StatusOr<std::string> bytes = ReadBytes(url, &resolved_key);
  const std::string shown = UrlForDisplay(key);
  if (!bytes.ok()) {
    Status s = bytes.status();
    if (s.code() == StatusCode::kNotFound) return NotFound("embedding object not found: " + shown);
    return std::move(s).Annotate("embedding object " + shown);
  }
  auto fetched = std::make_shared<FetchedEmbedding>();
  fetched->nbytes = bytes->size();
  Sha256FromHex(Sha256Hex(*bytes), &fetched->sha256);
  StatusOr<EmbeddingObject> parsed = ParseEmbeddingObject(std::move(bytes).value());
  if (!parsed.ok()) {
    // The parser's message quotes what it read (a header length is the
    // file's first 8 bytes); it stays in the log.
    OMNI_LOG(kInfo, "corrupt embedding object {}: {}", shown, parsed.status().message());
    return InvalidArgument("corrupt embedding object " + shown +
                           ": not a safetensors file with 'rows' [N, D] and/or 'ids' [N]");
  }
  fetched->object = std::move(parsed).value();
  if (!fetched->object.rows.defined() && !fetched->object.ids.defined()) {
    return InvalidArgument("embedding object " + shown + " holds neither 'rows' nor 'ids'");
  }
  OMNI_RETURN_IF_ERROR(CheckKeyMatchesMedium(url, fetched->object, shown));
  cache_.Put(key, fetched);
  return std::shared_ptr<const FetchedEmbedding>(std::move(fetched));
}

size_t EmbeddingFetcher::cached_bytes() const { return cache_.total_cost(); }
uint64_t EmbeddingFetcher::hits() const { return cache_.hits(); }
uint64_t EmbeddingFetcher::misses() const { return cache_.misses(); }

}  // namespace omni::llm
