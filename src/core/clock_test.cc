#include "core/clock.h"

#include <gtest/gtest.h>

namespace omni {
namespace {

TEST(ClockTest, FakeClockMovesOnlyWhenAdvanced) {
  FakeClock clock;
  auto t0 = clock.Now();
  auto w0 = clock.WallNow();
  EXPECT_EQ(clock.Now(), t0);
  clock.Advance(std::chrono::milliseconds(1500));
  EXPECT_EQ(clock.Now() - t0, std::chrono::milliseconds(1500));
  EXPECT_EQ(clock.WallNow() - w0, std::chrono::milliseconds(1500));
}

TEST(ClockTest, RealClockIsMonotonic) {
  auto a = Clock::Real().Now();
  auto b = Clock::Real().Now();
  EXPECT_LE(a, b);
}

}  // namespace
}  // namespace omni
