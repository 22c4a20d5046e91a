// `omniserve decoder --modality vision --model DIR --store URI --port P [--sp N]`:
// the vision decoder server (docs/DECODER.md). Loads the model, starts the
// sequence-parallel ranks when --sp > 1, then listens; SIGTERM drains the
// running request and answers the waiting ones 503.
// `omniserve decoder --modality audio --model DIR --store URI --port P
// [--max-batch N --workers N --max-queue N]`: the audio decoder server (the
// unit vocoder: speech units in, a WAV/FLAC/MP3/Opus/AAC clip out). SIGTERM
// drains the requests it holds; those no worker took by the deadline get 503.
#pragma once

#include <cstdint>
#include <string>

#include "cli/fetch_flags.h"

namespace CLI {
class App;
}

namespace omni::cli {

struct DecoderFlags {
  std::string modality = "vision";
  std::string model;
  std::string store;
  std::string host = "127.0.0.1";
  int port = 8200;
  std::string served_model_name;
  int sp = 1;
  int max_queue = -1;  // -1: the modality's default (vision 8, audio 32)
  int max_batch = 8;   // audio: clips per vocoder forward
  std::string zeroshot_model;  // audio: the zero-shot checkpoint; "": MODEL/zeroshot if present; "none"
  double max_ref_audio_seconds = 60;
  int ref_down_sample_rate = 0;
  MediaFetchFlags fetch;       // audio: reference clips' URLs
  int workers = 8;     // audio: requests handled at once
  int threads = 0;  // compute threads per rank; 0: OMP_NUM_THREADS, else every core (divided among ranks)
  int default_steps = 25;
  int url_ttl_s = 3600;
  int sp_timeout_ms = 120'000;
  int drain_timeout_ms = 60'000;
  // The global --log-level and --log-format, passed on to the ranks.
  std::string log_level = "info";
  std::string log_format = "text";
  // Set by rank 0 on the ranks it starts (hidden).
  int rank = 0;
  std::string rendezvous;
  int generation = 0;
};

CLI::App* AddDecoderCommand(CLI::App& app, DecoderFlags* flags);
int RunDecoderCommand(const DecoderFlags& flags);

}  // namespace omni::cli
