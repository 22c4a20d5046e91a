#include "services/orchestrator/object_route.h"

namespace omni::orchestrator {

HttpResponse ServeSignedObject(const HttpRequest& request, ObjectStore& store, const ObjectUrlSigner& signer,
                               const Clock& clock) {
  std::string_view path = request.path;
  if (!path.starts_with(ObjectUrlSigner::kPathPrefix)) return ErrorResponse(NotFound("no such object"));
  path.remove_prefix(ObjectUrlSigner::kPathPrefix.size());
  const std::string key(path);
  if (Status ok = signer.Verify(key, request.QueryParam("expires"), request.QueryParam("signature"), clock.WallNow());
      !ok.ok()) {
    return ErrorResponse(ok);
  }
  StatusOr<ObjectInfo> info = store.Head(key);
  if (!info.ok()) return ErrorResponse(info.status());
  StatusOr<std::string> bytes = store.Get(key);
  if (!bytes.ok()) return ErrorResponse(bytes.status());
  HttpResponse response;
  response.status = 200;
  response.headers.Set("content-type", info->content_type.empty() ? "application/octet-stream" : info->content_type);
  response.headers.Set("cache-control", "private, max-age=3600");
  response.body = std::move(bytes).value();
  return response;
}

}  // namespace omni::orchestrator
