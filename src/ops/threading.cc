#include "ops/threading.h"

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/cpu_isa.h"

namespace omni::ops {

void SetNumThreads(int n) { cpu::SetNumThreads(n); }
int NumThreads() { return cpu::NumThreads(); }

CpuKernelsInfo GetCpuKernelsInfo() {
  const cpu::IsaChoice& c = cpu::ActiveIsa();
  return CpuKernelsInfo{.level = std::string(cpu::IsaName(c.selected)),
                        .best = std::string(cpu::IsaName(c.best)),
                        .cpu = cpu::DetectCpuFeatures().brand,
                        .summary = cpu::IsaSummary()};
}

}  // namespace omni::ops
