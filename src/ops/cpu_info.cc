#include "ops/cpu_info.h"

#include "backend/cpu/cpu_isa.h"

namespace omni::ops {

CpuKernelsInfo GetCpuKernelsInfo() {
  const cpu::IsaChoice& c = cpu::ActiveIsa();
  return CpuKernelsInfo{.level = std::string(cpu::IsaName(c.selected)),
                        .best = std::string(cpu::IsaName(c.best)),
                        .cpu = cpu::CpuBrand(),
                        .summary = cpu::IsaSummary()};
}

}  // namespace omni::ops
