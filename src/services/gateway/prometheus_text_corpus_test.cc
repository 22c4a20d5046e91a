// fuzz/corpus/prometheus_text through the fuzz target (fuzz/corpus_replay.h).
#include "corpus_replay.h"
#include "services/gateway/prometheus_text.h"

namespace omni {
namespace {

TEST(PrometheusTextCorpus, EveryCorpusFileParsesOrFailsCleanly) {
  auto replay =
      testing::ReplayCorpus(OMNI_FUZZ_CORPUS, [](const std::string& b) { return ParsePrometheusText(b).ok(); });
  EXPECT_GE(replay.files, 8);
  EXPECT_GE(replay.accepted, 4);  // the valid seeds
}

}  // namespace
}  // namespace omni
