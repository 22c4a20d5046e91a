#include "backend/cpu/spin_team.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <thread>

namespace omni::cpu {
namespace {

constexpr auto kSpin = std::chrono::microseconds(2000);  // spinning before a worker sleeps

// The futex on the generation word: sleep while it still holds `seen`;
// wake all sleepers. One system call each, made only around a sleep.
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free,
              "the futex word is the atomic's own");
void FutexWait(std::atomic<uint32_t>* word, uint32_t seen) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
}
void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

class SpinTeam {
 public:
  explicit SpinTeam(int threads) : threads_(threads) {
    for (int t = 1; t < threads; ++t) std::thread([this, t] { Work(t); }).detach();
  }

  int threads() const { return threads_; }

  bool For(int64_t n, void (*body)(void*, int64_t, int), void* ctx, int64_t max_run) {
    if (busy_.exchange(true, std::memory_order_acquire)) return false;
    body_ = body;
    ctx_ = ctx;
    n_ = n;
    max_run_ = max_run > 0 ? max_run : n;
    next_.store(0, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_seq_cst);  // publishes the loop
    if (sleepers_.load(std::memory_order_seq_cst) > 0) FutexWakeAll(&generation_);
    Run(0);
    while (done_.load(std::memory_order_acquire) < threads_ - 1) CpuRelax();
    busy_.store(false, std::memory_order_release);
    return true;
  }

 private:
  // Takes runs of indices until none is left.
  void Run(int thread) {
    const int64_t n = n_;
    int64_t i = next_.load(std::memory_order_relaxed);
    while (i < n) {
      const int64_t run = std::clamp<int64_t>((n - i) / threads_, 1, max_run_);
      if (!next_.compare_exchange_weak(i, i + run, std::memory_order_relaxed)) continue;
      for (int64_t j = i; j < i + run; ++j) body_(ctx_, j, thread);
      i = next_.load(std::memory_order_relaxed);
    }
  }

  void Work(int thread) {
    uint32_t seen = 0;  // generation_'s first value: a loop may start before this thread does
    for (;;) {
      auto start = std::chrono::steady_clock::now();
      for (int spins = 0;; ++spins) {
        if (generation_.load(std::memory_order_acquire) != seen) break;
        CpuRelax();
        if ((spins & 1023) == 1023 && std::chrono::steady_clock::now() - start > kSpin) {
          sleepers_.fetch_add(1, std::memory_order_seq_cst);
          if (generation_.load(std::memory_order_seq_cst) == seen) FutexWait(&generation_, seen);
          sleepers_.fetch_sub(1, std::memory_order_relaxed);
          start = std::chrono::steady_clock::now();
        }
      }
      seen = generation_.load(std::memory_order_acquire);
      Run(thread);
      done_.fetch_add(1, std::memory_order_release);
    }
  }

  const int threads_;
  std::atomic<bool> busy_{false};
  std::atomic<uint32_t> generation_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<int64_t> next_{0};
  std::atomic<int> done_{0};
  // The loop; written by the caller before generation_ moves, read after.
  void (*body_)(void*, int64_t, int) = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0, max_run_ = 0;
};

}  // namespace

bool TeamFor(int threads, int64_t n, void (*body)(void* ctx, int64_t i, int thread), void* ctx, int64_t max_run) {
  if (threads < 2) return false;
  // One team per process, its workers never joined (they sleep when idle);
  // it is never destroyed, so no worker outlives it.
  static SpinTeam* const team = new SpinTeam(threads);
  if (team->threads() != threads) return false;
  if (n <= 0) return true;
  return team->For(n, body, ctx, max_run);
}

}  // namespace omni::cpu
