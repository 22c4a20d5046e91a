// OpenObjectStore: the one place a store URI becomes an ObjectStore.
//   file:///abs/dir                                   -> FsStore
//   s3://bucket[/prefix]?endpoint=http://h:p&region=r -> S3Store
#pragma once

#include <memory>
#include <string_view>

#include "core/status.h"
#include "storage/object_store.h"
#include "storage/s3/s3_store.h"
#include "storage/s3/sigv4.h"

namespace omni {

// `credentials` and `s3_options` are used by s3:// stores only; the process
// edge reads the credentials (S3CredentialsFromEnv in storage/s3/s3_store.h).
StatusOr<std::unique_ptr<ObjectStore>> OpenObjectStore(std::string_view uri, const S3Credentials& credentials,
                                                       const S3StoreOptions& s3_options = {});

// Where object `key` of the store at `store_uri` lives, in the form the
// LLM server's media parts read: s3://BUCKET/PREFIX/KEY (the full key, no
// endpoint) or file:///DIR/KEY (percent-encoded). InvalidArgument for
// another scheme.
StatusOr<std::string> ObjectUriInStore(std::string_view store_uri, std::string_view key);

// The inverse: the key of the object that `object_uri` (s3://BUCKET/FULL/KEY
// or file:///DIR/KEY) names in the store at `store_uri`. InvalidArgument for
// a URI of another scheme, bucket or directory, or outside the store's prefix.
StatusOr<std::string> ObjectKeyInStore(std::string_view store_uri, std::string_view object_uri);

}  // namespace omni
