#include "media/media_kind.h"

#include <gtest/gtest.h>

#include <string>

#include "media/media_test_util.h"

namespace omni::media {
namespace {

using namespace std::string_literals;

TEST(SniffMediaKind, ImagesFromTheFixtures) {
  EXPECT_EQ(SniffMediaKind(ReadTestFile("photo.jpg")), MediaKind::kJpeg);
  EXPECT_EQ(SniffMediaKind(ReadTestFile("rgb.png")), MediaKind::kPng);
  EXPECT_EQ(SniffMediaKind(ReadTestFile("lossy.webp")), MediaKind::kWebp);
  EXPECT_EQ(SniffMediaKind(ReadTestFile("alpha.webp")), MediaKind::kWebp);
  EXPECT_EQ(SniffMediaKind(ReadTestFile("transparent.gif")), MediaKind::kGif);
  EXPECT_EQ(SniffMediaKind(ReadTestFile("image.bmp")), MediaKind::kBmp);
  EXPECT_EQ(SniffMediaKind(ReadTestFile("sound.wav")), MediaKind::kWav);
}

TEST(SniffMediaKind, ContainersBySignature) {
  EXPECT_EQ(SniffMediaKind("II*\0rest"s), MediaKind::kTiff);
  EXPECT_EQ(SniffMediaKind("MM\0*rest"s), MediaKind::kTiff);
  EXPECT_EQ(SniffMediaKind("\0\0\0\x18" "ftypmp42\0\0\0\0isommp42"s), MediaKind::kMp4);
  EXPECT_EQ(SniffMediaKind("\0\0\0\x14" "ftypqt  \0\0\0\0"s), MediaKind::kQuickTime);
  EXPECT_EQ(SniffMediaKind("\0\0\0\x18" "ftypM4A \0\0\0\0M4A mp42"s), MediaKind::kM4a);
  EXPECT_EQ(SniffMediaKind("\0\0\0\x18" "ftypheic\0\0\0\0mif1heic"s), MediaKind::kHeif);
  EXPECT_EQ(SniffMediaKind("\0\0\0\x1c" "ftypmif1\0\0\0\0mif1avifmiaf"s), MediaKind::kAvif);
  EXPECT_EQ(SniffMediaKind("\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\x82\x84webm"s), MediaKind::kWebm);
  EXPECT_EQ(SniffMediaKind("\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\x82\x88matroska"s), MediaKind::kMatroska);
  EXPECT_EQ(SniffMediaKind("RIFF\0\0\0\0AVI LIST"s), MediaKind::kAvi);
  EXPECT_EQ(SniffMediaKind("fLaC\0\0\0\x22"s), MediaKind::kFlac);
  EXPECT_EQ(SniffMediaKind("OggS\0\x02"s), MediaKind::kOgg);
  EXPECT_EQ(SniffMediaKind("ID3\x04\0\0"s), MediaKind::kMp3);
  EXPECT_EQ(SniffMediaKind("\xff\xfb\x90\x64"s), MediaKind::kMp3);   // MPEG-1 layer III, 128 kb/s
  EXPECT_EQ(SniffMediaKind("\xff\xf1\x50\x80"s), MediaKind::kAac);   // ADTS, 44.1 kHz
}

TEST(SniffMediaKind, NeverFromNamesOrNearMisses) {
  EXPECT_EQ(SniffMediaKind(""), MediaKind::kUnknown);
  EXPECT_EQ(SniffMediaKind("\xff\xd8"s), MediaKind::kUnknown);  // two bytes of a JPEG are not one
  EXPECT_EQ(SniffMediaKind("RIFF\0\0\0\0WEBX"s), MediaKind::kUnknown);
  EXPECT_EQ(SniffMediaKind("\xff\xfb\xf0\x64"s), MediaKind::kUnknown);  // bitrate index 15 is invalid
  EXPECT_EQ(SniffMediaKind("photo.jpg"), MediaKind::kUnknown);
  EXPECT_EQ(DescribeUnknownBytes(""), "empty");
  EXPECT_EQ(DescribeUnknownBytes("just some words\n"), "text");
  EXPECT_EQ(DescribeUnknownBytes("  <!DOCTYPE html><html>"), "HTML");
  EXPECT_EQ(DescribeUnknownBytes("\x01\x02\x03"s), "binary data");
}

TEST(MediaKindInfo, NamesMimeAndClass) {
  EXPECT_EQ(MediaKindInfo(MediaKind::kJpeg).mime, "image/jpeg");
  EXPECT_EQ(MediaKindInfo(MediaKind::kJpeg).extension, "jpg");
  EXPECT_EQ(MediaKindInfo(MediaKind::kAvi).mime, "video/x-msvideo");
  EXPECT_EQ(MediaKindInfo(MediaKind::kAvi).cls, MediaClass::kVideo);
  EXPECT_EQ(MediaKindInfo(MediaKind::kM4a).cls, MediaClass::kAudio);
  EXPECT_EQ(MediaKindInfo(MediaKind::kUnknown).cls, MediaClass::kUnknown);
  EXPECT_EQ(MediaClassName(MediaClass::kImage), "image");
}

}  // namespace
}  // namespace omni::media
