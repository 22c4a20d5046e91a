#include "core/clock.h"

namespace omni {

Clock& Clock::Real() {
  static RealClock clock;
  return clock;
}

}  // namespace omni
