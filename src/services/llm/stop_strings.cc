#include "services/llm/stop_strings.h"

#include <algorithm>
#include <utility>

namespace omni::llm {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (const std::string& s : stops_) max_len_ = std::max(max_len_, s.size());
}

std::string StopStringMatcher::Push(std::string_view text) {
  if (stopped_) return {};
  held_.append(text);
  if (stops_.empty()) return std::exchange(held_, {});
  size_t first = std::string::npos;
  for (const std::string& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Keep the last max_len - 1 bytes (they may begin a stop string), moved
  // back to a UTF-8 character boundary so a character is never split.
  if (held_.size() < max_len_) return {};
  size_t cut = held_.size() - (max_len_ - 1);
  while (cut > 0 && (static_cast<unsigned char>(held_[cut]) & 0xC0) == 0x80) --cut;
  std::string out = held_.substr(0, cut);
  held_.erase(0, cut);
  return out;
}

std::string StopStringMatcher::Flush() {
  if (stopped_) return {};
  return std::exchange(held_, {});
}

}  // namespace omni::llm
