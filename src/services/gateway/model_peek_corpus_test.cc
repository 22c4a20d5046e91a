// fuzz/corpus/model_peek through the fuzz target (fuzz/corpus_replay.h).
#include "corpus_replay.h"
#include "services/gateway/model_peek.h"

namespace omni {
namespace {

TEST(ModelPeekCorpus, EveryCorpusFileParsesOrFailsCleanly) {
  auto replay = testing::ReplayCorpus(OMNI_FUZZ_CORPUS, [](const std::string& b) { return PeekJsonModel(b).ok(); });
  EXPECT_GE(replay.files, 8);
  EXPECT_GE(replay.accepted, 4);  // the valid seeds
}

}  // namespace
}  // namespace omni
