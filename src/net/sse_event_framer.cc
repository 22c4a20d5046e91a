#include "net/sse_event_framer.h"

#include <utility>

namespace omni {

bool SseEventFramer::Step(char c) {
  if (after_cr_) {
    after_cr_ = false;
    // The '\n' of a "\r\n" pair: the '\r' already ended the line.
    if (c == '\n') return !line_open_ && !event_open_;
  }
  if (c == '\r' || c == '\n') {
    after_cr_ = c == '\r';
    if (line_open_) {
      line_open_ = false;
      event_open_ = true;
      return false;
    }
    event_open_ = false;  // a blank line: whatever event was open is dispatched
    return true;
  }
  line_open_ = true;
  return false;
}

std::string_view SseEventFramer::Feed(std::string_view chunk) {
  size_t boundary = 0;  // the end of the last event in `chunk`, 0 if none ends in it
  for (size_t i = 0; i < chunk.size(); ++i) {
    if (Step(chunk[i])) boundary = i + 1;
  }
  std::string_view out;
  bool out_is_buffer = false;
  if (boundary > 0) {
    if (held_.empty()) {
      out = chunk.substr(0, boundary);
    } else {
      out_.assign(held_);
      out_.append(chunk.substr(0, boundary));
      out_is_buffer = true;
    }
    held_.assign(chunk.substr(boundary));
    forwarded_mid_event_ = false;
  } else if (forwarded_mid_event_) {
    out = chunk;  // the rest of an event already going out: holding it helps nothing
  } else {
    held_.append(chunk);
  }
  if (held_.size() > max_held_bytes_) {
    if (!out_is_buffer) out_.assign(out);
    out_.append(held_);
    out_is_buffer = true;
    held_.clear();
    forwarded_mid_event_ = true;
  }
  return out_is_buffer ? std::string_view(out_) : out;
}

std::string SseEventFramer::TakeHeld() {
  std::string rest = std::move(held_);
  held_.clear();
  return rest;
}

std::string_view SseEventFramer::CloseEventPrefix() {
  held_.clear();
  return forwarded_mid_event_ ? std::string_view("\n\n") : std::string_view();
}

}  // namespace omni
