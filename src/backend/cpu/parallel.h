// ParallelFor: the CPU kernels' parallel loop, on the spin team
// (spin_team.h) when the process has it on and the active level allows it,
// else on OpenMP.
//
// A decode step is many short loops, and the LLM engine turns the team on
// for such steps (ops::EnableSpinTeam): every loop of the step goes through
// here, so no OpenMP region opens between them, whose libgomp worker would
// spin for milliseconds beside the team's (docs/OPS.md, "Threads"). Ops that
// run only in the encoders and decoders, beside oneDNN's OpenMP
// convolutions, keep their own OpenMP loops.
// Only files under src/backend/cpu (not the per-level units) include this.
#pragma once

#include <omp.h>

#include <cstdint>
#include <type_traits>

#include "backend/cpu/cpu_common.h"
#include "backend/cpu/spin_team.h"

namespace omni::cpu {

// body(i, thread) for every i in [0, n), thread < NumThreads() (per-thread
// scratch may be indexed by it). Serial on the caller when `parallel` is
// false or when called from inside a team loop. max_run 1 hands out one
// index at a time (items of very different cost); 0 hands out, on the
// team, runs that shrink with what is left, and on OpenMP equal static
// shares. Which runtime ran a loop never changes what an index computes.
template <typename F>
void ParallelFor(int64_t n, bool parallel, int64_t max_run, F&& body) {
  using Body = std::remove_reference_t<F>;
  const int threads = NumThreads();
  if (!parallel || threads < 2 || n < 2 || InTeamLoop()) {
    for (int64_t i = 0; i < n; ++i) body(i, 0);
    return;
  }
  auto call = [](void* f, int64_t i, int thread) { (*static_cast<Body*>(f))(i, thread); };
  void* ctx = const_cast<void*>(static_cast<const void*>(&body));
  if (Kernels().team_loops && TeamFor(threads, n, call, ctx, max_run)) return;
  if (max_run == 1) {
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (int64_t i = 0; i < n; ++i) body(i, omp_get_thread_num());
  } else {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; ++i) body(i, omp_get_thread_num());
  }
}

}  // namespace omni::cpu
