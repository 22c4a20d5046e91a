// The audio decoder's request bodies, parsed once at the edge: omniserve's
// POST /v1/decode and OmniServe's POST /predictions. Untrusted input.
//
// /v1/decode: {"model", "units": [int...] | "<|audio12|><|audio7|>...",
//   "speaker": {"id"} | {"gender", "age"} | {"ref_audio"}, "format", "inline",
//   "range": {"window_start", "first", "last"}, "user"}
// /predictions: {"units": [int...], "format", "speaker": {"id", "gender",
//   "age", "ref_audio_base64", "ref_audio_url"}}. OmniServe's formats are
//   wav, mp3, flac, ogg, aac and pcm; "ogg" is served as Ogg Opus (the only
//   Ogg codec this decoder writes) and "pcm" as raw 16-bit little-endian.
//
// Checked here: the JSON and its types; every unit in [0, num_units) (the
// first bad one named with its position: OmniServe lets 6561 through, we do
// not); 3 to 2000 units (OmniServe's bounds); gender f or m and age one of
// OmniServe's bands; the format; a range inside the window with first <
// last. The speaker id is checked against the model's table by the service,
// which also applies the speaker precedence (id > ref audio > gender/age >
// default). InvalidArgument names the field at fault in its param.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "media/audio_encode.h"

namespace omni::decoder {

inline constexpr int kMinDecodeUnits = 3;     // OmniServe's bounds
inline constexpr int kMaxDecodeUnits = 2000;

// Which route a request came by: the answer's shape follows it.
enum class AudioDecodeApi { kOmni, kOmniServe };

// Who speaks, as the request put it (empty strings: not given).
struct SpeakerChoice {
  std::string id;                 // a name in the model's spk_list.txt
  std::string ref_audio_param;    // the field that gave a reference clip ("speaker.ref_audio"); empty: none
  std::string ref_audio;          // its URL (data:, http://, s3://, file://); base64 becomes a data: URL
  std::string gender;             // "", "f" or "m"
  std::string age;                // "" or one of models::kSpeakerAges
};

// `units` is a window of a longer sequence, starting at its unit
// `window_start`; only units [first, last) are answered
// (UnitBigVgan::VocodeRange). Invariant after parsing: window_start <= first
// < last <= window_start + units.size().
struct UnitRange {
  int64_t window_start = 0, first = 0, last = 0;
};

struct AudioDecodeRequest {
  AudioDecodeApi api = AudioDecodeApi::kOmni;
  std::string model;              // empty: the served model
  std::vector<int32_t> units;     // [T], each in [0, num_units), 3 <= T <= 2000
  SpeakerChoice speaker;
  media::AudioFormat format = media::AudioFormat::kWav;
  std::string requested_format = "wav";  // as the client named it ("ogg")
  bool inline_audio = false;      // answer with the bytes, store nothing
  std::optional<UnitRange> range;
  std::string user;
};

StatusOr<AudioDecodeRequest> ParseAudioDecodeRequest(std::string_view body, int64_t num_units);
StatusOr<AudioDecodeRequest> ParseOmniServeAudioDecodeRequest(std::string_view body, int64_t num_units);

// Every <|audioN|> token of `text`, in order; other text is ignored. No
// token, or one with N outside [0, num_units), is InvalidArgument (param
// `param`).
StatusOr<std::vector<int32_t>> ParseAudioUnitTokens(std::string_view text, int64_t num_units, std::string_view param);

}  // namespace omni::decoder
