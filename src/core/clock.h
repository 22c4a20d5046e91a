// An injectable clock so timeouts, expiry and latency logic are testable
// without sleeping. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace omni {

class Clock {
 public:
  using Duration = std::chrono::nanoseconds;
  using MonoTime = std::chrono::steady_clock::time_point;
  using WallTime = std::chrono::system_clock::time_point;

  virtual ~Clock() = default;
  virtual MonoTime Now() const = 0;      // for intervals and deadlines
  virtual WallTime WallNow() const = 0;  // for timestamps, signing, expiry

  // The process-wide real clock; it has no state, so sharing it hides nothing.
  static Clock& Real();
};

class RealClock final : public Clock {
 public:
  MonoTime Now() const override { return std::chrono::steady_clock::now(); }
  WallTime WallNow() const override { return std::chrono::system_clock::now(); }
};

// A clock that moves only when told to. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(WallTime wall_start = WallTime(std::chrono::seconds(1'700'000'000)))
      : wall_start_(wall_start) {}
  MonoTime Now() const override { return MonoTime(Duration(offset_ns_.load())); }
  WallTime WallNow() const override {
    return wall_start_ + std::chrono::duration_cast<WallTime::duration>(Duration(offset_ns_.load()));
  }
  void Advance(Duration d) { offset_ns_ += d.count(); }

 private:
  WallTime wall_start_;
  std::atomic<int64_t> offset_ns_{0};
};

}  // namespace omni
