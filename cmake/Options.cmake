# Designated initializers that omit defaulted members are the idiom for
# option structs here, so -Wmissing-field-initializers is off.
add_compile_options(-Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers)
# One portable build: everything targets the x86-64-v2 baseline (SSE4.2,
# POPCNT: every x86-64 server CPU since 2009), and the hot CPU kernels are
# compiled again per ISA level with their own flags and chosen at start
# (src/backend/cpu/cpu_isa.h, src/ops/CMakeLists.txt). Nothing is built
# for the build machine's own CPU, so a binary runs wherever it is copied.
add_compile_options(-march=x86-64-v2)

set(OMNI_SANITIZERS "")
if(OMNI_ASAN)
  list(APPEND OMNI_SANITIZERS address)
endif()
if(OMNI_UBSAN)
  list(APPEND OMNI_SANITIZERS undefined)
endif()
if(OMNI_SANITIZERS)
  list(JOIN OMNI_SANITIZERS "," _san)
  add_compile_options(-fsanitize=${_san} -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=${_san})
endif()
