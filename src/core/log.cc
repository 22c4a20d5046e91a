#include "core/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <memory>
#include <mutex>
#include <random>

#include "core/json_string.h"

namespace omni::log {
namespace {

struct State {
  std::atomic<int> level{static_cast<int>(Level::kInfo)};
  std::atomic<bool> json{false};
  std::mutex mu;
  std::string role = "omniserve";  // guarded by mu
  std::shared_ptr<spdlog::logger> logger;
};

State& GetState() {
  static State* s = [] {
    auto* st = new State();  // never destroyed: loggers are used during exit
    st->logger = std::make_shared<spdlog::logger>("omni", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    st->logger->set_pattern("%v");  // we format the whole line ourselves
    st->logger->set_level(spdlog::level::trace);
    return st;
  }();
  return *s;
}

std::string_view LevelName(Level l) {
  switch (l) {
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarn: return "warn";
    case Level::kError: return "error";
    case Level::kOff: return "off";
  }
  return "info";
}

std::string Timestamp() {
  auto now = std::chrono::system_clock::now();
  auto secs = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

}  // namespace

void Init(const LogOptions& options) {
  State& s = GetState();
  s.level = static_cast<int>(options.level);
  s.json = options.json;
  std::lock_guard lock(s.mu);
  s.role = options.role;
}

bool Enabled(Level level) { return static_cast<int>(level) >= GetState().level.load(std::memory_order_relaxed); }

bool ParseLevel(std::string_view s, Level* out) {
  for (Level l : {Level::kDebug, Level::kInfo, Level::kWarn, Level::kError, Level::kOff}) {
    if (s == LevelName(l)) {
      *out = l;
      return true;
    }
  }
  if (s == "warning") {
    *out = Level::kWarn;
    return true;
  }
  return false;
}

std::string FormatLine(Level level, std::string_view role, std::string_view request_id,
                       std::string_view message, bool json) {
  std::string out;
  if (json) {
    out += "{\"level\":\"";
    out += LevelName(level);
    out += "\",\"role\":";
    AppendJsonString(role, &out);
    if (!request_id.empty()) {
      out += ",\"request_id\":";
      AppendJsonString(request_id, &out);
    }
    out += ",\"msg\":";
    AppendJsonString(message, &out);
    out += '}';
    return out;
  }
  out += "level=";
  out += LevelName(level);
  out += " role=";
  out += role;
  if (!request_id.empty()) {
    out += " request_id=";
    out += request_id;
  }
  out += " msg=";
  AppendJsonString(message, &out);  // quoted and escaped, so one event is one line
  return out;
}

void Write(Level level, std::string_view request_id, std::string_view message) {
  State& s = GetState();
  std::string role;
  {
    std::lock_guard lock(s.mu);
    role = s.role;
  }
  std::string line = FormatLine(level, role, request_id, message, s.json);
  if (s.json) {
    line.insert(1, "\"ts\":\"" + Timestamp() + "\",");
  } else {
    line.insert(0, "ts=" + Timestamp() + " ");
  }
  s.logger->info(line);
}

std::string NewRequestId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  uint64_t v = rng();
  std::string id(16, '0');  // fits the small-string buffer: no allocation
  for (int i = 15; i >= 0; --i, v >>= 4) id[i] = kHex[v & 0xf];
  return id;
}

}  // namespace omni::log
