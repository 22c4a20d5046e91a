// fuzz/corpus/http_response through the fuzz target (fuzz/corpus_replay.h).
#include "corpus_replay.h"
#include "net/internal/framing.h"

namespace omni {
namespace {

TEST(HttpResponseCorpus, EveryCorpusFileParsesOrFailsCleanly) {
  auto replay = testing::ReplayCorpus(OMNI_FUZZ_CORPUS, [](const std::string& b) {
    return net_internal::ParseResponseBytes(b, 64 * 1024).ok();
  });
  EXPECT_GE(replay.files, 7);
  EXPECT_EQ(replay.accepted, 4);  // length, chunked, until_close, no_content
}

}  // namespace
}  // namespace omni
