#include "core/memory.h"

#include <malloc.h>

// tcmalloc's C entry point, weak so that omni_core links without it: it is
// non-null only in a binary that links tcmalloc (the omniserve binary does;
// sanitizer builds and tests use glibc's allocator).
extern "C" void MallocExtension_ReleaseFreeMemory(void) __attribute__((weak));

namespace omni {

void ReleaseFreeMemory() {
  if (MallocExtension_ReleaseFreeMemory != nullptr) {
    MallocExtension_ReleaseFreeMemory();
  } else {
    malloc_trim(0);
  }
}

}  // namespace omni
