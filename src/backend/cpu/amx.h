// Intel AMX tile helpers for the bf16 kernels (small-M linear, attention).
// Tiles are per-thread state: a kernel loads its configuration at the start
// of each parallel region and releases the tiles at its end. Only files
// under src/backend/cpu include this header.
#pragma once

#include <immintrin.h>

#include <cstdint>

#if defined(__AMX_TILE__) && defined(__AMX_BF16__)
#define OMNI_HAVE_AMX 1
#else
#define OMNI_HAVE_AMX 0
#endif

namespace omni::cpu {

// True where this build has AMX-BF16 and Linux granted the process the tile
// state (asked once). OMNI_CPU_AMX=0 in the environment turns it off, so
// the AVX-512 kernels can be compared and tested on the same machine.
bool AmxUsable();

#if OMNI_HAVE_AMX
// tileloadd that the compiler knows reads memory: GCC 12's _tile_loadd
// declares no memory operand, so stores the tile load depends on could be
// moved past it.
#define OMNI_TILE_LOADD(tile, base, stride)                                                            \
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #tile ::"r"(static_cast<const void*>(base)),          \
                   "r"(static_cast<long>(stride))                                                      \
                   : "memory")

// All eight tiles 64 bytes wide; tiles 0-4 (accumulators and the A operand)
// `rows` rows tall, tiles 5-7 (B operands) 16.
void ConfigureTiles(int rows);
#endif

}  // namespace omni::cpu
