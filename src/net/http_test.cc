#include "net/http.h"

#include <gtest/gtest.h>

namespace omni {
namespace {

TEST(HttpHeadersTest, LookupIgnoresCase) {
  HttpHeaders h;
  h.Add("Content-Type", "application/json");
  EXPECT_EQ(h.Get("content-type"), "application/json");
  EXPECT_EQ(h.Get("CONTENT-TYPE"), "application/json");
  EXPECT_FALSE(h.Get("content-length").has_value());
  EXPECT_EQ(h.GetOr("x-missing", "dflt"), "dflt");
}

TEST(HttpHeadersTest, SetReplacesAllValuesAddKeepsThem) {
  HttpHeaders h;
  h.Add("X-A", "1");
  h.Add("x-a", "2");
  EXPECT_EQ(h.size(), 2u);
  EXPECT_EQ(h.Get("x-a"), "1");
  h.Set("X-a", "3");
  EXPECT_EQ(h.size(), 1u);
  EXPECT_EQ(h.Get("x-A"), "3");
  h.Remove("X-A");
  EXPECT_TRUE(h.empty());
}

TEST(HttpMethodTest, RoundTrips) {
  for (HttpMethod m : {HttpMethod::kGet, HttpMethod::kHead, HttpMethod::kPost, HttpMethod::kPut,
                       HttpMethod::kDelete, HttpMethod::kPatch, HttpMethod::kOptions}) {
    EXPECT_EQ(ParseHttpMethod(HttpMethodName(m)), m);
  }
  EXPECT_EQ(ParseHttpMethod("get"), HttpMethod::kUnknown);  // methods are case-sensitive
  EXPECT_EQ(ParseHttpMethod("BREW"), HttpMethod::kUnknown);
}

TEST(QueryTest, SplitsAndDecodes) {
  std::string path;
  std::vector<std::pair<std::string, std::string>> q;
  SplitTarget("/v1/x?a=1&b=x%20y&c&d=p+q&&e=%zz#frag", &path, &q);
  EXPECT_EQ(path, "/v1/x");
  ASSERT_EQ(q.size(), 5u);
  EXPECT_EQ(q[0], std::make_pair(std::string("a"), std::string("1")));
  EXPECT_EQ(q[1], std::make_pair(std::string("b"), std::string("x y")));
  EXPECT_EQ(q[2], std::make_pair(std::string("c"), std::string("")));
  EXPECT_EQ(q[3], std::make_pair(std::string("d"), std::string("p q")));
  EXPECT_EQ(q[4], std::make_pair(std::string("e"), std::string("%zz")));  // malformed escape kept
}

TEST(QueryTest, PathWithoutQueryIsNotDecoded) {
  std::string path;
  std::vector<std::pair<std::string, std::string>> q;
  SplitTarget("/a%2Fb", &path, &q);
  EXPECT_EQ(path, "/a%2Fb");
  EXPECT_TRUE(q.empty());
}

TEST(QueryTest, PercentDecodeEdges) {
  EXPECT_EQ(PercentDecode("%41%4a%4A", false), "AJJ");
  EXPECT_EQ(PercentDecode("100%", false), "100%");
  EXPECT_EQ(PercentDecode("%4", false), "%4");
  EXPECT_EQ(PercentDecode("a+b", false), "a+b");
  EXPECT_EQ(PercentDecode("a+b", true), "a b");
}

TEST(HttpRequestTest, QueryParam) {
  HttpRequest r;
  r.query = {{"a", "1"}, {"a", "2"}, {"b", ""}};
  EXPECT_EQ(r.QueryParam("a"), "1");
  EXPECT_EQ(r.QueryParam("b"), "");
  EXPECT_FALSE(r.QueryParam("c").has_value());
}

TEST(ResponseHelpersTest, JsonResponse) {
  HttpResponse r = JsonResponse(201, R"({"x":1})");
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.headers.Get("content-type"), "application/json");
  EXPECT_EQ(r.body, R"({"x":1})");
}

TEST(ResponseHelpersTest, ErrorResponseIsOpenAiShaped) {
  HttpResponse r = ErrorResponse(NotFound("no such model").WithParam("model"));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.headers.Get("content-type"), "application/json");
  EXPECT_EQ(r.body,
            R"({"error":{"code":"not_found","message":"no such model","param":"model","type":"not_found_error"}})");
}

}  // namespace
}  // namespace omni
