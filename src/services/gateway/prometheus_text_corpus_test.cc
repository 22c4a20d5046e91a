// Replays the committed fuzz corpus (fuzz/corpus/prometheus_text) through the fuzz target, so
// every input the fuzzer found interesting, crashes included once fixed, stays
// a regression test in the ordinary build.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "services/gateway/prometheus_text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace omni {
namespace {

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(PrometheusTextCorpus, EveryCorpusFileParsesOrFailsCleanly) {
  int files = 0, accepted = 0;
  for (const auto& entry : std::filesystem::directory_iterator(OMNI_FUZZ_CORPUS)) {
    if (!entry.is_regular_file()) continue;
    std::string bytes = ReadFile(entry.path());
    SCOPED_TRACE(entry.path().string());
    EXPECT_EQ(LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 0);
    if (ParsePrometheusText(bytes).ok()) ++accepted;
    ++files;
  }
  EXPECT_GE(files, 8);
  EXPECT_GE(accepted, 4);  // the valid seeds
}

}  // namespace
}  // namespace omni
