// Dynamic batching in front of a model that serves whole inputs (an
// encoder's images or audio clips, the audio decoder's unit sequences): the
// server's workers each hand in one input and block; one model thread runs
// every input waiting, up to `max_batch`, in one forward
// (OmniVisionEncoder::EncodeBatch, UnitBigVgan::VocodeBatch, ...) and hands
// each worker its own output. Forwards never overlap (each already uses
// every compute thread); a batch forms only from inputs that arrive while
// the model is busy, so a lone request never waits for company.
//
//   ModelBatcher<Clip, Wave> batcher([&](auto clips) { return model.Batch(clips); }, 8, &metrics,
//                                    "omni_audio_decoder");
//   StatusOr<Wave> wave = batcher.Forward(clip);   // on a worker; blocks
//
// Metrics (when `metrics` is given): <prefix>_batch_size, inputs per
// forward, and <prefix>_forward_seconds, time per forward.
// A batch that fails is retried input by input, so one bad input fails only
// its own request. max_batch 1 is the unbatched model: the same queue, one
// input per forward.
// Thread-safety: Forward is thread-safe. The destructor finishes the inputs
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
#include "net/metrics.h"

namespace omni {

template <typename Input, typename Output>
class ModelBatcher {
 public:
  // One output per input, in order.
  using BatchFn = std::function<StatusOr<std::vector<Output>>(std::span<const Input* const>)>;

  // `metrics` may be null; `metric_prefix` names the histograms ("omni_encoder").
  ModelBatcher(BatchFn batch_fn, int max_batch, MetricsRegistry* metrics, const std::string& metric_prefix)
      : batch_fn_(std::move(batch_fn)), max_batch_(std::max(1, max_batch)) {
    if (metrics != nullptr) {
      batch_size_ = &metrics->AddHistogram(metric_prefix + "_batch_size", "Inputs per model forward.", {},
                                           {1, 2, 3, 4, 6, 8, 12, 16, 24, 32})
                         .Get();
      forward_seconds_ = &metrics->AddHistogram(metric_prefix + "_forward_seconds", "Time per model forward (a batch).",
                                                {}, {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30})
                              .Get();
    }
    thread_ = std::thread([this] { Loop(); });
  }
  ~ModelBatcher() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  ModelBatcher(const ModelBatcher&) = delete;
  ModelBatcher& operator=(const ModelBatcher&) = delete;

  // `input` must stay valid until this returns.
  StatusOr<Output> Forward(const Input& input) {
    std::future<StatusOr<Output>> result;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return Unavailable("the model is shutting down");
      queue_.push_back(Pending{&input, {}});
      result = queue_.back().done.get_future();
    }
    cv_.notify_one();
    return result.get();
  }

  int max_batch() const { return max_batch_; }
  // Inputs handed in and not yet in a forward.
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
      RunBatch(batch);
    }
  }

  void RunBatch(std::vector<Pending>& batch) {
    std::vector<const Input*> inputs;
    for (const Pending& p : batch) inputs.push_back(p.input);
    const auto t0 = std::chrono::steady_clock::now();
    StatusOr<std::vector<Output>> out = Internal("the model failed");
    try {
      out = batch_fn_(inputs);
    } catch (const std::exception& e) {  // bad_alloc on a large batch: each input is retried alone below
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
      batch.front().done.set_value(out.ok() ? Internal("the model gave no output for the input") : out.status());
      return;
    }
    // One input may be the cause: each alone, so only its request fails.
    for (Pending& p : batch) {
      std::vector<Pending> one;
      one.push_back(std::move(p));
      RunBatch(one);
    }
  }

  const BatchFn batch_fn_;
  const int max_batch_;
  Histogram* batch_size_ = nullptr;
  Histogram* forward_seconds_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;  // guarded by mu_
  bool stopping_ = false;      // guarded by mu_
  std::thread thread_;         // started last
};

}  // namespace omni
