// The audio decoder's speakers: the speaker table's names (spk_list.txt, one
// per row of spk_emb.weight) and OmniServe's speaker_config.json, which maps
// an age band and a gender to speaker names.
//
//   OMNI_ASSIGN_OR_RETURN(SpeakerTable speakers, SpeakerTable::Load(dir));
//   StatusOr<int64_t> row = speakers.Index("mhwj");
//   StatusOr<int64_t> row2 = speakers.ForVoice("f", "20-30", request_hash);
//
// OmniServe's precedence (id, then a reference clip, then age/gender, then
// the default "fkms") is the caller's; this resolves each form. Age bands
// are OmniServe's: 0-10, 10, 20-30, 40-50, 60-70; genders f and m. Where a
// band lists several speakers OmniServe picks one at random; ForVoice picks
// by `pick` (a request hash), so a request gets the same voice every time.
// Entries naming a reference clip (a path or URL: zero-shot speakers) are
// refused at load, as the zero-shot vocoder is not supported yet.
// Thread-safety: immutable after Load.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace omni::models {

inline constexpr std::array<std::string_view, 5> kSpeakerAges = {"0-10", "10", "20-30", "40-50", "60-70"};

class SpeakerTable {
 public:
  // dir/spk_list.txt (required: its line count must be `rows`) and
  // dir/speaker_config.json (optional: without it every age/gender request
  // gets the default speaker).
  static StatusOr<SpeakerTable> Load(const std::string& dir, int64_t rows);
  // From text, for tests.
  static StatusOr<SpeakerTable> Parse(std::string_view spk_list, std::string_view speaker_config, int64_t rows);

  const std::vector<std::string>& names() const { return names_; }
  // The row of speaker `id`; InvalidArgument listing the known names.
  StatusOr<int64_t> Index(std::string_view id) const;
  // "fkms" when the table has it (OmniServe's default), else row 0.
  int64_t default_index() const { return default_index_; }
  // gender "", "f" or "m"; age "" or a band. Both empty: the default.
  // InvalidArgument for another gender or age.
  StatusOr<int64_t> ForVoice(std::string_view gender, std::string_view age, uint64_t pick) const;

 private:
  std::vector<std::string> names_;
  int64_t default_index_ = 0;
  // (age or "default") -> gender -> candidate rows
  std::map<std::string, std::map<std::string, std::vector<int64_t>, std::less<>>, std::less<>> voices_;
};

}  // namespace omni::models
