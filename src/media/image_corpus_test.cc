// Replays the committed fuzz corpus (fuzz/corpus/image) through image_fuzz,
// so every input the fuzzer found interesting stays a regression test.
#include "corpus_replay.h"
#include "media/image.h"

namespace omni::media {
namespace {

TEST(ImageCorpus, EveryCorpusFileDecodesOrFailsCleanly) {
  auto replay = testing::ReplayCorpus(OMNI_IMAGE_CORPUS, [](const std::string& b) {
    return DecodeImage(b, {.max_pixels = 1 << 20}).ok();
  });
  EXPECT_GE(replay.files, 10);
  EXPECT_GE(replay.accepted, 8);  // the valid seeds, one or more of each format
}

}  // namespace
}  // namespace omni::media
