// The orchestrator's YAML config (docs/ORCHESTRATOR.md), parsed once at
// start:
//
//   gateway: http://127.0.0.1:8001     # required: every model call goes there
//   store: s3://bucket/prefix?endpoint=http://127.0.0.1:9000   # optional
//   timeouts:                          # per stage
//     connect_ms: 2000                 #   connecting to the gateway
//     llm_s: 600                       #   a chat request through the gateway, whole
//     models_ms: 5000                  #   GET /v1/models from the gateway
//     probe_ms: 1000                   #   each health probe
//   media:                             # optional: media parts need it (and the store)
//     vision_encoder: omni-ve          #   the vision encoder's model name (images, videos); the gateway routes /v1/encode by it
//     audio_encoder: omni-ae           #   the audio encoder's model name (input_audio, audio_url)
//     max_bytes: 67108864              #   largest medium fetched or sent inline (413 beyond)
//     fetch_timeout_ms: 30000          #   one http(s) fetch, redirects included
//     encode_s: 120                    #   one encoder call
//     max_parts: 16                    #   media parts in one request (400 beyond)
//     max_pending: 64                  #   requests in their media stage at once (429 beyond)
//     fetch_allow_loopback: false      #   http(s) media on loopback / private addresses (refused by default)
//     fetch_allow_private: false
//     fetch_ca_file: ""                #   https media: CA certificates (PEM); empty: the system's
//   images:                            # optional: image generation needs it (and the store)
//     vision_decoder: omni-vd          #   the vision decoder's model name; the gateway routes /v1/decode by it
//     llm_model: omni                  #   the chat model an Images API request without `model` draws with
//     decode_s: 600                    #   one decoder call
//     url_ttl_s: 3600                  #   lifetime of the image URLs handed to clients
//     public_url: ""                   #   base of the signed URLs (local store); empty: http://<the request's Host>
//     max_concurrent: 8                #   decoder calls this orchestrator runs at once (more wait)
//   speech:                            # optional: spoken answers need it (and the store)
//     audio_decoder: omni-ad           #   the audio decoder's model name; the gateway routes /v1/decode by it
//     decode_s: 120                    #   one decoder call
//     url_ttl_s: 3600                  #   lifetime of the audio URLs handed to clients
//     public_url: ""                   #   base of the signed URLs (local store); empty: http://<the request's Host>
//     chunk_units: 25                  #   streaming: units per vocoded chunk
//     lookahead_units: 12              #   streaming: units generated past a chunk before it is vocoded
//     max_concurrent: 8                #   decoder calls at once
//     voices:                          #   audio.voice -> the decoder's speaker
//       alloy: {gender: f}
//       echo: {id: mhwj}
//   health:
//     interval_ms: 1000                # how often the components are probed
//     components:                      # reported by /health beside the gateway (and the store)
//     - {name: llm-0, url: http://127.0.0.1:9001}
//
// Thread-safety: plain values.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/status.h"

namespace omni::orchestrator {

struct OrchestratorTimeouts {
  std::chrono::milliseconds connect{2'000};
  std::chrono::milliseconds llm{600'000};
  std::chrono::milliseconds models{5'000};
  std::chrono::milliseconds probe{1'000};
};

// A server whose /health the orchestrator probes and reports.
struct Component {
  std::string name;
  std::string url;  // base URL: "http://127.0.0.1:9001"; /health is appended
};

// How media parts become embedding objects (media_stage.h).
struct MediaConfig {
  std::string vision_encoder;  // model name of the vision encoder pool; empty: image and video parts are refused
  std::string audio_encoder;   // model name of the audio encoder pool; empty: audio parts are refused
  int64_t max_bytes = 64ll << 20;
  std::chrono::milliseconds fetch_timeout{30'000};
  std::chrono::milliseconds encode_timeout{120'000};
  int64_t max_parts = 16;
  int64_t max_pending = 64;
  bool fetch_allow_loopback = false;
  bool fetch_allow_private = false;
  std::string fetch_ca_file;  // https media: the CAs servers are verified against; empty: the system's
};

// How t2i_model_generation calls become images (image_stage.h).
struct ImagesConfig {
  std::string vision_decoder;  // model name of the vision decoder pool; empty: image generation is refused
  std::string llm_model;       // the Images API's default model; empty: requests must name one
  std::chrono::milliseconds decode_timeout{600'000};
  std::chrono::seconds url_ttl{3600};
  std::string public_url;  // "http://host:port" clients reach this orchestrator at; empty: from Host
  int64_t max_concurrent = 8;
};

// A voice of the OpenAI API (audio.voice) as the audio decoder's speaker:
// a speaker id of its table, or a gender and an age band.
struct SpeakerSpec {
  std::string id;
  std::string gender;  // "f" | "m" | ""
  std::string age;     // "0-10" | "10" | "20-30" | "40-50" | "60-70" | ""
  std::string ref_audio;  // a reference clip's URL (data:, http://, ...): a zero-shot voice
};

// How spoken answers are made (speech_stage.h, speech_answer.h).
struct SpeechConfig {
  std::string audio_decoder;  // model name of the audio decoder pool; empty: audio output is refused
  std::chrono::milliseconds decode_timeout{120'000};
  std::chrono::seconds url_ttl{3600};
  std::string public_url;           // as images.public_url, for the audio's URL
  int64_t chunk_units = 25;         // streaming: units vocoded per chunk (1 s of speech)
  int64_t lookahead_units = 12;     // streaming: units past a chunk before it is vocoded (the vocoder's right context)
  int64_t max_concurrent = 8;       // decoder calls this orchestrator runs at once (more wait)
  std::map<std::string, SpeakerSpec, std::less<>> voices;  // audio.voice -> speaker; unlisted OpenAI voices by gender
};

struct OrchestratorConfig {
  std::string gateway;  // base URL, "http://host:port", without a path
  std::string store;    // object store URI (file:// or s3://); empty: none
  OrchestratorTimeouts timeouts;
  std::chrono::milliseconds probe_interval{1'000};
  std::vector<Component> components;  // besides the gateway, which is always probed
  MediaConfig media;
  ImagesConfig images;
  SpeechConfig speech;
};

StatusOr<OrchestratorConfig> ParseOrchestratorConfig(const ConfigNode& root);
// The `timeouts` map at `path` (also read by `up --config`).
Status ReadOrchestratorTimeouts(const ConfigNode& node, const std::string& path, OrchestratorTimeouts* t);
StatusOr<OrchestratorConfig> LoadOrchestratorConfig(const std::string& path);
// The `media` map at `path` (also read by `up --config`).
Status ReadMediaConfig(const ConfigNode& node, const std::string& path, MediaConfig* media);
// The `images` map at `path` (also read by `up --config`).
Status ReadImagesConfig(const ConfigNode& node, const std::string& path, ImagesConfig* images);
// The `speech` map at `path` (also read by `up --config`).
Status ReadSpeechConfig(const ConfigNode& node, const std::string& path, SpeechConfig* speech);

}  // namespace omni::orchestrator
