// Relays an upstream event stream (text/event-stream) to the client one
// whole event at a time, so that when the upstream dies a proxy (the gateway,
// the orchestrator) can add an event of its own at an event boundary.
//
// Boundaries follow the WHATWG event-stream line rules (HTML section 9.2.6):
// lines end in "\n", "\r\n" or "\r" (a pair may be split between chunks), and
// a blank line ends (dispatches) an event. Bytes after the last boundary are
// held back until the blank line that ends their event arrives. Holding
// costs no latency for a server that writes each event in one piece (the LLM
// server does), and it means a stream cut in the middle of an event loses
// that event whole instead of showing the client half of its JSON.
//
// An event larger than max_held_bytes is forwarded as it comes rather than
// held without bound; if the stream is then cut inside it, CloseEventPrefix()
// is "\n\n", which ends the partial line and dispatches it as its own
// (truncated) event so that the proxy's event is not glued onto it.
//
// Thread-safety: not thread-safe; one stream's callbacks use it in turn.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace omni {

class SseEventFramer {
 public:
  static constexpr size_t kDefaultMaxHeldBytes = 1 << 20;

  explicit SseEventFramer(size_t max_held_bytes = kDefaultMaxHeldBytes) : max_held_bytes_(max_held_bytes) {}

  // Takes the next upstream bytes; returns those to forward now (possibly
  // empty). The view is valid until the next call on this framer and may
  // point into `chunk`.
  std::string_view Feed(std::string_view chunk);
  // The upstream ended cleanly: the held bytes (an unterminated last event)
  // go out as they are. Returns them and holds nothing after.
  std::string TakeHeld();
  // The upstream was cut: what to write before an event of the proxy's
  // own. "" when the forwarded bytes end at an event boundary, else "\n\n".
  // The held bytes are dropped.
  std::string_view CloseEventPrefix();

  size_t held_bytes() const { return held_.size(); }

 private:
  // Advances the line state over one byte; true if an event boundary
  // follows it.
  bool Step(char c);

  size_t max_held_bytes_;
  std::string held_;     // received, not forwarded: the start of an unfinished event
  std::string out_;      // the returned bytes when they are not a prefix of the chunk
  bool line_open_ = false;       // the current line has content
  bool event_open_ = false;      // a non-blank line since the last blank line
  bool after_cr_ = false;        // the last byte was '\r': a following '\n' ends nothing
  bool forwarded_mid_event_ = false;  // an oversized event went out before its end
};

}  // namespace omni
