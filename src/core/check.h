// Invariant checks. A failed OMNI_CHECK is a bug: it logs the condition, the
// place and the streamed message, then aborts. Recoverable errors use Status.
#pragma once

#include <sstream>

namespace omni::internal {

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  template <typename T>
  CheckFailure& operator<<(const T& v) {
    stream_ << v;
    return *this;
  }

 private:
  std::ostringstream stream_;
};

// Lets `OMNI_CHECK(c) << x;` be a single expression of type void.
struct Voidify {
  void operator&(const CheckFailure&) {}
};

}  // namespace omni::internal

#define OMNI_CHECK(cond)         \
  (cond) ? (void)0               \
         : ::omni::internal::Voidify() & ::omni::internal::CheckFailure(__FILE__, __LINE__, #cond)

#define OMNI_CHECK_OP(a, op, b) OMNI_CHECK((a)op(b)) << "(" << (a) << " vs " << (b) << ") "
#define OMNI_CHECK_EQ(a, b) OMNI_CHECK_OP(a, ==, b)
#define OMNI_CHECK_NE(a, b) OMNI_CHECK_OP(a, !=, b)
#define OMNI_CHECK_LT(a, b) OMNI_CHECK_OP(a, <, b)
#define OMNI_CHECK_LE(a, b) OMNI_CHECK_OP(a, <=, b)
#define OMNI_CHECK_GT(a, b) OMNI_CHECK_OP(a, >, b)
#define OMNI_CHECK_GE(a, b) OMNI_CHECK_OP(a, >=, b)

#ifdef NDEBUG
#define OMNI_DCHECK(cond) \
  while (false) OMNI_CHECK(cond)
#else
#define OMNI_DCHECK(cond) OMNI_CHECK(cond)
#endif
