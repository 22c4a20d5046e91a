#include "core/check.h"

#include <cstdio>
#include <cstdlib>

namespace omni::internal {

CheckFailure::CheckFailure(const char* file, int line, const char* condition) {
  stream_ << file << ":" << line << ": CHECK failed: " << condition << " ";
}

CheckFailure::~CheckFailure() {
  // Written straight to stderr: the logger may be the thing that is broken.
  std::fprintf(stderr, "%s\n", stream_.str().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace omni::internal
