// Loader errors, Split behaviours and added-token rules, with expectations
// written by hand from Hugging Face's documented semantics.
#include "text/tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "text/byte_level.h"
#include "text/pretokenizer.h"

namespace omni {
namespace {

using Json = nlohmann::json;

// The 256 byte tokens (id = byte) plus "he" = 256 from merge "h e".
Json MinimalTokenizer() {
  Json vocab = Json::object();
  for (int b = 0; b < 256; ++b) vocab[BytesToByteLevel(std::string(1, static_cast<char>(b)))] = b;
  vocab["he"] = 256;
  return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", Json::array({"h e"})}}},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"added_tokens", Json::array()}};
}

StatusCode LoadCode(const Json& j) {
  auto tok = Tokenizer::FromJson(j.dump());
  return tok.ok() ? StatusCode::kOk : tok.status().code();
}

TEST(TokenizerLoad, RejectsUnsupportedComponentsClearly) {
  Json j = MinimalTokenizer();
  j["normalizer"] = {{"type", "NFC"}};
  auto tok = Tokenizer::FromJson(j.dump());
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(tok.status().message().find("normalizer type 'NFC'"), std::string::npos) << tok.status().message();

  j = MinimalTokenizer();
  j["model"]["type"] = "WordPiece";
  EXPECT_EQ(LoadCode(j), StatusCode::kUnimplemented);
  j = MinimalTokenizer();
  j["model"]["byte_fallback"] = true;
  EXPECT_EQ(LoadCode(j), StatusCode::kUnimplemented);
  j = MinimalTokenizer();
  j["pre_tokenizer"] = {{"type", "Metaspace"}};
  EXPECT_EQ(LoadCode(j), StatusCode::kUnimplemented);
  j = MinimalTokenizer();
  j["decoder"] = {{"type", "WordPiece"}};
  EXPECT_EQ(LoadCode(j), StatusCode::kUnimplemented);
}

TEST(TokenizerLoad, RejectsMalformedFiles) {
  EXPECT_EQ(Tokenizer::FromJson("{not json").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Tokenizer::FromFile("/nonexistent/tokenizer.json").status().code(), StatusCode::kNotFound);
  Json j = MinimalTokenizer();
  j["model"]["merges"] = Json::array({"h e x"});
  EXPECT_EQ(LoadCode(j), StatusCode::kInvalidArgument);
  j["model"]["merges"] = Json::array({Json::array({"h"})});
  EXPECT_EQ(LoadCode(j), StatusCode::kInvalidArgument);
  j["model"]["merges"] = Json::array({"x yz"});  // "yz" not in vocab
  EXPECT_EQ(LoadCode(j), StatusCode::kInvalidArgument);
  j = MinimalTokenizer();
  j["model"]["vocab"].erase("a");  // a byte without a token
  EXPECT_EQ(LoadCode(j), StatusCode::kInvalidArgument);
  j = MinimalTokenizer();
  j["model"]["vocab"]["huge"] = 1 << 30;
  EXPECT_EQ(LoadCode(j), StatusCode::kInvalidArgument);
  j = MinimalTokenizer();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  EXPECT_EQ(LoadCode(j), StatusCode::kInvalidArgument);
  j = MinimalTokenizer();
  j["added_tokens"] = Json::array({{{"id", 5}, {"content", "<x>"}}});  // id 5 is byte 5's
  EXPECT_EQ(LoadCode(j), StatusCode::kInvalidArgument);
}

TEST(Tokenizer, EncodeDecodeBasics) {
  auto tok = Tokenizer::FromJson(MinimalTokenizer().dump());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  auto ids = (*tok)->Encode("hehe he");
  ASSERT_TRUE(ids.ok());
  // GPT-2 regex: "hehe", " he" -> [he, he], [' ', he].
  EXPECT_EQ(*ids, (std::vector<int32_t>{256, 256, ' ', 256}));
  EXPECT_EQ(*(*tok)->Decode(*ids), "hehe he");
  EXPECT_EQ((*tok)->Encode("bad \xFF utf8").status().code(), StatusCode::kInvalidArgument);
  std::vector<int32_t> bad = {257};
  EXPECT_EQ((*tok)->Decode(bad).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*tok)->IdToToken(' '), "\xC4\xA0");
  EXPECT_EQ((*tok)->TokenToId("he"), 256);
  EXPECT_EQ((*tok)->vocab_size(), 257);
  // A long piece without spaces exercises the heap merge path.
  std::string long_word(5000, 'h');
  for (size_t i = 1; i < long_word.size(); i += 2) long_word[i] = 'e';
  auto many = (*tok)->Encode(long_word);
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(many->size(), 2500u);
}

TEST(Tokenizer, AddedTokensLongestMatchStripAndNormalizedPass) {
  Json j = MinimalTokenizer();
  j["added_tokens"] = Json::array({
      {{"id", 300}, {"content", "<a>"}, {"special", true}},
      {{"id", 301}, {"content", "<a><b>"}, {"special", true}},
      {{"id", 302}, {"content", "[M]"}, {"special", true}, {"lstrip", true}, {"rstrip", true}},
      {{"id", 303}, {"content", "x<"}, {"special", false}, {"normalized", true}},
  });
  auto tok = Tokenizer::FromJson(j.dump());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  // Longest match wins at the leftmost position.
  EXPECT_EQ(*(*tok)->Encode("<a><b><a>"), (std::vector<int32_t>{301, 300}));
  // lstrip/rstrip swallow the spaces around [M].
  EXPECT_EQ(*(*tok)->Encode("h  [M]  e"), (std::vector<int32_t>{'h', 302, 'e'}));
  // Raw (normalized=false) tokens are found first: "x<a>" keeps <a>, and the
  // normalized "x<" cannot take its '<'.
  EXPECT_EQ(*(*tok)->Encode("x<a>"), (std::vector<int32_t>{'x', 300}));
  EXPECT_EQ(*(*tok)->Encode("x<y"), (std::vector<int32_t>{303, 'y'}));
  // Special tokens can be switched off for untrusted text; others still match.
  auto plain = (*tok)->Encode("<a>x<", {.parse_special_tokens = false});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, (std::vector<int32_t>{'<', 'a', '>', 303}));
  EXPECT_EQ(*(*tok)->Decode(std::vector<int32_t>{300, 'h', 301}, {.skip_special_tokens = true}), "h");
  // A kept special token survives the skip (an output parser's tag).
  const std::vector<int32_t> keep = {301};
  EXPECT_EQ(*(*tok)->Decode(std::vector<int32_t>{300, 'h', 301},
                            {.skip_special_tokens = true, .keep_special = keep}),
            "h" + std::string(*(*tok)->IdToToken(301)));
}

std::vector<std::string> Split(std::string_view pattern, bool literal, SplitBehavior behavior, bool invert,
                               std::string_view text) {
  auto compiled = Pcre2Pattern::Compile(pattern, literal);
  EXPECT_TRUE(compiled.ok());
  std::vector<std::string> out;
  EXPECT_TRUE(ApplySplit({std::move(compiled).value(), behavior, invert}, text, &out).ok());
  return out;
}

TEST(PreTokenizer, SplitBehaviorsFollowHuggingFaceDocs) {
  using V = std::vector<std::string>;
  // The examples of tokenizers' SplitDelimiterBehavior documentation.
  std::string_view text = "the-final--countdown";
  EXPECT_EQ(Split("-", true, SplitBehavior::kRemoved, false, text), (V{"the", "final", "countdown"}));
  EXPECT_EQ(Split("-", true, SplitBehavior::kIsolated, false, text),
            (V{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(Split("-", true, SplitBehavior::kMergedWithPrevious, false, text),
            (V{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(Split("-", true, SplitBehavior::kMergedWithNext, false, text),
            (V{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(Split("-", true, SplitBehavior::kContiguous, false, text), (V{"the", "-", "final", "--", "countdown"}));
  // invert: the matches are what is kept as pieces.
  EXPECT_EQ(Split("\\p{L}+", false, SplitBehavior::kRemoved, true, "ab, cd!"), (V{"ab", "cd"}));
  // A literal pattern is not a regex.
  EXPECT_EQ(Split(".", true, SplitBehavior::kRemoved, false, "a.b"), (V{"a", "b"}));
}

TEST(PreTokenizer, Qwen2PatternOnUnicode) {
  using V = std::vector<std::string>;
  EXPECT_EQ(Split(kQwen2Pattern, false, SplitBehavior::kIsolated, false, "I'M 안녕 123!!\n\n  x"),
            (V{"I", "'M", " 안녕", " ", "1", "2", "3", "!!\n\n", " ", " x"}));
}

}  // namespace
}  // namespace omni
