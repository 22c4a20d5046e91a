#include "backend/cpu/kernels.h"

#include "backend/cpu/cpu_isa.h"
#include "core/check.h"

namespace omni::cpu {
namespace isa {
// One per level, from isa/kernels_isa.cc; `amx` asks for the AMX table,
// which only the avx512bf16 object has.
const CpuKernels* TableGeneric(bool amx);
const CpuKernels* TableAvx2(bool amx);
const CpuKernels* TableAvx512(bool amx);
const CpuKernels* TableAvx512Bf16(bool amx);
}  // namespace isa

const CpuKernels* KernelsFor(CpuIsa level) {
  switch (level) {
    case CpuIsa::kGeneric: return isa::TableGeneric(false);
    case CpuIsa::kAvx2: return isa::TableAvx2(false);
    case CpuIsa::kAvx512: return isa::TableAvx512(false);
    case CpuIsa::kAvx512Bf16: return isa::TableAvx512Bf16(false);
    case CpuIsa::kAmx: return isa::TableAvx512Bf16(true);
  }
  return nullptr;
}

const CpuKernels& Kernels() {
  static const CpuKernels* const table = [] {
    const CpuKernels* t = KernelsFor(ActiveIsa().selected);
    OMNI_CHECK(t != nullptr) << "no CPU kernels for level " << IsaName(ActiveIsa().selected);
    return t;
  }();
  return *table;
}

}  // namespace omni::cpu
