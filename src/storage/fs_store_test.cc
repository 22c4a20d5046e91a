#include "storage/fs_store.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/utf8.h"
#include "storage/content_hash.h"
#include "storage/fs_io.h"
#include "storage/url_fetch.h"

namespace omni {
namespace {

namespace fs = std::filesystem;
using std::chrono::hours;
using std::chrono::seconds;

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The names in `dir` (not recursive) that FsStore reserves: temporaries, sidecars.
std::vector<std::string> ReservedNames(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename();
    if (name.find('#') != std::string::npos) names.push_back(name);
  }
  return names;
}

void SetMtime(const std::string& path, Clock::WallTime t) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  struct timespec times[2];
  times[0].tv_sec = times[1].tv_sec = ns / 1'000'000'000;
  times[0].tv_nsec = times[1].tv_nsec = ns % 1'000'000'000;
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << path << ": " << std::strerror(errno);
}

class FsStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "fs_store_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    base_ = tmpl;
    store_ = OpenStore({.sync = false});
  }
  void TearDown() override {
    store_.reset();
    std::error_code ec;
    fs::remove_all(base_, ec);
  }

  std::unique_ptr<FsStore> OpenStore(FsStoreOptions options) {
    auto store = FsStore::Open("file://" + base_ + "/store", std::move(options));
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(*store) : nullptr;
  }
  std::string Root() const { return base_ + "/store"; }

  std::string base_;
  std::unique_ptr<FsStore> store_;
};

TEST_F(FsStoreTest, RoundTrip) {
  auto synced = OpenStore({.sync = true, .sync_sidecar = true});
  const std::string data = "hello, object store";
  PutOptions options{.content_type = "text/plain", .metadata = {{"model", "m1"}, {"kind", "test"}}};
  ASSERT_TRUE(synced->Put("a/b/c.bin", data, options).ok());

  auto got = synced->Get("a/b/c.bin");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, data);
  EXPECT_EQ(*synced->Get("a/b/c.bin", ByteRange{7, 6}), "object");
  EXPECT_EQ(*synced->Get("a/b/c.bin", ByteRange{7, std::nullopt}), "object store");
  EXPECT_EQ(*synced->Get("a/b/c.bin", ByteRange{7, 1000}), "object store");
  EXPECT_EQ(*synced->Get("a/b/c.bin", ByteRange{3, 0}), "");
  EXPECT_EQ(synced->Get("a/b/c.bin", ByteRange{data.size(), 1}).status().code(), StatusCode::kInvalidArgument);

  auto info = synced->Head("a/b/c.bin");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->key, "a/b/c.bin");
  EXPECT_EQ(info->size, data.size());
  EXPECT_EQ(info->etag, Xxh128Hex(data));
  EXPECT_EQ(info->content_type, "text/plain");
  EXPECT_EQ(info->metadata, options.metadata);

  auto listed = synced->List("a/");
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].key, "a/b/c.bin");
  EXPECT_EQ((*listed)[0].etag, Xxh128Hex(data));
  EXPECT_EQ((*listed)[0].content_type, "text/plain");

  ASSERT_TRUE(synced->Delete("a/b/c.bin").ok());
  EXPECT_EQ(synced->Get("a/b/c.bin").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(synced->Head("a/b/c.bin").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(synced->Delete("a/b/c.bin").ok());  // missing is fine, as on S3
  EXPECT_FALSE(fs::exists(Root() + "/a"));         // empty directories go too
  EXPECT_TRUE(synced->List("").value().empty());
}

TEST_F(FsStoreTest, OverwriteReplacesDataAndMetadata) {
  ASSERT_TRUE(store_->Put("k", "first", {.metadata = {{"v", "1"}}}).ok());
  ASSERT_TRUE(store_->Put("k", "second!", {.metadata = {{"v", "2"}}}).ok());
  EXPECT_EQ(*store_->Get("k"), "second!");
  auto info = store_->Head("k");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->metadata, (ObjectMetadata{{"v", "2"}}));
  EXPECT_EQ(info->etag, Xxh128Hex("second!"));
  EXPECT_EQ(ReservedNames(Root()).size(), 1u);  // only the live sidecar remains
}

TEST_F(FsStoreTest, EmptyObject) {
  ASSERT_TRUE(store_->Put("empty", "").ok());
  EXPECT_EQ(*store_->Get("empty"), "");
  EXPECT_EQ(*store_->Get("empty", ByteRange{0, std::nullopt}), "");
  EXPECT_EQ(store_->Head("empty")->etag, Xxh128Hex(""));
}

TEST_F(FsStoreTest, GetStreamDeliversChunksAndStops) {
  std::string data(3 * (1 << 20) + 5, 'x');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('a' + i % 26);
  ASSERT_TRUE(store_->Put("big", data).ok());
  std::string streamed;
  int chunks = 0;
  ASSERT_TRUE(store_->GetStream("big", std::nullopt, [&](std::string_view c) {
    streamed.append(c);
    ++chunks;
    return true;
  }).ok());
  EXPECT_EQ(streamed, data);
  EXPECT_EQ(chunks, 4);
  streamed.clear();
  ASSERT_TRUE(store_->GetStream("big", ByteRange{10, 20}, [&](std::string_view c) {
    streamed.append(c);
    return true;
  }).ok());
  EXPECT_EQ(streamed, data.substr(10, 20));
  Status stopped = store_->GetStream("big", std::nullopt, [](std::string_view) { return false; });
  EXPECT_EQ(stopped.code(), StatusCode::kCancelled);
}

TEST_F(FsStoreTest, PutFile) {
  std::string path = base_ + "/source.bin";
  std::string data(2'500'000, '\x5a');
  data[1'234'567] = 'q';
  std::ofstream(path, std::ios::binary) << data;
  ASSERT_TRUE(store_->PutFile("from/file", path, {.content_type = "application/x-test"}).ok());
  EXPECT_EQ(*store_->Get("from/file"), data);
  EXPECT_EQ(store_->Head("from/file")->etag, Xxh128Hex(data));
  EXPECT_EQ(store_->PutFile("from/missing", base_ + "/nope").code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->PutFile("from/dir", base_).code(), StatusCode::kInvalidArgument);
}

TEST_F(FsStoreTest, ListByPrefixInKeyOrder) {
  for (const char* key : {"x10", "x/2", "y", "x/sub/3", "x/1"}) ASSERT_TRUE(store_->Put(key, key).ok());
  auto keys = [&](std::string_view prefix) {
    std::vector<std::string> out;
    auto listed = store_->List(prefix);
    EXPECT_TRUE(listed.ok()) << listed.status().ToString();
    if (listed.ok()) {
      for (const ObjectInfo& info : *listed) out.push_back(info.key);
    }
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(keys(""), (V{"x/1", "x/2", "x/sub/3", "x10", "y"}));
  EXPECT_EQ(keys("x"), (V{"x/1", "x/2", "x/sub/3", "x10"}));
  EXPECT_EQ(keys("x/"), (V{"x/1", "x/2", "x/sub/3"}));
  EXPECT_EQ(keys("x/su"), (V{"x/sub/3"}));
  EXPECT_EQ(keys("z"), V{});
  EXPECT_EQ(keys("../"), V{});
  EXPECT_EQ(keys("x/../"), V{});
  EXPECT_EQ((*store_->List("x/1"))[0].size, 3u);
  // Reserved files and files whose names no key can have are not objects.
  std::ofstream(Root() + "/x/#tmp.1.2.3.4") << "partial";
  std::ofstream(Root() + "/x/not-utf8-\xff") << "foreign";
  std::ofstream(Root() + "/x/tab\tname") << "foreign";
  std::ofstream(Root() + "/x/back\\slash") << "foreign";
  EXPECT_EQ(keys("x/"), (V{"x/1", "x/2", "x/sub/3"}));
  // A file written by hand under a name that is a key is an object.
  std::ofstream(Root() + "/x/has space") << "foreign";
  EXPECT_EQ(keys("x/"), (V{"x/1", "x/2", "x/has space", "x/sub/3"}));
  EXPECT_EQ(*store_->Get("x/has space"), "foreign");
}

TEST(ObjectKeyTest, AnyUtf8WithoutControlCharacters) {
  for (std::string good : {"a", "a b", "my photo.jpg", "a&b.png", "\xd1\x84\xd0\xbe\xd1\x82\xd0\xbe.jpg", "a?b=c#d",
                           "100%", "%2F", "x\"y'z", "a\\b", "dir/my photo & co + 100%\xc3\xa9.jpg", " lead/trail ",
                           "...", "a/.../b", ".hidden/x.", "\xf0\x9f\x98\x80", "\xef\xbf\xbf", "\xc2\x85"}) {
    EXPECT_TRUE(ValidateObjectKey(good).ok()) << good << ": " << ValidateObjectKey(good).ToString();
  }
  // 1024 bytes of two-byte characters; one byte more is too long.
  std::string longest;
  for (int i = 0; i < 512; ++i) longest += "\xc3\xa9";
  EXPECT_TRUE(ValidateObjectKey(longest).ok());
  EXPECT_EQ(ValidateObjectKey(longest + "a").code(), StatusCode::kInvalidArgument);

  auto why = [](std::string_view key) {
    Status s = ValidateObjectKey(key);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << ShownObjectKey(key);
    EXPECT_EQ(s.param(), "key");
    EXPECT_TRUE(IsValidUtf8(s.message())) << s.message();
    return s.message();
  };
  EXPECT_EQ(why(""), "invalid object key '': empty");
  EXPECT_EQ(why(std::string("nul\0x", 5)), "invalid object key 'nul\\x00x': contains a NUL byte (at byte 3)");
  EXPECT_EQ(why("tab\tx"), "invalid object key 'tab\\x09x': contains the control character 0x09 (at byte 3)");
  EXPECT_EQ(why("a\nb"), "invalid object key 'a\\x0ab': contains the control character 0x0a (at byte 1)");
  EXPECT_EQ(why("a\rb"), "invalid object key 'a\\x0db': contains the control character 0x0d (at byte 1)");
  EXPECT_EQ(why("del\x7f"), "invalid object key 'del\\x7f': contains the control character 0x7f (at byte 3)");
  EXPECT_EQ(why("esc\x1b[0m"), "invalid object key 'esc\\x1b[0m': contains the control character 0x1b (at byte 3)");
  EXPECT_EQ(why("bad\xff"), "invalid object key 'bad\\xff': is not valid UTF-8");
  EXPECT_EQ(why("latin1 caf\xe9"), "invalid object key 'latin1 caf\\xe9': is not valid UTF-8");
  EXPECT_EQ(why("overlong \xc0\xaf"), "invalid object key 'overlong \\xc0\\xaf': is not valid UTF-8");
  EXPECT_EQ(why("surrogate \xed\xa0\x80"), "invalid object key 'surrogate \\xed\\xa0\\x80': is not valid UTF-8");
  EXPECT_EQ(why("cut \xe2\x82"), "invalid object key 'cut \\xe2\\x82': is not valid UTF-8");
  EXPECT_EQ(why("past \xf4\x90\x80\x80"), "invalid object key 'past \\xf4\\x90\\x80\\x80': is not valid UTF-8");
  EXPECT_EQ(why("/abs"), "invalid object key '/abs': starts with '/'");
  EXPECT_EQ(why("a//b"), "invalid object key 'a//b': contains an empty path segment");
  EXPECT_EQ(why("a/./b"), "invalid object key 'a/./b': contains a '.' or '..' segment");
  EXPECT_EQ(why("../a"), "invalid object key '../a': contains a '.' or '..' segment");
  EXPECT_EQ(why("a/.."), "invalid object key 'a/..': contains a '.' or '..' segment");
  EXPECT_EQ(why("a b/"), "invalid object key 'a b/': ends with '/'");
  // A long key is shown cut, never in the middle of a character.
  EXPECT_EQ(why(std::string(63, 'a') + "\xc3\xa9" + std::string(2000, 'b')),
            "invalid object key '" + std::string(63, 'a') + "...': longer than 1024 bytes");
}

TEST_F(FsStoreTest, KeyRules) {
  for (std::string bad : {"", "/abs", "../up", "a/../b", "a/./b", "a//b", "a/", "a#b", "dir#1/x", "#tmp.1", "a\\b",
                          "dir\\x/y", "tab\there", "new\nline", "del\x7f", "bad\xff", "overlong\xc0\xaf"}) {
    EXPECT_EQ(store_->Put(bad, "x").code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(store_->Get(bad).status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(store_->Head(bad).status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(store_->Delete(bad).code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(store_->Presign(bad, PresignMethod::kGet, seconds(60)).status().code(), StatusCode::kInvalidArgument)
        << bad;
    EXPECT_EQ(store_->Presign(bad, PresignMethod::kPut, seconds(60)).status().code(), StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ(store_->Put(std::string("a\0b", 3), "x").code(), StatusCode::kInvalidArgument);
  Status hash = store_->Put("photos/a#1.jpg", "x");
  EXPECT_EQ(hash.message(),
            "invalid object key 'photos/a#1.jpg': FsStore refuses '#' in keys (it names its own metadata and "
            "temporary files)");
  EXPECT_EQ(hash.param(), "key");
  EXPECT_NE(store_->Put("a\\b", "x").message().find("FsStore refuses '\\'"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(Root()));  // nothing was created for a refused key
  EXPECT_EQ(store_->Put(std::string(1025, 'a'), "x").code(), StatusCode::kInvalidArgument);
  Status segment = store_->Put(std::string(235, 'a'), "x");  // one segment
  EXPECT_EQ(segment.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(segment.message().find("at most 234 bytes between slashes"), std::string::npos) << segment.message();
  // 1024 bytes in segments the file system can hold.
  std::string longest;
  while (longest.size() + 201 <= 1024) longest += std::string(200, 'k') + "/";
  longest += std::string(1024 - longest.size(), 'z');
  ASSERT_EQ(longest.size(), 1024u);
  ASSERT_TRUE(store_->Put(longest, "deep").ok());
  EXPECT_EQ(*store_->Get(longest), "deep");
  EXPECT_TRUE(store_->Put("ok-chars_!.*'()=+,@~/Z9", "x").ok());
  // 234 bytes between slashes counts bytes, not characters: 117 two-byte ones.
  std::string wide;
  for (int i = 0; i < 117; ++i) wide += "\xc3\xa9";
  EXPECT_TRUE(store_->Put("w/" + wide, "x").ok());
  EXPECT_EQ(store_->Put("w/" + wide + "a", "x").code(), StatusCode::kInvalidArgument);
}

// Keys with every character a URL, a shell or a file:// reader could trip on
// go through every operation and come back byte for byte.
TEST_F(FsStoreTest, KeysWithReservedAndNonAsciiCharactersRoundTrip) {
  const std::vector<std::string> keys = {
      "dir/my photo & co + 100%\xc3\xa9.jpg",
      "a&b.png",
      "\xd1\x84\xd0\xbe\xd1\x82\xd0\xbe.jpg",                     // фото.jpg
      "q/what?x=1;y=\"2\" 'z'",                                  // '?', '=', ';' and quotes
      "pct/50%2Foff %41%zz%",                                    // looks escaped, is not
      "sp ace/ leading and trailing ",                           // spaces at both ends of segments
      "\xe6\x97\xa5\xe6\x9c\xac/\xf0\x9f\x98\x80 \xc3\xbc",       // 日本/😀 ü
      "punct/~!$&'()*+,;=:@[]{}|^`<>",
  };
  PutOptions options{.content_type = "image/jpeg", .metadata = {{"orig", "yes"}}};
  for (const std::string& key : keys) {
    SCOPED_TRACE(key);
    const std::string data = "bytes of " + key;
    Status put = store_->Put(key, data, options);
    ASSERT_TRUE(put.ok()) << put.ToString();
    EXPECT_TRUE(fs::is_regular_file(fs::path(Root()) / key));  // the key is the file's path, byte for byte

    EXPECT_EQ(store_->Get(key).value(), data);
    auto info = store_->Head(key);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_EQ(info->key, key);
    EXPECT_EQ(info->size, data.size());
    EXPECT_EQ(info->etag, Xxh128Hex(data));
    EXPECT_EQ(info->content_type, "image/jpeg");
    EXPECT_EQ(info->metadata, options.metadata);

    auto listed = store_->List(key);
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    ASSERT_EQ(listed->size(), 1u);
    EXPECT_EQ((*listed)[0].key, key);
    EXPECT_EQ((*listed)[0].etag, Xxh128Hex(data));

    // The presigned URL is plain ASCII with every special byte escaped, and
    // fetching it gives the object.
    auto url = store_->Presign(key, PresignMethod::kGet, seconds(60));
    ASSERT_TRUE(url.ok()) << url.status().ToString();
    for (unsigned char c : *url) {
      EXPECT_TRUE(c > 0x20 && c < 0x7f && c != '?' && c != '#' && c != '"') << *url;
    }
    EXPECT_EQ(FileUrlToPath(*url).value(), store_->root() + "/" + key);
    auto fetched = FetchUrl(*url, {.file_root = store_->root()}, nullptr);
    ASSERT_TRUE(fetched.ok()) << *url << ": " << fetched.status().ToString();
    EXPECT_EQ(*fetched, data);
  }
  // The first key's PUT URL replaces the object through PutToUrl.
  auto put_url = store_->Presign(keys[0], PresignMethod::kPut, seconds(60));
  ASSERT_TRUE(put_url.ok()) << put_url.status().ToString();
  ASSERT_TRUE(PutToUrl(*put_url, "replaced", {.sync = false, .file_root = store_->root()}, nullptr).ok());
  EXPECT_EQ(store_->Get(keys[0]).value(), "replaced");

  auto listed = store_->List("");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  std::vector<std::string> got;
  for (const ObjectInfo& info : *listed) got.push_back(info.key);
  std::vector<std::string> want = keys;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);  // byte order, the order of S3's List
  // Prefixes with special characters select by bytes too.
  EXPECT_EQ(store_->List("dir/my photo & co").value().size(), 1u);
  EXPECT_EQ(store_->List("dir/my photo & co + 100%\xc3").value().size(), 1u);  // half a character
  EXPECT_EQ(store_->List("q/what?").value().size(), 1u);
  EXPECT_EQ(store_->List("q/what#").value().size(), 0u);
  EXPECT_EQ(store_->List("\xe6\x97\xa5\xe6\x9c\xac/").value().size(), 1u);

  for (const std::string& key : keys) {
    SCOPED_TRACE(key);
    ASSERT_TRUE(store_->Delete(key).ok());
    EXPECT_EQ(store_->Get(key).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(store_->Head(key).status().code(), StatusCode::kNotFound);
  }
  EXPECT_TRUE(store_->List("").value().empty());
  EXPECT_TRUE(fs::is_empty(Root()));  // sidecars and directories went too
}

TEST_F(FsStoreTest, SymlinkEscapeIsRefused) {
  std::string outside = base_ + "/outside";
  fs::create_directories(outside);
  std::ofstream(outside + "/secret") << "top secret";
  fs::create_directory_symlink(outside, Root() + "/link");
  fs::create_symlink(outside + "/secret", Root() + "/leaflink");

  EXPECT_EQ(store_->Get("link/secret").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(store_->Head("link/secret").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(store_->Put("link/planted", "x").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(store_->Put("link/deeper/planted", "x").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(store_->Delete("link/secret").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(store_->Presign("link/secret", PresignMethod::kGet, seconds(60)).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(store_->List("link/").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(store_->Get("leaflink").status().code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(store_->List("").value().empty());  // links are never listed
  EXPECT_FALSE(fs::exists(outside + "/planted"));
  EXPECT_FALSE(fs::exists(outside + "/deeper"));
  EXPECT_EQ(ReadWholeFile(outside + "/secret"), "top secret");
  // Overwriting the link itself replaces the link, never its target.
  ASSERT_TRUE(store_->Put("leaflink", "mine").ok());
  EXPECT_EQ(ReadWholeFile(outside + "/secret"), "top secret");
  EXPECT_EQ(*store_->Get("leaflink"), "mine");
}

TEST_F(FsStoreTest, KeyThatIsAlsoAPrefixIsAConflict) {
  ASSERT_TRUE(store_->Put("a", "file").ok());
  EXPECT_EQ(store_->Put("a/b", "x").code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(store_->Put("d/e", "x").ok());
  EXPECT_EQ(store_->Put("d", "x").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->Get("d").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->Get("a/b").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store_->Delete("d").ok());
  EXPECT_EQ(*store_->Get("d/e"), "x");
}

// 8 threads write distinct 256 KiB payloads to one key while a reader checks
// that every read is one complete payload.
TEST_F(FsStoreTest, ConcurrentWritersLeaveOneCompleteObject) {
  constexpr int kThreads = 8;
  constexpr int kWrites = 20;
  constexpr size_t kBytes = 256 << 10;
  auto payload = [&](int id) {
    std::string p(kBytes, static_cast<char>(id));
    std::memcpy(p.data(), &id, sizeof id);
    return p;
  };
  auto check_complete = [&](const std::string& got) -> int {
    if (got.size() != kBytes) return -1;
    int id = 0;
    std::memcpy(&id, got.data(), sizeof id);
    return got == payload(id) ? id : -1;
  };
  ASSERT_TRUE(store_->Put("shared/key", payload(999)).ok());
  std::atomic<bool> done{false};
  std::atomic<int> bad_reads{0};
  std::thread reader([&] {
    while (!done) {
      auto got = store_->Get("shared/key");
      if (!got.ok() || check_complete(*got) < 0) ++bad_reads;
      auto info = store_->Head("shared/key");
      if (!info.ok() || info->size != kBytes) ++bad_reads;
    }
  });
  std::vector<std::thread> writers;
  std::atomic<int> failed_puts{0};
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kWrites; ++i) {
        int id = t * kWrites + i;
        if (!store_->Put("shared/key", payload(id), {.metadata = {{"writer", std::to_string(id)}}}).ok()) {
          ++failed_puts;
        }
      }
    });
  }
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
  EXPECT_EQ(failed_puts, 0);
  EXPECT_EQ(bad_reads, 0);

  auto got = store_->Get("shared/key");
  ASSERT_TRUE(got.ok());
  int id = check_complete(*got);
  ASSERT_GE(id, 0);
  ASSERT_LT(id, kThreads * kWrites);
  auto info = store_->Head("shared/key");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->etag, Xxh128Hex(*got));
  EXPECT_EQ(info->metadata, (ObjectMetadata{{"writer", std::to_string(id)}}));
  for (const std::string& name : ReservedNames(Root() + "/shared")) {
    EXPECT_FALSE(IsTempName(name)) << name;  // writers clean up after themselves
  }
}

// A child process starts a Put, is SIGKILLed halfway through, and the store
// still shows the old object; Expire then removes the stale temporary.
TEST_F(FsStoreTest, KilledWriterLeavesNoPartialObject) {
  ASSERT_TRUE(store_->Put("victim", "old bytes", {.metadata = {{"v", "old"}}}).ok());
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    FsStoreOptions options;
    options.on_write_progress_for_testing = [&](uint64_t) {
      char c = 1;
      (void)!::write(ready[1], &c, 1);
      for (;;) ::pause();  // killed here, one chunk into the object
    };
    auto store = FsStore::Open("file://" + Root(), std::move(options));
    if (store.ok()) (void)(*store)->Put("victim", std::string(8 << 20, 'N'));
    ::_exit(1);
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFSIGNALED(wstatus));

  EXPECT_EQ(*store_->Get("victim"), "old bytes");
  auto listed = store_->List("");
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].size, 9u);
  EXPECT_EQ(store_->Head("victim")->metadata, (ObjectMetadata{{"v", "old"}}));

  std::vector<std::string> temps;
  for (const std::string& name : ReservedNames(Root())) {
    if (IsTempName(name)) temps.push_back(name);
  }
  ASSERT_EQ(temps.size(), 1u);
  EXPECT_GT(fs::file_size(Root() + "/" + temps[0]), 0u);

  const Clock::WallTime t0{seconds(1'800'000'000)};
  SetMtime(Root() + "/" + temps[0], t0);
  SetMtime(Root() + "/victim", t0);
  FakeClock clock(t0 + std::chrono::minutes(59));
  EXPECT_EQ(*store_->Expire({""}, hours(24), clock), 0u);
  EXPECT_TRUE(fs::exists(Root() + "/" + temps[0]));  // could still be a live writer
  clock.Advance(std::chrono::minutes(2));
  EXPECT_EQ(*store_->Expire({""}, hours(24), clock), 0u);
  EXPECT_FALSE(fs::exists(Root() + "/" + temps[0]));
  EXPECT_EQ(*store_->Get("victim"), "old bytes");
}

TEST_F(FsStoreTest, ExpireByAgeUnderPrefixes) {
  for (const char* key : {"tmp/old", "tmp/new", "tmp/sub/old", "keep/old", "tmpx/old"}) {
    ASSERT_TRUE(store_->Put(key, key, {.content_type = "text/plain"}).ok());
  }
  const Clock::WallTime t0{seconds(1'800'000'000)};
  for (const char* key : {"tmp/old", "tmp/sub/old", "keep/old", "tmpx/old"}) {
    SetMtime(Root() + "/" + key, t0 - hours(2));
  }
  SetMtime(Root() + "/tmp/new", t0 - std::chrono::minutes(30));
  // Leftovers: an old temporary and an orphaned sidecar, and a young temporary.
  std::ofstream(Root() + "/tmp/#tmp.1.2.3.4") << "partial";
  std::ofstream(Root() + "/tmp/gone#12345") << "{}";
  std::ofstream(Root() + "/tmp/#tmp.5.6.7.8") << "live";
  SetMtime(Root() + "/tmp/#tmp.1.2.3.4", t0 - hours(3));
  SetMtime(Root() + "/tmp/gone#12345", t0 - hours(3));
  SetMtime(Root() + "/tmp/#tmp.5.6.7.8", t0 - std::chrono::minutes(5));

  FakeClock clock(t0);
  auto removed = store_->Expire(std::vector<std::string>{"tmp/", "tmp/sub/"}, hours(1), clock);  // overlapping prefixes
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(*removed, 2u);
  std::vector<std::string> left;
  auto listed = store_->List("");
  ASSERT_TRUE(listed.ok());
  for (const ObjectInfo& info : *listed) left.push_back(info.key);
  EXPECT_EQ(left, (std::vector<std::string>{"keep/old", "tmp/new", "tmpx/old"}));
  EXPECT_FALSE(fs::exists(Root() + "/tmp/sub"));
  EXPECT_FALSE(fs::exists(Root() + "/tmp/#tmp.1.2.3.4"));
  EXPECT_FALSE(fs::exists(Root() + "/tmp/gone#12345"));
  EXPECT_TRUE(fs::exists(Root() + "/tmp/#tmp.5.6.7.8"));
  // The live object's sidecar survives.
  EXPECT_EQ(store_->Head("tmp/new")->etag, Xxh128Hex("tmp/new"));
  EXPECT_EQ(store_->Head("tmp/new")->content_type, "text/plain");
  EXPECT_EQ(store_->Expire({""}, seconds(-1), clock).status().code(), StatusCode::kInvalidArgument);
}

// Forwards everything but Expire, to test ObjectStore's default Expire.
class ForwardingStore final : public ObjectStore {
 public:
  explicit ForwardingStore(ObjectStore* inner) : inner_(inner) {}
  Status Put(std::string_view k, std::string_view d, const PutOptions& o) override { return inner_->Put(k, d, o); }
  Status PutFile(std::string_view k, const std::string& p, const PutOptions& o) override {
    return inner_->PutFile(k, p, o);
  }
  StatusOr<std::string> Get(std::string_view k, std::optional<ByteRange> r) override { return inner_->Get(k, r); }
  Status GetStream(std::string_view k, std::optional<ByteRange> r, const ByteSink& s) override {
    return inner_->GetStream(k, r, s);
  }
  StatusOr<ObjectInfo> Head(std::string_view k) override { return inner_->Head(k); }
  Status Delete(std::string_view k) override { return inner_->Delete(k); }
  StatusOr<std::vector<ObjectInfo>> List(std::string_view p) override { return inner_->List(p); }
  StatusOr<std::string> Presign(std::string_view k, PresignMethod m, seconds ttl) override {
    return inner_->Presign(k, m, ttl);
  }
  const std::string& uri() const override { return inner_->uri(); }

 private:
  ObjectStore* inner_;
};

TEST_F(FsStoreTest, DefaultExpireListsAndDeletes) {
  ForwardingStore forwarding(store_.get());
  ObjectStore& store = forwarding;  // default arguments live on the interface
  for (const char* key : {"d/old", "d/new", "e/old"}) ASSERT_TRUE(store.Put(key, key).ok());
  const Clock::WallTime t0{seconds(1'800'000'000)};
  SetMtime(Root() + "/d/old", t0 - hours(2));
  SetMtime(Root() + "/e/old", t0 - hours(2));
  SetMtime(Root() + "/d/new", t0);
  FakeClock clock(t0);
  auto removed = store.Expire(std::vector<std::string>{"d/", "d"}, hours(1), clock);
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(*removed, 1u);
  EXPECT_EQ(store.Get("d/old").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store.Get("d/new").ok());
  EXPECT_TRUE(store.Get("e/old").ok());
}

TEST_F(FsStoreTest, PresignReturnsAFileUrlOfTheBytes) {
  const std::string data = "presigned bytes";
  ASSERT_TRUE(store_->Put("p/q.bin", data).ok());
  auto url = store_->Presign("p/q.bin", PresignMethod::kGet, seconds(300));
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  EXPECT_EQ(*url, "file://" + Root() + "/p/q.bin");
  auto path = FileUrlToPath(*url);
  ASSERT_TRUE(path.ok());
  EXPECT_EQ(ReadWholeFile(*path), data);
  EXPECT_EQ(store_->Presign("p/q.bin", PresignMethod::kGet, seconds(0)).status().code(),
            StatusCode::kInvalidArgument);
  // A PUT URL for a key in a new directory: the directory is made.
  auto put_url = store_->Presign("new/dir/obj", PresignMethod::kPut, seconds(300));
  ASSERT_TRUE(put_url.ok());
  EXPECT_TRUE(fs::is_directory(Root() + "/new/dir"));
  // Unlike S3, only what Get would serve gets a GET URL: any tool may read
  // a file:// URL, and would follow a link.
  EXPECT_EQ(store_->Presign("no/such", PresignMethod::kGet, seconds(300)).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->Presign("p", PresignMethod::kGet, seconds(300)).status().code(), StatusCode::kNotFound);
  ASSERT_EQ(::mkfifo((Root() + "/p/fifo").c_str(), 0600), 0);
  EXPECT_EQ(store_->Presign("p/fifo", PresignMethod::kGet, seconds(300)).status().code(), StatusCode::kNotFound);
  fs::create_symlink(Root() + "/p/q.bin", Root() + "/p/link");
  EXPECT_EQ(store_->Presign("p/link", PresignMethod::kGet, seconds(300)).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(store_->Presign("p/link", PresignMethod::kPut, seconds(300)).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(store_->Presign("p", PresignMethod::kPut, seconds(300)).status().code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(FsStoreTest, DataWithoutSidecarIsDescribedByItsBytes) {
  ASSERT_TRUE(store_->Put("hand", "old", {.content_type = "text/plain", .metadata = {{"a", "b"}}}).ok());
  // Replaced outside FsStore (a person, a file:// PUT): a new inode without
  // a sidecar; the old sidecar no longer matches.
  std::ofstream(Root() + "/hand.new") << "hand-written";
  fs::rename(Root() + "/hand.new", Root() + "/hand");
  auto info = store_->Head("hand");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->size, 12u);
  EXPECT_EQ(info->etag, Xxh128Hex("hand-written"));
  EXPECT_EQ(info->content_type, "application/octet-stream");
  EXPECT_TRUE(info->metadata.empty());
  EXPECT_EQ(store_->List("hand").value()[0].etag, "");  // List does not hash
}

TEST_F(FsStoreTest, OpenValidatesTheUri) {
  EXPECT_EQ(FsStore::Open("file://relative/dir").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(FsStore::Open("s3://bucket").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(FsStore::Open("/no/scheme").status().code(), StatusCode::kInvalidArgument);
  auto spaced = FsStore::Open(PathToFileUrl(base_ + "/with space/store"));
  ASSERT_TRUE(spaced.ok()) << spaced.status().ToString();
  EXPECT_TRUE(fs::is_directory(base_ + "/with space/store"));
  ASSERT_TRUE((*spaced)->Put("k", "v").ok());
  auto url = (*spaced)->Presign("k", PresignMethod::kGet, seconds(1));
  ASSERT_TRUE(url.ok());
  EXPECT_NE(url->find("with%20space"), std::string::npos);
  EXPECT_EQ((*spaced)->uri(), PathToFileUrl(base_ + "/with space/store"));
}

}  // namespace
}  // namespace omni
