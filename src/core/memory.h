// Returning freed memory to the operating system. Allocators keep freed
// pages for reuse, so a server that once buffered large bodies would hold
// their peak for good; after such a buffer is released, services ask the
// allocator to give its free pages back.
#pragma once

#include <cstddef>

namespace omni {

// Buffers of at least this many bytes count as large.
inline constexpr size_t kLargeBufferBytes = 1u << 20;

// Gives the allocator's free pages back to the system: tcmalloc's
// ReleaseFreeMemory when tcmalloc is the allocator, glibc's malloc_trim
// otherwise. Costs a walk of the free lists; call after large releases,
// not per request. Thread-safe.
void ReleaseFreeMemory();

}  // namespace omni
