// Ulysses attention over 2 and 4 loopback ranks against ops::Attention over
// the whole sequence, even and uneven shards.
#include "parallel/ulysses_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "ops/attention.h"
#include "parallel/loopback_group_testing.h"

namespace omni::parallel {
namespace {

using namespace std::chrono_literals;

Tensor Random(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> v(static_cast<size_t>(NumElements(shape)));
  for (float& x : v) x = dist(rng);
  return Tensor::FromFloats(v, shape);
}

double MaxDiff(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.ToFloats(), y = b.ToFloats();
  EXPECT_EQ(x.size(), y.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) worst = std::max(worst, double{std::fabs(x[i] - y[i])});
  return worst;
}

struct Case {
  int ranks;
  int64_t tokens, heads, head_dim;
  std::vector<int64_t> shards;  // empty: EvenShards
};

class UlyssesTest : public ::testing::TestWithParam<Case> {};

TEST_P(UlyssesTest, EqualsAttentionOverTheWholeSequence) {
  const Case c = GetParam();
  const int64_t hidden = c.heads * c.head_dim;
  // q, k, v as the DiT hands them over: views into one fused projection
  // [T, 3 hidden + extra] (v's token stride is the fused width, not H D).
  const Tensor fused = Random({c.tokens, 3 * hidden + 5}, 17);
  auto heads_view = [&](const Tensor& rows, int64_t begin) {  // no copy; `rows` outlives it
    return Tensor::View(rows.data<float>() + begin, {rows.dim(0), c.heads, c.head_dim},
                        {rows.stride(0), c.head_dim, 1}, DType::kF32);
  };
  const float scale = 1.f / std::sqrt(static_cast<float>(c.head_dim));
  ops::AttentionParams params;
  params.scale = scale;
  const Tensor q_all = heads_view(fused, 0).Contiguous(), k_all = heads_view(fused, hidden).Contiguous(),
               v_all = heads_view(fused, 2 * hidden).Contiguous();
  const Tensor want = ops::Attention(q_all, k_all, v_all, params);  // [T, H, D]

  const std::vector<int64_t> shards = c.shards.empty() ? EvenShards(c.tokens, c.ranks) : c.shards;
  std::vector<int64_t> offsets = {0};
  for (int64_t s : shards) offsets.push_back(offsets.back() + s);
  ASSERT_EQ(offsets.back(), c.tokens);
  std::mutex mu;
  double worst = 0;
  testing::RunLoopbackGroup(c.ranks, [&](Collective& group) {
    const int64_t begin = offsets[static_cast<size_t>(group.rank())], end = offsets[static_cast<size_t>(group.rank()) + 1];
    // Its own rows, the way the DiT sees them: q and k contiguous, v a view.
    const Tensor rows = fused.Slice(0, begin, end);
    UlyssesStats stats;
    SequenceAttentionFn attention = UlyssesAttention(&group, shards, &stats);
    for (int call = 0; call < 2; ++call) {  // a second call reuses the group (tags advance)
      const Tensor got = attention(heads_view(rows, 0).Contiguous(), heads_view(rows, hidden).Contiguous(),
                                   heads_view(rows, 2 * hidden), scale);
      ASSERT_EQ(got.shape(), (Shape{end - begin, c.heads, c.head_dim}));
      const double d = MaxDiff(got, want.Slice(0, begin, end));
      std::lock_guard<std::mutex> lock(mu);
      worst = std::max(worst, d);
    }
    EXPECT_EQ(stats.calls, 2);
    EXPECT_GT(stats.all_to_all_s, 0.0);
    const int64_t chunk = c.heads / c.ranks * c.head_dim, mine = end - begin;
    EXPECT_EQ(stats.floats_sent, 2 * (3 * mine * chunk * (c.ranks - 1) + (c.tokens - mine) * chunk));
  });
  std::printf("Ulysses over %d ranks, %lld tokens: max |diff| %.3g\n", c.ranks, static_cast<long long>(c.tokens),
              worst);
  EXPECT_LE(worst, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Shapes, UlyssesTest,
                         ::testing::Values(Case{.ranks = 2, .tokens = 48, .heads = 4, .head_dim = 16},
                                           Case{.ranks = 4, .tokens = 48, .heads = 4, .head_dim = 16},
                                           Case{.ranks = 2, .tokens = 37, .heads = 4, .head_dim = 16},
                                           Case{.ranks = 4, .tokens = 37, .heads = 8, .head_dim = 8},
                                           Case{.ranks = 3, .tokens = 20, .heads = 6, .head_dim = 8,
                                                .shards = {11, 2, 7}}));

TEST(UlyssesHeadsTest, RefusesASpThatDoesNotDivideTheHeads) {
  const Status s = CheckUlyssesHeads(4, 3);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--sp 3 does not divide the DiT's 4 attention heads"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("1, 2, 4"), std::string::npos) << s.message();
  EXPECT_EQ(CheckUlyssesHeads(4, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckUlyssesHeads(4, 1).ok());
  EXPECT_TRUE(CheckUlyssesHeads(4, 2).ok());
  EXPECT_TRUE(CheckUlyssesHeads(4, 4).ok());
  EXPECT_TRUE(CheckUlyssesHeads(24, 8).ok());
  EXPECT_FALSE(CheckUlyssesHeads(24, 5).ok());
}

TEST(UlyssesHeadsTest, EvenShardsSpreadTheRemainder) {
  EXPECT_EQ(EvenShards(10, 4), (std::vector<int64_t>{2, 3, 2, 3}));
  EXPECT_EQ(EvenShards(9020, 2), (std::vector<int64_t>{4510, 4510}));
  EXPECT_EQ(EvenShards(5, 1), (std::vector<int64_t>{5}));
}

TEST(UlyssesFailureTest, AFailedExchangeThrowsCollectiveError) {
  testing::RendezvousDir dir;
  std::thread peer([&] {
    auto group = ConnectGloo(testing::LoopbackOptions(dir, 1, 2, 3000ms));
    ASSERT_TRUE(group.ok()) << group.status().ToString();
    ASSERT_TRUE((*group)->Barrier().ok());
    // Dies without calling the attention.
  });
  auto group = ConnectGloo(testing::LoopbackOptions(dir, 0, 2, 3000ms));
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  ASSERT_TRUE((*group)->Barrier().ok());
  peer.join();
  SequenceAttentionFn attention = UlyssesAttention(group->get(), {4, 4});
  const Tensor x = Random({4, 2, 8}, 3);
  try {
    attention(x, x, x, 1.f);
    ADD_FAILURE() << "no CollectiveError";
  } catch (const CollectiveError& e) {
    EXPECT_EQ(e.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(e.status().message().find("Ulysses attention"), std::string::npos) << e.what();
    std::printf("dead peer: %s\n", e.what());
  }
}

}  // namespace
}  // namespace omni::parallel
