// The config of `omniserve up --config FILE` (docs/CLI.md): what the stack
// runs on when it is not the demo model on a local store. Parsed once, at
// start; every error names the field and its position.
//
//   store: s3://omni/objects?endpoint=http://127.0.0.1:9000   # default: file://DATA_DIR/objects
//   llm:
//     model: /models/seed-omni-8b/llm      # a model folder; default: the demo model
//     served_model_name: seed-omni-8b      # default: the folder's name
//     replicas: 2                          # --llm-replicas wins when given
//     threads: 8                           # compute threads per replica; default: the cores shared out
//     args: [--kv-cache-memory, "8589934592"]   # more `omniserve llm` flags
//   vision_encoder:
//     model: /models/seed-omni-8b/ve       # default: the demo vision encoder
//     served_model_name: seed-omni-8b-ve   # default: the folder's name
//     threads: 4                           # compute threads; default: as one LLM replica
//     args: [--max-queue, "64"]            # more `omniserve encoder` flags
//   audio_encoder:                         # the same keys, for the audio encoder
//     model: /models/seed-omni-8b/ae       # default: the demo audio encoder
//   vision_decoder:
//     model: /models/seed-omni-8b/vd       # default: the demo vision decoder
//     served_model_name: seed-omni-8b-vd   # default: the folder's name
//     threads: 8                           # compute threads per rank; default: as one LLM replica
//     args: [--sp, "2"]                    # more `omniserve decoder` flags
//   audio_decoder:                         # the encoders' keys, for the audio decoder
//     model: /models/seed-omni-8b/ad       # default: the demo audio decoder (spk_list.txt marks the folder)
//   gateway: {args: [--request-timeout-s, "900"]}
//   orchestrator:
//     timeouts: {llm_s: 900}               # as in the orchestrator's config (docs/ORCHESTRATOR.md)
//     media: {fetch_allow_loopback: true}  # likewise (the encoders' names are set by up)
//     speech: {voices: {alloy: {id: fkms}}}  # likewise (the audio decoder's name is set by up)
//     args: [--max-body-bytes, "134217728"]
//
// Thread-safety: plain values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/status.h"
#include "services/orchestrator/orchestrator_config.h"

namespace omni {

struct StackConfig {
  struct Llm {
    std::string model;              // empty: the demo model, written to DATA_DIR on first start
    std::string served_model_name;  // empty: the folder's name
    std::optional<int> replicas;
    int threads = 0;                // per replica; 0: the machine's cores shared out
    std::vector<std::string> args;  // more `omniserve llm` flags
  };
  struct Encoder {
    std::string model;              // empty: the demo encoder, written to DATA_DIR on first start
    std::string served_model_name;  // empty: the folder's name
    int threads = 0;                // 0: as many as one LLM replica
    std::vector<std::string> args;  // more `omniserve encoder` flags
  };
  struct VisionDecoder {
    std::string model;              // empty: the demo vision decoder, written to DATA_DIR on first start
    std::string served_model_name;  // empty: the folder's name
    int threads = 0;                // per rank; 0: as many as one LLM replica
    std::vector<std::string> args;  // more `omniserve decoder` flags
  };
  std::string store;  // file:// or s3:// URI; empty: file://DATA_DIR/objects
  Llm llm;
  Encoder vision_encoder;
  Encoder audio_encoder;
  VisionDecoder vision_decoder;
  Encoder audio_decoder;  // `omniserve decoder --modality audio` (args: more decoder flags)
  std::vector<std::string> gateway_args;
  orchestrator::OrchestratorTimeouts orchestrator_timeouts;
  orchestrator::MediaConfig orchestrator_media;  // vision_encoder and audio_encoder are up's to set
  orchestrator::ImagesConfig orchestrator_images;  // vision_decoder is up's to set
  orchestrator::SpeechConfig orchestrator_speech;  // audio_decoder is up's to set
  std::vector<std::string> orchestrator_args;
};

StatusOr<StackConfig> ParseStackConfig(const ConfigNode& root);
StatusOr<StackConfig> LoadStackConfig(const std::string& path);

}  // namespace omni
