#include "core/utf8.h"

#include <gtest/gtest.h>

#include "text/byte_level.h"

namespace omni {
namespace {

TEST(Utf8, Validity) {
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("한국어 😀"));
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xE4\xB8"));          // truncated
}

TEST(Utf8, LossyHoldsIncompleteTailUnlessFinal) {
  std::string out;
  // "한" is ED 95 9C: the first two bytes alone must be held back.
  EXPECT_EQ(AppendUtf8Lossy("a\xED\x95", false, &out), 1u);
  EXPECT_EQ(out, "a");
  out.clear();
  EXPECT_EQ(AppendUtf8Lossy("a\xED\x95", true, &out), 3u);
  EXPECT_EQ(out, "a\xEF\xBF\xBD");
}

TEST(Utf8, LossyReplacesMaximalSubparts) {
  std::string out;
  // Lone continuation, then a lead broken by ASCII, then a bad lead byte:
  // one U+FFFD each (the rule Python's errors="replace" also follows).
  AppendUtf8Lossy("\x80x\xE4\xB8y\xFFz", false, &out);
  EXPECT_EQ(out, "\xEF\xBF\xBDx\xEF\xBF\xBDy\xEF\xBF\xBDz");
}

TEST(ByteLevel, Gpt2Table) {
  // Known entries of GPT-2's bytes_to_unicode.
  EXPECT_EQ(ByteToCodePoint(' '), 0x120u);   // 'Ġ'
  EXPECT_EQ(ByteToCodePoint('\n'), 0x10Au);  // 'Ċ'
  EXPECT_EQ(ByteToCodePoint(0), 0x100u);
  EXPECT_EQ(ByteToCodePoint('A'), static_cast<uint32_t>('A'));
  EXPECT_EQ(ByteToCodePoint(0x7F), 0x121u);
  EXPECT_EQ(ByteToCodePoint(0xAD), 0x143u);  // 'Ń'
  EXPECT_EQ(ByteToCodePoint(0xFF), 0xFFu);
  for (int b = 0; b < 256; ++b) {
    EXPECT_EQ(CodePointToByte(ByteToCodePoint(static_cast<uint8_t>(b))), b);
  }
  EXPECT_FALSE(CodePointToByte(0x144).has_value());
  EXPECT_EQ(BytesToByteLevel("a b\n"), "a\xC4\xA0" "b\xC4\x8A");
  EXPECT_EQ(ByteLevelToBytes("a\xC4\xA0" "b"), "a b");
  EXPECT_EQ(ByteLevelToBytes("한"), "한");  // not in the alphabet: kept as is
}

}  // namespace
}  // namespace omni
