#include "services/encoder/encode_batcher.h"

#include <algorithm>
#include <chrono>

namespace omni::encoder {

EncodeBatcher::EncodeBatcher(BatchEncodeFn encode, int max_batch, MetricsRegistry* metrics)
    : encode_(std::move(encode)), max_batch_(std::max(1, max_batch)) {
  if (metrics != nullptr) {
    batch_size_ = &metrics->AddHistogram("omni_encoder_batch_size", "Images per model forward.", {},
                                         {1, 2, 3, 4, 6, 8, 12, 16, 24, 32})
                       .Get();
    forward_seconds_ = &metrics->AddHistogram("omni_encoder_forward_seconds", "Time per model forward (a batch).", {},
                                              {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30})
                            .Get();
  }
  thread_ = std::thread([this] { Loop(); });
}

EncodeBatcher::~EncodeBatcher() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

StatusOr<models::VisionEncoding> EncodeBatcher::Encode(const media::Image& image) {
  std::future<StatusOr<models::VisionEncoding>> result;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return Unavailable("the encoder is shutting down");
    queue_.push_back(Pending{&image, {}});
    result = queue_.back().done.get_future();
  }
  cv_.notify_one();
  return result.get();
}

size_t EncodeBatcher::waiting() {
  std::lock_guard lock(mu_);
  return queue_.size();
}

void EncodeBatcher::Loop() {
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

void EncodeBatcher::Run(std::vector<Pending>& batch) {
  std::vector<const media::Image*> images;
  for (const Pending& p : batch) images.push_back(p.image);
  const auto t0 = std::chrono::steady_clock::now();
  StatusOr<std::vector<models::VisionEncoding>> out = Internal("the model failed");
  try {
    out = encode_(images);
  } catch (const std::exception& e) {  // bad_alloc on a large batch: each image is retried alone below
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
    batch.front().done.set_value(out.ok() ? Internal("the model gave no encoding for the image") : out.status());
    return;
  }
  // One image may be the cause: each alone, so only its request fails.
  for (Pending& p : batch) {
    std::vector<Pending> one;
    one.push_back(std::move(p));
    Run(one);
  }
}

}  // namespace omni::encoder
