#include "core/status.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace omni {
namespace {

TEST(StatusTest, CodesMapToHttpStatuses) {
  EXPECT_EQ(Status().http_status(), 200);
  EXPECT_EQ(InvalidArgument("x").http_status(), 400);
  EXPECT_EQ(NotFound("x").http_status(), 404);
  EXPECT_EQ(PayloadTooLarge("x").http_status(), 413);
  EXPECT_EQ(ResourceExhausted("x").http_status(), 429);
  EXPECT_EQ(Internal("x").http_status(), 500);
  EXPECT_EQ(Unavailable("x").http_status(), 503);
  EXPECT_EQ(DeadlineExceeded("x").http_status(), 504);
}

TEST(StatusTest, OpenAiErrorBodyHasAllFourFields) {
  Status s = NotFound("model 'gpt-9' does not exist").WithParam("model").WithErrorCode("model_not_found");
  auto j = nlohmann::json::parse(s.ToOpenAiJson());
  ASSERT_TRUE(j.contains("error"));
  EXPECT_EQ(j["error"]["message"], "model 'gpt-9' does not exist");
  EXPECT_EQ(j["error"]["type"], "not_found_error");
  EXPECT_EQ(j["error"]["param"], "model");
  EXPECT_EQ(j["error"]["code"], "model_not_found");
}

TEST(StatusTest, ParamIsNullWhenUnsetAndCodeDefaultsToName) {
  auto j = nlohmann::json::parse(InvalidArgument("bad").ToOpenAiJson());
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_EQ(j["error"]["code"], "invalid_argument");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(nlohmann::json::parse(Internal("x").ToOpenAiJson())["error"]["type"], "server_error");
}

TEST(StatusTest, InvalidUtf8InMessageStillYieldsValidJson) {
  std::string bad = "key \xff\xfe";
  auto j = nlohmann::json::parse(InvalidArgument(bad).ToOpenAiJson());
  EXPECT_TRUE(j["error"]["message"].is_string());
}

TEST(StatusTest, HttpRoundTrip) {
  for (StatusCode c : {StatusCode::kInvalidArgument, StatusCode::kNotFound, StatusCode::kPayloadTooLarge,
                       StatusCode::kUnavailable, StatusCode::kDeadlineExceeded, StatusCode::kPermissionDenied}) {
    EXPECT_EQ(StatusCodeFromHttp(HttpStatusFor(c)), c);
  }
  EXPECT_EQ(StatusCodeFromHttp(204), StatusCode::kOk);
}

TEST(StatusTest, Annotate) {
  Status s = NotFound("no file").Annotate("loading model");
  EXPECT_EQ(s.message(), "loading model: no file");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
}

StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgument("odd");
  return x / 2;
}

Status Quarter(int x, int* out) {
  OMNI_ASSIGN_OR_RETURN(int h, Half(x));
  OMNI_ASSIGN_OR_RETURN(*out, Half(h));
  return Status::Ok();
}

TEST(StatusOrTest, ValueAndErrorPropagation) {
  int out = 0;
  EXPECT_TRUE(Quarter(8, &out).ok());
  EXPECT_EQ(out, 2);
  Status s = Quarter(6, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "odd");
}

TEST(StatusOrTest, MoveOnlyValue) {
  StatusOr<std::unique_ptr<int>> p = std::make_unique<int>(5);
  ASSERT_TRUE(p.ok());
  std::unique_ptr<int> v = std::move(p).value();
  EXPECT_EQ(*v, 5);
}

TEST(StatusOrDeathTest, ValueOnErrorAborts) {
  StatusOr<int> s = NotFound("gone");
  EXPECT_DEATH((void)s.value(), "StatusOr::value\\(\\) on error: not_found: gone");
}

TEST(CheckDeathTest, CheckPrintsConditionAndMessage) {
  int a = 1, b = 2;
  EXPECT_DEATH(OMNI_CHECK_EQ(a, b) << "context", "CHECK failed: .*\\(1 vs 2\\) context");
}

}  // namespace
}  // namespace omni
