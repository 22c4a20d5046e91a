// The sequence-parallel group as the decoder runs it: rank processes of the
// real omniserve binary, an image equal to the one-process image, and a rank
// killed mid-request failing that request clearly while the rebuilt group
// serves the next.
#include "services/decoder/sp_group.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <thread>

#include "models/vision_decoder/demo_vision_decoder.h"

namespace omni::decoder {
namespace {

namespace fs = std::filesystem;

std::vector<int32_t> Ids() {
  std::vector<int32_t> ids;
  for (int i = 0; i < 729; ++i) ids.push_back((i * 104729 + 7) % 65536);
  return ids;
}

TEST(SpRequestTest, RoundTrips) {
  const models::VisionGenerateRequest r{.ids = Ids(), .width = 64, .height = 80, .steps = 3, .guidance = 0.5f, .seed = 9};
  auto back = DecodeSpRequest(EncodeSpRequest(r));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->ids, r.ids);
  EXPECT_EQ(back->width, 64);
  EXPECT_EQ(back->height, 80);
  EXPECT_EQ(back->steps, 3);
  EXPECT_EQ(back->guidance, 0.5f);
  EXPECT_EQ(back->seed, 9u);
  EXPECT_FALSE(DecodeSpRequest("{").ok());
  EXPECT_FALSE(DecodeSpRequest(R"({"ids":[1]})").ok());
}

TEST(SpGroupTest, SameImageAsOneProcessAndSurvivesARankDying) {
  const fs::path dir = fs::temp_directory_path() / ("sp_group_test." + std::to_string(::getpid()));
  ASSERT_TRUE(models::WriteDemoVisionDecoder({}, dir.string()).ok());
  auto model = models::VisionDecoder::Load(dir.string());
  ASSERT_TRUE(model.ok());
  // A descriptor the parent holds (a server's socket, say) must not leak into the ranks.
  int held[2];
  ASSERT_EQ(::pipe(held), 0);
  const std::string held_link = fs::read_symlink("/proc/self/fd/" + std::to_string(held[0])).string();
  auto group = SpGroup::Start(model->get(), {.sp = 2,
                                             .child_argv = {OMNI_BINARY, "decoder", "--model", dir.string(),
                                                            "--threads", "1"},
                                             .timeout = std::chrono::milliseconds(20'000)});
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  ASSERT_EQ((*group)->child_pids().size(), 1u);
  for (const auto& fd : fs::directory_iterator("/proc/" + std::to_string((*group)->child_pids()[0]) + "/fd")) {
    std::error_code ec;
    EXPECT_NE(fs::read_symlink(fd.path(), ec).string(), held_link) << fd.path();
  }
  ::close(held[0]);
  ::close(held[1]);
  const models::VisionGenerateRequest r{.ids = Ids(), .width = 96, .height = 64, .steps = 3, .guidance = 0.75f, .seed = 4};
  auto alone = (*model)->Generate(r);
  auto split = (*group)->Generate(r, {}, nullptr);
  ASSERT_TRUE(alone.ok() && split.ok()) << split.status().ToString();
  EXPECT_EQ(models::ImageToRgb8(*alone), models::ImageToRgb8(*split));

  // Kill rank 1 during a long request: that request fails naming the rank...
  const pid_t child = (*group)->child_pids()[0];
  models::VisionGenerateRequest slow = r;
  slow.width = slow.height = 512;
  slow.steps = 200;
  std::atomic<int> steps{0};
  models::VisionGenerateHooks hooks{.after_step = [&](int) {
    if (++steps == 2) ::kill(child, SIGKILL);
    return true;
  }};
  auto failed = (*group)->Generate(slow, hooks, nullptr);
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(failed.status().message().find("rank 1"), std::string::npos) << failed.status().ToString();
  EXPECT_LT(steps.load(), 200);
  // ...and the next request rebuilds the group and gets the same image.
  EXPECT_EQ((*group)->generation(), 1);
  auto again = (*group)->Generate(r, {}, nullptr);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*group)->generation(), 2);
  EXPECT_NE((*group)->child_pids()[0], child);
  // Noise of the caller's is not something the other ranks could see.
  models::VisionGenerateRequest with_noise = r;
  with_noise.noise = models::SeededNoise(1, 16, 8, 12);
  EXPECT_EQ((*group)->Generate(with_noise, {}, nullptr).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(models::ImageToRgb8(*again), models::ImageToRgb8(*alone));
  group->reset();
  fs::remove_all(dir);
}

TEST(SpGroupTest, RefusesAnSpThatDoesNotDivideTheHeads) {
  const fs::path dir = fs::temp_directory_path() / ("sp_group_test3." + std::to_string(::getpid()));
  ASSERT_TRUE(models::WriteDemoVisionDecoder({}, dir.string()).ok());
  auto model = models::VisionDecoder::Load(dir.string());
  ASSERT_TRUE(model.ok());
  auto group = SpGroup::Start(model->get(), {.sp = 3, .child_argv = {OMNI_BINARY, "decoder"}});
  EXPECT_EQ(group.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(group.status().message().find("--sp 3"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace omni::decoder
