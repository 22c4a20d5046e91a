// The audio decoder server's logic, without sockets: the LLM's speech units
// in, a clip in the store out (DESIGN.md, "Roles": decoder --modality audio).
//
//   speaker   SpeakerTable: a named id, else a reference clip (fetched
//             through the MediaFetcher, decoded to mono at 24 kHz, the
//             zero-shot vocoder's speaker encoder; its vector cached by the
//             clip's SHA-256; 400 unsupported_speaker when no zero-shot
//             vocoder is loaded), else gender and age, else the default
//             ("fkms"): OmniServe's precedence
//   vocode    the unit BigVGAN through a ModelBatcher (services/model_batcher.h):
//             requests that wait together share one forward; a range
//             request vocodes its window and keeps units [first, last)
//   encode    int16 as OmniServe truncates it (models::ToPcm16), then
//             media::EncodeAudio: wav (default), flac, mp3, Ogg Opus, aac, pcm16
//   store     gen/<model>/<sha256>.<ext>, content-addressed by the encoded
//             bytes, with content type, seconds and sample rate as object
//             metadata, and a presigned URL; with "inline" the bytes go back
//             in the answer and nothing is stored
//
// Errors are Status: 400 unknown speaker or a refused one, 404 unknown
// model, 503 the store failed, 500 the model failed.
// Thread-safety: Decode is const and thread-safe when the vocode function is.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <list>
#include <mutex>
#include <unordered_map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "media/media_fetch.h"
#include "models/audio_decoder/speakers.h"
#include "models/audio_decoder/unit_bigvgan.h"
#include "net/metrics.h"
#include "services/decoder/audio_decode_request.h"
#include "services/model_batcher.h"
#include "storage/object_store.h"
#include "tensor/tensor.h"

namespace omni::decoder {

// One clip for the vocoder.
struct VocodeInput {
  std::span<const int32_t> units;  // [T], each in [0, num_units); viewed, not owned
  Tensor speaker;                  // [spk_emb_dim] f32: a row of the speaker table
};
// The clip's samples: T * samples_per_unit, 24 kHz mono in [-1, 1].
using VocodeFn = std::function<StatusOr<std::vector<float>>(const VocodeInput&)>;
using VocodeBatcher = ModelBatcher<VocodeInput, std::vector<float>>;

// The batcher's model call: UnitBigVgan::VocodeBatch over the inputs;
// `model` outlives the batcher.
VocodeBatcher::BatchFn VocodeBatchFn(const models::UnitBigVgan& model);

struct AudioDecoderServiceOptions {
  std::string model_id;            // the served name: requests' "model", and the key's model segment
  ObjectStore* store = nullptr;    // required; outlives the service
  std::string store_uri;           // its URI (for the objects' s3:// / file:// URIs)
  std::chrono::seconds url_ttl{3600};
  const Clock* clock = &Clock::Real();  // the answers' expires_at
  MetricsRegistry* metrics = nullptr;   // required
  // Zero-shot speakers: the vocoder whose speaker encoder takes reference
  // clips (config finetune false), its vocode function (its own batcher),
  // and the fetcher of the clips' URLs. All or none; they outlive the service.
  const models::UnitBigVgan* zero_shot = nullptr;
  VocodeFn vocode_zero_shot;
  const media::MediaFetcher* fetcher = nullptr;
  double max_ref_audio_seconds = 60;  // longer reference clips are refused
  int ref_down_sample_rate = 0;        // LoadReferenceClip's down_rate; 0: none
  size_t speaker_cache_entries = 256;  // reference clips' vectors kept, by SHA-256
};

// A reference clip's samples at the vocoder's `rate`, as OmniServe loads
// them: decoded to mono at `rate`; or, given `down_rate` (OmniServe's
// AUDIOLLM_DOWN_SAMPLE_RATE, 0 for none), decoded at that rate and resampled
// back up to `rate`, which keeps only what lies below down_rate / 2 (it does
// so "to reduce noise"). Errors are the media layer's (a clip that is not
// audio, or longer than max_seconds).
StatusOr<std::vector<float>> LoadReferenceClip(std::string_view bytes, int rate, int down_rate, double max_seconds);

struct AudioDecodeStageTimes {
  double vocode_ms = 0, encode_ms = 0, store_ms = 0;
};

struct AudioDecodeResult {
  std::string key, uri, url;  // empty when inline
  int64_t expires_at = 0;     // the URL's expiry, unix seconds; 0 when inline
  std::string sha256, mime;
  media::AudioFormat format = media::AudioFormat::kWav;
  std::string audio_bytes;    // kept only when inline
  size_t bytes = 0;           // the encoded clip's size
  int sample_rate = 0;
  int64_t samples = 0;        // units * samples_per_unit
  double duration = 0;        // samples / sample_rate, seconds
  int64_t units = 0;          // units vocoded (last - first for a range)
  std::string speaker;        // the speaker table's name, or "ref:" and the clip's hash
  int64_t context_left = 0, context_right = 0;  // the vocoder's receptive field, units (UnitBigVgan::context)
  AudioDecodeStageTimes times;
};

// The answer's JSON in the request's API shape.
std::string AudioDecodeResultJson(const AudioDecodeResult& result, const AudioDecodeRequest& request,
                                  std::string_view model);

class AudioDecoderService {
 public:
  // `model` and `speakers` outlive the service; `vocode` runs the model
  // (through a batcher; tests wrap it).
  AudioDecoderService(AudioDecoderServiceOptions options, const models::UnitBigVgan& model,
                      const models::SpeakerTable& speakers, VocodeFn vocode);

  StatusOr<AudioDecodeResult> Decode(const AudioDecodeRequest& request) const;

  const std::string& model_id() const { return options_.model_id; }
  int64_t num_units() const { return model_.config().num_units; }

 private:
  struct Speaker {
    Tensor vector;          // [spk_emb_dim] f32
    std::string name;       // a table name, or "ref:" and the clip's SHA-256 prefix
    bool zero_shot = false; // vocoded by the zero-shot vocoder
  };
  StatusOr<Speaker> ResolveSpeaker(const AudioDecodeRequest& request) const;
  StatusOr<Speaker> ReferenceSpeaker(const SpeakerChoice& choice) const;
  // The zero-shot speaker vector of a fetched clip's bytes (decoded to the
  // vocoder's rate); errors carry no param (each caller names its own).
  StatusOr<Tensor> EncodeReference(const std::string& bytes) const;
  Status Store(const std::string& bytes, AudioDecodeResult* r) const;

  AudioDecoderServiceOptions options_;
  const models::UnitBigVgan& model_;
  const models::SpeakerTable& speakers_;
  VocodeFn vocode_;
  std::vector<Tensor> speaker_rows_;  // [num_spk] of [spk_emb_dim] f32
  HistogramFamily* stage_seconds_;
  CounterFamily* ref_clips_;  // reference clips by result: encoded, cached (or joined an encoding in flight)

  // Reference clips' speaker vectors, least recently used first evicted.
  mutable std::mutex cache_mu_;
  mutable std::list<std::pair<std::string, Tensor>> cache_;  // guarded by cache_mu_; front = newest
  mutable std::unordered_map<std::string, std::list<std::pair<std::string, Tensor>>::iterator> cache_index_;
  // Clips being encoded now, by SHA-256 (guarded by cache_mu_): a request
  // for one of them waits for that encoding instead of running its own. A
  // clip leaves this map and enters the cache under one lock.
  mutable std::unordered_map<std::string, std::shared_future<StatusOr<Tensor>>> encoding_;
};

}  // namespace omni::decoder
