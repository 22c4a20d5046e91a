// Reading a relayed event stream one whole event at a time, for the answer
// writers that edit a stream (image_answer.h, speech_answer.h).
#pragma once

#include <string>
#include <string_view>

namespace omni::orchestrator {

// Consumes every complete event ("...\n\n") at the front of `partial`: an
// event of data lines only goes to on_data(data) (its lines joined by
// "\n", the "data:" prefixes and one space removed); any other event (other
// fields, comments) goes to on_other(event) as it was, "\n\n" included.
// What remains in `partial` is the start of an event not yet complete.
template <typename OnData, typename OnOther>
void SplitSseEvents(std::string& partial, OnData&& on_data, OnOther&& on_other) {
  size_t start = 0;
  for (size_t end; (end = partial.find("\n\n", start)) != std::string::npos; start = end + 2) {
    const std::string_view event(partial.data() + start, end - start);
    std::string data;
    bool plain = true, has_data = false;
    for (size_t pos = 0; pos <= event.size();) {
      size_t nl = event.find('\n', pos);
      if (nl == std::string_view::npos) nl = event.size();
      std::string_view line = event.substr(pos, nl - pos);
      if (line.starts_with("data:")) {
        line.remove_prefix(5);
        if (line.starts_with(' ')) line.remove_prefix(1);
        if (has_data) data.push_back('\n');
        data.append(line);
        has_data = true;
      } else if (!line.empty()) {
        plain = false;
      }
      pos = nl + 1;
    }
    if (plain && has_data) {
      on_data(data);
    } else {
      on_other(std::string(event) + "\n\n");
    }
  }
  partial.erase(0, start);
}

}  // namespace omni::orchestrator
