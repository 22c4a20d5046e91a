#include "services/orchestrator/speech_text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace omni::orchestrator {
namespace {

constexpr std::string_view kAnswer =
    "<assistant_transcript>Hi <b>there</b>.</assistant_transcript>\n<audio_decoder_call><speaker_info>{\"gender\": "
    "\"f\"}</speaker_info><discrete_audio><|audio12|><|audio6560|><|audio0|></discrete_audio></audio_decoder_call>";

// Fed whole, and fed in every split into pieces of n characters: the same
// transcript, units and speaker info.
TEST(SpeechTextScrubberTest, SplitsTranscriptUnitsAndSpeakerInfoWhateverThePieces) {
  for (size_t n : {kAnswer.size(), size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{7}, size_t{11}}) {
    SCOPED_TRACE(n);
    SpeechTextScrubber s;
    std::string transcript;
    std::vector<int32_t> units;
    for (size_t i = 0; i < kAnswer.size(); i += n) {
      SpeechTextScrubber::Out out = s.Push(kAnswer.substr(i, n));
      transcript += out.transcript;
      units.insert(units.end(), out.units.begin(), out.units.end());
      EXPECT_EQ(out.transcript.find("<|"), std::string::npos);
    }
    SpeechTextScrubber::Out last = s.Finish();
    transcript += last.transcript;
    EXPECT_EQ(transcript, "Hi <b>there</b>.\n");
    EXPECT_EQ(units, (std::vector<int32_t>{12, 6560, 0}));
    EXPECT_EQ(s.units(), units);
    EXPECT_EQ(s.speaker_info(), "{\"gender\": \"f\"}");
    EXPECT_FALSE(s.block_open());
  }
}

TEST(SpeechTextScrubberTest, DropsUserTranscriptsAndHoldsBackPossibleTags) {
  SpeechTextScrubber s;
  EXPECT_EQ(s.Push("<user_transcript>what you said</user_transcript>a < b").transcript, "a < b");
  // "<|aud" may become a unit: held; then it does.
  EXPECT_EQ(s.Push("x <|aud").transcript, "x ");
  SpeechTextScrubber::Out out = s.Push("io7|> y");
  EXPECT_EQ(out.transcript, " y");
  EXPECT_EQ(out.units, std::vector<int32_t>{7});
  // Held text that never became a tag is released at the end.
  EXPECT_EQ(s.Push(" <assis").transcript, " ");
  EXPECT_EQ(s.Finish().transcript, "<assis");
}

TEST(SpeechTextScrubberTest, AnAnswerCutInsideItsBlockKeepsItsUnits) {
  SpeechTextScrubber s;
  s.Push("<audio_decoder_call><speaker_info>{}</speaker_info><discrete_audio><|audio1|><|audio2|><|audio3|><|audio4");
  SpeechTextScrubber::Out out = s.Finish();
  EXPECT_EQ(s.units(), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_TRUE(s.block_open());
  EXPECT_EQ(out.transcript, "");  // the cut unit is inside the block: dropped
}

// Found by fuzz/speech_text_fuzz: unit tokens with long numbers, and text
// that joins into a unit once a tag or unit between its parts is removed.
TEST(SpeechTextScrubberTest, NoUnitReachesTheTranscriptEvenOneFormedByARemoval) {
  for (std::string_view input : {"xx<|audio123456|>yy", "xx<|audio1<|audio2|>|>yy",
                                 "xx<|aud<speaker_info></speaker_info>io1|>yy", "<|au<|au<|audio9|>dio8|>dio7|>"}) {
    for (size_t n : {input.size(), size_t{1}, size_t{3}}) {
      SpeechTextScrubber s;
      std::string transcript;
      for (size_t i = 0; i < input.size(); i += n) transcript += s.Push(input.substr(i, n)).transcript;
      transcript += s.Finish().transcript;
      EXPECT_EQ(transcript.find("<|audio"), std::string::npos) << input << " in pieces of " << n << ": " << transcript;
    }
  }
  SpeechTextScrubber s;
  s.Push("<|audio123456|><|audio5|>");
  s.Finish();
  EXPECT_EQ(s.units(), std::vector<int32_t>{5});  // a unit of 6 digits is dropped
}

}  // namespace
}  // namespace omni::orchestrator
