// A fixed-size pool of worker threads for blocking work (file I/O, codecs,
// model loading) that must not run on an HTTP event loop. Compute kernels do
// not use it: they parallelise through OpenMP, the runtime oneDNN is built
// with, so one set of compute threads serves both (see docs/ARCHITECTURE.md).
//
// Thread-safe. The destructor runs every task already submitted, then joins.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace omni {

class ThreadPool {
 public:
  explicit ThreadPool(size_t num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Queues `task`; returns false (and drops it) once shutdown has begun.
  bool Post(std::function<void()> task);

  // Queues `fn` and returns a future for its result. After shutdown the
  // future holds a broken_promise error.
  template <typename F>
  auto Submit(F&& fn) -> std::future<std::invoke_result_t<F>> {
    using R = std::invoke_result_t<F>;
    auto task = std::make_shared<std::packaged_task<R()>>(std::forward<F>(fn));
    auto fut = task->get_future();
    Post([task] { (*task)(); });
    return fut;
  }

  // Stops accepting work, finishes what is queued, joins the workers.
  void Shutdown();
  size_t size() const { return workers_.size(); }

 private:
  void WorkerLoop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> workers_;
};

}  // namespace omni
