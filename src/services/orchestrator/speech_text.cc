#include "services/orchestrator/speech_text.h"

#include <array>
#include <charconv>

namespace omni::orchestrator {
namespace {

constexpr std::string_view kUnitPrefix = "<|audio";

enum class Tag {
  kNone,
  kTranscriptOpen,
  kTranscriptClose,
  kUserOpen,
  kUserClose,
  kCallOpen,
  kCallClose,
  kSpeakerOpen,
  kSpeakerClose,
  kAudioOpen,
  kAudioClose,
};

struct Known {
  std::string_view text;
  Tag tag;
};
constexpr std::array<Known, 10> kTags = {{
    {"<assistant_transcript>", Tag::kTranscriptOpen},
    {"</assistant_transcript>", Tag::kTranscriptClose},
    {"<user_transcript>", Tag::kUserOpen},
    {"</user_transcript>", Tag::kUserClose},
    {"<audio_decoder_call>", Tag::kCallOpen},
    {"</audio_decoder_call>", Tag::kCallClose},
    {"<speaker_info>", Tag::kSpeakerOpen},
    {"</speaker_info>", Tag::kSpeakerClose},
    {"<discrete_audio>", Tag::kAudioOpen},
    {"</discrete_audio>", Tag::kAudioClose},
}};

// At `s` (which starts with '<'): a whole tag (its length and kind), a
// whole unit (its length and value), 0 when `s` may still become one, or
// npos when it cannot.
struct Match {
  size_t length = 0;
  Tag tag = Tag::kNone;
  int32_t unit = -1;
  bool partial = false;
  bool is_unit = false;
};

Match MatchAt(std::string_view s) {
  for (const Known& k : kTags) {
    if (s.starts_with(k.text)) return {k.text.size(), k.tag};
    if (k.text.starts_with(s)) return {.partial = true};
  }
  if (s.starts_with(kUnitPrefix)) {
    const std::string_view rest = s.substr(kUnitPrefix.size());
    size_t digits = 0;
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
    if (digits == rest.size()) return {.partial = true};
    if (digits > 0 && rest.substr(digits).starts_with("|>")) {
      // Any run of digits is a unit token, removed; one of up to 5 digits
      // (the vocabulary has 6561) is kept, for the decoder to check.
      int32_t value = -1;
      if (digits <= 5) std::from_chars(rest.data(), rest.data() + digits, value);
      return {kUnitPrefix.size() + digits + 2, Tag::kNone, value, false, true};
    }
    if (digits > 0 && rest.size() == digits + 1 && rest[digits] == '|') return {.partial = true};
    return {};
  }
  if (kUnitPrefix.starts_with(s)) return {.partial = true};
  return {};
}

}  // namespace

void SpeechTextScrubber::Emit(std::string_view text, Out* out) {
  switch (where_) {
    case Where::kText:
      text_.append(text);
      break;
    case Where::kSpeakerInfo:
      speaker_info_.append(text);
      break;
    case Where::kUserTranscript:
    case Where::kAudio:
      break;  // dropped: the user's words again, or stray text among units
  }
}

void SpeechTextScrubber::Scan(Out* out, bool final) {
  size_t pos = 0;
  while (pos < held_.size()) {
    const size_t lt = held_.find('<', pos);
    if (lt == std::string::npos) {
      Emit(std::string_view(held_).substr(pos), out);
      pos = held_.size();
      break;
    }
    Emit(std::string_view(held_).substr(pos, lt - pos), out);
    const std::string_view rest = std::string_view(held_).substr(lt);
    const Match m = MatchAt(rest);
    if (m.partial && !final) {
      pos = lt;
      break;  // wait for more text
    }
    if (m.length == 0) {  // a '<' that starts nothing of ours
      Emit("<", out);
      pos = lt + 1;
      continue;
    }
    pos = lt + m.length;
    if (m.is_unit) {
      if (m.unit >= 0) {
        units_.push_back(m.unit);
        out->units.push_back(m.unit);
      }
      continue;
    }
    switch (m.tag) {
      case Tag::kUserOpen: where_ = Where::kUserTranscript; break;
      case Tag::kSpeakerOpen: where_ = Where::kSpeakerInfo; break;
      case Tag::kAudioOpen:
        where_ = Where::kAudio;
        in_audio_ = true;
        break;
      case Tag::kAudioClose:
        in_audio_ = false;
        where_ = Where::kText;
        break;
      case Tag::kUserClose:
      case Tag::kSpeakerClose:
      case Tag::kTranscriptOpen:
      case Tag::kTranscriptClose:
      case Tag::kCallOpen:
      case Tag::kCallClose:
      case Tag::kNone:
        where_ = in_audio_ ? Where::kAudio : Where::kText;
        break;
    }
  }
  held_.erase(0, pos);
  Guard(out, final);
}

// The transcript as released must hold no tag or unit either: removing one
// from the input can join the text around it into a new one
// ("<|aud<speaker_info></speaker_info>io1|>"). Such joined patterns are
// removed too, until none is left, and text from a '<' that may still begin
// one stays here until it is known.
void SpeechTextScrubber::Guard(Out* out, bool final) {
  for (bool removed = true; removed;) {
    removed = false;
    for (size_t lt = text_.find('<'); lt != std::string::npos; lt = text_.find('<', lt + 1)) {
      const Match m = MatchAt(std::string_view(text_).substr(lt));
      if (m.length > 0) {
        text_.erase(lt, m.length);
        removed = true;
        break;
      }
    }
  }
  // A '<' is safe once the text up to the next '<' can no longer begin a
  // pattern: what follows that next '<' may still be removed, joining the
  // rest to it.
  size_t keep = text_.size();
  if (!final) {
    for (size_t lt = text_.find('<'); lt != std::string::npos; lt = text_.find('<', lt + 1)) {
      const size_t next = text_.find('<', lt + 1);
      const std::string_view segment(text_.data() + lt, (next == std::string::npos ? text_.size() : next) - lt);
      if (MatchAt(segment).partial) {
        keep = lt;
        break;
      }
    }
  }
  out->transcript.append(text_, 0, keep);
  text_.erase(0, keep);
}

SpeechTextScrubber::Out SpeechTextScrubber::Push(std::string_view piece) {
  Out out;
  held_.append(piece);
  Scan(&out, false);
  return out;
}

SpeechTextScrubber::Out SpeechTextScrubber::Finish() {
  Out out;
  Scan(&out, true);
  return out;
}

}  // namespace omni::orchestrator
