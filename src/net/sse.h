// Server-sent events (WHATWG HTML, section 9.2 "Server-sent events"): an
// incremental parser for the client side and an encoder for the server side.
// Pure code; no I/O.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace omni {

struct SseEvent {
  std::string event;  // empty means the default type, "message"
  std::string data;   // data lines joined with '\n'
  std::string id;     // the last event id seen so far on the stream

  bool operator==(const SseEvent&) const = default;
};

// Feed bytes as they arrive, in chunks of any size; complete events come out.
// Lines may end in "\n", "\r\n" or "\r", even when a "\r\n" pair is split
// between two chunks. Not thread-safe.
class SseParser {
 public:
  using Callback = std::function<void(SseEvent&&)>;

  void Feed(std::string_view bytes, const Callback& on_event);
  // Convenience form that collects the events completed by this chunk.
  std::vector<SseEvent> Feed(std::string_view bytes);
  // The last `retry:` value in milliseconds, or -1 if none was sent.
  long retry_ms() const { return retry_ms_; }

 private:
  void ProcessLine(std::string_view line, const Callback& on_event);

  std::string line_;  // the unterminated line carried over from the last chunk
  bool skip_lf_ = false;  // the last chunk ended in '\r'; a leading '\n' ends nothing
  std::string event_;
  std::string data_;
  bool has_data_ = false;
  std::string last_id_;
  long retry_ms_ = -1;
};

// One event in wire form: optional "event:"/"id:" lines, one "data:" line per
// line of `data` (so embedded newlines survive), then a blank line.
std::string EncodeSseEvent(std::string_view data, std::string_view event = {}, std::string_view id = {});
// A comment line, used as a keep-alive that clients ignore.
std::string EncodeSseComment(std::string_view text);

}  // namespace omni
