// Pre-tokenization: splits text into the pieces BPE runs on, as Hugging Face's
// `pre_tokenizer` section describes (Split with a regex or a literal, and
// ByteLevel, alone or in a Sequence). Regexes run on PCRE2 in UTF + UCP mode,
// so \p{L}, \p{N} and \s follow Unicode properties like the Oniguruma engine
// Hugging Face uses.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace omni {

// What a Split step does with the text its pattern matches.
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// A compiled PCRE2 pattern. Immutable after Compile and safe to share between
// threads (each Find call uses its own match data).
class Pcre2Pattern {
 public:
  // `literal` treats `pattern` as plain text (Split's {"String": ...}).
  static StatusOr<std::unique_ptr<Pcre2Pattern>> Compile(std::string_view pattern, bool literal);
  ~Pcre2Pattern();
  Pcre2Pattern(const Pcre2Pattern&) = delete;
  Pcre2Pattern& operator=(const Pcre2Pattern&) = delete;

  // Byte ranges [begin, end) of all non-overlapping non-empty matches in
  // `text` (valid UTF-8), left to right.
  StatusOr<std::vector<std::pair<size_t, size_t>>> FindAll(std::string_view text) const;

 private:
  Pcre2Pattern() = default;
  void* code_ = nullptr;  // pcre2_code_8*; void keeps PCRE2 out of this header
};

struct SplitStep {
  std::shared_ptr<const Pcre2Pattern> pattern;
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
};

struct ByteLevelStep {
  bool add_prefix_space = false;
  // When set, splits with the GPT-2 pattern (kGpt2Pattern) first.
  std::shared_ptr<const Pcre2Pattern> gpt2_pattern;
};

// The GPT-2 pre-tokenizer regex that ByteLevel(use_regex=true) applies.
extern const char kGpt2Pattern[];
// The GPT-4 / Qwen2 style regex (single digits, case-insensitive contractions).
extern const char kQwen2Pattern[];

// An ordered list of steps; each step splits every piece the previous one made.
class PreTokenizer {
 public:
  void AddSplit(SplitStep step);
  void AddByteLevel(ByteLevelStep step);
  bool empty() const { return steps_.empty(); }

  // Splits `text` (valid UTF-8) into pieces; pieces are raw text, not yet
  // byte-level mapped. ByteLevel's add_prefix_space may add a leading ' '.
  StatusOr<std::vector<std::string>> Split(std::string_view text) const;

 private:
  struct Step {
    bool is_split;
    SplitStep split;
    ByteLevelStep byte_level;
  };
  std::vector<Step> steps_;
};

// Applies one Split step to `piece`, appending the results to `out`.
Status ApplySplit(const SplitStep& step, std::string_view piece, std::vector<std::string>* out);

}  // namespace omni
