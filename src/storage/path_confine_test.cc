#include "storage/path_confine.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "storage/url_fetch.h"

namespace omni {
namespace {

namespace fs = std::filesystem;

TEST(ValidateRelativePath, RefusesEveryAmbiguousSegment) {
  EXPECT_TRUE(ValidateRelativePath("a").ok());
  EXPECT_TRUE(ValidateRelativePath("a/b.c/%2e").ok());  // a literal "%2e" is a name, not "."
  for (const std::string& bad : std::vector<std::string>{"", "/a", "a/", "a//b", ".", "..", "a/../b", "a/./b", "./a", "a/..", "a\\b",
                          std::string("a\0b", 3)}) {
    EXPECT_EQ(ValidateRelativePath(bad).code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ConfinedPathOfFileUrl, DecodesOnceThenValidates) {
  EXPECT_EQ(*ConfinedPathOfFileUrl("file:///srv/store/emb/a%20b", "/srv/store"), "emb/a b");
  EXPECT_EQ(*ConfinedPathOfFileUrl("file://localhost/srv/store/x", "/srv/store/"), "x");
  EXPECT_EQ(*ConfinedPathOfFileUrl("file:///srv/%73tore/x", "/srv/store"), "x");  // an escaped letter is a letter
  EXPECT_EQ(*ConfinedPathOfFileUrl("file:///etc/passwd", "/"), "etc/passwd");
  // Double encoding decodes to literal names, never to "..".
  EXPECT_EQ(*ConfinedPathOfFileUrl("file:///srv/store/%252e%252e/x", "/srv/store"), "%2e%2e/x");
  for (const std::string& bad : std::vector<std::string>{
           "file:///srv/store/%2e%2e/%2e%2e/etc/passwd",  // encoded traversal
           "file:///srv/store/%2E%2E/x",
           "file:///srv/store/../store/x",
           "file:///srv/store/./x",
           "file:///srv/store//x",
           "file:///srv/store/a%2fb",                      // encoded separator
           "file:///srv/store/..%2F..%2Fetc/passwd",
           "file:///srv/store/a%5c..%5cb",                 // backslash
           "file:///srv/store/a%00b",
           "file:///srv/store",                            // the root itself is no file
           "file:///srv/store/",
           "file:///srv/storeroom/x",                      // a sibling sharing the prefix
           "file:///etc/passwd",
           "file://host/srv/store/x",
           "file:///srv/store/x?q",
           "file:///srv/store/%zz"}) {
    EXPECT_EQ(ConfinedPathOfFileUrl(bad, "/srv/store").status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

class OpenBeneathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "path_confine_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    base_ = tmpl;
    root_ = base_ + "/root";
    fs::create_directories(root_ + "/d");
    fs::create_directories(base_ + "/outside");
    std::ofstream(base_ + "/outside/secret") << "root:x:0:0:secret";
    std::ofstream(root_ + "/d/file") << "inside";
    fs::create_symlink(base_ + "/outside/secret", root_ + "/filelink");
    fs::create_directory_symlink(base_ + "/outside", root_ + "/dirlink");
    fs::create_symlink("d/file", root_ + "/innerlink");  // even one that stays inside
    ASSERT_EQ(::mkfifo((root_ + "/fifo").c_str(), 0600), 0);
    root_fd_ = std::move(OpenRootDir(root_)).value();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(base_, ec);
  }
  std::string base_, root_;
  UniqueFd root_fd_;
};

TEST_F(OpenBeneathTest, OpensOnlyRegularFilesWithoutFollowingLinks) {
  auto ok = OpenFileBeneath(root_fd_.get(), "d/file");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->leaf, "file");
  EXPECT_EQ(ok->st.st_size, 6);
  EXPECT_EQ(OpenFileBeneath(root_fd_.get(), "filelink").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(OpenFileBeneath(root_fd_.get(), "innerlink").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(OpenFileBeneath(root_fd_.get(), "dirlink/secret").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(OpenFileBeneath(root_fd_.get(), "fifo").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(OpenFileBeneath(root_fd_.get(), "d").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(OpenFileBeneath(root_fd_.get(), "d/file/x").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(OpenFileBeneath(root_fd_.get(), "missing").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(OpenFileBeneath(root_fd_.get(), "../outside/secret").status().code(), StatusCode::kInvalidArgument);
}

// FetchUrl's file:// branch is confined the same way, and its messages never
// carry a byte of what it refused to read.
TEST_F(OpenBeneathTest, FetchUrlIsConfinedToItsRoot) {
  FetchOptions options{.file_root = root_};
  EXPECT_EQ(*FetchUrl("file://" + root_ + "/d/file", options, nullptr), "inside");
  const std::vector<std::string> refused = {
      "file://" + root_ + "/%2e%2e/outside/secret", "file://" + root_ + "/..%2foutside%2fsecret",
      "file://" + root_ + "/filelink",              "file://" + root_ + "/dirlink/secret",
      "file://" + root_ + "/fifo",                  "file://" + root_ + "/d",
      "file://" + base_ + "/outside/secret",        "file://" + root_ + "/%252e%252e/outside/secret"};
  for (const std::string& url : refused) {
    auto r = FetchUrl(url, options, nullptr);
    ASSERT_FALSE(r.ok()) << url;
    EXPECT_EQ(r.status().message().find("root:x"), std::string::npos) << r.status().message();
  }
  // The default root is "/", and links are still not followed there.
  EXPECT_EQ(FetchUrl("file://" + root_ + "/filelink", {}, nullptr).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(*FetchUrl("file://" + base_ + "/outside/secret", {}, nullptr), "root:x:0:0:secret");
}

TEST_F(OpenBeneathTest, PutToUrlIsConfinedToItsRoot) {
  PutUrlOptions options{.sync = false, .file_root = root_};
  ASSERT_TRUE(PutToUrl("file://" + root_ + "/d/new", "x", options, nullptr).ok());
  EXPECT_EQ(PutToUrl("file://" + root_ + "/dirlink/planted", "x", options, nullptr).code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(PutToUrl("file://" + root_ + "/%2e%2e/outside/planted", "x", options, nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PutToUrl("file://" + base_ + "/outside/planted", "x", options, nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(base_ + "/outside/planted"));
}

}  // namespace
}  // namespace omni
