# Script mode (cmake -P), run at every build by the omni_version target:
# writes the version header with the source tree's current git revision, and
# rewrites it only when that changed, so an unchanged tree rebuilds nothing.
# In: SRC (the source tree), IN (the template), OUT (the header), and the
# template's other values: PROJECT_VERSION, CMAKE_BUILD_TYPE,
# CMAKE_CXX_COMPILER_ID, CMAKE_CXX_COMPILER_VERSION.
execute_process(
  COMMAND git -C ${SRC} describe --always --dirty --abbrev=12
  OUTPUT_VARIABLE OMNI_GIT_REVISION OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT OMNI_GIT_REVISION)
  set(OMNI_GIT_REVISION "unknown")
endif()
configure_file(${IN} ${OUT} @ONLY)
