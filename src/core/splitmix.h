// SplitMix64 (Steele, Lea, Flood 2014) as a counter-based generator: the
// value for counter x is SplitMix64(x), so element j of a stream keyed by k
// is SplitMix64(k + j), computable in any order and on any rank. Used where
// omniserve's random numbers must be the same on every machine (demo
// weights, a seed's diffusion noise).
#pragma once

#include <cstdint>

namespace omni {

constexpr uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace omni
