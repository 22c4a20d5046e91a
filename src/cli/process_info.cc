#include "cli/process_info.h"

#include "core/log.h"
#include "ops/cpu_info.h"

namespace omni::cli {

void LogProcessInfo() { OMNI_LOG(kInfo, "cpu kernels: {}", ops::GetCpuKernelsInfo().summary); }

void AddProcessInfoMetrics(MetricsRegistry& registry) {
  const ops::CpuKernelsInfo info = ops::GetCpuKernelsInfo();
  registry
      .AddGauge("omni_cpu_kernels_info", "The CPU kernel level in use (OMNI_CPU_ISA caps it), the best this CPU has.",
                {"level", "best", "cpu"})
      .WithLabels({info.level, info.best, info.cpu})
      .Set(1);
}

}  // namespace omni::cli
