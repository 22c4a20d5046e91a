// Replays a committed fuzz corpus through its fuzz target in the ordinary
// test build, so every input the fuzzer found interesting (crashes included,
// once fixed) stays a regression test. For a GoogleTest binary that links
// exactly one target's LLVMFuzzerTestOneInput.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace omni::testing {

struct CorpusReplay {
  int files = 0;
  int accepted = 0;  // files the real parser accepts
};

// Runs every regular file of `dir` through the target (each must return 0)
// and counts the files `accepts(bytes)` takes.
template <typename Accepts>
CorpusReplay ReplayCorpus(const std::filesystem::path& dir, Accepts accepts) {
  CorpusReplay replay;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    SCOPED_TRACE(entry.path().string());
    EXPECT_EQ(LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 0);
    if (accepts(bytes)) ++replay.accepted;
    ++replay.files;
  }
  return replay;
}

}  // namespace omni::testing
