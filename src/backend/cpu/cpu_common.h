// Helpers shared by the CPU kernels: the thread count, and conversion of
// f32/bf16 rows to and from f32 scratch buffers (every kernel computes in f32).
// Only files under src/backend/cpu include this header.
#pragma once

#include <cstdint>

#include "backend/cpu/kernels.h"
#include "core/check.h"
#include "tensor/dtype.h"

namespace omni::cpu {

// The one place the thread count lives. Every OpenMP region in the CPU
// kernels passes num_threads(NumThreads()); oneDNN calls go through
// SyncOmpThreads() first so oneDNN (same OpenMP runtime) agrees.
int NumThreads();
void SetNumThreads(int n);
// Sets the calling thread's OpenMP ICV to NumThreads() if it differs
// (omp_set_num_threads is per thread, so a fresh std::thread would otherwise
// use the runtime default).
void SyncOmpThreads();

// bf16 rows go through the active level's kernels; a few elements (a
// broadcast scalar) are converted in place.
inline void ToF32(const void* src, DType dtype, float* dst, int64_t n) {
  if (dtype == DType::kF32) {
    const float* s = static_cast<const float*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = s[i];
    return;
  }
  OMNI_DCHECK(dtype == DType::kBF16);
  const uint16_t* s = static_cast<const uint16_t*>(src);
  if (n < 16) {
    for (int64_t i = 0; i < n; ++i) dst[i] = BF16ToF32(bf16_t{s[i]});
    return;
  }
  Kernels().bf16_to_f32(s, dst, n);
}

inline void FromF32(const float* src, DType dtype, void* dst, int64_t n) {
  if (dtype == DType::kF32) {
    float* d = static_cast<float*>(dst);
    for (int64_t i = 0; i < n; ++i) d[i] = src[i];
    return;
  }
  OMNI_DCHECK(dtype == DType::kBF16);
  Kernels().f32_to_bf16(src, static_cast<uint16_t*>(dst), n);
}

// Element pointer arithmetic on untyped buffers.
inline const void* AddElems(const void* p, int64_t n, DType dtype) {
  return static_cast<const char*>(p) + n * static_cast<int64_t>(DTypeSize(dtype));
}
inline void* AddElems(void* p, int64_t n, DType dtype) {
  return static_cast<char*>(p) + n * static_cast<int64_t>(DTypeSize(dtype));
}

}  // namespace omni::cpu
