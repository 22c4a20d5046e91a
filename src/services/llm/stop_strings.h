// Stop strings on streamed text: text is held back while it could still be
// the start of a stop string, so the client never sees part of one, and the
// output is cut right before the first stop string that completes.
//
// Thread-safety: one per choice; not thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace omni::llm {

class StopStringMatcher {
 public:
  explicit StopStringMatcher(std::vector<std::string> stops);

  // Appends `text` and returns what may be sent now. When a stop string
  // completes, returns the text before it, sets stopped() and drops the rest.
  std::string Push(std::string_view text);
  // The held tail, once the stream ended without a stop string.
  std::string Flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  size_t max_len_ = 0;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace omni::llm
