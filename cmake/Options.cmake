# Designated initializers that omit defaulted members are the idiom for
# option structs here, so -Wmissing-field-initializers is off.
add_compile_options(-Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers)
# The machines this runs on have AVX-512; kernels are written for the host.
if(OMNI_PORTABLE)
  # The CPU kernels (src/backend/cpu) use AVX-512 intrinsics without
  # per-file ISA flags or runtime dispatch, so they only compile for a host
  # that has them. Say so here rather than fail deep in the build.
  message(FATAL_ERROR "OMNI_PORTABLE=ON is not supported yet: the CPU kernels need -march=native "
                      "on an AVX-512 host (per-file ISA flags and runtime dispatch are not written)")
endif()
add_compile_options(-march=native)

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
