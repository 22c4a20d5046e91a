// The thread count of every CPU op, set in one place. Our kernels and oneDNN
// share one OpenMP runtime, so one setting bounds them all and ops never
// oversubscribe the machine. Default: OpenMP's (OMP_NUM_THREADS, else all
// cores). Thread-safe; takes effect on the next op.
#pragma once

#include <string>

namespace omni::ops {

void SetNumThreads(int n);
int NumThreads();

// The instruction-set level the CPU kernels run at (chosen once by the
// backend from the CPU and OMNI_CPU_ISA; docs/OPS.md), for logs, metrics and
// `omniserve version`. Nothing above the backend branches on it.
struct CpuKernelsInfo {
  std::string level;  // in use: amx, avx512bf16, avx512, avx2 or generic
  std::string best;   // the best this CPU has
  std::string cpu;    // the CPU's brand string
  std::string summary;  // "avx512bf16 (best avx512bf16; <cpu>)"
};
CpuKernelsInfo GetCpuKernelsInfo();

}  // namespace omni::ops
