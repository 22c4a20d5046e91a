// The thread count of every CPU op, set in one place. Our kernels and oneDNN
// share one OpenMP runtime, so one setting bounds them all and ops never
// oversubscribe the machine. Default: OpenMP's (OMP_NUM_THREADS, else all
// cores). Thread-safe; takes effect on the next op.
#pragma once

#include <cstdint>
#include <functional>

namespace omni::ops {

void SetNumThreads(int n);
int NumThreads();

// Runs the CPU ops' parallel loops on a spinning thread team instead of
// OpenMP (backend/cpu/spin_team.h), for work that is many short loops. Off
// by default. The LLM engine turns it on for each step that SpinTeamSuits.
void EnableSpinTeam(bool on);

// Whether a forward over `rows` tokens should run on the spin team: up to
// the rows Linear takes on its own GEMV (a decode batch), so every loop of
// it is ours. With more rows the matmuls are oneDNN's OpenMP regions, and
// the team's workers spinning beside libgomp's measured slower (prefill
// -16%, PERFORMANCE.md), as they did in the encoders and decoders.
bool SpinTeamSuits(int64_t rows);

// body(i) for every i in [0, n), one index at a time, on the ops' threads:
// a caller's loop between ops (the engine's sampling) runs where the ops'
// own loops do, so a step never wakes a second thread pool. The body must
// not throw.
void ParallelFor(int64_t n, const std::function<void(int64_t i)>& body);

}  // namespace omni::ops
