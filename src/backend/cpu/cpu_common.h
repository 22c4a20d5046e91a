// Helpers shared by the CPU kernels: the thread count, and conversion of
// f32/bf16 rows to and from f32 scratch buffers (every kernel computes in f32).
// Only files under src/backend/cpu include this header.
#pragma once

#include <immintrin.h>

#include <cstdint>

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

inline void ToF32(const void* src, DType dtype, float* dst, int64_t n) {
  if (dtype == DType::kF32) {
    const float* s = static_cast<const float*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = s[i];
    return;
  }
  OMNI_DCHECK(dtype == DType::kBF16);
  const uint16_t* s = static_cast<const uint16_t*>(src);
  int64_t i = 0;
#ifdef __AVX512F__
  for (; i + 16 <= n; i += 16) {
    __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    __m512i w = _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
    _mm512_storeu_ps(dst + i, _mm512_castsi512_ps(w));
  }
#endif
  for (; i < n; ++i) dst[i] = BF16ToF32(bf16_t{s[i]});
}

inline void FromF32(const float* src, DType dtype, void* dst, int64_t n) {
  if (dtype == DType::kF32) {
    float* d = static_cast<float*>(dst);
    for (int64_t i = 0; i < n; ++i) d[i] = src[i];
    return;
  }
  OMNI_DCHECK(dtype == DType::kBF16);
  bf16_t* d = static_cast<bf16_t*>(dst);
  int64_t i = 0;
#if defined(__AVX512BF16__)
  for (; i + 16 <= n; i += 16) {
    __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(src + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), reinterpret_cast<__m256i&>(h));
  }
#endif
  for (; i < n; ++i) d[i] = F32ToBF16(src[i]);
}

// Element pointer arithmetic on untyped buffers.
inline const void* AddElems(const void* p, int64_t n, DType dtype) {
  return static_cast<const char*>(p) + n * static_cast<int64_t>(DTypeSize(dtype));
}
inline void* AddElems(void* p, int64_t n, DType dtype) {
  return static_cast<char*>(p) + n * static_cast<int64_t>(DTypeSize(dtype));
}

}  // namespace omni::cpu
