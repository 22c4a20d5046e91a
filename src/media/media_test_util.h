// Fixture access for media_test (tests/data/media, written by
// tools/media/make_fixtures.py).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace omni::media {

inline std::string ReadTestFile(const std::string& name) {
  std::ifstream in(std::string(OMNI_MEDIA_TESTDATA) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing fixture " << name;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline nlohmann::json LoadManifest() { return nlohmann::json::parse(ReadTestFile("manifest.json")); }

inline size_t CountDifferentBytes(const std::vector<uint8_t>& a, const std::string& b) {
  size_t n = std::max(a.size(), b.size()) - std::min(a.size(), b.size());
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) n += a[i] != static_cast<uint8_t>(b[i]);
  return n;
}

}  // namespace omni::media
