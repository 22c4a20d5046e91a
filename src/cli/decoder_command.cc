#include "cli/decoder_command.h"

#include <CLI/CLI.hpp>

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <thread>

#include "cli/process_info.h"
#include "core/log.h"
#include "modelfile/tensor_object.h"
#include "models/audio_decoder/speakers.h"
#include "models/audio_decoder/unit_bigvgan.h"
#include "models/vision_decoder/vision_decoder.h"
#include "net/http_server.h"
#include "ops/threading.h"
#include "media/media_fetch.h"
#include "services/decoder/audio_decoder_http.h"
#include "services/decoder/audio_decoder_service.h"
#include "services/decoder/decoder_http.h"
#include "services/decoder/decoder_service.h"
#include "services/decoder/sp_group.h"
#include "storage/open_store.h"
#include "storage/s3/s3_store.h"

namespace omni::cli {
namespace {

std::string SelfPath() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("omniserve") : p.string();
}

// Compute threads per rank: the flag, or the cores shared among the ranks.
int ThreadsPerRank(const DecoderFlags& f) {
  if (f.threads > 0) return f.threads;
  if (f.sp <= 1) return 0;  // the runtime's default
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max(1, static_cast<int>(cores) / f.sp);
}

int MaxQueue(const DecoderFlags& f) {
  if (f.max_queue >= 0) return f.max_queue;
  return f.modality == "audio" ? 32 : 8;
}

std::string ServedName(const DecoderFlags& f) {
  return !f.served_model_name.empty() ? f.served_model_name
                                      : std::filesystem::path(f.model).lexically_normal().filename().string();
}

// The served name is every key's model segment: refused at start, not after
// the first image or clip.
bool CheckServedName(const std::string& served, std::string_view extension) {
  if (auto key = GeneratedMediaKey(served, std::string(64, '0'), extension); !key.ok()) {
    OMNI_LOG(kError, "decoder: served model name: {} (set --served-model-name)", key.status().message());
    return false;
  }
  return true;
}

// Serves `adapter`'s routes until SIGTERM or SIGINT, then drains: requests
// already accepted keep being served; those still waiting at the drain
// deadline get 503 server_shutdown. `announce` logs the listening line.
// Returns the process's exit code.
template <typename Adapter>
int ServeDecoder(const DecoderFlags& f, MetricsRegistry& registry, Adapter& adapter,
                 const std::function<void(uint16_t port)>& announce) {
  HttpServerOptions http;
  http.host = f.host;
  http.port = static_cast<uint16_t>(f.port);
  http.metrics = &registry;
  // 729 image tokens are ~12 KB of text, 2000 audio units ~30 KB; an audio
  // request may also carry its reference clip inline (base64).
  http.max_body_bytes = f.modality == "audio" ? static_cast<size_t>(f.fetch.max_media_bytes) * 4 / 3 + (1 << 20)
                                              : size_t{1} << 20;
  http.drain_timeout = std::chrono::milliseconds(f.drain_timeout_ms);
  HttpServer server(http);
  adapter.RegisterRoutes(server);
  server.SetDrainDeadlineHook([&adapter] { adapter.Close(); });
  if (Status s = server.Start(); !s.ok()) {
    OMNI_LOG(kError, "decoder: cannot serve {}:{}: {}", f.host, f.port, s.ToString());
    return 1;
  }
  announce(server.port());
  server.RunUntilSignal();
  adapter.Close();
  return 0;
}

// The audio decoder server: the unit vocoder behind its batcher, the
// service and the HTTP adapter with its worker pool.
int RunAudioDecoder(const DecoderFlags& f) {
  if (f.sp != 1) {
    OMNI_LOG(kError, "decoder: --sp is for the vision decoder; the audio decoder batches instead (--max-batch)");
    return 2;
  }
  if (f.threads > 0) ops::SetNumThreads(f.threads);
  LogProcessInfo();
  auto model = models::UnitBigVgan::Load(f.model);
  if (!model.ok()) {
    OMNI_LOG(kError, "decoder: {}", model.status().ToString());
    return 2;
  }
  const models::UnitBigVgan& vocoder = **model;
  if (vocoder.zero_shot()) {
    OMNI_LOG(kError, "decoder: --model {} is a zero-shot checkpoint (finetune false); give the speaker-table one as "
                     "--model and this one as --zeroshot-model", f.model);
    return 2;
  }
  // The fixed forward shapes' primitives, before the first request pays for them.
  vocoder.WarmUp();
  auto speakers = models::SpeakerTable::Load(f.model, vocoder.config().num_spk);
  if (!speakers.ok()) {
    OMNI_LOG(kError, "decoder: {}", speakers.status().ToString());
    return 2;
  }
  if (f.store.empty()) {
    OMNI_LOG(kError, "decoder: --store is required");
    return 2;
  }
  auto opened = OpenObjectStore(f.store, S3CredentialsFromEnv());
  if (!opened.ok()) {
    OMNI_LOG(kError, "decoder: --store: {}", opened.status().ToString());
    return 2;
  }
  std::unique_ptr<ObjectStore> store = std::move(opened).value();
  const std::string served = ServedName(f);
  if (!CheckServedName(served, "wav")) return 2;

  // Zero-shot speakers: a second checkpoint whose speaker encoder takes
  // reference clips, with its own batcher, and the fetcher of the clips.
  std::string zero_shot_dir = f.zeroshot_model;
  if (zero_shot_dir.empty() && std::filesystem::exists(std::filesystem::path(f.model) / "zeroshot" / "config.json")) {
    zero_shot_dir = (std::filesystem::path(f.model) / "zeroshot").string();
  }
  std::unique_ptr<models::UnitBigVgan> zero_shot;
  if (!zero_shot_dir.empty() && zero_shot_dir != "none") {
    auto loaded = models::UnitBigVgan::Load(zero_shot_dir);
    if (!loaded.ok() || !(*loaded)->zero_shot()) {
      OMNI_LOG(kError, "decoder: --zeroshot-model {}: {}", zero_shot_dir,
               loaded.ok() ? "has a speaker table (finetune true), not a speaker encoder" : loaded.status().ToString());
      return 2;
    }
    zero_shot = *std::move(loaded);
    const models::UnitBigVganConfig& a = vocoder.config();
    const models::UnitBigVganConfig& b = zero_shot->config();
    if (a.num_units != b.num_units || a.sampling_rate != b.sampling_rate ||
        vocoder.samples_per_unit() != zero_shot->samples_per_unit()) {
      OMNI_LOG(kError, "decoder: --zeroshot-model {}: its units, rate or samples per unit differ from --model's",
               zero_shot_dir);
      return 2;
    }
    zero_shot->WarmUp();
  }
  // Reference clips are fetched only for the zero-shot vocoder.
  MediaFetchSetup fetch;
  if (zero_shot) {
    auto made = MakeMediaFetcher(f.fetch, media::S3ReaderForStore(store.get(), f.store));
    if (!made.ok()) {
      OMNI_LOG(kError, "decoder: {}", made.status().message());
      return 2;
    }
    fetch = std::move(made).value();
  }
  MetricsRegistry registry;
  AddProcessInfoMetrics(registry);
  decoder::VocodeBatcher batcher(decoder::VocodeBatchFn(vocoder), f.max_batch, &registry, "omni_audio_decoder");
  std::unique_ptr<decoder::VocodeBatcher> zero_shot_batcher;
  decoder::VocodeFn vocode_zero_shot;
  if (zero_shot) {
    zero_shot_batcher = std::make_unique<decoder::VocodeBatcher>(decoder::VocodeBatchFn(*zero_shot), f.max_batch,
                                                                 &registry, "omni_audio_decoder_zeroshot");
    vocode_zero_shot = [&zero_shot_batcher](const decoder::VocodeInput& in) { return zero_shot_batcher->Forward(in); };
  }
  decoder::AudioDecoderService service({.model_id = served,
                                        .store = store.get(),
                                        .store_uri = f.store,
                                        .url_ttl = std::chrono::seconds(f.url_ttl_s),
                                        .metrics = &registry,
                                        .zero_shot = zero_shot.get(),
                                        .vocode_zero_shot = vocode_zero_shot,
                                        .fetcher = fetch.fetcher.get(),
                                        .max_ref_audio_seconds = f.max_ref_audio_seconds,
                                        .ref_down_sample_rate = f.ref_down_sample_rate},
                                       vocoder, *speakers,
                                       [&batcher](const decoder::VocodeInput& in) { return batcher.Forward(in); });
  decoder::AudioDecoderHttpAdapter adapter(service, registry, {.workers = f.workers, .max_queue = MaxQueue(f)});
  const int code = ServeDecoder(f, registry, adapter, [&](uint16_t port) {
    OMNI_LOG(kInfo,
             "decoder: listening on http://{}:{}; audio model {} ({} speakers, {}, {} units, {} Hz, {} samples per "
             "unit), store {}, {} workers, batches of up to {}, queue {}",
             f.host, port, served, speakers->names().size(),
             zero_shot ? "zero-shot speakers from " + zero_shot_dir : std::string("no zero-shot speakers"),
             vocoder.config().num_units,
             vocoder.config().sampling_rate, vocoder.samples_per_unit(), f.store, f.workers, f.max_batch, MaxQueue(f));
  });
  if (code != 0) return code;
  adapter.WaitIdle(std::chrono::milliseconds(f.drain_timeout_ms));
  OMNI_LOG(kInfo, "decoder: stopped");
  return 0;
}

}  // namespace

CLI::App* AddDecoderCommand(CLI::App& app, DecoderFlags* f) {
  CLI::App* sub = app.add_subcommand(
      "decoder", "vision or audio decoder server (POST /v1/decode): image tokens to images, speech units to audio");
  sub->add_option("--modality", f->modality, "vision (image tokens to PNG/WebP/JPEG) or audio (speech units to "
                                            "WAV/FLAC/MP3/Opus/AAC)")
      ->capture_default_str()
      ->check(CLI::IsMember({"vision", "audio"}));
  sub->add_option("--model", f->model,
                  "decoder folder; vision: model_index.json, transformer/, transformer2/, vae/, token_embedder/, "
                  "scheduler/; audio: config.json, model.safetensors, spk_list.txt, speaker_config.json (optional)")
      ->required();
  sub->add_option("--store", f->store,
                  "object store the images and clips are written to (file:///dir or s3://bucket...)");
  sub->add_option("--host", f->host, "listen address")->capture_default_str();
  sub->add_option("--port", f->port, "listen port (0: the OS picks)")->capture_default_str()->check(CLI::Range(0, 65535));
  sub->add_option("--served-model-name", f->served_model_name,
                  "model name in the API and in the object keys (default: the folder's name)");
  sub->add_option("--sp", f->sp,
                  "sequence-parallel ranks: the DiT runs over this many processes (Ulysses); must divide its heads")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  sub->add_option("--max-queue", f->max_queue,
                  "requests waiting behind the running ones; more get 429 (default: vision 8, audio 32)")
      ->check(CLI::Range(0, 1 << 16));
  sub->add_option("--zeroshot-model", f->zeroshot_model,
                  "audio: a zero-shot checkpoint (config finetune false, ECAPA-TDNN speaker encoder) for speakers "
                  "cloned from a reference clip (default: MODEL/zeroshot when it exists; none: no such speakers)");
  sub->add_option("--max-ref-audio-seconds", f->max_ref_audio_seconds,
                  "audio: longest reference clip, checked from its header before decoding; 413 above")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 3600.0));
  sub->add_option("--ref-down-sample-rate", f->ref_down_sample_rate,
                  "audio: decode reference clips at this rate (Hz) and resample them up to the vocoder's, keeping "
                  "only what lies below half of it, as OmniServe's AUDIOLLM_DOWN_SAMPLE_RATE does (0: off)")
      ->capture_default_str()
      ->check(CLI::Range(0, 0) | CLI::Range(8000, 192000));
  AddMediaFetchFlags(sub, &f->fetch);
  sub->add_option("--max-batch", f->max_batch,
                  "audio: clips that waited for the vocoder go through it together, up to this many (1: no batching)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  sub->add_option("--workers", f->workers,
                  "audio: requests handled at once (speaker, encode, store); their vocoder forwards are batched")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  sub->add_option("--threads", f->threads,
                  "compute threads per rank (0: OMP_NUM_THREADS if set, else the cores divided among the ranks)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  sub->add_option("--default-steps", f->default_steps, "diffusion steps when /v1/decode names none")
      ->capture_default_str()
      ->check(CLI::Range(1, 200));
  sub->add_option("--url-ttl", f->url_ttl_s, "lifetime in seconds of the presigned URLs in answers")
      ->capture_default_str()
      ->check(CLI::Range(1, 7 * 24 * 3600));
  sub->add_option("--sp-timeout-ms", f->sp_timeout_ms, "time limit of forming the group and of each collective")
      ->capture_default_str()
      ->check(CLI::Range(100, 3'600'000));
  sub->add_option("--drain-timeout-ms", f->drain_timeout_ms, "on SIGTERM, how long the running request may finish")
      ->capture_default_str()
      ->check(CLI::Range(0, 3'600'000));
  // Rank processes are started by rank 0 with these.
  sub->add_option("--rank", f->rank)->group("")->check(CLI::Range(0, 63));
  sub->add_option("--rendezvous", f->rendezvous)->group("");
  sub->add_option("--generation", f->generation)->group("");
  return sub;
}

int RunDecoderCommand(const DecoderFlags& f) {
  if (f.modality == "audio") return RunAudioDecoder(f);
  if (const int threads = ThreadsPerRank(f); threads > 0) ops::SetNumThreads(threads);
  if (f.rank == 0) LogProcessInfo();
  auto model = models::VisionDecoder::Load(f.model);
  if (!model.ok()) {
    OMNI_LOG(kError, "decoder: {}", model.status().ToString());
    return 2;
  }
  if (Status sp = (*model)->CheckSequenceParallel(f.sp); !sp.ok()) {
    OMNI_LOG(kError, "decoder: --sp: {}", sp.message());
    return 2;
  }
  if (f.rank > 0) {
    return decoder::RunSpRank(**model, f.rank, f.sp, f.rendezvous, f.generation,
                              std::chrono::milliseconds(f.sp_timeout_ms));
  }
  if (f.store.empty()) {
    OMNI_LOG(kError, "decoder: --store is required");
    return 2;
  }
  auto opened = OpenObjectStore(f.store, S3CredentialsFromEnv());
  if (!opened.ok()) {
    OMNI_LOG(kError, "decoder: --store: {}", opened.status().ToString());
    return 2;
  }
  std::unique_ptr<ObjectStore> store = std::move(opened).value();
  ::signal(SIGPIPE, SIG_IGN);  // a rank that died closes its stdin pipe
  std::unique_ptr<decoder::SpGroup> group;
  if (f.sp > 1) {
    // The ranks log as this process does.
    std::vector<std::string> child = {SelfPath(),  "--log-level", f.log_level,       "--log-format",
                                      f.log_format, "decoder",    "--model",         f.model,
                                      "--threads", std::to_string(ThreadsPerRank(f)), "--sp-timeout-ms",
                                      std::to_string(f.sp_timeout_ms)};
    auto started = decoder::SpGroup::Start(
        model->get(), {.sp = f.sp, .child_argv = child, .timeout = std::chrono::milliseconds(f.sp_timeout_ms)});
    if (!started.ok()) {
      OMNI_LOG(kError, "decoder: {}", started.status().ToString());
      return 1;
    }
    group = std::move(started).value();
  }
  const std::string served = ServedName(f);
  if (!CheckServedName(served, "png")) return 2;
  MetricsRegistry registry;
  AddProcessInfoMetrics(registry);
  const models::VisionDecoder& vd = **model;
  decoder::VisionGenerateFn generate =
      group ? decoder::VisionGenerateFn([&group](const auto& r, const auto& h, auto* t) { return group->Generate(r, h, t); })
            : decoder::VisionGenerateFn([&vd](const auto& r, const auto& h, auto* t) { return vd.Generate(r, h, t); });
  decoder::DecoderService service({.model_id = served,
                                   .store = store.get(),
                                   .store_uri = f.store,
                                   .url_ttl = std::chrono::seconds(f.url_ttl_s),
                                   .default_steps = f.default_steps,
                                   .vocab_size = static_cast<int>(vd.vocab_size()),
                                   .metrics = &registry},
                                  std::move(generate));
  decoder::DecoderHttpAdapter adapter(service, registry,
                                      {.max_queue = MaxQueue(f), .vocab_size = static_cast<int>(vd.vocab_size())});
  const int code = ServeDecoder(f, registry, adapter, [&](uint16_t port) {
    OMNI_LOG(kInfo,
             "decoder: listening on http://{}:{}; vision model {} ({} DiT blocks, autoguidance {}), store {}, sp {}, "
             "queue {}",
             f.host, port, served, vd.transformer().config().depth_single_blocks, vd.transformer2() ? "on" : "off",
             f.store, f.sp, MaxQueue(f));
  });
  if (code != 0) return code;
  adapter.WaitIdle();
  group.reset();
  OMNI_LOG(kInfo, "decoder: stopped");
  return 0;
}

}  // namespace omni::cli
