#include "models/audio_decoder/speakers.h"

#include <gtest/gtest.h>

#include <set>

namespace omni::models {
namespace {

constexpr std::string_view kList = "mhwj\nfkms\nfphj\nmphw\n";
// OmniServe's example config, with the reference-clip entries replaced by names.
constexpr std::string_view kConfig = R"({"audio_paths_or_urls_or_ids": {
  "default": {"f": "fkms", "m": "mhwj"}, "0-10": {"f": "fphj", "m": "mphw"}, "10": {"f": "fkms", "m": "mhwj"},
  "20-30": {"f": "fkms", "m": "mhwj"}, "40-50": {"f": ["fkms", "fphj"], "m": ["mhwj", "mphw"]},
  "60-70": {"f": "fkms", "m": "mhwj"}}})";

TEST(SpeakerTableTest, ResolvesIdsVoicesAndTheDefault) {
  auto t = SpeakerTable::Parse(kList, kConfig, 4);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->default_index(), 1);  // fkms, OmniServe's default, wherever it sits
  EXPECT_EQ(*t->Index("mphw"), 3);
  auto unknown = t->Index("nobody");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("mhwj, fkms, fphj, mphw"), std::string::npos);
  EXPECT_EQ(*t->ForVoice("", "", 7), 1);
  EXPECT_EQ(*t->ForVoice("f", "0-10", 7), 2);
  EXPECT_EQ(*t->ForVoice("m", "", 7), 0);  // the "default" band
  // A band listing two speakers: the pick chooses, and both occur.
  std::set<int64_t> picked;
  for (uint64_t p = 0; p < 8; ++p) picked.insert(*t->ForVoice("m", "40-50", p));
  EXPECT_EQ(picked, (std::set<int64_t>{0, 3}));
  // Age without gender: any gender of the band.
  std::set<int64_t> any;
  for (uint64_t p = 0; p < 8; ++p) any.insert(*t->ForVoice("", "0-10", p));
  EXPECT_EQ(any, (std::set<int64_t>{2, 3}));
  EXPECT_FALSE(t->ForVoice("x", "", 0).ok());
  EXPECT_FALSE(t->ForVoice("f", "30", 0).ok());
}

TEST(SpeakerTableTest, RefusesInconsistentFiles) {
  EXPECT_FALSE(SpeakerTable::Parse(kList, "", 5).ok());  // rows differ
  EXPECT_TRUE(SpeakerTable::Parse(kList, "", 4).ok());   // no config: fine
  auto clip = SpeakerTable::Parse(kList, R"({"audio_paths_or_urls_or_ids": {"10": {"f": "/path/a.mp3"}}})", 4);
  ASSERT_FALSE(clip.ok());
  EXPECT_NE(clip.status().message().find("zero-shot"), std::string::npos);
  EXPECT_FALSE(SpeakerTable::Parse(kList, R"({"audio_paths_or_urls_or_ids": {"5": {"f": "fkms"}}})", 4).ok());
  EXPECT_FALSE(SpeakerTable::Parse(kList, R"({"audio_paths_or_urls_or_ids": {"10": {"x": "fkms"}}})", 4).ok());
  EXPECT_FALSE(SpeakerTable::Parse(kList, "[1]", 4).ok());
}

}  // namespace
}  // namespace omni::models
