#include "media/media_fetch.h"

#include <fmt/core.h>

#include "media/data_url.h"
#include "storage/content_hash.h"
#include "storage/fetch_policy.h"
#include "storage/s3/s3_store.h"

namespace omni::media {
namespace {

bool HasScheme(std::string_view url, std::string_view scheme) {
  if (url.size() <= scheme.size() || url[scheme.size()] != ':') return false;
  for (size_t i = 0; i < scheme.size(); ++i) {
    char c = url[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != scheme[i]) return false;
  }
  return true;
}

}  // namespace

S3Reader S3ReaderForStore(ObjectStore* store, std::string store_uri) {
  if (store == nullptr || !store_uri.starts_with("s3://")) return {};
  return [store, store_uri = std::move(store_uri)](std::string_view bucket, std::string_view key,
                                                    size_t max) -> StatusOr<std::string> {
    OMNI_ASSIGN_OR_RETURN(S3Location loc, ParseS3Uri(store_uri));
    if (bucket != loc.bucket) {
      return InvalidArgument(fmt::format("s3://{} is not this deployment's store bucket", bucket));
    }
    std::string relative(key);
    if (!loc.prefix.empty()) {
      if (!key.starts_with(loc.prefix + "/")) return InvalidArgument("the object is outside the store's prefix");
      relative = std::string(key.substr(loc.prefix.size() + 1));
    }
    OMNI_ASSIGN_OR_RETURN(ObjectInfo info, store->Head(relative));
    if (info.size > max) {
      return PayloadTooLarge(fmt::format("the object is {} bytes, over the limit of {} bytes", info.size, max));
    }
    return store->Get(relative);
  };
}

StatusOr<std::string> MediaFetcher::ReadBytes(std::string_view url, std::string* claimed_type) const {
  if (HasScheme(url, "data")) {
    OMNI_ASSIGN_OR_RETURN(DataUrl data, ParseDataUrl(url, options_.max_bytes));
    *claimed_type = std::move(data.media_type);
    return std::move(data.bytes);
  }
  if (HasScheme(url, "s3")) {
    if (!options_.read_s3) {
      return InvalidArgument(fmt::format("fetching {} is not allowed: this server reads no s3:// URLs",
                                         UrlForDisplay(url)));
    }
    std::string_view rest = url.substr(3);  // after "s3:"
    if (!rest.starts_with("//")) return InvalidArgument("malformed s3:// URL: expected s3://bucket/key");
    rest.remove_prefix(2);
    const size_t slash = rest.find('/');
    if (slash == std::string_view::npos || slash == 0 || slash + 1 == rest.size()) {
      return InvalidArgument("malformed s3:// URL: expected s3://bucket/key");
    }
    return options_.read_s3(rest.substr(0, slash), rest.substr(slash + 1), options_.max_bytes);
  }
  if (HasScheme(url, "file") && options_.file_root.empty()) {
    return InvalidArgument(fmt::format("fetching {} is not allowed: this server reads no file:// URLs",
                                       UrlForDisplay(url)));
  }
  if (!HasScheme(url, "file") && !HasScheme(url, "http") && !HasScheme(url, "https")) {
    return InvalidArgument(fmt::format("unsupported media URL '{}': use data:, http(s)://, s3:// or file://",
                                       UrlForDisplay(url.substr(0, 64))));
  }
  FetchOptions fetch{.max_bytes = options_.max_bytes, .timeout = options_.timeout,
                     .file_root = options_.file_root, .policy = options_.policy};
  return FetchUrl(url, fetch, http_);
}

StatusOr<FetchedMedia> MediaFetcher::Fetch(std::string_view url) const {
  FetchedMedia media;
  OMNI_ASSIGN_OR_RETURN(media.bytes, ReadBytes(url, &media.claimed_type));
  media.kind = SniffMediaKind(media.bytes);
  media.sha256 = Sha256Hex(media.bytes);
  return media;
}

}  // namespace omni::media
