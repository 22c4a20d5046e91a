// VisionDecoder::GenerateSharded over 2, 4 and 8 ranks (threads on loopback
// Gloo) against Generate in one process, on the demo weights: the same
// image (the acceptance line: max |pixel difference| <= 1), cancellation
// agreed by all ranks, --sp refused where it does not divide the heads, and a
// rank that dies failing the others' request, which a rebuilt group then
// serves.
//
// Each rank has its own VisionDecoder, as each rank process loads its own in
// the served configuration: ranks sharing one would run the same oneDNN
// matmul primitives from several threads at once, which oneDNN does not
// allow (its scratchpad is per primitive, not per call), and their results
// then differ from run to run.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "models/vision_decoder/demo_vision_decoder.h"
#include "models/vision_decoder/vision_decoder.h"
#include "parallel/loopback_group_testing.h"

namespace omni::models {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using parallel::Collective;

using Decoders = std::vector<std::unique_ptr<VisionDecoder>>;  // one per rank

Decoders LoadDemo(const DemoVisionDecoderSpec& spec, const std::string& dir, int ranks) {
  EXPECT_TRUE(WriteDemoVisionDecoder(spec, dir).ok());
  Decoders decoders;
  for (int r = 0; r < ranks; ++r) {
    auto d = VisionDecoder::Load(dir);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    if (!d.ok()) return {};
    decoders.push_back(std::move(*d));
  }
  return decoders;
}

std::vector<int32_t> DemoIds() {
  std::vector<int32_t> ids(VisionDecoder::kNumIds);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 7919 + 13) % 65536);
  return ids;
}

class ShardedGenerateTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new std::string((fs::temp_directory_path() / ("vision_decoder_sp_test." + std::to_string(::getpid()))).string());
    demo_ = new Decoders(LoadDemo(DemoVisionDecoderSpec{}, *root_ + "/demo", 4));
    // 8 heads of 8: a group of 8 splits 60 latent tokens 7, 8, 7, 8, ...
    DemoVisionDecoderSpec eight;
    eight.num_heads = 8;
    eight.axes_dim = {2, 2, 4};
    eight_ = new Decoders(LoadDemo(eight, *root_ + "/eight_heads", 8));
  }
  static void TearDownTestSuite() {
    delete demo_;
    delete eight_;
    fs::remove_all(*root_);
    delete root_;
  }

  // Runs GenerateSharded on `ranks` threads; returns rank 0's result and
  // checks that the others returned an empty tensor (or the same error).
  static StatusOr<Tensor> RunSharded(const Decoders& d, int ranks, const VisionGenerateRequest& r,
                                     const VisionGenerateHooks& hooks = {}, VisionGenerateTimings* timings0 = nullptr) {
    std::vector<std::optional<StatusOr<Tensor>>> results(static_cast<size_t>(ranks));
    std::vector<VisionGenerateTimings> timings(static_cast<size_t>(ranks));
    parallel::testing::RunLoopbackGroup(ranks, [&](Collective& group) {
      const auto i = static_cast<size_t>(group.rank());
      results[i] = d[i]->GenerateSharded(r, &group, hooks, &timings[i]);
    });
    for (int i = 1; i < ranks; ++i) {
      const auto& other = results[static_cast<size_t>(i)];
      EXPECT_TRUE(other.has_value());
      if (!other.has_value() || !results[0].has_value()) continue;
      EXPECT_EQ(other->status().code(), results[0]->status().code()) << "rank " << i;
      if (other->ok()) {
        EXPECT_FALSE((*other)->defined()) << "rank " << i << " returned an image";
      }
      EXPECT_EQ(timings[static_cast<size_t>(i)].steps_done, timings[0].steps_done) << "rank " << i;
    }
    if (timings0 != nullptr) *timings0 = timings[0];
    if (!results[0].has_value()) return Internal("rank 0 did not run");
    return std::move(*results[0]);
  }

  static std::string* root_;
  static Decoders* demo_;   // 4 heads
  static Decoders* eight_;  // 8 heads
};
std::string* ShardedGenerateTest::root_ = nullptr;
Decoders* ShardedGenerateTest::demo_ = nullptr;
Decoders* ShardedGenerateTest::eight_ = nullptr;

struct ImageDiff {
  int max_rgb8 = 0;
  double max_float = 0;
};

ImageDiff Compare(const Tensor& a, const Tensor& b) {
  ImageDiff d;
  EXPECT_EQ(a.shape(), b.shape());
  if (a.shape() != b.shape()) return {255, INFINITY};
  const std::vector<uint8_t> x = ImageToRgb8(a), y = ImageToRgb8(b);
  for (size_t i = 0; i < x.size(); ++i) d.max_rgb8 = std::max(d.max_rgb8, std::abs(int{x[i]} - int{y[i]}));
  const std::vector<float> fa = a.ToFloats(), fb = b.ToFloats();
  for (size_t i = 0; i < fa.size(); ++i) d.max_float = std::max(d.max_float, double{std::fabs(fa[i] - fb[i])});
  return d;
}

TEST_F(ShardedGenerateTest, SameImageAsOneProcessAtSp2AndSp4) {
  // 80x48: a 10 x 6 latent, 60 tokens.
  const VisionGenerateRequest r{.ids = DemoIds(), .width = 80, .height = 48, .steps = 3, .guidance = 0.75f, .seed = 5};
  auto want = (*demo_)[0]->Generate(r);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  for (int sp : {1, 2, 4}) {
    VisionGenerateTimings t;
    auto got = RunSharded(*demo_, sp, r, {}, &t);
    ASSERT_TRUE(got.ok()) << "sp " << sp << ": " << got.status().ToString();
    const ImageDiff d = Compare(*got, *want);
    std::printf("sp %d vs one process: max |rgb8 diff| %d, max |image diff| %.3g; all-to-all %.4f s, sync %.4f s\n",
                sp, d.max_rgb8, d.max_float, t.all_to_all_s, t.sync_s);
    EXPECT_LE(d.max_rgb8, 1) << "sp " << sp;
    EXPECT_EQ(t.steps_done, r.steps);
    if (sp > 1) {
      EXPECT_GT(t.all_to_all_s, 0.0);
    }
  }
}

TEST_F(ShardedGenerateTest, UnevenShardsAtSp8) {
  ASSERT_EQ(eight_->size(), 8u);
  const VisionGenerateRequest r{.ids = DemoIds(), .width = 80, .height = 48, .steps = 2, .guidance = 0.75f, .seed = 9};
  auto want = (*eight_)[0]->Generate(r);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  auto got = RunSharded(*eight_, 8, r);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const ImageDiff d = Compare(*got, *want);
  std::printf("sp 8 (60 tokens, uneven) vs one process: max |rgb8 diff| %d, max |image diff| %.3g\n", d.max_rgb8,
              d.max_float);
  EXPECT_LE(d.max_rgb8, 1);
}

TEST_F(ShardedGenerateTest, RankZeroCancelsForEveryRank) {
  const VisionGenerateRequest r{.ids = DemoIds(), .width = 64, .height = 48, .steps = 4, .seed = 1};
  std::mutex mu;
  std::vector<int> seen;
  VisionGenerateHooks hooks;
  hooks.after_step = [&](int step) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(step);
    return step < 1;
  };
  VisionGenerateTimings t;
  auto got = RunSharded(*demo_, 2, r, hooks, &t);
  EXPECT_EQ(got.status().code(), StatusCode::kCancelled);
  EXPECT_EQ(t.steps_done, 2);
  EXPECT_EQ(seen, (std::vector<int>{0, 1}));  // rank 0's hook only
}

// A group of `size` whose every call fails: GenerateSharded must refuse a bad
// --sp before it exchanges anything.
class UnreachableGroup final : public Collective {
 public:
  explicit UnreachableGroup(int size) : size_(size) {}
  int rank() const override { return 0; }
  int size() const override { return size_; }
  Status AllToAllV(std::span<const float>, std::span<const int64_t>, std::span<float>,
                   std::span<const int64_t>) override {
    return Unavailable("unreachable");
  }
  Status AllGatherV(std::span<const float>, std::span<float>, std::span<const int64_t>) override {
    return Unavailable("unreachable");
  }
  Status Broadcast(std::string*, int) override { return Unavailable("unreachable"); }
  Status Barrier() override { return Unavailable("unreachable"); }

 private:
  int size_;
};

TEST_F(ShardedGenerateTest, RefusesAnSpThatDoesNotDivideTheHeads) {
  const VisionDecoder& decoder = *(*demo_)[0];
  const Status s = decoder.CheckSequenceParallel(3);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--sp 3 does not divide the DiT's 4 attention heads"), std::string::npos) << s.message();
  EXPECT_TRUE(decoder.CheckSequenceParallel(2).ok());
  EXPECT_TRUE(decoder.CheckSequenceParallel(4).ok());
  UnreachableGroup three(3);
  const VisionGenerateRequest r{.ids = DemoIds(), .width = 64, .height = 48, .steps = 2};
  EXPECT_EQ(decoder.GenerateSharded(r, &three).status().code(), StatusCode::kInvalidArgument);
  // More ranks than latent tokens (16x16: 4 tokens) is refused too.
  UnreachableGroup eight(8);
  const VisionGenerateRequest tiny{.ids = DemoIds(), .width = 16, .height = 16, .steps = 1};
  EXPECT_EQ((*eight_)[0]->GenerateSharded(tiny, &eight).status().code(), StatusCode::kInvalidArgument);
}

// Forwards to a real group member until `calls_before_death` all-to-alls
// have gone through, then drops it (its sockets close, as when a rank's
// process dies) and fails.
class DyingGroup final : public Collective {
 public:
  DyingGroup(std::unique_ptr<Collective> inner, int calls_before_death)
      : inner_(std::move(inner)), rank_(inner_->rank()), size_(inner_->size()), left_(calls_before_death) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status AllToAllV(std::span<const float> send, std::span<const int64_t> send_counts, std::span<float> recv,
                   std::span<const int64_t> recv_counts) override {
    if (left_-- <= 0) {
      inner_.reset();
      return Unavailable("this rank died");
    }
    return inner_->AllToAllV(send, send_counts, recv, recv_counts);
  }
  Status AllGatherV(std::span<const float> send, std::span<float> recv, std::span<const int64_t> counts) override {
    return inner_ ? inner_->AllGatherV(send, recv, counts) : Unavailable("dead");
  }
  Status Broadcast(std::string* bytes, int root) override {
    return inner_ ? inner_->Broadcast(bytes, root) : Unavailable("dead");
  }
  Status Barrier() override { return inner_ ? inner_->Barrier() : Unavailable("dead"); }

 private:
  std::unique_ptr<Collective> inner_;
  const int rank_, size_;
  int left_;
};

TEST_F(ShardedGenerateTest, ARankThatDiesFailsTheRequestAndARebuiltGroupServesTheNext) {
  const VisionGenerateRequest r{.ids = DemoIds(), .width = 64, .height = 48, .steps = 3, .seed = 3};
  parallel::testing::RendezvousDir dir;
  std::optional<StatusOr<Tensor>> survivor;
  double waited = 0;
  std::thread dying([&] {
    auto group = parallel::ConnectGloo(parallel::testing::LoopbackOptions(dir, 1, 2, 5000ms));
    ASSERT_TRUE(group.ok()) << group.status().ToString();
    DyingGroup doomed(std::move(*group), 10);  // 8 all-to-alls a step: dies in the second
    EXPECT_EQ((*demo_)[1]->GenerateSharded(r, &doomed).status().code(), StatusCode::kUnavailable);
  });
  {
    auto group = parallel::ConnectGloo(parallel::testing::LoopbackOptions(dir, 0, 2, 5000ms));
    ASSERT_TRUE(group.ok()) << group.status().ToString();
    const auto start = std::chrono::steady_clock::now();
    survivor = (*demo_)[0]->GenerateSharded(r, group->get());
    waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  dying.join();
  ASSERT_TRUE(survivor.has_value());
  EXPECT_EQ(survivor->status().code(), StatusCode::kUnavailable);
  EXPECT_NE(survivor->status().message().find("sequence-parallel rank failed"), std::string::npos)
      << survivor->status().ToString();
  std::printf("rank 1 died: rank 0 got after %.2f s: %s\n", waited, survivor->status().ToString().c_str());
  EXPECT_LT(waited, 10.0);

  // The next request, on a group rebuilt under a new prefix in the same directory.
  auto want = (*demo_)[0]->Generate(r);
  ASSERT_TRUE(want.ok());
  std::vector<std::optional<StatusOr<Tensor>>> next(2);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      parallel::GlooOptions o = parallel::testing::LoopbackOptions(dir, rank, 2, 5000ms);
      o.prefix = "test-generation-2";
      auto group = parallel::ConnectGloo(o);
      ASSERT_TRUE(group.ok()) << group.status().ToString();
      next[static_cast<size_t>(rank)] = (*demo_)[static_cast<size_t>(rank)]->GenerateSharded(r, group->get());
    });
  }
  for (std::thread& t : ranks) t.join();
  ASSERT_TRUE(next[0].has_value() && next[0]->ok()) << (next[0] ? next[0]->status().ToString() : "no result");
  EXPECT_LE(Compare(**next[0], *want).max_rgb8, 1);
}

}  // namespace
}  // namespace omni::models
