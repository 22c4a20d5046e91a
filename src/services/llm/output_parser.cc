#include "services/llm/output_parser.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include <nlohmann/json.hpp>

#include "api/openai/python_json.h"
#include "core/json_string.h"
#include "core/utf8.h"

namespace omni::llm {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kThinkEnd = "</think>";
constexpr std::string_view kToolCallOpen = "<tool_call>";
constexpr std::string_view kToolCallClose = "</tool_call>";
constexpr std::string_view kArgKeyOpen = "<arg_key>";
constexpr std::string_view kArgKeyClose = "</arg_key>";
constexpr std::string_view kArgValueOpen = "<arg_value>";
constexpr std::string_view kArgValueClose = "</arg_value>";
constexpr std::string_view kAudioCallOpen = "<audio_decoder_call>";
constexpr std::string_view kAudioCallClose = "</audio_decoder_call>";
constexpr std::string_view kSpeakerOpen = "<speaker_info>";
constexpr std::string_view kSpeakerClose = "</speaker_info>";
constexpr std::string_view kUnitsOpen = "<discrete_audio>";
constexpr std::string_view kUnitsClose = "</discrete_audio>";
constexpr std::string_view kAssistantTranscriptOpen = "<assistant_transcript>";
constexpr std::string_view kAssistantTranscriptClose = "</assistant_transcript>";
constexpr std::string_view kUserTranscriptOpen = "<user_transcript>";
constexpr std::string_view kUserTranscriptClose = "</user_transcript>";
// A name line longer than this is not a tool call.
constexpr size_t kMaxNameBytes = 256;
static_assert(kToolCallClose.size() >= kArgKeyOpen.size(), "the longest end of a name line");

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

size_t SkipSpace(std::string_view s, size_t pos = 0) {
  while (pos < s.size() && IsSpace(s[pos])) ++pos;
  return pos;
}

// The length of the longest suffix of `text` that is a proper prefix of a marker.
size_t HeldSuffix(std::string_view text, std::span<const std::string_view> markers) {
  size_t best = 0;
  for (std::string_view m : markers) {
    for (size_t len = std::min(text.size(), m.size() - 1); len > best; --len) {
      if (text.substr(text.size() - len) == m.substr(0, len)) {
        best = len;
        break;
      }
    }
  }
  return best;
}

// `text` could still grow into `marker`.
bool IsPrefixOf(std::string_view text, std::string_view marker) {
  return text.size() < marker.size() && marker.starts_with(text);
}

// A JSON string of `s`; invalid UTF-8 (the detokenizer never sends it, but
// the parser does not rely on that) becomes U+FFFD, so the JSON stays valid.
std::string JsonString(std::string_view s) {
  std::string valid;
  AppendUtf8Lossy(s, /*final=*/true, &valid);
  std::string out;
  AppendJsonString(valid, &out);
  return out;
}

// An argument value as JSON, typed by the parameter's schema.
std::string TypedValue(const openai::ToolParameter* param, std::string_view raw) {
  const std::string_view v = Trim(raw);
  if (param != nullptr && param->type == openai::ParamType::kString) return JsonString(v);
  Json parsed = Json::parse(v, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return JsonString(v);
  return openai::PythonJsonDumps(parsed);
}

}  // namespace

OutputParser::OutputParser(Options options)
    : options_(std::move(options)), state_(options_.starts_in_reasoning ? State::kReasoning : State::kContent) {}

void OutputParser::EmitContent(std::string_view text, OutputDelta* out) {
  if (!content_started_) {
    while (!text.empty() && text.front() == '\n') text.remove_prefix(1);
    if (text.empty()) return;
    content_started_ = true;
  }
  // Whitespace is held until text follows it: none is sent after the last
  // word (around and between tool calls).
  size_t last = text.size();
  while (last > 0 && IsSpace(text[last - 1])) --last;
  if (last == 0) {
    held_space_.append(text);
    return;
  }
  out->content += held_space_;
  out->content.append(text.substr(0, last));
  held_space_.assign(text.substr(last));
}

void OutputParser::AbandonCall(OutputDelta* out) {
  std::string raw = std::move(call_raw_);
  call_raw_.clear();
  state_ = State::kContent;
  call_index_ = -1;
  content_started_ = true;  // the call's own text is not trimmed
  out->content += held_space_;
  held_space_.clear();
  out->content += raw;
}

bool OutputParser::Step(OutputDelta* out, bool at_end) {
  switch (state_) {
    case State::kReasoning: {
      const size_t end = buffer_.find(kThinkEnd);
      if (end != std::string::npos) {
        out->reasoning.append(buffer_, 0, end);
        buffer_.erase(0, end + kThinkEnd.size());
        state_ = State::kContent;
        return true;
      }
      const std::string_view marker[] = {kThinkEnd};
      const size_t keep = at_end ? 0 : HeldSuffix(buffer_, marker);
      out->reasoning.append(buffer_, 0, buffer_.size() - keep);
      buffer_.erase(0, buffer_.size() - keep);
      return false;
    }
    case State::kContent: {
      std::vector<std::string_view> markers = {kUserTranscriptOpen};
      if (!options_.raw_speech) {
        markers.insert(markers.end(), {kAudioCallOpen, kAssistantTranscriptOpen, kAssistantTranscriptClose});
      }
      if (options_.parse_tool_calls) markers.push_back(kToolCallOpen);
      size_t at = std::string::npos;
      std::string_view found;
      for (std::string_view m : markers) {
        const size_t p = buffer_.find(m);
        if (p < at) {
          at = p;
          found = m;
        }
      }
      if (at == std::string::npos) {
        const size_t keep = at_end ? 0 : HeldSuffix(buffer_, markers);
        EmitContent(std::string_view(buffer_).substr(0, buffer_.size() - keep), out);
        buffer_.erase(0, buffer_.size() - keep);
        return false;
      }
      EmitContent(std::string_view(buffer_).substr(0, at), out);
      buffer_.erase(0, at + found.size());
      if (found == kToolCallOpen) {
        state_ = State::kToolCall;
        call_raw_ = std::string(found);
        name_done_ = false;
        call_tool_ = nullptr;
        call_args_.clear();
        call_num_args_ = 0;
      } else if (found == kAudioCallOpen) {
        state_ = State::kAudioCall;
        call_raw_ = std::string(found);
      } else if (found == kUserTranscriptOpen) {
        state_ = State::kUserTranscript;
        call_raw_ = std::string(found);
      }  // assistant transcript tags: dropped, their text stays content
      return true;
    }
    case State::kUserTranscript: {
      const size_t end = buffer_.find(kUserTranscriptClose);
      if (end == std::string::npos) return false;  // Finish() returns an unclosed one as content
      buffer_.erase(0, end + kUserTranscriptClose.size());
      call_raw_.clear();
      state_ = State::kContent;
      return true;
    }
    case State::kToolCall:
      return StepToolCall(out, at_end);
    case State::kAudioCall:
      return StepAudioCall(out, at_end);
  }
  return false;
}

bool OutputParser::StepToolCall(OutputDelta* out, bool at_end) {
  auto consume = [&](size_t n) {
    call_raw_.append(buffer_, 0, n);
    buffer_.erase(0, n);
  };
  if (!name_done_) {
    size_t end = std::min({buffer_.find('\n'), buffer_.find(kArgKeyOpen), buffer_.find(kToolCallClose)});
    // The name line must end within kMaxNameBytes. With no end found, that is
    // known only once an end tag starting at the limit would be whole, so the
    // verdict does not depend on where the text was split.
    const bool too_long = end == std::string::npos ? buffer_.size() >= kMaxNameBytes + kToolCallClose.size()
                                                   : end > kMaxNameBytes;
    if (too_long) {
      AbandonCall(out);  // no name line: the text after <tool_call> is content again
      return true;
    }
    if (end == std::string::npos) {
      if (at_end) {
        AbandonCall(out);
        return true;
      }
      return false;
    }
    const std::string name(Trim(std::string_view(buffer_).substr(0, end)));
    consume(buffer_[end] == '\n' ? end + 1 : end);
    for (const openai::ToolSpec& t : options_.tools) {
      if (t.name == name) call_tool_ = &t;
    }
    if (call_tool_ == nullptr) {
      AbandonCall(out);
      return true;
    }
    name_done_ = true;
    call_index_ = next_index_++;
    out->tool_calls.push_back({.index = call_index_, .id = options_.new_call_id(), .name = name});
    calls_.push_back({.id = out->tool_calls.back().id, .name = name});  // arguments at </tool_call>
    return true;
  }
  const size_t start = SkipSpace(buffer_);
  const std::string_view rest = std::string_view(buffer_).substr(start);
  if (rest.starts_with(kToolCallClose)) {
    const std::string closing = call_num_args_ == 0 ? "{}" : "}";
    consume(start + kToolCallClose.size());
    out->tool_calls.push_back({.index = call_index_, .arguments = closing});
    calls_.back().arguments = call_args_ + closing;
    call_raw_.clear();
    call_index_ = -1;
    state_ = State::kContent;
    return true;
  }
  if (rest.starts_with(kArgKeyOpen)) {
    // <arg_key>K</arg_key> <arg_value>V</arg_value>, all of it present?
    const size_t key_begin = start + kArgKeyOpen.size();
    const size_t key_end = buffer_.find(kArgKeyClose, key_begin);
    if (key_end == std::string::npos) {
      if (!at_end) return false;
    } else {
      const size_t value_tag = SkipSpace(buffer_, key_end + kArgKeyClose.size());
      const std::string_view after = std::string_view(buffer_).substr(value_tag);
      if (after.starts_with(kArgValueOpen)) {
        const size_t value_begin = value_tag + kArgValueOpen.size();
        const size_t value_end = buffer_.find(kArgValueClose, value_begin);
        if (value_end != std::string::npos) {
          const std::string_view key = Trim(std::string_view(buffer_).substr(key_begin, key_end - key_begin));
          const std::string_view value = std::string_view(buffer_).substr(value_begin, value_end - value_begin);
          std::string fragment = call_num_args_ == 0 ? "{" : ", ";
          fragment += JsonString(key) + ": " + TypedValue(call_tool_->Find(key), value);
          ++call_num_args_;
          call_args_ += fragment;
          consume(value_end + kArgValueClose.size());
          out->tool_calls.push_back({.index = call_index_, .arguments = std::move(fragment)});
          return true;
        }
        if (!at_end) return false;
      } else if (IsPrefixOf(after, kArgValueOpen) && !at_end) {
        return false;
      }
    }
  } else if ((rest.empty() || IsPrefixOf(rest, kArgKeyOpen) || IsPrefixOf(rest, kToolCallClose)) && !at_end) {
    return false;
  }
  // Text where a tag must be, or the end inside the call: what follows is
  // parsed again as content.
  calls_.pop_back();
  consume(start);
  AbandonCall(out);
  return true;
}

bool OutputParser::StepAudioCall(OutputDelta* out, bool at_end) {
  const size_t end = buffer_.find(kAudioCallClose);
  if (end == std::string::npos) {
    if (!at_end) return false;
    call_raw_ += buffer_;
    buffer_.clear();
    AbandonCall(out);
    return true;
  }
  std::string inner;  // valid UTF-8 (see JsonString)
  AppendUtf8Lossy(std::string_view(buffer_).substr(0, end), /*final=*/true, &inner);
  call_raw_.append(buffer_, 0, end + kAudioCallClose.size());
  buffer_.erase(0, end + kAudioCallClose.size());
  // [<speaker_info>{json}</speaker_info>] <discrete_audio>units</discrete_audio>
  std::string_view s = Trim(inner);
  Json speaker = Json::object();
  if (s.starts_with(kSpeakerOpen)) {
    const size_t close = s.find(kSpeakerClose);
    if (close == std::string_view::npos) {
      AbandonCall(out);
      return true;
    }
    const std::string_view info = Trim(s.substr(kSpeakerOpen.size(), close - kSpeakerOpen.size()));
    Json parsed = Json::parse(info, nullptr, /*allow_exceptions=*/false);
    speaker = parsed.is_object() ? std::move(parsed) : Json{{"raw", std::string(info)}};
    s = Trim(s.substr(close + kSpeakerClose.size()));
  }
  if (!s.starts_with(kUnitsOpen) || !s.ends_with(kUnitsClose)) {
    AbandonCall(out);
    return true;
  }
  const std::string_view units_text =
      Trim(s.substr(kUnitsOpen.size(), s.size() - kUnitsOpen.size() - kUnitsClose.size()));
  Json units = Json::array();
  for (size_t p = units_text.find("<|audio"); p != std::string_view::npos; p = units_text.find("<|audio", p + 1)) {
    int unit = 0;
    const char* first = units_text.data() + p + 7;
    const char* last = units_text.data() + units_text.size();
    auto [ptr, ec] = std::from_chars(first, last, unit);
    if (ec == std::errc() && std::string_view(ptr, last - ptr).starts_with("|>")) {
      units.push_back(unit);
    }
  }
  const Json args = {{"speaker_info", speaker}, {"discrete_audio", std::string(units_text)}, {"units", units}};
  const std::string arguments = openai::PythonJsonDumps(args);
  const int index = next_index_++;
  out->tool_calls.push_back(
      {.index = index, .id = options_.new_call_id(), .name = std::string(kAudioSynthesisTool), .arguments = arguments});
  calls_.push_back({.id = out->tool_calls.back().id, .name = std::string(kAudioSynthesisTool), .arguments = arguments});
  call_raw_.clear();
  state_ = State::kContent;
  return true;
}

OutputDelta OutputParser::Push(std::string_view text) {
  OutputDelta out;
  buffer_.append(text);
  while (Step(&out, /*at_end=*/false)) {
  }
  return out;
}

OutputDelta OutputParser::Finish() {
  OutputDelta out;
  while (Step(&out, /*at_end=*/true)) {
  }
  if (state_ == State::kUserTranscript) {
    call_raw_ += buffer_;
    buffer_.clear();
    AbandonCall(&out);
  }
  held_space_.clear();  // trailing whitespace of the content
  return out;
}

}  // namespace omni::llm
