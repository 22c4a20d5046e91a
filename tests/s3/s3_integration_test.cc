// S3Store against OpenStack Swift + s3api (a real S3 implementation that
// checks signatures, expiry and multipart). The `s3` CTest fixture starts the
// server once per run and writes its env line to OMNI_S3_ENV_FILE; without
// that file every test fails (it never skips: a missing server is a broken
// test setup, not a reason to pass).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "net/http_client.h"
#include "storage/s3/s3_store.h"
#include "storage/url_fetch.h"

namespace omni {
namespace {

struct S3Env {
  std::string endpoint, access_key, secret_key, region;
};

std::optional<S3Env> ReadEnv() {
  std::ifstream in(OMNI_S3_ENV_FILE);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  std::map<std::string, std::string> kv;
  std::stringstream ss(line);
  for (std::string tok; ss >> tok;) {
    size_t eq = tok.find('=');
    if (eq != std::string::npos) kv[tok.substr(0, eq)] = tok.substr(eq + 1);
  }
  if (kv["S3_ENDPOINT"].empty()) return std::nullopt;
  return S3Env{kv["S3_ENDPOINT"], kv["S3_ACCESS_KEY"], kv["S3_SECRET_KEY"], kv["S3_REGION"]};
}

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// Runs curl (a client that knows nothing of our signer) on a presigned URL.
// Returns the HTTP status; the response body lands in *body.
int Curl(const std::string& method, const std::string& url, const std::string& upload_file, std::string* body) {
  char out_path[] = "/tmp/omni-s3-curl-XXXXXX";
  int fd = mkstemp(out_path);
  if (fd < 0) return -1;
  close(fd);
  std::string cmd = "/usr/bin/curl -s -X " + method + " -o " + out_path + " -w '%{http_code}' ";
  if (!upload_file.empty()) cmd += "--data-binary @" + upload_file + " -H 'Content-Type:' ";
  cmd += "'" + url + "'";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  char buf[16] = {0};
  size_t n = fread(buf, 1, sizeof(buf) - 1, p);
  pclose(p);
  std::ifstream in(out_path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (body) *body = ss.str();
  std::remove(out_path);
  return n ? std::atoi(buf) : -1;
}

class S3IntegrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    env_ = new std::optional<S3Env>(ReadEnv());
    if (!*env_) return;
    bucket_ = new std::string("omni-it-" + std::to_string(getpid()) + "-" +
                              std::to_string(std::chrono::system_clock::now().time_since_epoch().count() % 1000000007));
    auto admin = Open("");
    if (admin) ASSERT_TRUE(admin->CreateBucket().ok());
  }
  static void TearDownTestSuite() {
    if (*env_) {
      auto admin = Open("");
      if (admin) EXPECT_TRUE(admin->DeleteBucketAndContents().ok());
    }
    delete env_;
    delete bucket_;
  }
  void SetUp() override {
    ASSERT_TRUE(env_->has_value()) << "no S3 server: " << OMNI_S3_ENV_FILE
                                   << " is missing; run through ctest (fixture s3_server_up)";
    store_ = Open("run");
    ASSERT_NE(store_, nullptr);
  }

  static std::string Uri(const std::string& prefix, const std::string& extra = "") {
    const S3Env& e = **env_;
    return "s3://" + *bucket_ + (prefix.empty() ? "" : "/" + prefix) + "?endpoint=" + e.endpoint + "&region=" +
           e.region + extra;
  }
  static std::unique_ptr<S3Store> Open(const std::string& prefix, const std::string& secret = "",
                                       const std::string& extra = "") {
    const S3Env& e = **env_;
    auto s = S3Store::Open(Uri(prefix, extra), S3Credentials{e.access_key, secret.empty() ? e.secret_key : secret, ""}, {});
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }

  static std::optional<S3Env>* env_;
  static std::string* bucket_;
  std::unique_ptr<S3Store> store_;
};

std::optional<S3Env>* S3IntegrationTest::env_ = nullptr;
std::string* S3IntegrationTest::bucket_ = nullptr;

TEST_F(S3IntegrationTest, PutGetHeadListDelete) {
  PutOptions opts{.content_type = "text/plain", .metadata = {{"model", "enc-1"}, {"shape", "[4, 8]"}}};
  ASSERT_TRUE(store_->Put("crud/a.txt", "hello", opts).ok());
  ASSERT_TRUE(store_->Put("crud/b+c=d.bin", std::string(1000, 'x')).ok());
  ASSERT_TRUE(store_->Put("other/z", "z").ok());

  auto got = store_->Get("crud/a.txt");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, "hello");

  auto head = store_->Head("crud/a.txt");
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(head->size, 5u);
  EXPECT_EQ(head->content_type, "text/plain");
  EXPECT_EQ(head->etag, "5d41402abc4b2a76b9719d911017c592");  // md5("hello")
  EXPECT_EQ(head->metadata, (ObjectMetadata{{"model", "enc-1"}, {"shape", "[4, 8]"}}));
  EXPECT_GT(head->last_modified.time_since_epoch().count(), 0);

  auto list = store_->List("crud/");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].key, "crud/a.txt");  // the URI prefix "run/" is stripped
  EXPECT_EQ((*list)[1].key, "crud/b+c=d.bin");
  EXPECT_EQ((*list)[1].size, 1000u);
  auto all = store_->List("");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 3u);

  // The prefix isolates stores: another prefix sees none of it.
  auto other = Open("elsewhere");
  EXPECT_TRUE(other->List("").value().empty());

  ASSERT_TRUE(store_->Delete("crud/a.txt").ok());
  EXPECT_EQ(store_->Get("crud/a.txt").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->Head("crud/a.txt").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store_->Delete("crud/a.txt").ok());  // deleting a missing key is fine
  EXPECT_EQ(store_->List("crud/").value().size(), 1u);
  EXPECT_EQ(store_->Get("../x").status().code(), StatusCode::kInvalidArgument);
}

// Keys with every character S3 allows that a URL, the signer or the XML of
// a listing could mangle, through every operation: the key comes back
// identical, and the server accepted our signature of its encoding.
TEST_F(S3IntegrationTest, KeysWithReservedAndNonAsciiCharacters) {
  const std::vector<std::string> keys = {
      "chars/dir/my photo & co + 100%\xc3\xa9.jpg",
      "chars/a&b.png",
      "chars/\xd1\x84\xd0\xbe\xd1\x82\xd0\xbe.jpg",                // фото.jpg
      "chars/q/what?x=1;y=\"2\" 'z'#frag",                          // '?', '=', '#', quotes
      "chars/pct/50%2Foff %41%zz%",                                 // looks escaped, is not
      "chars/sp ace/ leading and trailing ",
      "chars/\xe6\x97\xa5\xe6\x9c\xac/\xf0\x9f\x98\x80 \xc3\xbc",   // 日本/😀 ü
      "chars/punct/~!$&'()*+,;=:@[]{}|^`<>\\",
      "chars/hash#only",
  };
  HttpClient http;
  const FetchOptions fetch{.policy = {.allow_loopback = true}};
  PutOptions options{.content_type = "image/jpeg", .metadata = {{"orig", "yes"}}};
  for (const std::string& key : keys) {
    SCOPED_TRACE(key);
    const std::string data = "bytes of " + key;
    Status put = store_->Put(key, data, options);
    ASSERT_TRUE(put.ok()) << put.ToString();
    auto got = store_->Get(key);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, data);
    std::string streamed;
    ASSERT_TRUE(store_->GetStream(key, std::nullopt, [&](std::string_view c) { streamed += c; return true; }).ok());
    EXPECT_EQ(streamed, data);
    auto head = store_->Head(key);
    ASSERT_TRUE(head.ok()) << head.status().ToString();
    EXPECT_EQ(head->key, key);
    EXPECT_EQ(head->size, data.size());
    EXPECT_EQ(head->content_type, "image/jpeg");
    EXPECT_EQ(head->metadata, options.metadata);

    auto listed = store_->List(key);  // the key itself as the prefix
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    ASSERT_EQ(listed->size(), 1u);
    EXPECT_EQ((*listed)[0].key, key);
    EXPECT_EQ((*listed)[0].size, data.size());

    // A presigned GET, fetched by FetchUrl (which knows nothing of keys).
    auto url = store_->Presign(key, PresignMethod::kGet, std::chrono::seconds(600));
    ASSERT_TRUE(url.ok()) << url.status().ToString();
    auto fetched = FetchUrl(*url, fetch, &http);
    ASSERT_TRUE(fetched.ok()) << fetched.status().ToString();
    EXPECT_EQ(*fetched, data);
  }
  // A presigned PUT through PutToUrl replaces one of them.
  auto put_url = store_->Presign(keys[0], PresignMethod::kPut, std::chrono::seconds(600));
  ASSERT_TRUE(put_url.ok());
  Status put = PutToUrl(*put_url, "replaced", {.policy = {.allow_loopback = true}}, &http);
  ASSERT_TRUE(put.ok()) << put.ToString();
  EXPECT_EQ(store_->Get(keys[0]).value(), "replaced");

  auto all = store_->List("chars/");
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  std::vector<std::string> got;
  for (const ObjectInfo& info : *all) got.push_back(info.key);
  std::vector<std::string> want = keys;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  EXPECT_EQ(store_->List("chars/dir/my photo & co + 100%").value().size(), 1u);
  EXPECT_EQ(store_->List("chars/q/what?").value().size(), 1u);

  for (const std::string& key : keys) {
    SCOPED_TRACE(key);
    ASSERT_TRUE(store_->Delete(key).ok());
    EXPECT_EQ(store_->Head(key).status().code(), StatusCode::kNotFound);
  }
  EXPECT_TRUE(store_->List("chars/").value().empty());

  // Keys that are not UTF-8 or hold a control character never leave the client.
  for (std::string bad : {std::string("chars/nul\0x", 11), std::string("chars/tab\tx"), std::string("chars/bad\xff")}) {
    EXPECT_EQ(store_->Put(bad, "x").code(), StatusCode::kInvalidArgument) << ShownObjectKey(bad);
  }
}

TEST_F(S3IntegrationTest, MultipartPutFileOf20MB) {
  const std::string data = RandomBytes(20u << 20, 7);
  char path[] = "/tmp/omni-s3-mp-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  close(fd);
  Status st = store_->PutFile("big/20mb.bin", path, {.content_type = "application/x-test", .metadata = {{"k", "v"}}});
  std::remove(path);
  ASSERT_TRUE(st.ok()) << st.ToString();

  auto head = store_->Head("big/20mb.bin");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->size, data.size());
  EXPECT_NE(head->etag.find("-3"), std::string::npos) << head->etag;  // 8+8+4 MiB parts
  EXPECT_EQ(head->metadata, (ObjectMetadata{{"k", "v"}}));
  auto got = store_->Get("big/20mb.bin");
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(*got == data) << "multipart object differs from the file";

  // Range across the first part boundary, streamed.
  std::string streamed;
  ASSERT_TRUE(store_
                  ->GetStream("big/20mb.bin", ByteRange{(8u << 20) - 100, 200},
                              [&](std::string_view c) { streamed += c; return true; })
                  .ok());
  EXPECT_EQ(streamed, data.substr((8u << 20) - 100, 200));
}

TEST_F(S3IntegrationTest, RangeGet) {
  const std::string data = RandomBytes(100000, 3);
  ASSERT_TRUE(store_->Put("range/obj", data).ok());
  EXPECT_EQ(store_->Get("range/obj", ByteRange{10, 20}).value(), data.substr(10, 20));
  EXPECT_EQ(store_->Get("range/obj", ByteRange{99990, std::nullopt}).value(), data.substr(99990));
  EXPECT_EQ(store_->Get("range/obj", ByteRange{0, 0}).value(), "");
  EXPECT_EQ(store_->Get("range/obj", ByteRange{200000, 5}).status().code(), StatusCode::kInvalidArgument);  // 416
  std::string streamed;
  size_t chunks = 0;
  ASSERT_TRUE(store_->GetStream("range/obj", std::nullopt, [&](std::string_view c) {
    streamed += c;
    ++chunks;
    return true;
  }).ok());
  EXPECT_TRUE(streamed == data);
  EXPECT_GE(chunks, 1u);
  EXPECT_EQ(store_->GetStream("range/missing", std::nullopt, [](std::string_view) { return true; }).code(),
            StatusCode::kNotFound);
  // A sink that stops the read cancels it.
  EXPECT_EQ(store_->GetStream("range/obj", std::nullopt, [](std::string_view) { return false; }).code(),
            StatusCode::kCancelled);
}

TEST_F(S3IntegrationTest, SixteenConcurrentClients) {
  constexpr int kThreads = 16;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Even threads share the fixture's store (one pool, many threads); odd
      // ones are clients of their own.
      std::unique_ptr<S3Store> own = (t % 2) ? Open("run") : nullptr;
      S3Store* s = own ? own.get() : store_.get();
      for (int i = 0; i < 4; ++i) {
        const std::string key = "conc/t" + std::to_string(t) + "/o" + std::to_string(i);
        const std::string data = RandomBytes(50000 + 1000 * t + i, t * 100 + i);
        if (!s->Put(key, data).ok()) ++failures;
        auto got = s->Get(key);
        if (!got.ok() || *got != data) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(store_->List("conc/").value().size(), static_cast<size_t>(kThreads * 4));
}

TEST_F(S3IntegrationTest, WrongSecretIsPermissionDenied) {
  auto bad = Open("run", "not-the-secret");
  Status put = bad->Put("denied/x", "x");
  EXPECT_EQ(put.code(), StatusCode::kPermissionDenied) << put.ToString();
  EXPECT_EQ(bad->Get("denied/x").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(store_->Head("denied/x").status().code(), StatusCode::kNotFound);
}

TEST_F(S3IntegrationTest, VirtualHostStyle) {
  // Swift's storage_domain is "localhost": Host BUCKET.localhost:PORT selects
  // the bucket; the connection itself goes to the endpoint.
  std::string endpoint = (*env_)->endpoint;
  endpoint.replace(endpoint.find("127.0.0.1"), 9, "localhost");
  const S3Env& e = **env_;
  auto s = S3Store::Open("s3://" + *bucket_ + "/run?endpoint=" + endpoint + "&style=virtual",
                         S3Credentials{e.access_key, e.secret_key, ""}, {});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE((*s)->Put("vhost/k", "virtual").ok());
  EXPECT_EQ(store_->Get("vhost/k").value(), "virtual");
  EXPECT_EQ((*s)->List("vhost/").value().size(), 1u);
}

TEST_F(S3IntegrationTest, PresignedUrlsWorkWithCurl) {
  const std::string data = RandomBytes(300000, 11);
  ASSERT_TRUE(store_->Put("presign/get me & you+1%\xc3\xa9.bin", data).ok());
  auto spaced_url = store_->Presign("presign/get me & you+1%\xc3\xa9.bin", PresignMethod::kGet, std::chrono::seconds(600));
  ASSERT_TRUE(spaced_url.ok());
  std::string spaced_body;
  EXPECT_EQ(Curl("GET", *spaced_url, "", &spaced_body), 200) << spaced_body;
  EXPECT_TRUE(spaced_body == data);
  ASSERT_TRUE(store_->Put("presign/get+me(1).bin", data).ok());
  auto get_url = store_->Presign("presign/get+me(1).bin", PresignMethod::kGet, std::chrono::seconds(600));
  ASSERT_TRUE(get_url.ok());
  std::string body;
  EXPECT_EQ(Curl("GET", *get_url, "", &body), 200) << body;
  EXPECT_TRUE(body == data);

  const std::string up = RandomBytes(123457, 12);
  char path[] = "/tmp/omni-s3-up-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, up.data(), up.size()), static_cast<ssize_t>(up.size()));
  close(fd);
  auto put_url = store_->Presign("presign/uploaded~x.bin", PresignMethod::kPut, std::chrono::seconds(600));
  ASSERT_TRUE(put_url.ok());
  EXPECT_EQ(Curl("PUT", *put_url, path, &body), 200) << body;
  std::remove(path);
  auto got = store_->Get("presign/uploaded~x.bin");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == up);
  // A GET URL used for another method is refused.
  EXPECT_EQ(Curl("DELETE", *get_url, "", &body), 403);
}

TEST_F(S3IntegrationTest, TamperedPresignedUrlsAreRejected) {
  ASSERT_TRUE(store_->Put("tamper/a", "A").ok());
  ASSERT_TRUE(store_->Put("tamper/b", "B").ok());
  const std::string url = store_->Presign("tamper/a", PresignMethod::kGet, std::chrono::seconds(3600)).value();
  std::string body;
  ASSERT_EQ(Curl("GET", url, "", &body), 200);
  ASSERT_EQ(body, "A");

  std::string other_key = url;
  other_key.replace(other_key.find("/tamper/a?"), 10, "/tamper/b?");
  EXPECT_EQ(Curl("GET", other_key, "", &body), 403) << body;

  std::string longer = url;
  longer.replace(longer.find("X-Amz-Expires=3600"), 18, "X-Amz-Expires=7200");
  EXPECT_EQ(Curl("GET", longer, "", &body), 403) << body;

  std::string sig = url;
  size_t at = sig.find("X-Amz-Signature=") + 16;
  sig[at] = sig[at] == '0' ? '1' : '0';
  EXPECT_EQ(Curl("GET", sig, "", &body), 403) << body;

  auto bad_store = Open("run", "wrong-secret");
  EXPECT_EQ(Curl("GET", bad_store->Presign("tamper/a", PresignMethod::kGet, std::chrono::seconds(60)).value(), "", &body),
            403);
}

TEST_F(S3IntegrationTest, ExpiredPresignedUrlIsRejected) {
  ASSERT_TRUE(store_->Put("expire/k", "soon gone").ok());
  const std::string url = store_->Presign("expire/k", PresignMethod::kGet, std::chrono::seconds(1)).value();
  // The one real sleep of the suite: expiry is checked by the server's clock.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  std::string body;
  EXPECT_EQ(Curl("GET", url, "", &body), 403) << body;
  EXPECT_NE(body.find("AccessDenied"), std::string::npos) << body;
}

}  // namespace
}  // namespace omni
