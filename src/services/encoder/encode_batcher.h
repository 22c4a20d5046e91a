// Dynamic batching in front of an encoder model: the encoder's workers each
// hand in one decoded medium (an image, an audio clip) and block; one model
// thread runs every medium waiting, up to `max_batch`, in one forward
// (OmniVisionEncoder::EncodeBatch, OmniAudioEncoder::EncodeBatch) and hands
// each worker its own encoding. Forwards never overlap (each already uses
// every compute thread); a batch forms only from media that arrive while the
// model is busy, so a lone request never waits for company.
//
//   ImageBatcher batcher([&](auto images) { return model.EncodeBatch(images); }, 8, &metrics);
//   StatusOr<VisionEncoding> e = batcher.Encode(image);   // on a worker; blocks
//
// A batch that fails is retried medium by medium, so one bad medium fails
// only its own request. max_batch 1 is the unbatched encoder: the same
// queue, one medium per forward.
// Thread-safety: Encode is thread-safe. The destructor finishes the media
// already handed in, then joins the model thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "media/image.h"
#include "models/audio_encoder/omni_audio_encoder.h"
#include "models/omni_vision/omni_vision_encoder.h"
#include "net/metrics.h"

namespace omni::encoder {

template <typename Input, typename Output>
class EncodeBatcher {
 public:
  using BatchEncodeFn = std::function<StatusOr<std::vector<Output>>(std::span<const Input* const>)>;

  // `metrics` may be null.
  EncodeBatcher(BatchEncodeFn encode, int max_batch, MetricsRegistry* metrics)
      : encode_(std::move(encode)), max_batch_(std::max(1, max_batch)) {
    if (metrics != nullptr) {
      batch_size_ = &metrics->AddHistogram("omni_encoder_batch_size", "Media per model forward.", {},
                                           {1, 2, 3, 4, 6, 8, 12, 16, 24, 32})
                         .Get();
      forward_seconds_ = &metrics->AddHistogram("omni_encoder_forward_seconds", "Time per model forward (a batch).",
                                                {}, {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30})
                              .Get();
    }
    thread_ = std::thread([this] { Loop(); });
  }
  ~EncodeBatcher() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  EncodeBatcher(const EncodeBatcher&) = delete;
  EncodeBatcher& operator=(const EncodeBatcher&) = delete;

  // `input` must stay valid until this returns.
  StatusOr<Output> Encode(const Input& input) {
    std::future<StatusOr<Output>> result;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return Unavailable("the encoder is shutting down");
      queue_.push_back(Pending{&input, {}});
      result = queue_.back().done.get_future();
    }
    cv_.notify_one();
    return result.get();
  }

  int max_batch() const { return max_batch_; }
  // Media handed in and not yet in a forward.
  size_t waiting() {
    std::lock_guard lock(mu_);
    return queue_.size();
  }

 private:
  struct Pending {
    const Input* input;
    std::promise<StatusOr<Output>> done;
  };

  void Loop() {
    while (true) {
      std::vector<Pending> batch;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, nothing left
        while (!queue_.empty() && std::ssize(batch) < max_batch_) {
          batch.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
      }
      Run(batch);
    }
  }

  void Run(std::vector<Pending>& batch) {
    std::vector<const Input*> inputs;
    for (const Pending& p : batch) inputs.push_back(p.input);
    const auto t0 = std::chrono::steady_clock::now();
    StatusOr<std::vector<Output>> out = Internal("the model failed");
    try {
      out = encode_(inputs);
    } catch (const std::exception& e) {  // bad_alloc on a large batch: each medium is retried alone below
      out = Internal(std::string("the model failed: ") + e.what());
    }
    if (forward_seconds_ != nullptr) {
      forward_seconds_->Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      batch_size_->Observe(static_cast<double>(batch.size()));
    }
    if (out.ok() && out->size() == batch.size()) {
      for (size_t i = 0; i < batch.size(); ++i) batch[i].done.set_value(std::move((*out)[i]));
      return;
    }
    if (batch.size() == 1) {
      batch.front().done.set_value(out.ok() ? Internal("the model gave no encoding for the medium") : out.status());
      return;
    }
    // One medium may be the cause: each alone, so only its request fails.
    for (Pending& p : batch) {
      std::vector<Pending> one;
      one.push_back(std::move(p));
      Run(one);
    }
  }

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

// An audio clip for the audio encoder: 16 kHz mono samples.
using AudioClip = std::span<const float>;

using ImageBatcher = EncodeBatcher<media::Image, models::VisionEncoding>;
using AudioBatcher = EncodeBatcher<AudioClip, models::AudioEncoding>;

}  // namespace omni::encoder
