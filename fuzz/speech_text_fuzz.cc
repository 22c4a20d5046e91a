// libFuzzer target for SpeechTextScrubber (services/orchestrator/
// speech_text.h), which reads an LLM's spoken answer (transcript, speaker
// info and <|audioN|> units) from its stream deltas. The input is the model's
// text, pushed split in two at a point the input's first bytes choose, in one
// piece, and a byte at a time; each then Finish. Seeds: fuzz/corpus/speech_text.
//
// For any input: no crash or out-of-bounds read; the transcript handed back
// never holds a unit token ("<|audio", digits, "|>"); however the text is
// split, the transcript, the units, the speaker info and whether an audio
// block is left open are the same; the units each Out carries join to
// units().
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "services/orchestrator/speech_text.h"

namespace {

using omni::orchestrator::SpeechTextScrubber;

struct Result {
  std::string transcript;
  std::vector<int32_t> units;
  std::string speaker_info;
  bool block_open = false;
};

Result Scrub(const std::vector<std::string_view>& pieces) {
  SpeechTextScrubber s;
  Result r;
  auto take = [&](SpeechTextScrubber::Out out) {
    r.transcript += out.transcript;
    r.units.insert(r.units.end(), out.units.begin(), out.units.end());
  };
  for (std::string_view piece : pieces) take(s.Push(piece));
  take(s.Finish());
  OMNI_CHECK(r.units == s.units());
  r.speaker_info = s.speaker_info();
  r.block_open = s.block_open();
  return r;
}

// Where `text` holds "<|audio" + one or more digits + "|>"; npos if nowhere.
size_t FindUnitToken(std::string_view text) {
  constexpr std::string_view kOpen = "<|audio";
  for (size_t p = text.find(kOpen); p != std::string_view::npos; p = text.find(kOpen, p + 1)) {
    size_t end = p + kOpen.size();
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    if (end > p + kOpen.size() && text.substr(end, 2) == "|>") return p;
  }
  return std::string_view::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const size_t cut = size < 2 ? size : ((size_t{data[0]} << 8) | data[1]) % (size + 1);

  const Result split = Scrub({text.substr(0, cut), text.substr(cut)});
  const Result whole = Scrub({text});
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < size; ++i) bytes.push_back(text.substr(i, 1));
  const Result trickle = Scrub(bytes);

  for (const Result* r : {&split, &whole, &trickle}) {
    const size_t at = FindUnitToken(r->transcript);
    OMNI_CHECK(at == std::string_view::npos) << "a unit token reached the transcript at " << at << ": "
                                             << r->transcript.substr(at, 24);
  }
  OMNI_CHECK(split.transcript == whole.transcript) << "cut " << cut;
  OMNI_CHECK(split.units == whole.units) << "cut " << cut;
  OMNI_CHECK(split.speaker_info == whole.speaker_info) << "cut " << cut;
  OMNI_CHECK(split.block_open == whole.block_open) << "cut " << cut;
  OMNI_CHECK(trickle.transcript == whole.transcript);
  OMNI_CHECK(trickle.units == whole.units);
  OMNI_CHECK(trickle.speaker_info == whole.speaker_info);
  OMNI_CHECK(trickle.block_open == whole.block_open);
  for (int32_t u : whole.units) OMNI_CHECK(u >= 0 && u <= 99999) << u;
  return 0;
}
