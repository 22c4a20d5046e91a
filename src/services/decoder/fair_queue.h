// The decoders' request queue: one job runs at a time (a generation uses
// every core, or every rank), chosen fairly across clients: round robin over
// the keys that have work waiting, first come first served within a key, so
// one client's burst does not starve another's single request. Bounded: a job
// beyond `max_waiting` waiting behind a running one is refused at once (the
// caller answers 429); an idle queue takes one even with max_waiting 0.
//
//   FairQueue queue({.max_waiting = 8});
//   if (!queue.Submit(user, [=] { Run(); }, [=] { AnswerShutdown(); })) Answer429();
//
// Thread-safety: thread-safe. Jobs run on the queue's own thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace omni::decoder {

class FairQueue {
 public:
  struct Options {
    size_t max_waiting = 8;  // jobs waiting (not counting the running one)
  };
  explicit FairQueue(Options options);
  // Close(), then joins the worker.
  ~FairQueue();
  FairQueue(const FairQueue&) = delete;
  FairQueue& operator=(const FairQueue&) = delete;

  // Queues `run` under `key`; false (nothing queued) when full or closed.
  // `drop` runs instead of `run` if the queue closes before the job starts.
  bool Submit(const std::string& key, std::function<void()> run, std::function<void()> drop = {});
  // Stops accepting, drops the waiting jobs (their `drop` runs on this
  // thread) and lets the running one finish.
  void Close();
  // Blocks until nothing runs or waits.
  void WaitIdle();

  size_t waiting() const;
  bool running() const;

 private:
  struct Job {
    std::function<void()> run, drop;
  };
  void Loop();

  const Options options_;
  mutable std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::map<std::string, std::deque<Job>> by_key_;
  std::string last_key_;  // the key served last: the next turn goes to the key after it
  size_t waiting_ = 0;
  bool running_ = false, closed_ = false;
  std::thread worker_;  // declared last: started after the state above
};

}  // namespace omni::decoder
