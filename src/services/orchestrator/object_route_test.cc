#include "services/orchestrator/object_route.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "storage/fs_store.h"

namespace omni::orchestrator {
namespace {

namespace fs = std::filesystem;

HttpRequest Get(const std::string& target) {
  HttpRequest r;
  r.target = target;
  const size_t q = target.find('?');
  r.path = target.substr(0, q);
  if (q != std::string::npos) r.query = ParseQueryString(target.substr(q + 1));
  return r;
}

TEST(ObjectRouteTest, ServesSignedObjectsAndRefusesTheRest) {
  const fs::path dir = fs::temp_directory_path() / ("object_route_test." + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto store = FsStore::Open(PathToFileUrl(dir.string()), {.sync = false});
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->Put("gen/vd/a.png", "PNGBYTES", {.content_type = "image/png"}).ok());
  FakeClock clock;
  ObjectUrlSigner signer(std::string(32, 's'));
  const std::string url = *signer.SignedPath("gen/vd/a.png", clock.WallNow() + std::chrono::seconds(60));

  HttpResponse ok = ServeSignedObject(Get(url), **store, signer, clock);
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, "PNGBYTES");
  EXPECT_EQ(ok.headers.GetOr("content-type", ""), "image/png");

  std::string tampered = url;
  tampered.replace(tampered.find("a.png"), 5, "b.png");
  EXPECT_EQ(ServeSignedObject(Get(tampered), **store, signer, clock).status, 403);
  EXPECT_EQ(ServeSignedObject(Get("/v1/objects/gen/vd/a.png"), **store, signer, clock).status, 403);
  // A signed key without an object: 404.
  const std::string missing = *signer.SignedPath("gen/vd/none.png", clock.WallNow() + std::chrono::seconds(60));
  EXPECT_EQ(ServeSignedObject(Get(missing), **store, signer, clock).status, 404);
  clock.Advance(std::chrono::seconds(61));
  HttpResponse expired = ServeSignedObject(Get(url), **store, signer, clock);
  EXPECT_EQ(expired.status, 403);
  EXPECT_NE(expired.body.find("expired"), std::string::npos) << expired.body;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace omni::orchestrator
