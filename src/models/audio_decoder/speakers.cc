#include "models/audio_decoder/speakers.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

namespace omni::models {
namespace {

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

StatusOr<SpeakerTable> SpeakerTable::Load(const std::string& dir, int64_t rows) {
  auto read = [](const std::filesystem::path& path, std::string* out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    std::ostringstream s;
    s << in.rdbuf();
    *out = s.str();
    return true;
  };
  std::string list, config;
  const std::filesystem::path d(dir);
  if (!read(d / "spk_list.txt", &list)) return NotFound(fmt::format("cannot read {}", (d / "spk_list.txt").string()));
  (void)read(d / "speaker_config.json", &config);
  StatusOr<SpeakerTable> table = Parse(list, config, rows);
  if (!table.ok()) return Status(table.status().code(), fmt::format("{}: {}", dir, table.status().message()));
  return table;
}

StatusOr<SpeakerTable> SpeakerTable::Parse(std::string_view spk_list, std::string_view speaker_config, int64_t rows) {
  SpeakerTable t;
  std::istringstream lines{std::string(spk_list)};
  for (std::string line; std::getline(lines, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) t.names_.push_back(line);
  }
  if (std::ssize(t.names_) != rows) {
    return InvalidArgument(fmt::format("spk_list.txt names {} speakers but the table has {} rows", t.names_.size(), rows));
  }
  const auto fkms = std::find(t.names_.begin(), t.names_.end(), "fkms");
  t.default_index_ = fkms == t.names_.end() ? 0 : fkms - t.names_.begin();
  if (speaker_config.empty()) return t;

  const nlohmann::json root = nlohmann::json::parse(speaker_config, nullptr, false);
  if (root.is_discarded() || !root.is_object() || !root.contains("audio_paths_or_urls_or_ids") ||
      !root["audio_paths_or_urls_or_ids"].is_object()) {
    return InvalidArgument("speaker_config.json must be an object with \"audio_paths_or_urls_or_ids\"");
  }
  for (const auto& [age, genders] : root["audio_paths_or_urls_or_ids"].items()) {
    if (age != "default" && std::find(kSpeakerAges.begin(), kSpeakerAges.end(), age) == kSpeakerAges.end()) {
      return InvalidArgument(fmt::format("speaker_config.json: unknown age band \"{}\"", age));
    }
    if (!genders.is_object()) return InvalidArgument(fmt::format("speaker_config.json: {} must map genders", age));
    for (const auto& [gender, entry] : genders.items()) {
      if (gender != "f" && gender != "m") {
        return InvalidArgument(fmt::format("speaker_config.json: {}: gender must be f or m, not \"{}\"", age, gender));
      }
      std::vector<std::string> ids;
      if (entry.is_string()) {
        ids.push_back(entry.get<std::string>());
      } else if (entry.is_array() && !entry.empty() &&
                 std::all_of(entry.begin(), entry.end(), [](const auto& e) { return e.is_string(); })) {
        for (const auto& e : entry) ids.push_back(e.get<std::string>());
      } else {
        return InvalidArgument(fmt::format("speaker_config.json: {}/{} must be a speaker or a list of them", age, gender));
      }
      std::vector<int64_t>& rows_for = t.voices_[age][gender];
      for (const std::string& id : ids) {
        const auto it = std::find(t.names_.begin(), t.names_.end(), id);
        if (it == t.names_.end()) {
          return InvalidArgument(fmt::format(
              "speaker_config.json: {}/{} names \"{}\", which is not in spk_list.txt (zero-shot voices come "
              "from a request's speaker.ref_audio, not from this file)",
              age, gender, id));
        }
        rows_for.push_back(it - t.names_.begin());
      }
    }
  }
  return t;
}

StatusOr<int64_t> SpeakerTable::Index(std::string_view id) const {
  const auto it = std::find(names_.begin(), names_.end(), id);
  if (it == names_.end()) {
    return InvalidArgument(fmt::format("unknown speaker \"{}\" (this decoder has: {})", id, JoinNames(names_)));
  }
  return it - names_.begin();
}

StatusOr<int64_t> SpeakerTable::ForVoice(std::string_view gender, std::string_view age, uint64_t pick) const {
  if (!gender.empty() && gender != "f" && gender != "m") {
    return InvalidArgument(fmt::format("speaker gender must be \"f\" or \"m\", not \"{}\"", gender));
  }
  if (!age.empty() && std::find(kSpeakerAges.begin(), kSpeakerAges.end(), age) == kSpeakerAges.end()) {
    return InvalidArgument(fmt::format("speaker age must be one of 0-10, 10, 20-30, 40-50, 60-70, not \"{}\"", age));
  }
  if (gender.empty() && age.empty()) return default_index_;
  const auto band = voices_.find(age.empty() ? std::string_view("default") : age);
  if (band == voices_.end()) return default_index_;
  std::vector<int64_t> candidates;
  for (const auto& [g, rows] : band->second) {
    if (gender.empty() || g == gender) candidates.insert(candidates.end(), rows.begin(), rows.end());
  }
  if (candidates.empty()) return default_index_;
  return candidates[pick % candidates.size()];
}

}  // namespace omni::models
