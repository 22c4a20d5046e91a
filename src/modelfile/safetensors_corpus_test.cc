// Replays the committed fuzz corpus (fuzz/corpus/safetensors) through the
// fuzz target, so every input the fuzzer ever found interesting, crashes
// included once fixed, stays a regression test in the ordinary build.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "modelfile/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace omni {
namespace {

std::vector<uint8_t> ReadBytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(SafetensorsCorpus, EveryCorpusFileParsesOrFailsCleanly) {
  int files = 0, accepted = 0;
  for (const auto& entry : std::filesystem::directory_iterator(OMNI_SAFETENSORS_CORPUS)) {
    if (!entry.is_regular_file()) continue;
    std::vector<uint8_t> bytes = ReadBytes(entry.path());
    SCOPED_TRACE(entry.path().string());
    EXPECT_EQ(LLVMFuzzerTestOneInput(bytes.data(), bytes.size()), 0);
    if (SafetensorsFile::FromBuffer(std::span<const uint8_t>(bytes), nullptr).ok()) ++accepted;
    ++files;
  }
  EXPECT_GE(files, 10);
  EXPECT_GE(accepted, 4);  // the valid seeds
}

}  // namespace
}  // namespace omni
