// Dynamic batching in front of the vision model: the encoder's workers each
// hand in one decoded image and block; one model thread runs every image
// waiting, up to `max_batch`, in one forward (OmniVisionEncoder::EncodeBatch)
// and hands each worker its own encoding. Forwards never overlap (each
// already uses every compute thread); a batch forms only from images that
// arrive while the model is busy, so a lone request never waits for company.
//
//   EncodeBatcher batcher([&](auto images) { return model.EncodeBatch(images); }, 8, &metrics);
//   StatusOr<VisionEncoding> e = batcher.Encode(image);   // on a worker; blocks
//
// A batch that fails is retried image by image, so one bad image fails only
// its own request. max_batch 1 is the unbatched encoder: the same queue, one
// image per forward.
// Thread-safety: Encode is thread-safe. The destructor finishes the images
// already handed in, then joins the model thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "core/status.h"
#include "media/image.h"
#include "models/omni_vision/omni_vision_encoder.h"
#include "net/metrics.h"

namespace omni::encoder {

using BatchEncodeFn =
    std::function<StatusOr<std::vector<models::VisionEncoding>>(std::span<const media::Image* const>)>;

class EncodeBatcher {
 public:
  // `metrics` may be null.
  EncodeBatcher(BatchEncodeFn encode, int max_batch, MetricsRegistry* metrics);
  ~EncodeBatcher();
  EncodeBatcher(const EncodeBatcher&) = delete;
  EncodeBatcher& operator=(const EncodeBatcher&) = delete;

  // `image` must stay valid until this returns.
  StatusOr<models::VisionEncoding> Encode(const media::Image& image);

  int max_batch() const { return max_batch_; }
  // Images handed in and not yet in a forward.
  size_t waiting();

 private:
  struct Pending {
    const media::Image* image;
    std::promise<StatusOr<models::VisionEncoding>> done;
  };

  void Loop();
  void Run(std::vector<Pending>& batch);

  const BatchEncodeFn encode_;
  const int max_batch_;
  Histogram* batch_size_ = nullptr;
  Histogram* forward_seconds_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;  // guarded by mu_
  bool stopping_ = false;      // guarded by mu_
  std::thread thread_;         // started last
};

}  // namespace omni::encoder
