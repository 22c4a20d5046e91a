#include "backend/cpu/spin_team.h"

#include <linux/futex.h>
#include <sched.h>
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
constexpr int kSpinsPerYield = 1024;                       // pauses (tens of us) between yields

// The loop word: the loop's generation in the high 32 bits, then a closed
// bit, then the count of workers in the loop. The futex sleeps on the
// generation half.
constexpr uint64_t kClosed = uint64_t{1} << 31;
constexpr uint64_t kCountMask = kClosed - 1;
inline uint32_t Generation(uint64_t word) { return static_cast<uint32_t>(word >> 32); }

static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t) && std::atomic<uint64_t>::is_always_lock_free,
              "the futex word is the atomic's own");
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the futex waits on the word's high half");
uint32_t* GenerationHalf(std::atomic<uint64_t>* word) { return reinterpret_cast<uint32_t*>(word) + 1; }

// Sleep while the generation is still `seen`; wake all sleepers. One
// system call each, made only around a sleep.
void FutexWait(std::atomic<uint64_t>* word, uint32_t seen) {
  syscall(SYS_futex, GenerationHalf(word), FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
}
void FutexWakeAll(std::atomic<uint64_t>* word) {
  syscall(SYS_futex, GenerationHalf(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

thread_local bool t_in_loop = false;
std::atomic<bool> g_enabled{false};

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
    // A new generation, open, nobody in: publishes the loop.
    const uint32_t gen = Generation(word_.load(std::memory_order_relaxed)) + 1;
    word_.store(uint64_t{gen} << 32, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) FutexWakeAll(&word_);
    Run(0);
    // Nothing is left to take: close the loop to late workers, then wait
    // for those in it to finish their runs.
    uint64_t w = word_.fetch_or(kClosed, std::memory_order_acq_rel);
    while ((w & kCountMask) != 0) {
      CpuRelax();
      w = word_.load(std::memory_order_acquire);
    }
    busy_.store(false, std::memory_order_release);
    return true;
  }

 private:
  // Takes runs of indices until none is left.
  void Run(int thread) {
    t_in_loop = true;
    const int64_t n = n_;
    int64_t i = next_.load(std::memory_order_relaxed);
    while (i < n) {
      const int64_t run = std::clamp<int64_t>((n - i) / threads_, 1, max_run_);
      if (!next_.compare_exchange_weak(i, i + run, std::memory_order_relaxed)) continue;
      for (int64_t j = i; j < i + run; ++j) body_(ctx_, j, thread);
      i = next_.load(std::memory_order_relaxed);
    }
    t_in_loop = false;
  }

  // Counts this worker into the loop `w` holds, or the one after it should
  // the caller move on meanwhile; false if the loop is already closed.
  // `w` ends as the word of the loop joined or found closed.
  bool Join(uint64_t& w) {
    while ((w & kClosed) == 0) {
      if (word_.compare_exchange_weak(w, w + 1, std::memory_order_acquire, std::memory_order_relaxed)) return true;
    }
    return false;
  }

  void Work(int thread) {
    uint32_t seen = 0;  // the first generation: a loop may start before this thread does
    for (;;) {
      auto start = std::chrono::steady_clock::now();
      uint64_t w;
      for (int spins = 1;; ++spins) {
        w = word_.load(std::memory_order_acquire);
        if (Generation(w) != seen) break;
        CpuRelax();
        if (spins % kSpinsPerYield != 0) continue;
        if (std::chrono::steady_clock::now() - start < kSpin) {
          sched_yield();  // to another thread runnable on this core, if any
          continue;
        }
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        if (Generation(word_.load(std::memory_order_seq_cst)) == seen) FutexWait(&word_, seen);
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
        start = std::chrono::steady_clock::now();
      }
      const bool in = Join(w);
      seen = Generation(w);
      if (!in) continue;
      // In: the loop's fields are those of generation `seen` until this
      // worker counts itself out, since the caller waits for that.
      Run(thread);
      word_.fetch_sub(1, std::memory_order_release);
    }
  }

  const int threads_;
  std::atomic<bool> busy_{false};
  std::atomic<uint64_t> word_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<int64_t> next_{0};
  // The loop; written by the caller before word_ moves, read after.
  void (*body_)(void*, int64_t, int) = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0, max_run_ = 0;
};

}  // namespace

bool InTeamLoop() { return t_in_loop; }

void EnableTeam(bool on) { g_enabled.store(on, std::memory_order_relaxed); }

bool TeamFor(int threads, int64_t n, void (*body)(void* ctx, int64_t i, int thread), void* ctx, int64_t max_run) {
  if (threads < 2 || !g_enabled.load(std::memory_order_relaxed)) return false;
  // One team per process, its workers never joined (they sleep when idle);
  // it is never destroyed, so no worker outlives it.
  static SpinTeam* const team = new SpinTeam(threads);
  if (team->threads() != threads) return false;
  if (n <= 0) return true;
  return team->For(n, body, ctx, max_run);
}

}  // namespace omni::cpu
