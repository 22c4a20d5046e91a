// The instruction-set level the CPU kernels run at (chosen once by the
// backend from the CPU and OMNI_CPU_ISA; docs/OPS.md, "CPU kernel levels"),
// for logs, metrics and `omniserve version`. Nothing above the backend
// branches on it.
#pragma once

#include <string>

namespace omni::ops {

struct CpuKernelsInfo {
  std::string level;    // in use: amx, avx512bf16, avx512, avx2 or generic
  std::string best;     // the best this CPU has
  std::string cpu;      // the CPU's brand string
  std::string summary;  // "avx512bf16 (best avx512bf16; <cpu>)"
};

CpuKernelsInfo GetCpuKernelsInfo();

}  // namespace omni::ops
