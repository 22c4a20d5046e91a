// fuzz/corpus/http_request through the fuzz target (fuzz/corpus_replay.h).
#include "corpus_replay.h"
#include "net/internal/framing.h"

namespace omni {
namespace {

TEST(HttpRequestCorpus, EveryCorpusFileParsesOrFailsCleanly) {
  auto replay = testing::ReplayCorpus(OMNI_FUZZ_CORPUS, [](const std::string& b) {
    return net_internal::ParseRequestBytes(b, 8 * 1024, 64 * 1024).ok();
  });
  EXPECT_GE(replay.files, 9);
  EXPECT_EQ(replay.accepted, 4);  // get, post_length, chunked, chunk_ext_trailer
}

}  // namespace
}  // namespace omni
