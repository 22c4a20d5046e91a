// What every serving role reports about the process it runs in: the CPU
// kernel level, in its start-up log and as an info gauge on /metrics.
#pragma once

#include "net/metrics.h"

namespace omni::cli {

// The start-up log line of a serving role: "cpu kernels: avx2 (best avx2; <cpu>)".
void LogProcessInfo();

// omni_cpu_kernels_info{level="avx2",best="avx512bf16",cpu="..."} 1
void AddProcessInfoMetrics(MetricsRegistry& registry);

}  // namespace omni::cli
