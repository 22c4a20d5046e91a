// Socket-free and local-socket tests of S3Store: URI parsing, error mapping,
// the XML reader, backoff, and the retry policy against a local HttpServer
// (port 0) that fails on purpose. Tests against a real S3 (Swift) are in
// tests/s3/.
#include "storage/s3/s3_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>

#include "net/http_server.h"
#include "storage/s3/s3_xml.h"

namespace omni {
namespace {

TEST(S3UriTest, ParsesBucketPrefixAndParameters) {
  auto loc = ParseS3Uri("s3://my-bucket/a/b/?endpoint=http://127.0.0.1:9000/&region=eu-west-1&style=virtual");
  ASSERT_TRUE(loc.ok()) << loc.status().ToString();
  EXPECT_EQ(loc->bucket, "my-bucket");
  EXPECT_EQ(loc->prefix, "a/b");
  EXPECT_EQ(loc->endpoint, "http://127.0.0.1:9000");
  EXPECT_EQ(loc->region, "eu-west-1");
  EXPECT_EQ(loc->style, S3AddressingStyle::kVirtual);

  auto def = ParseS3Uri("s3://bkt");
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->endpoint, "https://s3.us-east-1.amazonaws.com");
  EXPECT_EQ(def->style, S3AddressingStyle::kPath);

  EXPECT_FALSE(ParseS3Uri("file:///x").ok());
  EXPECT_FALSE(ParseS3Uri("s3://B_ad").ok());
  EXPECT_FALSE(ParseS3Uri("s3://bkt?style=odd").ok());
  EXPECT_FALSE(ParseS3Uri("s3://bkt?bogus=1").ok());
  EXPECT_FALSE(ParseS3Uri("s3://bkt/../x").ok());
}

TEST(S3UriTest, HttpsEndpointsOpenAndCredentialsAreRequired) {
  // AWS's own https endpoint (the default) opens; nothing is sent yet.
  auto s = S3Store::Open("s3://bkt/p", S3Credentials{"a", "b", ""}, {});
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(S3Store::Open("s3://bkt?endpoint=https://127.0.0.1:9443", S3Credentials{"a", "b", ""}, {}).ok());
  // A virtual-hosted presigned URL keeps the endpoint's scheme.
  auto virt = S3Store::Open("s3://bkt?endpoint=https://s3.example.test&style=virtual", S3Credentials{"a", "b", ""}, {});
  ASSERT_TRUE(virt.ok()) << virt.status().ToString();
  auto url = (*virt)->Presign("k", PresignMethod::kGet, std::chrono::seconds(60));
  ASSERT_TRUE(url.ok());
  EXPECT_TRUE(url->starts_with("https://bkt.s3.example.test/k?")) << *url;
  auto no_creds = S3Store::Open("s3://bkt?endpoint=http://127.0.0.1:1", S3Credentials{}, {});
  EXPECT_EQ(no_creds.status().code(), StatusCode::kInvalidArgument);
}

TEST(S3XmlTest, ElementsAndEntities) {
  std::string xml =
      "<?xml version=\"1.0\"?><ListBucketResult><KeyCount>2</KeyCount><Contents><Key>a&amp;b &lt;c&gt;</Key>"
      "<ETag>&quot;abc&quot;</ETag></Contents><Contents><Key>d&#233;&#x41;</Key><ETag/></Contents>"
      "<IsTruncated>false</IsTruncated></ListBucketResult>";
  auto contents = XmlElements(xml, "Contents");
  ASSERT_EQ(contents.size(), 2u);
  EXPECT_EQ(XmlText(contents[0], "Key"), "a&b <c>");
  EXPECT_EQ(XmlText(contents[0], "ETag"), "\"abc\"");
  EXPECT_EQ(XmlText(contents[1], "Key"), "d\xc3\xa9" "A");
  EXPECT_EQ(XmlText(contents[1], "ETag"), "");
  EXPECT_EQ(XmlText(xml, "Key"), "a&b <c>");  // not confused by <KeyCount>
  EXPECT_EQ(XmlText(xml, "Missing"), std::nullopt);
  EXPECT_EQ(XmlDecode("&bogus; & &amp"), "&bogus; & &amp");
  EXPECT_EQ(XmlEscape("\"a\"&<>"), "&quot;a&quot;&amp;&lt;&gt;");
}

TEST(S3XmlTest, Dates) {
  auto t = ParseIso8601("2009-10-12T17:50:30.000Z");
  ASSERT_TRUE(t);
  EXPECT_EQ(std::chrono::system_clock::to_time_t(*t), 1255369830);
  auto h = ParseHttpDate("Mon, 12 Oct 2009 17:50:30 GMT");
  ASSERT_TRUE(h);
  EXPECT_EQ(*h, *t);
}

TEST(S3ErrorTest, MapsCodesAndStatuses) {
  auto body = [](std::string code) { return "<Error><Code>" + code + "</Code><Message>m</Message></Error>"; };
  EXPECT_EQ(S3ErrorToStatus(404, body("NoSuchKey"), "GET k").code(), StatusCode::kNotFound);
  EXPECT_EQ(S3ErrorToStatus(404, "", "HEAD k").code(), StatusCode::kNotFound);
  EXPECT_EQ(S3ErrorToStatus(403, body("AccessDenied"), "x").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(S3ErrorToStatus(403, body("SignatureDoesNotMatch"), "x").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(S3ErrorToStatus(403, "", "x").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(S3ErrorToStatus(412, body("PreconditionFailed"), "x").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(S3ErrorToStatus(503, body("SlowDown"), "x").code(), StatusCode::kUnavailable);
  EXPECT_EQ(S3ErrorToStatus(500, "", "x").code(), StatusCode::kUnavailable);
  EXPECT_EQ(S3ErrorToStatus(400, body("RequestTimeout"), "x").code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(S3ErrorToStatus(416, body("InvalidRange"), "x").code(), StatusCode::kInvalidArgument);
  Status s = S3ErrorToStatus(403, body("SignatureDoesNotMatch"), "GET k");
  EXPECT_EQ(s.error_code(), "SignatureDoesNotMatch");
  EXPECT_NE(s.message().find("GET k"), std::string::npos);
}

TEST(S3BackoffTest, FullJitterCappedExponential) {
  S3RetryPolicy p{.max_attempts = 5, .base_delay = std::chrono::milliseconds(100), .max_delay = std::chrono::milliseconds(1000)};
  EXPECT_EQ(S3BackoffDelay(p, 1, 1.0).count(), 100);
  EXPECT_EQ(S3BackoffDelay(p, 2, 1.0).count(), 200);
  EXPECT_EQ(S3BackoffDelay(p, 3, 0.5).count(), 200);
  EXPECT_EQ(S3BackoffDelay(p, 10, 1.0).count(), 1000);
  EXPECT_EQ(S3BackoffDelay(p, 40, 0.25).count(), 250);
  EXPECT_EQ(S3BackoffDelay(p, 3, 0.0).count(), 0);
}

// A local server that answers S3-style errors on purpose.
class FlakyS3Test : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions so;
    so.access_log = false;
    server_ = std::make_unique<HttpServer>(so);
    server_->Route(HttpMethod::kPut, "/bkt/*", [this](const HttpRequest& r) {
      ++puts_;
      if (!r.headers.Has("authorization") || !r.headers.Has("x-amz-content-sha256")) return Error(400, "InvalidRequest");
      if (r.path == "/bkt/p/denied") return Error(403, "AccessDenied");
      if (puts_ <= fail_first_) return Error(503, "SlowDown");
      std::lock_guard<std::mutex> lock(mu_);
      stored_ = r.body;
      return HttpResponse{200, {}, ""};
    });
    server_->Route(HttpMethod::kGet, "/bkt/*", [this](const HttpRequest&) {
      ++gets_;
      return Error(500, "InternalError");
    });
    ASSERT_TRUE(server_->Start().ok());
    S3StoreOptions opts;
    opts.retry = {.max_attempts = 4, .base_delay = std::chrono::milliseconds(10), .max_delay = std::chrono::milliseconds(50)};
    opts.sleep = [this](std::chrono::milliseconds d) {
      std::lock_guard<std::mutex> lock(mu_);
      sleeps_.push_back(d);
    };
    opts.random = [] { return 1.0; };
    auto s = S3Store::Open("s3://bkt/p?endpoint=http://127.0.0.1:" + std::to_string(server_->port()),
                           S3Credentials{"AK", "SK", ""}, opts);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    server_->Shutdown();
  }
  static HttpResponse Error(int status, std::string code) {
    HttpResponse r{status, {}, "<?xml version=\"1.0\"?><Error><Code>" + code + "</Code><Message>test</Message></Error>"};
    r.headers.Set("content-type", "application/xml");
    return r;
  }

  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<S3Store> store_;
  std::atomic<int> puts_{0}, gets_{0};
  int fail_first_ = 0;
  std::mutex mu_;
  std::string stored_;                            // guarded by mu_
  std::vector<std::chrono::milliseconds> sleeps_;  // guarded by mu_
};

TEST_F(FlakyS3Test, RetriesTransientFailuresThenSucceeds) {
  fail_first_ = 2;
  ASSERT_TRUE(store_->Put("k", "payload").ok());
  EXPECT_EQ(puts_.load(), 3);
  EXPECT_EQ(stored_, "payload");
  ASSERT_EQ(sleeps_.size(), 2u);
  EXPECT_EQ(sleeps_[0].count(), 10);  // full jitter with random()=1: base * 2^(n-1)
  EXPECT_EQ(sleeps_[1].count(), 20);
}

TEST_F(FlakyS3Test, GivesUpAfterMaxAttempts) {
  fail_first_ = 100;
  Status st = store_->Put("k", "payload");
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_EQ(st.error_code(), "SlowDown");
  EXPECT_EQ(puts_.load(), 4);
  EXPECT_EQ(sleeps_.size(), 3u);
  auto g = store_->Get("k");
  EXPECT_EQ(g.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(gets_.load(), 4);
  std::string sunk;
  EXPECT_EQ(store_->GetStream("k", std::nullopt, [&](std::string_view c) { sunk += c; return true; }).code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(gets_.load(), 8);
  EXPECT_TRUE(sunk.empty());  // an error body never reaches the sink
}

TEST_F(FlakyS3Test, NeverRetries4xx) {
  Status st = store_->Put("denied", "x");
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(puts_.load(), 1);
  EXPECT_TRUE(sleeps_.empty());
}

TEST_F(FlakyS3Test, ConnectionRefusedIsTransientAndRetried) {
  const uint16_t port = server_->port();
  server_->Shutdown();
  S3StoreOptions opts;
  int sleeps = 0;
  opts.sleep = [&](std::chrono::milliseconds) { ++sleeps; };
  auto s = S3Store::Open("s3://bkt?endpoint=http://127.0.0.1:" + std::to_string(port), S3Credentials{"AK", "SK", ""}, opts);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->Put("k", "x").code(), StatusCode::kUnavailable);
  EXPECT_EQ(sleeps, opts.retry.max_attempts - 1);
}

TEST_F(FlakyS3Test, PresignChecksTtlAndKey) {
  EXPECT_EQ(store_->Presign("k", PresignMethod::kGet, std::chrono::seconds(604801)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Presign("k", PresignMethod::kGet, std::chrono::seconds(0)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Presign("../k", PresignMethod::kGet, std::chrono::seconds(60)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Presign("dir/a\tb", PresignMethod::kGet, std::chrono::seconds(60)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Presign("dir/\xff", PresignMethod::kGet, std::chrono::seconds(60)).status().code(),
            StatusCode::kInvalidArgument);
  auto ok = store_->Presign("dir/a+b", PresignMethod::kPut, std::chrono::seconds(604800));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->find("http://127.0.0.1:" + std::to_string(server_->port()) + "/bkt/p/dir/a%2Bb?X-Amz-Algorithm="), 0u);
  EXPECT_NE(ok->find("X-Amz-Expires=604800"), std::string::npos);
  EXPECT_NE(ok->find("X-Amz-SignedHeaders=host"), std::string::npos);
}

// A local server that records what S3Store puts on the wire and answers
// ListObjectsV2 with a canned body: the encoding of keys, byte for byte.
class WireS3Test : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions so;
    so.access_log = false;
    server_ = std::make_unique<HttpServer>(so);
    auto record = [this](const HttpRequest& r) {
      std::lock_guard<std::mutex> lock(mu_);
      targets_.push_back(std::string(HttpMethodName(r.method)) + " " + r.target);
    };
    for (HttpMethod m : {HttpMethod::kPut, HttpMethod::kGet, HttpMethod::kHead, HttpMethod::kDelete}) {
      server_->Route(m, "/bkt/*", [this, record](const HttpRequest& r) {
        record(r);
        HttpResponse resp{200, {}, r.method == HttpMethod::kGet ? "object" : ""};
        resp.headers.Set("etag", "\"e\"");
        return resp;
      });
    }
    server_->Route(HttpMethod::kGet, "/bkt", [this, record](const HttpRequest& r) {
      record(r);
      std::lock_guard<std::mutex> lock(mu_);
      return HttpResponse{200, {}, list_body_};
    });
    ASSERT_TRUE(server_->Start().ok());
    auto s = S3Store::Open("s3://bkt/p?endpoint=http://127.0.0.1:" + std::to_string(server_->port()),
                           S3Credentials{"AK", "SK", ""}, {});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    server_->Shutdown();
  }
  std::vector<std::string> Targets() {
    std::lock_guard<std::mutex> lock(mu_);
    return targets_;
  }
  void SetListBody(std::string body) {
    std::lock_guard<std::mutex> lock(mu_);
    list_body_ = std::move(body);
  }
  static std::string ListBody(const std::vector<std::string>& keys, bool url_encoding) {
    std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult><Name>bkt</Name>";
    if (url_encoding) xml += "<EncodingType>url</EncodingType>";
    for (const std::string& k : keys) {
      xml += "<Contents><Key>" + k + "</Key><LastModified>2009-10-12T17:50:30.000Z</LastModified>"
             "<ETag>&quot;e&quot;</ETag><Size>6</Size></Contents>";
    }
    return xml + "<IsTruncated>false</IsTruncated></ListBucketResult>";
  }

  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<S3Store> store_;
  std::mutex mu_;
  std::vector<std::string> targets_;  // guarded by mu_
  std::string list_body_;             // guarded by mu_
};

// "dir/my photo & co + 100%é.jpg" below the URI prefix "p/".
constexpr std::string_view kSpecialKey = "dir/my photo & co + 100%\xc3\xa9.jpg";
constexpr std::string_view kSpecialPath = "/bkt/p/dir/my%20photo%20%26%20co%20%2B%20100%25%C3%A9.jpg";

TEST_F(WireS3Test, EveryOperationEncodesTheKeyOnceInThePath) {
  ASSERT_TRUE(store_->Put(kSpecialKey, "object").ok());
  EXPECT_EQ(store_->Get(kSpecialKey).value(), "object");
  std::string streamed;
  ASSERT_TRUE(store_->GetStream(kSpecialKey, std::nullopt, [&](std::string_view c) { streamed += c; return true; }).ok());
  EXPECT_EQ(streamed, "object");
  auto head = store_->Head(kSpecialKey);
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(head->key, kSpecialKey);
  ASSERT_TRUE(store_->Delete(kSpecialKey).ok());
  const std::string path(kSpecialPath);
  EXPECT_EQ(Targets(), (std::vector<std::string>{"PUT " + path, "GET " + path, "GET " + path, "HEAD " + path,
                                                 "DELETE " + path}));

  // '?', '#', quotes, a backslash and a 4-byte character: nothing starts a
  // query or a fragment, nothing is left raw.
  ASSERT_TRUE(store_->Put("q?x=1#f \"a\" 'b'\\c/\xf0\x9f\x98\x80", "x").ok());
  EXPECT_EQ(Targets().back(), "PUT /bkt/p/q%3Fx%3D1%23f%20%22a%22%20%27b%27%5Cc/%F0%9F%98%80");
}

TEST_F(WireS3Test, InvalidKeysNeverReachTheServer) {
  for (std::string bad : {std::string("a\0b", 3), std::string("tab\there"), std::string("del\x7f"),
                          std::string("bad\xff"), std::string("cut\xe2\x82"), std::string("/abs"), std::string("a//b")}) {
    EXPECT_EQ(store_->Put(bad, "x").code(), StatusCode::kInvalidArgument) << ShownObjectKey(bad);
    EXPECT_EQ(store_->Get(bad).status().code(), StatusCode::kInvalidArgument) << ShownObjectKey(bad);
    EXPECT_EQ(store_->Head(bad).status().code(), StatusCode::kInvalidArgument) << ShownObjectKey(bad);
    EXPECT_EQ(store_->Delete(bad).code(), StatusCode::kInvalidArgument) << ShownObjectKey(bad);
  }
  EXPECT_TRUE(Targets().empty());
  // What FsStore alone refuses is fine on S3.
  EXPECT_TRUE(store_->Put("a#b\\c", "x").ok());
  EXPECT_EQ(Targets().back(), "PUT /bkt/p/a%23b%5Cc");
}

TEST_F(WireS3Test, PresignedUrlEncodesTheKeyOnce) {
  auto url = store_->Presign(kSpecialKey, PresignMethod::kGet, std::chrono::seconds(60));
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  EXPECT_EQ(url->find("http://127.0.0.1:" + std::to_string(server_->port()) + std::string(kSpecialPath) +
                      "?X-Amz-Algorithm="),
            0u)
      << *url;
}

TEST_F(WireS3Test, ListAsksForUrlEncodingAndDecodesKeys) {
  // AWS writes a space as '+' (and a '+' as %2B); Swift writes %20. Both decode the same.
  SetListBody(ListBody({"p/dir/my+photo+%26+co+%2B+100%25%C3%A9.jpg", "p/dir/my%20photo%20%26%20co%20%2B%20x%3F%23%22",
                        "p/%E2%82%AC%EF%BF%BF"},
                       /*url_encoding=*/true));
  auto listed = store_->List("dir/my photo & co + 100%\xc3\xa9");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  std::vector<std::string> keys;
  for (const ObjectInfo& info : *listed) keys.push_back(info.key);
  // Only keys under the prefix, URI prefix stripped, decoded byte for byte.
  EXPECT_EQ(keys, (std::vector<std::string>{std::string(kSpecialKey)}));
  ASSERT_FALSE(Targets().empty());
  const std::string target = Targets().back();
  EXPECT_NE(target.find("encoding-type=url"), std::string::npos) << target;
  EXPECT_NE(target.find("prefix=p%2Fdir%2Fmy%20photo%20%26%20co%20%2B%20100%25%C3%A9"), std::string::npos) << target;

  auto all = store_->List("");
  ASSERT_TRUE(all.ok());
  keys.clear();
  for (const ObjectInfo& info : *all) keys.push_back(info.key);
  EXPECT_EQ(keys, (std::vector<std::string>{std::string(kSpecialKey), "dir/my photo & co + x?#\"",
                                            "\xe2\x82\xac\xef\xbf\xbf"}));

  // A server that ignores encoding-type sends XML-escaped keys; '+' and '%' are then literal.
  SetListBody(ListBody({"p/a &amp; b + 100%25 &#xe9;&quot;"}, /*url_encoding=*/false));
  all = store_->List("");
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].key, "a & b + 100%25 \xc3\xa9\"");
}

}  // namespace
}  // namespace omni
