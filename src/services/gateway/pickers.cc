#include "services/gateway/pickers.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace omni::gateway {
namespace {

// Sorts candidate positions by descending key, ties keeping their order.
std::vector<int> RankByKey(std::span<const int> candidates, std::vector<size_t> order,
                           const std::vector<double>& key) {
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key[a] > key[b]; });
  std::vector<int> ranked;
  ranked.reserve(order.size());
  for (size_t i : order) ranked.push_back(candidates[i]);
  return ranked;
}

std::vector<size_t> ShuffledPositions(size_t n, PickRng& rng) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

}  // namespace

std::vector<int> RankMaxScore(std::span<const int> candidates, std::span<const double> totals, PickRng& rng) {
  std::vector<double> key(totals.begin(), totals.end());
  return RankByKey(candidates, ShuffledPositions(candidates.size(), rng), key);
}

std::vector<int> RankRandom(std::span<const int> candidates, PickRng& rng) {
  std::vector<int> ranked(candidates.begin(), candidates.end());
  std::shuffle(ranked.begin(), ranked.end(), rng);
  return ranked;
}

std::vector<int> RankWeightedRandom(std::span<const int> candidates, std::span<const double> totals, PickRng& rng) {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<double> key(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    const double u = uniform(rng);
    // U^(1/w) compared as log: log(U) / w, all keys <= 0; -inf for w <= 0.
    key[i] = totals[i] > 0 ? std::log(std::max(u, 1e-300)) / totals[i] : -INFINITY;
  }
  return RankByKey(candidates, ShuffledPositions(candidates.size(), rng), key);
}

std::vector<int> RankRoundRobin(std::span<const int> candidates, uint64_t counter) {
  std::vector<int> ranked(candidates.begin(), candidates.end());
  if (!ranked.empty()) std::rotate(ranked.begin(), ranked.begin() + counter % ranked.size(), ranked.end());
  return ranked;
}

}  // namespace omni::gateway
