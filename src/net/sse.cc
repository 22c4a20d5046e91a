#include "net/sse.h"

#include <charconv>

namespace omni {

void SseParser::Feed(std::string_view bytes, const Callback& on_event) {
  size_t start = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    char c = bytes[i];
    if (skip_lf_) {
      skip_lf_ = false;
      if (c == '\n') {
        start = i + 1;
        continue;
      }
    }
    if (c != '\n' && c != '\r') continue;
    if (line_.empty()) {
      ProcessLine(bytes.substr(start, i - start), on_event);
    } else {
      line_.append(bytes.substr(start, i - start));
      ProcessLine(line_, on_event);
      line_.clear();
    }
    skip_lf_ = (c == '\r');
    start = i + 1;
  }
  line_.append(bytes.substr(start));
}

std::vector<SseEvent> SseParser::Feed(std::string_view bytes) {
  std::vector<SseEvent> out;
  Feed(bytes, [&](SseEvent&& e) { out.push_back(std::move(e)); });
  return out;
}

void SseParser::ProcessLine(std::string_view line, const Callback& on_event) {
  if (line.empty()) {
    // Dispatch. The spec drops events with no data lines, and strips the one
    // trailing newline that joining leaves.
    if (has_data_) {
      SseEvent e;
      e.event = std::move(event_);
      e.data = std::move(data_);
      e.id = last_id_;
      on_event(std::move(e));
    }
    event_.clear();
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;  // comment
  size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value;
  if (colon != std::string_view::npos) {
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (has_data_) data_ += '\n';
    data_.append(value);
    has_data_ = true;
  } else if (field == "event") {
    event_ = std::string(value);
  } else if (field == "id") {
    // An id with NUL is ignored (spec), so a hostile stream cannot truncate it.
    if (value.find('\0') == std::string_view::npos) last_id_ = std::string(value);
  } else if (field == "retry") {
    long ms = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
    if (ec == std::errc() && end == value.data() + value.size() && ms >= 0) retry_ms_ = ms;
  }
  // Unknown fields are ignored.
}

std::string EncodeSseEvent(std::string_view data, std::string_view event, std::string_view id) {
  std::string out;
  out.reserve(data.size() + event.size() + id.size() + 24);
  if (!event.empty()) {
    out += "event: ";
    out += event;
    out += '\n';
  }
  if (!id.empty()) {
    out += "id: ";
    out += id;
    out += '\n';
  }
  // Any of \r\n, \r, \n inside data would end the line early; each piece
  // becomes its own data line, which the parser joins back with '\n'.
  size_t start = 0;
  for (size_t i = 0; i <= data.size(); ++i) {
    if (i < data.size() && data[i] != '\n' && data[i] != '\r') continue;
    out += "data: ";
    out.append(data.substr(start, i - start));
    out += '\n';
    if (i + 1 < data.size() && data[i] == '\r' && data[i + 1] == '\n') ++i;
    start = i + 1;
  }
  out += '\n';
  return out;
}

std::string EncodeSseComment(std::string_view text) {
  std::string out = ": ";
  for (char c : text) out += (c == '\n' || c == '\r') ? ' ' : c;
  out += "\n\n";
  return out;
}

}  // namespace omni
