#include "text/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <utility>

namespace omni {

const char kGpt2Pattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char kQwen2Pattern[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

namespace {

pcre2_code* Code(void* p) { return static_cast<pcre2_code*>(p); }

std::string Pcre2Message(int error) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(error, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

struct Segment {
  size_t begin;
  size_t end;
  bool is_match;
};

}  // namespace

StatusOr<std::unique_ptr<Pcre2Pattern>> Pcre2Pattern::Compile(std::string_view pattern, bool literal) {
  // PCRE2 allows only UTF alongside LITERAL.
  uint32_t options = literal ? (PCRE2_UTF | PCRE2_LITERAL) : (PCRE2_UTF | PCRE2_UCP);
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   options, &error, &offset, nullptr);
  if (code == nullptr) {
    return InvalidArgument("bad pre-tokenizer regex at offset " + std::to_string(offset) + ": " +
                           Pcre2Message(error));
  }
  // JIT is only a speed-up: without it (unsupported CPU) matching still works.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  std::unique_ptr<Pcre2Pattern> p(new Pcre2Pattern());
  p->code_ = code;
  return p;
}

Pcre2Pattern::~Pcre2Pattern() { pcre2_code_free(Code(code_)); }

StatusOr<std::vector<std::pair<size_t, size_t>>> Pcre2Pattern::FindAll(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> matches;
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
      pcre2_match_data_create_from_pattern(Code(code_), nullptr), &pcre2_match_data_free);
  if (!data) return Internal("pcre2_match_data_create failed");
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  uint32_t options = 0;  // the text was validated once; later calls skip the check
  while (start <= text.size()) {
    int rc = pcre2_match(Code(code_), subject, text.size(), start, options, data.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) return InvalidArgument("pre-tokenizer regex failed: " + Pcre2Message(rc));
    options = PCRE2_NO_UTF_CHECK;
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.get());
    size_t b = ov[0], e = ov[1];
    if (e > b) {
      matches.emplace_back(b, e);
      start = e;
    } else {
      // An empty match splits nothing; step over one character.
      if (b >= text.size()) break;
      size_t next = b + 1;
      while (next < text.size() && (static_cast<uint8_t>(text[next]) & 0xC0) == 0x80) ++next;
      start = next;
    }
  }
  return matches;
}

Status ApplySplit(const SplitStep& step, std::string_view piece, std::vector<std::string>* out) {
  OMNI_ASSIGN_OR_RETURN(auto matches, step.pattern->FindAll(piece));
  std::vector<Segment> segments;
  size_t pos = 0;
  for (auto [b, e] : matches) {
    if (b > pos) segments.push_back({pos, b, step.invert});
    segments.push_back({b, e, !step.invert});
    pos = e;
  }
  if (pos < piece.size()) segments.push_back({pos, piece.size(), step.invert});

  // The fold rules follow Hugging Face's SplitDelimiterBehavior.
  std::vector<std::pair<size_t, size_t>> pieces;
  bool previous_match = false;
  switch (step.behavior) {
    case SplitBehavior::kRemoved:
      for (const Segment& s : segments) {
        if (!s.is_match) pieces.emplace_back(s.begin, s.end);
      }
      break;
    case SplitBehavior::kIsolated:
      for (const Segment& s : segments) pieces.emplace_back(s.begin, s.end);
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const Segment& s : segments) {
        if (s.is_match && !previous_match && !pieces.empty()) {
          pieces.back().second = s.end;
        } else {
          pieces.emplace_back(s.begin, s.end);
        }
        previous_match = s.is_match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
        if (it->is_match && !previous_match && !pieces.empty()) {
          pieces.back().first = it->begin;
        } else {
          pieces.emplace_back(it->begin, it->end);
        }
        previous_match = it->is_match;
      }
      std::reverse(pieces.begin(), pieces.end());
      break;
    case SplitBehavior::kContiguous:
      for (size_t i = 0; i < segments.size(); ++i) {
        const Segment& s = segments[i];
        if (i > 0 && s.is_match == previous_match) {
          pieces.back().second = s.end;
        } else {
          pieces.emplace_back(s.begin, s.end);
        }
        previous_match = s.is_match;
      }
      break;
  }
  for (auto [b, e] : pieces) {
    if (e > b) out->emplace_back(piece.substr(b, e - b));
  }
  return Status::Ok();
}

void PreTokenizer::AddSplit(SplitStep step) { steps_.push_back({true, std::move(step), {}}); }
void PreTokenizer::AddByteLevel(ByteLevelStep step) { steps_.push_back({false, {}, std::move(step)}); }

StatusOr<std::vector<std::string>> PreTokenizer::Split(std::string_view text) const {
  std::vector<std::string> pieces;
  pieces.emplace_back(text);
  for (const Step& step : steps_) {
    std::vector<std::string> next;
    for (std::string& piece : pieces) {
      if (step.is_split) {
        OMNI_RETURN_IF_ERROR(ApplySplit(step.split, piece, &next));
        continue;
      }
      if (step.byte_level.add_prefix_space && (piece.empty() || piece[0] != ' ')) piece.insert(0, " ");
      if (step.byte_level.gpt2_pattern) {
        SplitStep gpt2{step.byte_level.gpt2_pattern, SplitBehavior::kIsolated, false};
        OMNI_RETURN_IF_ERROR(ApplySplit(gpt2, piece, &next));
      } else {
        next.push_back(std::move(piece));
      }
    }
    pieces = std::move(next);
  }
  return pieces;
}

}  // namespace omni
