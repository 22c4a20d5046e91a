#include <omp.h>

#include <atomic>

#include "backend/cpu/cpu_common.h"

namespace omni::cpu {
namespace {

// 0 means "not set yet": use the OpenMP default, which honours OMP_NUM_THREADS.
std::atomic<int> g_num_threads{0};

}  // namespace

int NumThreads() {
  int n = g_num_threads.load(std::memory_order_relaxed);
  return n > 0 ? n : omp_get_max_threads();
}

void SetNumThreads(int n) {
  OMNI_CHECK_GE(n, 1);
  g_num_threads.store(n, std::memory_order_relaxed);
  omp_set_num_threads(n);
}

void SyncOmpThreads() {
  int n = g_num_threads.load(std::memory_order_relaxed);
  if (n > 0 && omp_get_max_threads() != n) omp_set_num_threads(n);
}

}  // namespace omni::cpu
