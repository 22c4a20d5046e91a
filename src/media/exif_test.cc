#include "media/exif.h"

#include <gtest/gtest.h>

#include <string>

namespace omni::media {
namespace {

using namespace std::string_literals;

// A TIFF block with IFD0 holding `entries` 12-byte entries.
std::string Tiff(bool little, const std::string& entries, uint16_t count) {
  auto u16 = [&](uint16_t v) { return little ? std::string{char(v & 0xff), char(v >> 8)} : std::string{char(v >> 8), char(v & 0xff)}; };
  std::string s = little ? "II" : "MM";
  s += u16(42);
  s += little ? "\x08\0\0\0"s : "\0\0\0\x08"s;
  s += u16(count);
  return s + entries;
}

std::string Entry(bool little, uint16_t tag, uint16_t type, uint32_t n, uint16_t value) {
  auto u16 = [&](uint16_t v) { return little ? std::string{char(v & 0xff), char(v >> 8)} : std::string{char(v >> 8), char(v & 0xff)}; };
  auto u32 = [&](uint32_t v) { return little ? u16(v & 0xffff) + u16(v >> 16) : u16(v >> 16) + u16(v & 0xffff); };
  return u16(tag) + u16(type) + u32(n) + u16(value) + "\0\0"s;
}

TEST(ExifOrientation, BothByteOrdersWithAndWithoutPrefix) {
  for (bool little : {true, false}) {
    const std::string block =
        Tiff(little, Entry(little, 0x010f, 2, 4, 0) + Entry(little, 0x0112, 3, 1, 6), 2);
    EXPECT_EQ(ExifOrientation(block), 6);
    EXPECT_EQ(ExifOrientation("Exif\0\0"s + block), 6);
  }
}

TEST(ExifOrientation, MalformedReadsAsOne) {
  const bool le = true;
  EXPECT_EQ(ExifOrientation(""), 1);
  EXPECT_EQ(ExifOrientation("Exif\0\0"s), 1);
  EXPECT_EQ(ExifOrientation(Tiff(le, Entry(le, 0x0112, 3, 1, 9), 1)), 1);    // out of range
  EXPECT_EQ(ExifOrientation(Tiff(le, Entry(le, 0x0112, 4, 1, 6), 1)), 1);    // wrong type
  EXPECT_EQ(ExifOrientation(Tiff(le, Entry(le, 0x0112, 3, 1, 6), 500)), 6);  // found before the bad count bites
  EXPECT_EQ(ExifOrientation(Tiff(le, Entry(le, 0x0100, 3, 1, 6), 500)), 1);  // count runs past the end
  std::string bad_offset = Tiff(le, Entry(le, 0x0112, 3, 1, 6), 1);
  bad_offset[4] = '\xff';
  bad_offset[7] = '\x7f';
  EXPECT_EQ(ExifOrientation(bad_offset), 1);
  EXPECT_EQ(ExifOrientation("XX\x2a\0\x08\0\0\0"s), 1);
}

}  // namespace
}  // namespace omni::media
