#include "text/stream_detokenizer.h"

#include <gtest/gtest.h>

#include "text/tokenizer.h"

namespace omni {
namespace {

// In the demo tokenizer ids 0..255 are the single bytes in byte order.
std::unique_ptr<Tokenizer> DemoFixture() {
  auto tok = Tokenizer::FromFile(std::string(OMNI_TOKENIZER_TESTDATA) + "/demo_tokenizer.json");
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

std::vector<std::string> PushAll(StreamDetokenizer& s, std::vector<int32_t> ids) {
  std::vector<std::string> out;
  for (int32_t id : ids) {
    auto piece = s.Push(id);
    EXPECT_TRUE(piece.ok());
    out.push_back(piece.ok() ? *piece : "<error>");
  }
  return out;
}

TEST(StreamDetokenizer, HoldsSplitCharactersUntilComplete) {
  auto tok = DemoFixture();
  ASSERT_NE(tok, nullptr);
  StreamDetokenizer s(*tok, {});
  // "한" = ED 95 9C, "😀" = F0 9F 98 80.
  EXPECT_EQ(PushAll(s, {'a', 0xED, 0x95, 0x9C, 0xF0, 0x9F, 0x98, 0x80, 'b'}),
            (std::vector<std::string>{"a", "", "", "한", "", "", "", "😀", "b"}));
  EXPECT_EQ(s.pending_bytes(), 0u);
  EXPECT_EQ(s.Flush(), "");
}

TEST(StreamDetokenizer, InvalidBytesBecomeReplacementAtOnce) {
  auto tok = DemoFixture();
  ASSERT_NE(tok, nullptr);
  StreamDetokenizer s(*tok, {});
  EXPECT_EQ(PushAll(s, {0x80, 0xE4, 'a', 0xE4}),
            (std::vector<std::string>{"\uFFFD", "", "\uFFFDa", ""}));
  EXPECT_EQ(s.pending_bytes(), 1u);
  EXPECT_EQ(s.Flush(), "\uFFFD");
}

TEST(StreamDetokenizer, SkipsSpecialTokensAndRejectsUnknownIds) {
  auto tok = DemoFixture();
  ASSERT_NE(tok, nullptr);
  int32_t im_start = *tok->TokenToId("<|im_start|>");
  int32_t think = *tok->TokenToId("<think>");
  StreamDetokenizer skip(*tok, {.skip_special_tokens = true});
  EXPECT_EQ(PushAll(skip, {im_start, 'h', 'i', think}), (std::vector<std::string>{"", "h", "i", "<think>"}));
  StreamDetokenizer keep(*tok, {});
  EXPECT_EQ(PushAll(keep, {im_start}), (std::vector<std::string>{"<|im_start|>"}));
  EXPECT_EQ(keep.Push(tok->vocab_size()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(keep.Push(-1).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace omni
