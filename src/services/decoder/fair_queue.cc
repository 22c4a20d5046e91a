#include "services/decoder/fair_queue.h"

#include "core/log.h"

#include <exception>
#include <utility>
#include <vector>

namespace omni::decoder {

FairQueue::FairQueue(Options options) : options_(options), worker_([this] { Loop(); }) {}

FairQueue::~FairQueue() {
  Close();
  worker_.join();
}

bool FairQueue::Submit(const std::string& key, std::function<void()> run, std::function<void()> drop) {
  {
    std::lock_guard lock(mu_);
    // An idle worker takes the job at once, so it does not count as waiting.
    if (closed_ || waiting_ >= options_.max_waiting + (running_ ? 0 : 1)) return false;
    by_key_[key].push_back({std::move(run), std::move(drop)});
    ++waiting_;
  }
  wake_.notify_one();
  return true;
}

void FairQueue::Close() {
  std::vector<Job> dropped;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    for (auto& [key, jobs] : by_key_) {
      for (Job& job : jobs) dropped.push_back(std::move(job));
    }
    by_key_.clear();
    waiting_ = 0;
  }
  wake_.notify_all();
  idle_.notify_all();
  for (Job& job : dropped) {
    if (job.drop) job.drop();
  }
}

void FairQueue::WaitIdle() {
  std::unique_lock lock(mu_);
  idle_.wait(lock, [this] { return waiting_ == 0 && !running_; });
}

size_t FairQueue::waiting() const {
  std::lock_guard lock(mu_);
  return waiting_;
}

bool FairQueue::running() const {
  std::lock_guard lock(mu_);
  return running_;
}

void FairQueue::Loop() {
  std::unique_lock lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return closed_ || waiting_ > 0; });
    if (waiting_ == 0) return;  // closed and empty
    // The first key after the last one served, wrapping around.
    auto it = by_key_.upper_bound(last_key_);
    if (it == by_key_.end()) it = by_key_.begin();
    Job job = std::move(it->second.front());
    it->second.pop_front();
    last_key_ = it->first;
    if (it->second.empty()) by_key_.erase(it);
    --waiting_;
    running_ = true;
    lock.unlock();
    try {
      job.run();
    } catch (const std::exception& e) {
      // A job's own failure must not end the queue (and the server with it).
      OMNI_LOG(kError, "decoder queue: a job threw: {}", e.what());
    } catch (...) {
      OMNI_LOG(kError, "decoder queue: a job threw");
    }
    job = {};
    lock.lock();
    running_ = false;
    if (waiting_ == 0) idle_.notify_all();
  }
}

}  // namespace omni::decoder
