# omni_library(NAME SRCS ... DEPS ...): one library per layer.
function(omni_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SRCS})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
endfunction()

# omni_test(NAME SRCS ... DEPS ... [LABELS ...]): a GoogleTest binary registered with CTest.
function(omni_test name)
  if(NOT OMNI_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "TIMEOUT" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  # Tests build their inputs with designated initializers and leave the rest default.
  target_compile_options(${name} PRIVATE -Wno-missing-field-initializers)
  add_test(NAME ${name} COMMAND ${name})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  if(ARG_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}")
  endif()
endfunction()

# omni_isa_tests(TEST [LABELS ...] [TIMEOUT s]): runs the test binary TEST
# again at each CPU kernel level below the best (OMNI_CPU_ISA=level), as
# TEST_isa_<level>. isa_level_guard_test.cc in the binary exits 77 (skipped)
# where this CPU lacks the level.
function(omni_isa_tests name)
  if(NOT TARGET ${name})
    return()
  endif()
  cmake_parse_arguments(ARG "" "TIMEOUT" "LABELS" ${ARGN})
  foreach(level amx avx512bf16 avx512 avx2 generic)
    add_test(NAME ${name}_isa_${level} COMMAND ${name})
    set_tests_properties(${name}_isa_${level} PROPERTIES ENVIRONMENT "OMNI_CPU_ISA=${level}"
                         SKIP_RETURN_CODE 77 LABELS "${ARG_LABELS};isa" TIMEOUT ${ARG_TIMEOUT})
  endforeach()
endfunction()
