// Incremental detokenization for streaming responses.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "text/tokenizer.h"

namespace omni {

// Turns ids into text one at a time, never emitting part of a UTF-8
// character: bytes of an unfinished character are held until the next ids
// complete it. The concatenation of every Push and the final Flush equals
// Tokenizer::Decode of all ids. One per sequence; not thread-safe.
class StreamDetokenizer {
 public:
  // `tokenizer` must outlive this object.
  StreamDetokenizer(const Tokenizer& tokenizer, DecodeOptions options)
      : tokenizer_(tokenizer), options_(options) {}

  // The text that became complete with `id` (possibly empty).
  StatusOr<std::string> Push(int32_t id);
  // Whatever is still held, with an unfinished character as U+FFFD.
  std::string Flush();
  // Bytes held back waiting for the rest of a character (at most 3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  DecodeOptions options_;
  std::string pending_;
};

}  // namespace omni
