// Structured logging. Every line carries a timestamp, level, the process role
// and, on request paths, the request id. Two formats: logfmt-style text for
// people (default) and JSON lines for log pipelines (`--log-format json`).
//
//   OMNI_LOG(kInfo, "listening on {}", addr);           // process-level line
//   RequestLog log(request_id); log.Warn("slow upstream {} ms", ms);
//
// spdlog does the sink work (thread-safe stderr); it stays out of this header.
// Thread-safe.
#pragma once

#include <fmt/core.h>

#include <string>
#include <string_view>

namespace omni::log {

enum class Level { kDebug = 0, kInfo, kWarn, kError, kOff };

struct LogOptions {
  Level level = Level::kInfo;
  bool json = false;
  std::string role = "omniserve";
};

void Init(const LogOptions& options);
bool Enabled(Level level);
void Write(Level level, std::string_view request_id, std::string_view message);
// Parses "debug|info|warn|error|off"; false if unknown.
bool ParseLevel(std::string_view s, Level* out);
// Formats one line exactly as Write would (without the timestamp), for tests.
std::string FormatLine(Level level, std::string_view role, std::string_view request_id,
                       std::string_view message, bool json);

// A 16-hex-digit random id for requests that arrive without `x-request-id`.
std::string NewRequestId();

class RequestLog {
 public:
  explicit RequestLog(std::string request_id) : id_(std::move(request_id)) {}
  const std::string& id() const { return id_; }

  template <typename... A>
  void Debug(fmt::format_string<A...> f, A&&... a) const { Emit(Level::kDebug, f, std::forward<A>(a)...); }
  template <typename... A>
  void Info(fmt::format_string<A...> f, A&&... a) const { Emit(Level::kInfo, f, std::forward<A>(a)...); }
  template <typename... A>
  void Warn(fmt::format_string<A...> f, A&&... a) const { Emit(Level::kWarn, f, std::forward<A>(a)...); }
  template <typename... A>
  void Error(fmt::format_string<A...> f, A&&... a) const { Emit(Level::kError, f, std::forward<A>(a)...); }

 private:
  template <typename... A>
  void Emit(Level level, fmt::format_string<A...> f, A&&... a) const {
    if (Enabled(level)) Write(level, id_, fmt::format(f, std::forward<A>(a)...));
  }
  std::string id_;
};

}  // namespace omni::log

#define OMNI_LOG(level, ...)                                                    \
  do {                                                                          \
    if (::omni::log::Enabled(::omni::log::Level::level))                        \
      ::omni::log::Write(::omni::log::Level::level, {}, fmt::format(__VA_ARGS__)); \
  } while (0)
