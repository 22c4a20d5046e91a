// The thread count of every CPU op, set in one place. Our kernels and oneDNN
// share one OpenMP runtime, so one setting bounds them all and ops never
// oversubscribe the machine. Default: OpenMP's (OMP_NUM_THREADS, else all
// cores). Thread-safe; takes effect on the next op.
#pragma once

namespace omni::ops {

void SetNumThreads(int n);
int NumThreads();

}  // namespace omni::ops
