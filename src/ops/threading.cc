#include "ops/threading.h"

#include "backend/cpu/cpu_common.h"

namespace omni::ops {

void SetNumThreads(int n) { cpu::SetNumThreads(n); }
int NumThreads() { return cpu::NumThreads(); }

}  // namespace omni::ops
