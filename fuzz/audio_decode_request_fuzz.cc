// libFuzzer target for the audio decoder's request bodies
// (services/decoder/audio_decode_request.h), which a client sends:
// omniserve's POST /v1/decode and OmniServe's POST /predictions, and the
// <|audioN|> token scan behind /v1/decode's string form of "units". Seeds:
// fuzz/corpus/audio_decode_request.
//
// For any input, through either parser and for a full and a small unit
// table: no crash or out-of-bounds read; a refusal is InvalidArgument with a
// message, and (the body being a JSON object) names a field of its route in
// its param; an accepted request holds 3 to 2000 units, each inside the
// table, a gender of "", f or m, an age of "" or one of OmniServe's bands, a
// reference-clip field of its route, a format that is the one it names, and
// (/v1/decode) a range inside its window with first < last and a user of at
// most 256 bytes; /predictions carries none of /v1/decode's extra fields.
// The token scan finds no more units than "<|audio" occurrences, each inside
// the table, and reads its own rendering back to the same units.
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "media/audio_encode.h"
#include "models/audio_decoder/speakers.h"
#include "services/decoder/audio_decode_request.h"

namespace {

using omni::StatusOr;
using omni::decoder::AudioDecodeApi;
using omni::decoder::AudioDecodeRequest;

bool OneOf(std::string_view s, std::initializer_list<std::string_view> options) {
  return std::find(options.begin(), options.end(), s) != options.end();
}

// The top-level field a param names ("range.first" -> "range").
std::string_view Field(std::string_view param) { return param.substr(0, param.find_first_of(".[")); }

void CheckRefused(const omni::Status& s, bool json_object, AudioDecodeApi api) {
  OMNI_CHECK(s.code() == omni::StatusCode::kInvalidArgument) << s.ToString();
  OMNI_CHECK(!s.message().empty());
  if (!json_object) return;  // the body itself: no field to name
  OMNI_CHECK(!s.param().empty()) << s.ToString();
  if (api == AudioDecodeApi::kOmni) {
    OMNI_CHECK(OneOf(Field(s.param()), {"model", "units", "speaker", "format", "inline", "range", "user"}))
        << s.param();
  } else {
    OMNI_CHECK(OneOf(Field(s.param()), {"units", "speaker", "format"})) << s.param();
  }
}

void CheckAccepted(const AudioDecodeRequest& r, int64_t num_units, AudioDecodeApi api) {
  using namespace omni;
  OMNI_CHECK(r.api == api);
  OMNI_CHECK(r.units.size() >= static_cast<size_t>(decoder::kMinDecodeUnits) &&
             r.units.size() <= static_cast<size_t>(decoder::kMaxDecodeUnits))
      << r.units.size();
  for (int32_t u : r.units) OMNI_CHECK(u >= 0 && u < num_units) << u;

  OMNI_CHECK(OneOf(r.speaker.gender, {"", "f", "m"})) << r.speaker.gender;
  OMNI_CHECK(r.speaker.age.empty() || std::find(models::kSpeakerAges.begin(), models::kSpeakerAges.end(),
                                                r.speaker.age) != models::kSpeakerAges.end())
      << r.speaker.age;

  if (api == AudioDecodeApi::kOmniServe && r.requested_format == "ogg") {
    OMNI_CHECK(r.format == media::AudioFormat::kOpus);
  } else {
    StatusOr<media::AudioFormat> named = media::ParseAudioFormat(r.requested_format);
    OMNI_CHECK(named.ok()) << r.requested_format;
    OMNI_CHECK(*named == r.format) << r.requested_format;
  }

  if (api == AudioDecodeApi::kOmni) {
    OMNI_CHECK(OneOf(r.speaker.ref_audio_param, {"", "speaker.ref_audio"})) << r.speaker.ref_audio_param;
    OMNI_CHECK(r.user.size() <= 256) << r.user.size();
    if (r.range) {
      const decoder::UnitRange& g = *r.range;
      OMNI_CHECK(g.window_start >= 0) << g.window_start;
      OMNI_CHECK(g.window_start <= g.first && g.first < g.last &&
                 g.last <= g.window_start + static_cast<int64_t>(r.units.size()))
          << g.window_start << " " << g.first << " " << g.last << " " << r.units.size();
    }
  } else {
    OMNI_CHECK(OneOf(r.speaker.ref_audio_param, {"", "speaker.ref_audio_base64", "speaker.ref_audio_url"}))
        << r.speaker.ref_audio_param;
    OMNI_CHECK(r.model.empty() && r.user.empty() && !r.inline_audio && !r.range.has_value());
  }
}

void CheckTokens(std::string_view text, int64_t num_units) {
  using namespace omni;
  StatusOr<std::vector<int32_t>> units = decoder::ParseAudioUnitTokens(text, num_units, "units");
  if (!units.ok()) {
    OMNI_CHECK(units.status().code() == StatusCode::kInvalidArgument);
    OMNI_CHECK(units.status().param() == "units") << units.status().param();
    return;
  }
  OMNI_CHECK(!units->empty());
  size_t opens = 0;
  for (size_t p = text.find("<|audio"); p != std::string_view::npos; p = text.find("<|audio", p + 1)) ++opens;
  OMNI_CHECK(units->size() <= opens) << units->size() << " > " << opens;
  std::string rendered;
  for (int32_t u : *units) {
    OMNI_CHECK(u >= 0 && u < num_units) << u;
    rendered += "<|audio" + std::to_string(u) + "|>";
  }
  StatusOr<std::vector<int32_t>> again = decoder::ParseAudioUnitTokens(rendered, num_units, "units");
  OMNI_CHECK(again.ok()) << again.status().ToString();
  OMNI_CHECK(*again == *units);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace omni;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const bool json_object = nlohmann::json::parse(body, nullptr, false).is_object();
  // The model's table (the demo and OmniServe's: 6561 units) and a small one,
  // so that units outside the table are easy to reach.
  for (const int64_t num_units : {int64_t{6561}, int64_t{16}}) {
    for (const AudioDecodeApi api : {AudioDecodeApi::kOmni, AudioDecodeApi::kOmniServe}) {
      StatusOr<AudioDecodeRequest> r = api == AudioDecodeApi::kOmni
                                           ? decoder::ParseAudioDecodeRequest(body, num_units)
                                           : decoder::ParseOmniServeAudioDecodeRequest(body, num_units);
      if (r.ok()) {
        CheckAccepted(*r, num_units, api);
      } else {
        CheckRefused(r.status(), json_object, api);
      }
    }
    CheckTokens(body, num_units);
  }
  return 0;
}
