// A chat body's image_generation options and the ratio nearest to a size,
// against their contract (image_options.h, docs/API.md "Image output").
#include "services/orchestrator/image_options.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace omni::orchestrator {
namespace {

using Json = nlohmann::json;

std::string ChatWith(std::string_view image_generation) {
  return std::string(R"({"model":"omni","messages":[{"role":"user","content":"draw"}],"image_generation":)") +
         std::string(image_generation) + "}";
}

TEST(ParseImageOptions, DefaultsWithoutTheObject) {
  StatusOr<ImageOptions> o = ParseImageOptions(R"({"model":"omni","messages":[{"role":"user","content":"hi"}]})");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_FALSE(o->data_url);
  EXPECT_EQ(o->format, "png");
  EXPECT_FALSE(o->seed.has_value());
  EXPECT_FALSE(o->steps.has_value());
  EXPECT_FALSE(o->guidance.has_value());
  EXPECT_EQ(o->ratio, "");
  EXPECT_FALSE(o->errors_as_text);

  StatusOr<ImageOptions> empty = ParseImageOptions(ChatWith("{}"));
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ(empty->format, "png");
  EXPECT_FALSE(empty->data_url);
}

TEST(ParseImageOptions, ReadsEveryField) {
  StatusOr<ImageOptions> o = ParseImageOptions(ChatWith(
      R"({"response_format":"b64_json","output_format":"webp","seed":42,"num_inference_steps":30,)"
      R"("guidance_scale":1.5,"ratio":"3:4","on_error":"text"})"));
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_TRUE(o->data_url);
  EXPECT_EQ(o->format, "webp");
  EXPECT_EQ(o->seed, 42u);
  EXPECT_EQ(o->steps, 30);
  EXPECT_EQ(o->guidance, 1.5);
  EXPECT_EQ(o->ratio, "3:4");
  EXPECT_TRUE(o->errors_as_text);

  StatusOr<ImageOptions> edges = ParseImageOptions(ChatWith(
      R"({"response_format":"url","output_format":"jpeg","seed":9007199254740992,"num_inference_steps":200,)"
      R"("guidance_scale":0,"on_error":"error"})"));
  ASSERT_TRUE(edges.ok()) << edges.status().ToString();
  EXPECT_FALSE(edges->data_url);
  EXPECT_EQ(edges->format, "jpeg");
  EXPECT_EQ(edges->seed, uint64_t{1} << 53);
  EXPECT_EQ(edges->steps, 200);
  EXPECT_EQ(edges->guidance, 0.0);
  EXPECT_FALSE(edges->errors_as_text);

  StatusOr<ImageOptions> low = ParseImageOptions(ChatWith(R"({"seed":0,"num_inference_steps":1,"guidance_scale":2})"));
  ASSERT_TRUE(low.ok()) << low.status().ToString();
  EXPECT_EQ(low->seed, 0u);
  EXPECT_EQ(low->steps, 1);
  EXPECT_EQ(low->guidance, 2.0);
}

TEST(ParseImageOptions, ABadValueNamesItsField) {
  struct Case {
    std::string field;
    std::string value;
  };
  for (const Case& c : std::vector<Case>{
           {"response_format", R"("jpeg_url")"},
           {"response_format", "1"},
           {"output_format", R"("gif")"},
           {"output_format", "null"},
           {"seed", "-1"},
           {"seed", "1.5"},
           {"seed", R"("7")"},
           {"seed", "9007199254740993"},
           {"num_inference_steps", "0"},
           {"num_inference_steps", "201"},
           {"num_inference_steps", "2.5"},
           {"num_inference_steps", R"("10")"},
           {"guidance_scale", "-0.1"},
           {"guidance_scale", "2.5"},
           {"guidance_scale", R"("1")"},
           {"ratio", R"("wide")"},
           {"ratio", R"("3:")"},
           {"ratio", "34"},
           {"ratio", R"("7:3")"},
           {"on_error", R"("ignore")"},
           {"on_error", "true"},
       }) {
    const std::string body = ChatWith("{\"" + c.field + "\":" + c.value + "}");
    SCOPED_TRACE(body);
    StatusOr<ImageOptions> o = ParseImageOptions(body);
    ASSERT_FALSE(o.ok());
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(o.status().param(), "image_generation." + c.field);
  }
}

TEST(ParseImageOptions, TakesEveryRatioTheDecoderDraws) {
  for (std::string_view ratio :
       {"1:1", "1:2", "2:1", "3:4", "4:3", "3:5", "5:3", "4:5", "5:4", "6:9", "9:6", "9:16", "16:9"}) {
    StatusOr<ImageOptions> o = ParseImageOptions(ChatWith("{\"ratio\":\"" + std::string(ratio) + "\"}"));
    ASSERT_TRUE(o.ok()) << ratio << ": " << o.status().ToString();
    EXPECT_EQ(o->ratio, ratio);
  }
}

TEST(ParseImageOptions, RefusesAnUnknownFieldAndANonObject) {
  StatusOr<ImageOptions> unknown = ParseImageOptions(ChatWith(R"({"size":"1024x1024"})"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(unknown.status().param().rfind("image_generation", 0), 0u) << unknown.status().param();

  for (std::string_view value : {R"("url")", "[]", "3"}) {
    StatusOr<ImageOptions> o = ParseImageOptions(ChatWith(value));
    ASSERT_FALSE(o.ok()) << value;
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(o.status().param(), "image_generation") << value;
  }
}

TEST(NearestImageRatio, PicksTheNearestInLogAspect) {
  EXPECT_EQ(NearestImageRatio(1024, 1024), "1:1");
  EXPECT_EQ(NearestImageRatio(768, 1024), "3:4");
  EXPECT_EQ(NearestImageRatio(1792, 1024), "16:9");
  EXPECT_EQ(NearestImageRatio(1024, 1792), "9:16");
  EXPECT_EQ(NearestImageRatio(512, 1024), "1:2");
  EXPECT_EQ(NearestImageRatio(1000, 990), "1:1");
  EXPECT_EQ(NearestImageRatio(1920, 1080), "16:9");
}

}  // namespace
}  // namespace omni::orchestrator
