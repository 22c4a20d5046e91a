#include "models/demo_weights.h"

#include <cmath>
#include <fstream>

#include "core/splitmix.h"

namespace omni::models {
namespace {

uint64_t Mix(uint64_t z) { return SplitMix64(z); }

uint64_t Fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return h;
}

}  // namespace

Tensor RandomBf16(uint64_t seed, std::string_view name, const Shape& shape, double std, double offset) {
  Tensor t = Tensor::Empty(shape, DType::kBF16);
  const uint64_t key = Mix(seed ^ Fnv1a64(name));
  const double half_width = std * std::sqrt(3.0);
  bf16_t* p = t.data<bf16_t>();
  for (int64_t j = 0; j < t.numel(); ++j) {
    const double u = static_cast<double>(Mix(key + static_cast<uint64_t>(j)) >> 40) * 0x1p-23 - 1.0;
    p[j] = F32ToBF16(static_cast<float>(offset + half_width * u));
  }
  return t;
}

Status WriteDemoTextFile(const std::string& path, std::string_view text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  f.close();
  if (!f) return Internal("cannot write " + path);
  return Status::Ok();
}

}  // namespace omni::models
