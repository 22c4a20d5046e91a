#include "storage/open_store.h"

#include "storage/fs_store.h"
#include "storage/s3/s3_store.h"

namespace omni {

StatusOr<std::unique_ptr<ObjectStore>> OpenObjectStore(std::string_view uri, const S3Credentials& credentials) {
  if (uri.starts_with("file://")) {
    OMNI_ASSIGN_OR_RETURN(std::unique_ptr<FsStore> fs, FsStore::Open(uri));
    return std::unique_ptr<ObjectStore>(std::move(fs));
  }
  if (uri.starts_with("s3://")) {
    if (credentials.access_key_id.empty() || credentials.secret_access_key.empty()) {
      return InvalidArgument("an s3:// store needs credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
          .WithParam("store");
    }
    OMNI_ASSIGN_OR_RETURN(std::unique_ptr<S3Store> s3, S3Store::Open(uri, credentials));
    return std::unique_ptr<ObjectStore>(std::move(s3));
  }
  std::string shown(uri.substr(0, 80));
  return InvalidArgument("unsupported store URI '" + shown +
                         "': expected file:///abs/dir or s3://bucket[/prefix]?endpoint=http://host:port")
      .WithParam("store");
}

}  // namespace omni
