// fuzz/corpus/chat through the fuzz target (fuzz/corpus_replay.h).
#include "api/openai/openai_parse.h"
#include "corpus_replay.h"

namespace omni {
namespace {

TEST(ChatCorpus, EveryCorpusFileParsesOrFailsCleanly) {
  auto replay = testing::ReplayCorpus(OMNI_FUZZ_CORPUS,
                                      [](const std::string& b) { return openai::ParseChatRequest(b).ok(); });
  EXPECT_GE(replay.files, 5);
  EXPECT_GE(replay.accepted, 1);  // the valid request seed
}

}  // namespace
}  // namespace omni
