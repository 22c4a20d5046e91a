// Replays the committed fuzz corpus (fuzz/corpus/safetensors) through the
// fuzz target, so every input the fuzzer ever found interesting, crashes
// included once fixed, stays a regression test in the ordinary build.
#include <span>

#include "corpus_replay.h"
#include "modelfile/safetensors.h"

namespace omni {
namespace {

TEST(SafetensorsCorpus, EveryCorpusFileParsesOrFailsCleanly) {
  auto replay = testing::ReplayCorpus(OMNI_SAFETENSORS_CORPUS, [](const std::string& b) {
    std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(b.data()), b.size());
    return SafetensorsFile::FromBuffer(bytes, nullptr).ok();
  });
  EXPECT_GE(replay.files, 10);
  EXPECT_GE(replay.accepted, 4);  // the valid seeds
}

}  // namespace
}  // namespace omni
