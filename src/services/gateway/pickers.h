// Pickers: turn candidates and their total scores into a ranking, best first.
// The gateway sends to ranking[0] and, if that connection fails before any
// byte reached the client, to ranking[1], and so on.
//
// Thread-safety: pure given the generator; the caller owns `rng`.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace omni::gateway {

using PickRng = std::mt19937_64;

// Highest total first; ties in random order (shuffle, then stable sort).
std::vector<int> RankMaxScore(std::span<const int> candidates, std::span<const double> totals, PickRng& rng);
// A uniformly random order; scores are ignored.
std::vector<int> RankRandom(std::span<const int> candidates, PickRng& rng);
// Weighted random order without replacement (Efraimidis-Spirakis A-Res):
// key = U^(1 / total), highest key first; totals <= 0 rank last, in random
// order among themselves. P(first) is proportional to the total.
std::vector<int> RankWeightedRandom(std::span<const int> candidates, std::span<const double> totals, PickRng& rng);
// The candidates rotated to start at position `counter % size`.
std::vector<int> RankRoundRobin(std::span<const int> candidates, uint64_t counter);

}  // namespace omni::gateway
