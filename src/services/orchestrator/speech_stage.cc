#include "services/orchestrator/speech_stage.h"

#include <algorithm>
#include <array>
#include <span>
#include <utility>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "core/base64.h"
#include "core/log.h"
#include "media/audio_encode.h"
#include "services/orchestrator/client_url.h"
#include "services/orchestrator/orchestrator_service.h"
#include "storage/content_hash.h"

namespace omni::orchestrator {
namespace {

constexpr int kSampleRate = 24000;

// Voiced by the zero-shot decoder: a reference clip and no id (a request
// naming an id is voiced by the table even with a clip: the id wins).
bool Cloned(const SpeakerSpec& s) { return !s.ref_audio.empty() && s.id.empty(); }

// OpenAI's voices and the gender each usually reads as: an unconfigured one
// gets a speaker of that gender.
struct OpenAiVoice {
  std::string_view name, gender;
};
constexpr std::array<OpenAiVoice, 13> kOpenAiVoices = {{{"alloy", "f"}, {"ash", "m"}, {"ballad", "m"},
                                                         {"coral", "f"}, {"echo", "m"}, {"fable", "m"},
                                                         {"nova", "f"}, {"onyx", "m"}, {"sage", "f"},
                                                         {"shimmer", "f"}, {"verse", "m"}, {"marin", "f"},
                                                         {"cedar", "m"}}};

nlohmann::json SpeakerJson(const SpeakerSpec& s) {
  nlohmann::json j = nlohmann::json::object();
  if (!s.id.empty()) j["id"] = s.id;
  if (!s.gender.empty()) j["gender"] = s.gender;
  if (!s.age.empty()) j["age"] = s.age;
  if (!s.ref_audio.empty()) j["ref_audio"] = s.ref_audio;
  return j;
}

std::string Extension(const std::string& format) { return format == "pcm16" ? "pcm" : format; }

}  // namespace

SpeechStage::SpeechStage(const OrchestratorConfig& config, Upstream& upstream, ObjectStore* store,
                         const ObjectUrlSigner* signer, const Clock& clock, MetricsRegistry& metrics)
    : config_(config),
      upstream_(upstream),
      store_(store),
      signer_(signer),
      clock_(clock),
      calls_(&metrics.AddCounter("omni_orchestrator_speech_calls_total", "Audio decoder calls by result.", {"result"})),
      seconds_(&metrics
                    .AddHistogram("omni_orchestrator_speech_call_seconds", "Time per audio decoder call.", {},
                                  {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60})
                    .Get()),
      pool_(static_cast<size_t>(std::max<int64_t>(1, config.speech.max_concurrent))) {}

SpeechStage::~SpeechStage() = default;

bool SpeechStage::enabled() const { return !config_.speech.audio_decoder.empty() && store_ != nullptr; }

void SpeechStage::Stop() { stopping_.store(true); }

SpeakerSpec SpeechStage::VoiceSpeaker(std::string_view voice) const {
  if (const auto it = config_.speech.voices.find(voice); it != config_.speech.voices.end()) return it->second;
  for (const OpenAiVoice& v : kOpenAiVoices) {
    if (v.name == voice) return SpeakerSpec{.gender = std::string(v.gender)};
  }
  return SpeakerSpec{.id = std::string(voice)};
}

StatusOr<SpokenAudio> SpeechStage::Stored(std::string key, std::string bytes, std::string format, std::string mime,
                                          double duration, const std::string& public_base) {
  SpokenAudio a{.bytes = std::move(bytes), .format = std::move(format), .mime = std::move(mime),
                .key = std::move(key), .duration = duration};
  OMNI_ASSIGN_OR_RETURN(a.url, ClientUrl(*store_, signer_, clock_, a.key, config_.speech.url_ttl, public_base));
  a.expires_at = std::chrono::duration_cast<std::chrono::seconds>(
                     (clock_.WallNow() + config_.speech.url_ttl).time_since_epoch())
                     .count();
  return a;
}

std::optional<SpeechStage::Context> SpeechStage::LearntContext(bool cloned) const {
  const int64_t packed = context_[cloned ? 1 : 0].load();
  if (packed < 0) return std::nullopt;
  return Context{.left = packed >> 32, .right = packed & 0xffffffff};
}

void SpeechStage::Learn(bool cloned, Context c) {
  if (c.left >= 0 && c.right >= 0 && c.left < (int64_t{1} << 30) && c.right < (int64_t{1} << 30)) {
    context_[cloned ? 1 : 0].store(c.left << 32 | c.right);
  }
}

int64_t SpeechStage::RightContext(const SpeakerSpec& speaker) const {
  const std::optional<Context> c = LearntContext(Cloned(speaker));
  return c ? c->right : -1;
}

StatusOr<SpokenAudio> SpeechStage::Decode(const SpeechJob& job, const std::string& public_base,
                                          const std::string& request_id) {
  const auto start = clock_.Now();
  auto failed = [&](Status s) -> StatusOr<SpokenAudio> {
    calls_->WithLabels({"error"}).Inc();
    log::RequestLog(request_id).Warn("orchestrator: speech: {}", s.ToString());
    return s;
  };
  if (!enabled()) {
    return failed(Unavailable("speech.audio_decoder is not configured").WithErrorCode("audio_decoder_unavailable"));
  }
  if (stopping_.load()) {
    return failed(Unavailable("the orchestrator is shutting down").WithErrorCode("server_shutdown"));
  }
  // A chunk sends the units its samples depend on once the decoder has said
  // how far that reaches; before, every unit so far (the decoder crops).
  int64_t lo = 0, hi = std::ssize(job.units);
  if (const std::optional<Context> c = LearntContext(Cloned(job.speaker)); job.range && c) {
    lo = std::max<int64_t>(0, job.range->first - c->left);
    hi = std::min<int64_t>(hi, job.range->second + c->right);
  }
  nlohmann::json body = {{"model", config_.speech.audio_decoder},
                         {"units", std::span<const int32_t>(job.units.data() + lo, static_cast<size_t>(hi - lo))},
                         {"speaker", SpeakerJson(job.speaker)},
                         {"format", job.range ? std::string("pcm16") : job.format}};
  if (job.range) {
    body["inline"] = true;
    body["range"] = {{"window_start", lo}, {"first", job.range->first}, {"last", job.range->second}};
  }
  HttpClientRequest up{.method = HttpMethod::kPost,
                       .url = config_.gateway + "/v1/decode",
                       .body = body.dump(),
                       .timeout = config_.speech.decode_timeout};
  up.headers.Set("content-type", "application/json");
  up.headers.Set("x-request-id", request_id);
  StatusOr<HttpClientResponse> r = upstream_.Request(up);
  if (std::optional<Status> f = DecoderCallFailure(r, {.decoder = "the audio decoder",
                                                       .timeout_setting = "speech.decode_s",
                                                       .timeout = config_.speech.decode_timeout,
                                                       .busy_code = "audio_decoder_busy",
                                                       .unavailable_code = "audio_decoder_unavailable",
                                                       .timeout_code = "audio_decode_timeout"})) {
    return failed(*f);
  }
  if (r->status == 400 || r->status == 403 || r->status == 404 || r->status == 413 || r->status == 415) {
    // What the request chose: its voice, speaker or reference clip, as the decoder's param says.
    const nlohmann::json e = nlohmann::json::parse(r->body, nullptr, false);
    const bool clip = e.is_object() && e.contains("error") && e["error"].is_object() &&
                      e["error"].contains("param") && e["error"]["param"].is_string() &&
                      e["error"]["param"].get<std::string>().starts_with("speaker.ref_audio");
    return failed(InvalidArgument(std::string(clip ? "the audio decoder refused the reference clip: "
                                                   : "the audio decoder refused the request's voice: ") +
                                  DecoderMessage(*r))
                      .WithParam(clip ? "audio.speaker.ref_audio" : "audio.voice")
                      .WithErrorCode(clip ? "invalid_reference_audio" : "invalid_voice"));
  }
  if (r->status != 200) {
    return failed(Internal(fmt::format("the audio decoder could not voice the model's units ({}): {}", r->status,
                                       DecoderMessage(*r)))
                      .WithErrorCode("audio_decode_failed"));
  }
  const nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
  StatusOr<SpokenAudio> out = Internal("unset");
  try {
    const std::string format = j.at("format").get<std::string>(), mime = j.at("mime").get<std::string>();
    const double duration = j.at("duration").get<double>();
    if (j.contains("context") && j["context"].is_object()) {
      const bool by_clip = j.contains("speaker") && j["speaker"].is_string() &&
                           j["speaker"].get<std::string>().starts_with("ref:");
      Learn(by_clip, {.left = j["context"].value("left", int64_t{-1}), .right = j["context"].value("right", int64_t{-1})});
    }
    if (job.range) {
      std::optional<std::string> bytes = Base64Decode(j.at("audio").get<std::string>());
      if (!bytes) return failed(Internal("the audio decoder's inline audio is not base64").WithErrorCode("audio_decode_failed"));
      out = SpokenAudio{.bytes = std::move(*bytes), .format = format, .mime = mime, .duration = duration};
    } else {
      const std::string key = j.at("key").get<std::string>();
      StatusOr<std::string> bytes = store_->Get(key);
      if (!bytes.ok()) return failed(Unavailable("cannot read the spoken answer from the store: " + bytes.status().message()));
      out = Stored(key, std::move(bytes).value(), format, mime, duration, public_base);
    }
  } catch (const nlohmann::json::exception&) {
    return failed(Internal("the audio decoder's answer is not the /v1/decode shape").WithErrorCode("audio_decode_failed"));
  }
  if (!out.ok()) return failed(out.status());
  calls_->WithLabels({"ok"}).Inc();
  seconds_->Observe(std::chrono::duration<double>(clock_.Now() - start).count());
  return out;
}

void SpeechStage::DecodeAsync(SpeechJob job, std::string public_base, std::string request_id,
                              std::function<void(StatusOr<SpokenAudio>)> done) {
  auto shared_done = std::make_shared<std::function<void(StatusOr<SpokenAudio>)>>(std::move(done));
  const bool posted = pool_.Post([this, job = std::move(job), public_base = std::move(public_base),
                                  request_id = std::move(request_id), shared_done] {
    StatusOr<SpokenAudio> audio = Internal("the audio decode failed");
    try {
      audio = Decode(job, public_base, request_id);
    } catch (const std::exception& e) {  // bad_alloc
      audio = Internal(std::string("the audio decode failed: ") + e.what());
    }
    (*shared_done)(std::move(audio));
  });
  if (!posted) (*shared_done)(Unavailable("the orchestrator is shutting down").WithErrorCode("server_shutdown"));
}

StatusOr<SpokenAudio> SpeechStage::Store(std::string_view pcm16, const std::string& format,
                                         const std::string& public_base) {
  if (!enabled()) return Unavailable("speech.audio_decoder is not configured").WithErrorCode("audio_decoder_unavailable");
  OMNI_ASSIGN_OR_RETURN(media::AudioFormat f, media::ParseAudioFormat(format));
  const std::span<const int16_t> samples(reinterpret_cast<const int16_t*>(pcm16.data()), pcm16.size() / 2);
  OMNI_ASSIGN_OR_RETURN(std::string bytes, media::EncodeAudio(samples, kSampleRate, f));
  const std::string name(media::AudioFormatName(f)), mime(media::AudioMimeType(f));
  const std::string key = fmt::format("gen/{}/{}.{}", config_.speech.audio_decoder, Sha256Hex(bytes), Extension(name));
  const double seconds = static_cast<double>(samples.size()) / kSampleRate;
  OMNI_RETURN_IF_ERROR(store_->Put(key, bytes,
                                   PutOptions{.content_type = mime,
                                              .metadata = {{"seconds", fmt::format("{:.3f}", seconds)},
                                                           {"sample_rate", std::to_string(kSampleRate)}}}));
  return Stored(key, std::move(bytes), name, mime, seconds, public_base);
}

}  // namespace omni::orchestrator
