#include "services/gateway/pickers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace omni::gateway {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

TEST(MaxScorePicker, HighestFirst) {
  PickRng rng(1);
  std::vector<int> cand = {4, 7, 9};
  std::vector<double> totals = {0.5, 2.0, 1.0};
  EXPECT_THAT(RankMaxScore(cand, totals, rng), ElementsAre(7, 9, 4));
}

TEST(MaxScorePicker, TiesBrokenUniformly) {
  PickRng rng(2);
  std::vector<int> cand = {0, 1, 2, 3};
  std::vector<double> totals = {1.0, 3.0, 3.0, 3.0};
  std::map<int, int> firsts;
  for (int i = 0; i < 3000; ++i) {
    std::vector<int> r = RankMaxScore(cand, totals, rng);
    ASSERT_EQ(r.back(), 0);  // the lowest is always last
    ++firsts[r.front()];
  }
  ASSERT_EQ(firsts.size(), 3u);
  for (auto [e, n] : firsts) EXPECT_NEAR(n, 1000, 150) << "endpoint " << e;
}

TEST(RandomPicker, IsAPermutationAndUniform) {
  PickRng rng(3);
  std::vector<int> cand = {5, 6, 7};
  std::map<int, int> firsts;
  for (int i = 0; i < 3000; ++i) {
    std::vector<int> r = RankRandom(cand, rng);
    ASSERT_THAT(r, UnorderedElementsAre(5, 6, 7));
    ++firsts[r.front()];
  }
  for (auto [e, n] : firsts) EXPECT_NEAR(n, 1000, 150) << "endpoint " << e;
}

TEST(WeightedRandomPicker, FirstPickProportionalToScore) {
  PickRng rng(4);
  std::vector<int> cand = {0, 1, 2, 3};
  std::vector<double> totals = {1.0, 2.0, 5.0, 0.0};
  std::map<int, int> firsts;
  const int n = 16000;
  for (int i = 0; i < n; ++i) {
    std::vector<int> r = RankWeightedRandom(cand, totals, rng);
    ASSERT_EQ(r.back(), 3);  // zero weight ranks last
    ++firsts[r.front()];
  }
  EXPECT_NEAR(firsts[0], n * 1.0 / 8, n * 0.02);
  EXPECT_NEAR(firsts[1], n * 2.0 / 8, n * 0.02);
  EXPECT_NEAR(firsts[2], n * 5.0 / 8, n * 0.02);
  EXPECT_EQ(firsts[3], 0);
}

TEST(RoundRobinPicker, Rotates) {
  std::vector<int> cand = {1, 2, 3};
  EXPECT_THAT(RankRoundRobin(cand, 0), ElementsAre(1, 2, 3));
  EXPECT_THAT(RankRoundRobin(cand, 1), ElementsAre(2, 3, 1));
  EXPECT_THAT(RankRoundRobin(cand, 5), ElementsAre(3, 1, 2));
}

}  // namespace
}  // namespace omni::gateway
