#include "storage/open_store.h"

#include "storage/fs_io.h"
#include "storage/fs_store.h"
#include "storage/s3/s3_store.h"

namespace omni {

StatusOr<std::unique_ptr<ObjectStore>> OpenObjectStore(std::string_view uri, const S3Credentials& credentials,
                                                       const S3StoreOptions& s3_options) {
  if (uri.starts_with("file://")) {
    OMNI_ASSIGN_OR_RETURN(std::unique_ptr<FsStore> fs, FsStore::Open(uri));
    return std::unique_ptr<ObjectStore>(std::move(fs));
  }
  if (uri.starts_with("s3://")) {
    if (credentials.access_key_id.empty() || credentials.secret_access_key.empty()) {
      return InvalidArgument("an s3:// store needs credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
          .WithParam("store");
    }
    OMNI_ASSIGN_OR_RETURN(std::unique_ptr<S3Store> s3, S3Store::Open(uri, credentials, s3_options));
    return std::unique_ptr<ObjectStore>(std::move(s3));
  }
  std::string shown(uri.substr(0, 80));
  return InvalidArgument("unsupported store URI '" + shown +
                         "': expected file:///abs/dir or s3://bucket[/prefix]?endpoint=http://host:port")
      .WithParam("store");
}

StatusOr<std::string> ObjectUriInStore(std::string_view store_uri, std::string_view key) {
  if (store_uri.starts_with("s3://")) {
    OMNI_ASSIGN_OR_RETURN(S3Location loc, ParseS3Uri(store_uri));
    return "s3://" + loc.bucket + "/" + (loc.prefix.empty() ? "" : loc.prefix + "/") + std::string(key);
  }
  if (store_uri.starts_with("file://")) {
    OMNI_ASSIGN_OR_RETURN(std::string dir, FileUrlToPath(store_uri));
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    return PathToFileUrl(dir + "/" + std::string(key));
  }
  return InvalidArgument("unsupported store URI scheme: " + std::string(store_uri.substr(0, 16)));
}

StatusOr<std::string> ObjectKeyInStore(std::string_view store_uri, std::string_view object_uri) {
  std::string dir;   // the store's bucket or directory
  std::string rest;  // the object's bucket or path
  if (store_uri.starts_with("s3://") && object_uri.starts_with("s3://")) {
    OMNI_ASSIGN_OR_RETURN(S3Location loc, ParseS3Uri(store_uri));
    dir = loc.bucket + (loc.prefix.empty() ? "" : "/" + loc.prefix);
    rest = std::string(object_uri.substr(5));
  } else if (store_uri.starts_with("file://") && object_uri.starts_with("file://")) {
    OMNI_ASSIGN_OR_RETURN(dir, FileUrlToPath(store_uri));
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    OMNI_ASSIGN_OR_RETURN(rest, FileUrlToPath(object_uri));
  } else {
    return InvalidArgument("the object URI is not in the store's scheme");
  }
  if (!rest.starts_with(dir + "/") || rest.size() == dir.size() + 1) {
    return InvalidArgument("the object URI is outside the store");
  }
  return rest.substr(dir.size() + 1);
}

}  // namespace omni
