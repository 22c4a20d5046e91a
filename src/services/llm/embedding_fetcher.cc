#include "services/llm/embedding_fetcher.h"

#include <utility>

#include "core/ascii.h"
#include "storage/content_hash.h"
#include "storage/url_fetch.h"

namespace omni::llm {
namespace {

constexpr size_t kMaxObjectBytes = 512u << 20;

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

bool HasDotDotSegment(std::string_view path) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (path.substr(start, end - start) == "..") return true;
    start = end + 1;
  }
  return false;
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

EmbeddingFetcher::EmbeddingFetcher(ObjectStore* store, std::string store_uri, HttpClient* client,
                                   size_t cache_bytes)
    : store_(store), store_uri_(std::move(store_uri)), client_(client), capacity_(cache_bytes) {}

StatusOr<std::string> EmbeddingFetcher::ReadBytes(std::string_view url, std::string* cache_key) {
  if (url.starts_with("s3://")) {
    if (store_ == nullptr || !store_uri_.starts_with("s3://")) {
      return InvalidArgument("s3:// media need the server to run with --store s3://BUCKET...");
    }
    std::string bucket, prefix, url_bucket, key;
    SplitS3Uri(store_uri_, &bucket, &prefix);
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
    return store_->Get(key);
  }
  if (url.starts_with("file://")) {
    if (!store_uri_.starts_with("file://")) {
      return InvalidArgument("file:// media are only read from the server's --store file:// directory");
    }
    std::string root = store_uri_.substr(7);
    while (!root.empty() && root.back() == '/') root.pop_back();
    std::string_view path = url.substr(7);
    if (!path.starts_with(root + "/") || HasDotDotSegment(path)) {
      return InvalidArgument("file:// media must be under the server's store directory");
    }
    *cache_key = std::string(url);
    return FetchUrl(url, FetchOptions{.max_bytes = kMaxObjectBytes}, nullptr);
  }
  if (url.starts_with("http://") || url.starts_with("https://")) {
    if (client_ == nullptr) return InvalidArgument("this server does not fetch http:// media");
    *cache_key = std::string(url.substr(0, url.find('?')));
    return FetchUrl(url, FetchOptions{.max_bytes = kMaxObjectBytes}, client_);
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
  {
    std::lock_guard lock(mu_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      ++hits_;
      return it->second->second;
    }
    ++misses_;
  }
  std::string resolved_key;
  StatusOr<std::string> bytes = ReadBytes(url, &resolved_key);
  if (!bytes.ok()) {
    Status s = bytes.status();
    if (s.code() == StatusCode::kNotFound) return NotFound("embedding object not found: " + key);
    return std::move(s).Annotate("embedding object " + key);
  }
  auto fetched = std::make_shared<FetchedEmbedding>();
  fetched->nbytes = bytes->size();
  Sha256FromHex(Sha256Hex(*bytes), &fetched->sha256);
  StatusOr<EmbeddingObject> parsed = ParseEmbeddingObject(std::move(bytes).value());
  if (!parsed.ok()) {
    return InvalidArgument("corrupt embedding object " + key + ": " + parsed.status().message());
  }
  fetched->object = std::move(parsed).value();
  if (!fetched->object.rows.defined() && !fetched->object.ids.defined()) {
    return InvalidArgument("embedding object " + key + " holds neither 'rows' nor 'ids'");
  }
  Insert(key, fetched);
  return std::shared_ptr<const FetchedEmbedding>(std::move(fetched));
}

void EmbeddingFetcher::Insert(const std::string& key, std::shared_ptr<const FetchedEmbedding> value) {
  if (value->nbytes > capacity_) return;
  std::lock_guard lock(mu_);
  if (index_.contains(key)) return;
  lru_.emplace_front(key, std::move(value));
  index_[key] = lru_.begin();
  bytes_ += lru_.front().second->nbytes;
  while (bytes_ > capacity_ && !lru_.empty()) {
    bytes_ -= lru_.back().second->nbytes;
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

size_t EmbeddingFetcher::cached_bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}
uint64_t EmbeddingFetcher::hits() const {
  std::lock_guard lock(mu_);
  return hits_;
}
uint64_t EmbeddingFetcher::misses() const {
  std::lock_guard lock(mu_);
  return misses_;
}

}  // namespace omni::llm
