#include "cli/encoder_command.h"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include <fmt/core.h>

#include "cli/process_info.h"
#include "core/log.h"
#include "media/media_fetch.h"
#include "models/audio_encoder/omni_audio_encoder.h"
#include "models/omni_vision/omni_vision_encoder.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "ops/threading.h"
#include "services/encoder/encode_batcher.h"
#include "services/encoder/encoder_http.h"
#include "services/encoder/encoder_service.h"
#include "storage/fetch_policy.h"
#include "storage/open_store.h"
#include "storage/s3/s3_store.h"

namespace omni::cli {

CLI::App* AddEncoderCommand(CLI::App& app, EncoderFlags* f) {
  CLI::App* sub = app.add_subcommand("encoder", "vision or audio encoder server (POST /v1/encode)");
  sub->add_option("--modality", f->modality, "vision (images) or audio (speech and sound)")
      ->capture_default_str()
      ->check(CLI::IsMember({"vision", "audio"}));
  sub->add_option("--model", f->model, "encoder folder (config.json, *.safetensors; the vision encoder's "
                                      "preprocessor_config.json)")
      ->required();
  sub->add_option("--store", f->store, "object store the embeddings are written to (file:///dir or s3://bucket...)")
      ->required();
  sub->add_option("--host", f->host, "listen address")->capture_default_str();
  sub->add_option("--port", f->port, "listen port (0: the OS picks)")->capture_default_str()->check(CLI::Range(0, 65535));
  sub->add_option("--served-model-name", f->served_model_name,
                  "model name in the API and in the object keys (default: the folder's name)");
  sub->add_option("--workers", f->workers,
                  "requests handled at once (fetch, decode, store); their model forwards run one at a time")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  sub->add_option("--max-batch", f->max_batch,
                  "media that waited for the model go through it together, up to this many (1: no batching)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  sub->add_option("--max-queue", f->max_queue, "requests waiting beyond those; more get 429 with Retry-After")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  sub->add_option("--threads", f->threads, "compute threads (0: OMP_NUM_THREADS if set, else every core)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  AddMediaFetchFlags(sub, &f->fetch);
  sub->add_option("--max-pixels", f->max_pixels, "largest image, checked from its header before decoding; 413 above")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  sub->add_option("--max-audio-seconds", f->max_audio_seconds,
                  "longest audio, checked from its header before decoding; 413 above")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 24.0 * 3600));
  sub->add_option("--max-video-seconds", f->max_video_seconds,
                  "longest video, checked from its header before decoding; 413 above")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 24.0 * 3600));
  sub->add_option("--url-ttl", f->url_ttl_s, "lifetime in seconds of the presigned URLs in answers")
      ->capture_default_str()
      ->check(CLI::Range(1, 7 * 24 * 3600));
  sub->add_option("--max-inflight-body-bytes", f->max_inflight_body_bytes,
                  "request body bytes buffered at once across connections; more get 503 with Retry-After")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1} << 20, int64_t{1} << 40));
  sub->add_option("--drain-timeout-ms", f->drain_timeout_ms, "on SIGTERM, how long held requests may finish")
      ->capture_default_str()
      ->check(CLI::Range(0, 3'600'000));
  return sub;
}

namespace {

// The model behind the service: its batcher and the service over it, for
// one modality. Owns what the service calls into.
struct LoadedEncoder {
  std::unique_ptr<models::OmniVisionEncoder> vision;
  std::unique_ptr<models::OmniAudioEncoder> audio;
  std::unique_ptr<encoder::ImageBatcher> image_batcher;
  std::unique_ptr<encoder::AudioBatcher> audio_batcher;
  std::unique_ptr<encoder::EncoderService> service;
  std::string description;  // for the start-up line
};

StatusOr<LoadedEncoder> LoadEncoder(const EncoderFlags& f, encoder::EncoderServiceOptions options,
                                    MetricsRegistry* registry) {
  LoadedEncoder e;
  if (f.modality == "audio") {
    OMNI_ASSIGN_OR_RETURN(e.audio, models::OmniAudioEncoder::Load(f.model));
    const models::OmniAudioEncoder& model = *e.audio;
    e.audio_batcher = std::make_unique<encoder::AudioBatcher>(
        [&model](std::span<const encoder::AudioClip* const> clips) {
          std::vector<encoder::AudioClip> spans;
          for (const encoder::AudioClip* c : clips) spans.push_back(*c);
          return model.EncodeBatch(spans);
        },
        f.max_batch, registry);
    options.audio_decode = {.sample_rate = models::OmniAudioEncoder::kSampleRate, .max_seconds = f.max_audio_seconds};
    encoder::AudioBatcher* batcher = e.audio_batcher.get();
    e.service = std::make_unique<encoder::EncoderService>(
        std::move(options), encoder::AudioEncodeFn([batcher](std::span<const float> samples) {
          const encoder::AudioClip clip = samples;
          return batcher->Encode(clip);
        }));
    e.description = fmt::format("audio model (rows {} wide, 25 rows and ids per second)", model.output_width());
    return e;
  }
  OMNI_ASSIGN_OR_RETURN(e.vision, models::OmniVisionEncoder::Load(f.model));
  const models::OmniVisionEncoder& model = *e.vision;
  e.image_batcher = std::make_unique<encoder::ImageBatcher>(
      [&model](std::span<const media::Image* const> images) { return model.EncodeBatch(images); }, f.max_batch,
      registry);
  options.decode = {.max_pixels = f.max_pixels};
  options.video_decode.max_seconds = f.max_video_seconds;
  options.video_decode.max_pixels = f.max_pixels;
  encoder::ImageBatcher* batcher = e.image_batcher.get();
  // A video is one forward of its own (its frames are already a batch),
  // outside the image batcher.
  e.service = std::make_unique<encoder::EncoderService>(
      std::move(options),
      encoder::ImageEncodeFn([batcher](const media::Image& image) { return batcher->Encode(image); }),
      encoder::VideoEncodeFn([&model](std::span<const media::Image> frames) { return model.EncodeVideo(frames); }));
  e.description =
      fmt::format("vision model (rows {} wide, {} ids per image)", model.output_width(), model.num_ids());
  return e;
}

}  // namespace

int RunEncoderCommand(const EncoderFlags& f) {
  if (f.threads > 0) ops::SetNumThreads(f.threads);
  auto opened = OpenObjectStore(f.store, S3CredentialsFromEnv());
  if (!opened.ok()) {
    OMNI_LOG(kError, "encoder: --store: {}", opened.status().ToString());
    return 2;
  }
  std::unique_ptr<ObjectStore> store = std::move(opened).value();
  LogProcessInfo();
  const std::string served = !f.served_model_name.empty()
                                 ? f.served_model_name
                                 : std::filesystem::path(f.model).lexically_normal().filename().string();
  auto fetch = MakeMediaFetcher(f.fetch, media::S3ReaderForStore(store.get(), f.store));
  if (!fetch.ok()) {
    OMNI_LOG(kError, "encoder: {}", fetch.status().message());
    return 2;
  }
  const media::MediaFetcher& fetcher = *fetch->fetcher;
  MetricsRegistry registry;
  AddProcessInfoMetrics(registry);
  auto loaded = LoadEncoder(f,
                            {.model_id = served, .store = store.get(), .store_uri = f.store, .fetcher = &fetcher,
                             .url_ttl = std::chrono::seconds(f.url_ttl_s), .metrics = &registry},
                            &registry);
  if (!loaded.ok()) {
    OMNI_LOG(kError, "encoder: {}", loaded.status().ToString());
    return 2;
  }
  encoder::EncoderHttpAdapter adapter(*loaded->service, registry, {.workers = f.workers, .max_queue = f.max_queue});
  HttpServerOptions http;
  http.host = f.host;
  http.port = static_cast<uint16_t>(f.port);
  http.metrics = &registry;
  http.max_body_bytes = static_cast<size_t>(f.fetch.max_media_bytes) * 4 / 3 + (1 << 16);  // base64 inline media
  http.max_inflight_body_bytes = static_cast<size_t>(f.max_inflight_body_bytes);
  http.drain_timeout = std::chrono::milliseconds(f.drain_timeout_ms);
  HttpServer server(http);
  adapter.RegisterRoutes(server);
  if (Status s = server.Start(); !s.ok()) {
    OMNI_LOG(kError, "encoder: cannot serve {}:{}: {}", f.host, f.port, s.ToString());
    return 1;
  }
  OMNI_LOG(kInfo, "encoder: listening on http://{}:{}; {} {}, store {}, {} workers, batches of up to {}", f.host,
           server.port(), loaded->description, served, f.store, f.workers, f.max_batch);
  server.RunUntilSignal();
  adapter.WaitIdle();
  OMNI_LOG(kInfo, "encoder: stopped");
  return 0;
}

}  // namespace omni::cli
