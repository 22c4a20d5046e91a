// EncodeBatcher with a scripted model: images that arrive while a forward
// runs go into the next one together (up to max_batch), each caller gets its
// own encoding, a bad image fails only its own request, and max_batch 1
// never batches.
#include "services/encoder/encode_batcher.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace omni::encoder {
namespace {

// A model whose encoding of an image is its width (as the rows' one value);
// width 0 is an image it cannot encode. The first forward waits until
// released, so the test can queue images behind it.
class ScriptedModel {
 public:
  StatusOr<std::vector<models::VisionEncoding>> operator()(std::span<const media::Image* const> images) {
    {
      std::unique_lock lock(mu_);
      batches_.push_back(static_cast<int>(images.size()));
      cv_.notify_all();
      cv_.wait(lock, [&] { return released_; });
    }
    std::vector<models::VisionEncoding> out;
    for (const media::Image* image : images) {
      if (image->width == 0) return InvalidArgument("an image of width 0");
      models::VisionEncoding e;
      e.rows = Tensor::FromFloats(std::vector<float>{static_cast<float>(image->width)}, {1, 1});
      out.push_back(std::move(e));
    }
    return out;
  }
  void WaitForForwards(size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return batches_.size() >= n; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  std::vector<int> batches() {
    std::lock_guard lock(mu_);
    return batches_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> batches_;
  bool released_ = false;
};

media::Image Width(int w) { return media::Image{.width = w, .height = 1, .rgb = {}}; }

// Runs Encode for each image on its own thread: the first alone, then the
// rest once the first forward has started; returns each caller's result.
std::vector<StatusOr<models::VisionEncoding>> EncodeBehindAFirst(ImageBatcher& batcher, ScriptedModel& model,
                                                                 const std::vector<media::Image>& images) {
  std::vector<StatusOr<models::VisionEncoding>> results(images.size(), Internal("not run"));
  std::vector<std::thread> threads;
  threads.emplace_back([&] { results[0] = batcher.Encode(images[0]); });
  model.WaitForForwards(1);
  for (size_t i = 1; i < images.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = batcher.Encode(images[i]); });
  }
  while (batcher.waiting() < images.size() - 1) std::this_thread::yield();
  model.Release();
  for (std::thread& t : threads) t.join();
  return results;
}

TEST(EncodeBatcherTest, ImagesArrivingDuringAForwardShareTheNextAndEachCallerGetsItsOwn) {
  ScriptedModel model;
  MetricsRegistry metrics;
  ImageBatcher batcher([&](auto images) { return model(images); }, 4, &metrics);
  std::vector<media::Image> images;
  for (int w = 1; w <= 6; ++w) images.push_back(Width(w));
  auto results = EncodeBehindAFirst(batcher, model, images);
  for (size_t i = 0; i < images.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].status().ToString();
    EXPECT_EQ(results[i]->rows.data<float>()[0], static_cast<float>(i + 1));
  }
  // 1 alone, then the 5 that waited: 4 (the limit) and 1.
  EXPECT_EQ(model.batches(), (std::vector<int>{1, 4, 1}));
  EXPECT_NE(metrics.Render().find("omni_encoder_batch_size_count 3"), std::string::npos) << metrics.Render();
}

TEST(EncodeBatcherTest, ABadImageFailsOnlyItsOwnRequest) {
  ScriptedModel model;
  ImageBatcher batcher([&](auto images) { return model(images); }, 8, nullptr);
  std::vector<media::Image> images = {Width(1), Width(2), Width(0), Width(4)};
  auto results = EncodeBehindAFirst(batcher, model, images);
  EXPECT_TRUE(results[0].ok());
  EXPECT_TRUE(results[1].ok());
  ASSERT_FALSE(results[2].ok());
  EXPECT_EQ(results[2].status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(results[3].ok());
  EXPECT_EQ(results[3]->rows.data<float>()[0], 4.f);
  // The batch of three failed, then each ran alone.
  EXPECT_EQ(model.batches(), (std::vector<int>{1, 3, 1, 1, 1}));
}

TEST(EncodeBatcherTest, MaxBatchOneRunsOneImagePerForward) {
  ScriptedModel model;
  ImageBatcher batcher([&](auto images) { return model(images); }, 1, nullptr);
  std::vector<media::Image> images = {Width(1), Width(2), Width(3)};
  auto results = EncodeBehindAFirst(batcher, model, images);
  for (const auto& r : results) EXPECT_TRUE(r.ok());
  EXPECT_EQ(model.batches(), (std::vector<int>{1, 1, 1}));
}

}  // namespace
}  // namespace omni::encoder
