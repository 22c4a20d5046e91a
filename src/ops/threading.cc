#include "ops/threading.h"

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/matmul_cpu.h"
#include "backend/cpu/parallel.h"

namespace omni::ops {

void SetNumThreads(int n) { cpu::SetNumThreads(n); }
int NumThreads() { return cpu::NumThreads(); }

void EnableSpinTeam(bool on) { cpu::EnableTeam(on); }
bool SpinTeamSuits(int64_t rows) { return rows <= cpu::kGemvMaxM; }

void ParallelFor(int64_t n, const std::function<void(int64_t i)>& body) {
  cpu::ParallelFor(n, true, /*max_run=*/1, [&](int64_t i, int) { body(i); });
}

}  // namespace omni::ops
