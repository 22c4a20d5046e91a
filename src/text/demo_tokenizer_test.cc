#include "text/demo_tokenizer.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "text/tokenizer.h"

namespace omni {
namespace {

TEST(DemoTokenizer, MatchesCommittedFixtureAndIsDeterministic) {
  DemoTokenizerSpec spec;
  spec.num_vision_codes = 8;
  spec.num_audio_codes = 8;
  auto a = MakeDemoTokenizerJson(spec);
  auto b = MakeDemoTokenizerJson(spec);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  std::ifstream in(std::string(OMNI_TOKENIZER_TESTDATA) + "/demo_tokenizer.json", std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  // If this fails after an intended change, rerun tools/tokenizer/make_vectors.sh.
  EXPECT_EQ(*a, ss.str());
}

TEST(DemoTokenizer, FullVocabularyHasEveryOmniToken) {
  auto json = MakeDemoTokenizerJson({});
  ASSERT_TRUE(json.ok());
  auto tok = Tokenizer::FromJson(*json);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const Tokenizer& t = **tok;
  // 256 bytes + 400 merges, then the added tokens in OmniAddedTokens order.
  std::vector<OmniAddedToken> added = OmniAddedTokens();
  EXPECT_EQ(t.vocab_size(), 656 + static_cast<int32_t>(added.size()));
  EXPECT_EQ(added.size(), 52u + 65536u + 6561u);
  for (size_t i = 0; i < added.size(); ++i) {
    ASSERT_EQ(t.TokenToId(added[i].content), 656 + static_cast<int32_t>(i)) << added[i].content;
  }
  int32_t vision0 = *t.TokenToId("<|vision0|>");
  int32_t audio0 = *t.TokenToId("<|audio0|>");
  EXPECT_EQ(t.TokenToId("<|vision65535|>"), vision0 + 65535);
  EXPECT_EQ(t.TokenToId("<|audio6560|>"), audio0 + 6560);
  EXPECT_FALSE(t.TokenToId("<|vision65536|>").has_value());
  EXPECT_FALSE(t.TokenToId("<|audio6561|>").has_value());
  for (std::string_view r : VisionRatios()) {
    EXPECT_TRUE(t.TokenToId("<|vision_ratio_" + std::string(r) + "|>").has_value()) << r;
  }
  EXPECT_TRUE(t.IsSpecial(*t.TokenToId("<|im_start|>")));
  EXPECT_FALSE(t.IsSpecial(vision0));

  // An image answer: 729 codes between the frame tokens, each one id.
  std::string image = "<|discrete_image_start|><|vision_ratio_1:1|><|vision_token|>";
  std::vector<int32_t> want = {*t.TokenToId("<|discrete_image_start|>"), *t.TokenToId("<|vision_ratio_1:1|>"),
                               *t.TokenToId("<|vision_token|>")};
  for (int i = 0; i < 729; ++i) {
    int code = (i * 7919) % 65536;
    image += "<|vision" + std::to_string(code) + "|>";
    want.push_back(vision0 + code);
  }
  image += "<|vision_eol|><|vision_eof|><|discrete_image_end|>";
  for (const char* s : {"<|vision_eol|>", "<|vision_eof|>", "<|discrete_image_end|>"}) want.push_back(*t.TokenToId(s));
  auto ids = t.Encode(image);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, want);
  auto back = t.Decode(*ids);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, image);

  // A near-miss is plain text: "<|vision12" then "3x|>" is not a token.
  auto near = t.Encode("<|vision123x|>");
  ASSERT_TRUE(near.ok());
  EXPECT_GT(near->size(), 1u);
  EXPECT_EQ(*t.Decode(*near), "<|vision123x|>");
}

TEST(DemoTokenizer, RejectsBadSpec) {
  DemoTokenizerSpec spec;
  spec.num_vision_codes = 65537;
  EXPECT_EQ(MakeDemoTokenizerJson(spec).status().code(), StatusCode::kInvalidArgument);
  spec = {};
  spec.num_merges = -1;
  EXPECT_EQ(MakeDemoTokenizerJson(spec).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace omni
