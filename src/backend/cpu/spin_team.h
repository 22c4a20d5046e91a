// A team of threads for the decode step's short parallel loops.
//
// A batch-1 decode step is some 60 parallel loops of a few to a few hundred
// microseconds (the matmuls, attention, norms). An OpenMP region costs each
// of them two barriers, and libgomp ends every barrier with a futex wake
// system call whether or not a thread sleeps: about 1 us each in a VM, and a
// 2-thread M=1 Linear call measured 6 us before any weight was read
// (PERFORMANCE.md). Here the workers spin on one atomic word between loops,
// so a loop costs a few cache-line transfers, and sleep (futex) only after
// 2 ms without work; the caller pays a wake-up system call only then.
//
// The caller never waits for a worker that has not joined its loop: a worker
// joins by counting itself in on the loop's word before the caller closes
// it, and the caller, once no index is left, closes the loop and waits only
// for the workers counted in. So a worker the OS has not scheduled (another
// process or runtime holds its core) costs parallelism, never a time slice;
// and a spinning worker yields its core every few microseconds to whatever
// else is runnable there.
//
// Work is handed out from one counter in runs that shrink with what is left
// (what is left divided by the thread count, at least one index, as OpenMP's
// guided schedule does), so each thread streams long contiguous runs and
// the last ones are short; runs of an eighth measured slower (PERFORMANCE.md).
//
// Mixing the team with OpenMP regions in one step puts libgomp's spinning
// workers beside the team's: every loop of a step runs on one of them
// (parallel.h's ParallelFor), a level that needs OpenMP's per-thread setup
// (AMX tiles) turns the team off for all (CpuKernels::team_loops), and only
// a process that asks for the team (EnableTeam) gets it.
//
// The header has a plain declaration only: the per-level kernel units
// include it.
//
// Thread-safety: TeamFor is called by any thread; the team runs one loop at a
// time, and a caller that finds it busy (or a loop started from inside a
// loop) gets false and runs its loop some other way.
#pragma once

#include <cstdint>

namespace omni::cpu {

// Whether TeamFor runs loops at all (default: no, every loop is OpenMP's).
// The LLM engine turns it on: its step is many short loops. The encoders'
// and decoders' forwards are fewer, larger loops between oneDNN's OpenMP
// convolutions and matmuls, where the team measured slower (PERFORMANCE.md).
void EnableTeam(bool on);

// body(ctx, i, thread) for every i in [0, n), on up to `threads` threads (the
// caller is thread 0; workers are 1..threads-1). Blocks until every index
// is done. Runs are at most max_run indices (0: no limit; 1 hands out one
// at a time, for items of very different cost). False, with nothing run,
// when the team is off, when threads < 2, when the team is busy or when
// `threads` differs from the team's size (it is fixed at first use). The body must not throw.
bool TeamFor(int threads, int64_t n, void (*body)(void* ctx, int64_t i, int thread), void* ctx,
             int64_t max_run = 0);

// True on a thread while it runs a team loop's body: a loop inside it should
// run serially rather than open a parallel region from that thread.
bool InTeamLoop();

}  // namespace omni::cpu
