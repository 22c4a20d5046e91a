// The instruction-set levels the CPU kernels are compiled for (cpu_isa.h
// chooses one). Its own header so the per-level kernel files include no
// more than this enum.
#pragma once

namespace omni::cpu {

// Ordered: each level's kernels need every instruction of the ones below.
enum class CpuIsa {
  kGeneric = 0,     // plain C++ (the x86-64-v2 baseline)
  kAvx2 = 1,        // AVX2 + FMA + F16C (x86-64-v3)
  kAvx512 = 2,      // AVX-512 F/BW/DQ/VL (x86-64-v4)
  kAvx512Bf16 = 3,  // and AVX512-BF16 (vdpbf16ps)
  kAmx = 4,         // and AMX-TILE + AMX-BF16
};

}  // namespace omni::cpu
