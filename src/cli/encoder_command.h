// `omniserve encoder --modality vision|audio --model DIR --store URI --port P`:
// the vision or audio encoder server (docs/ENCODER.md). Loads the model, then
// listens; SIGTERM drains the requests it holds.
#pragma once

#include <cstdint>
#include <string>

#include "cli/fetch_flags.h"
#include <vector>

namespace CLI {
class App;
}

namespace omni::cli {

struct EncoderFlags {
  std::string modality = "vision";
  std::string model;
  std::string store;
  std::string host = "127.0.0.1";
  int port = 8100;
  std::string served_model_name;
  int workers = 4;
  int max_batch = 1;
  int max_queue = 16;
  int threads = 0;  // compute threads; 0: OMP_NUM_THREADS, else every core
  int64_t max_pixels = 64'000'000;
  double max_audio_seconds = 600;
  double max_video_seconds = 600;
  MediaFetchFlags fetch;
  int url_ttl_s = 3600;
  int64_t max_inflight_body_bytes = 256ll << 20;
  int drain_timeout_ms = 30'000;
};

CLI::App* AddEncoderCommand(CLI::App& app, EncoderFlags* flags);
int RunEncoderCommand(const EncoderFlags& flags);

}  // namespace omni::cli
