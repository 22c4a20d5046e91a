#include "services/decoder/audio_decoder_service.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "core/base64.h"
#include "core/check.h"
#include "media/audio.h"
#include "media/audio_resample.h"
#include "modelfile/tensor_object.h"
#include "storage/content_hash.h"
#include "storage/open_store.h"

namespace omni::decoder {
namespace {

using SteadyClock = std::chrono::steady_clock;

double MsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count();
}

// FNV-1a over the units: where an age band offers several voices, the same
// units always get the same one (OmniServe draws at random).
uint64_t UnitsHash(std::span<const int32_t> units) {
  uint64_t h = 1469598103934665603ull;
  for (int32_t u : units) {
    for (int b = 0; b < 4; ++b) {
      h ^= (static_cast<uint32_t>(u) >> (8 * b)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  return h;
}

}  // namespace

VocodeBatcher::BatchFn VocodeBatchFn(const models::UnitBigVgan& model) {
  return [&model](std::span<const VocodeInput* const> inputs) {
    std::vector<std::vector<int32_t>> clips;
    std::vector<Tensor> speakers;
    clips.reserve(inputs.size());
    speakers.reserve(inputs.size());
    for (const VocodeInput* in : inputs) {
      clips.emplace_back(in->units.begin(), in->units.end());  // VocodeBatch's clips own their units
      speakers.push_back(in->speaker);  // shares the row's memory
    }
    return model.VocodeBatch(clips, speakers);
  };
}

std::string AudioDecodeResultJson(const AudioDecodeResult& r, const AudioDecodeRequest& request,
                                  std::string_view model) {
  nlohmann::ordered_json j;
  if (request.api == AudioDecodeApi::kOmniServe) {
    // OmniServe's answer, plus our url and duration.
    j["s3_key"] = r.key;
    j["requested_format"] = request.requested_format;
    j["content_type"] = r.mime;
    j["size_bytes"] = r.bytes;
    j["url"] = r.url;
    j["duration"] = r.duration;
    return j.dump();
  }
  j["object"] = "audio";
  j["model"] = model;
  if (!request.inline_audio) {
    j["key"] = r.key;
    j["uri"] = r.uri;
    j["url"] = r.url;
    j["expires_at"] = r.expires_at;
  }
  j["mime"] = r.mime;
  j["format"] = media::AudioFormatName(r.format);
  j["bytes"] = r.bytes;
  j["sample_rate"] = r.sample_rate;
  j["samples"] = r.samples;
  j["duration"] = r.duration;
  j["units"] = r.units;
  j["speaker"] = r.speaker;
  // What a range request needs around its units: callers may send only that.
  j["context"] = {{"left", r.context_left}, {"right", r.context_right}};
  if (request.inline_audio) j["audio"] = Base64Encode(r.audio_bytes);
  return j.dump();
}

AudioDecoderService::AudioDecoderService(AudioDecoderServiceOptions options, const models::UnitBigVgan& model,
                                         const models::SpeakerTable& speakers, VocodeFn vocode)
    : options_(std::move(options)),
      model_(model),
      speakers_(speakers),
      vocode_(std::move(vocode)),
      stage_seconds_(&options_.metrics->AddHistogram(
          "omni_audio_decoder_stage_seconds",
          "Time per stage of a request: speaker (a reference clip's fetch, decode and encoder), vocode, encode, store.",
          {"stage"}, {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30})),
      ref_clips_(&options_.metrics->AddCounter("omni_audio_decoder_reference_clips_total",
                                               "Reference clips of zero-shot speakers, by whether the speaker "
                                               "encoder ran (encoded) or a cached vector served (cached; also "
                                               "when the request waited for that clip's encoding in flight).",
                                               {"result"})) {
  OMNI_CHECK(options_.store != nullptr && options_.clock != nullptr && vocode_) << "audio decoder service dependencies";
  OMNI_CHECK((options_.zero_shot == nullptr) == (options_.fetcher == nullptr) &&
             (options_.zero_shot == nullptr) == !options_.vocode_zero_shot)
      << "zero-shot vocoder, its vocode function and the fetcher come together";
  OMNI_CHECK(options_.zero_shot == nullptr ||
             (options_.zero_shot->zero_shot() &&
              options_.zero_shot->samples_per_unit() == model_.samples_per_unit() &&
              options_.zero_shot->config().sampling_rate == model_.config().sampling_rate &&
              options_.zero_shot->config().num_units == model_.config().num_units))
      << "the zero-shot vocoder must take reference clips and match the table vocoder's units and rate";
  OMNI_CHECK(model_.config().num_spk > 0 && std::ssize(speakers_.names()) == model_.config().num_spk)
      << "speaker table and model disagree";
  for (int64_t i = 0; i < model_.config().num_spk; ++i) {
    StatusOr<Tensor> row = model_.SpeakerRow(i);
    OMNI_CHECK(row.ok()) << row.status().ToString();
    speaker_rows_.push_back(*std::move(row));
  }
}

StatusOr<AudioDecoderService::Speaker> AudioDecoderService::ResolveSpeaker(const AudioDecodeRequest& request) const {
  const SpeakerChoice& s = request.speaker;
  int64_t row = 0;
  if (!s.id.empty()) {
    StatusOr<int64_t> found = speakers_.Index(s.id);
    if (!found.ok()) return Status(found.status()).WithParam("speaker.id");
    row = *found;
  } else if (!s.ref_audio_param.empty()) {
    return ReferenceSpeaker(s);
  } else {
    StatusOr<int64_t> voice = speakers_.ForVoice(s.gender, s.age, UnitsHash(request.units));
    if (!voice.ok()) return Status(voice.status()).WithParam("speaker");
    row = *voice;
  }
  return Speaker{.vector = speaker_rows_[static_cast<size_t>(row)], .name = speakers_.names()[static_cast<size_t>(row)]};
}

StatusOr<AudioDecoderService::Speaker> AudioDecoderService::ReferenceSpeaker(const SpeakerChoice& s) const {
  if (options_.zero_shot == nullptr) {
    return InvalidArgument(
               "this decoder has no zero-shot vocoder for reference clips (start it with --zeroshot-model); name a "
               "speaker \"id\", or a \"gender\" and \"age\"")
        .WithParam(s.ref_audio_param)
        .WithErrorCode("unsupported_speaker");
  }
  const auto t0 = SteadyClock::now();
  StatusOr<media::FetchedMedia> clip = options_.fetcher->Fetch(s.ref_audio);
  if (!clip.ok()) {
    // The URL is the client's: a host that refuses or fails is its problem to fix, not this server's.
    const StatusCode code = clip.status().code();
    if (code == StatusCode::kInvalidArgument || code == StatusCode::kPayloadTooLarge ||
        code == StatusCode::kUnsupportedMedia) {
      return Status(clip.status()).WithParam(s.ref_audio_param);
    }
    return InvalidArgument("the reference clip could not be fetched: " + clip.status().message())
        .WithParam(s.ref_audio_param);
  }
  // The speaker of the clip's vector, counted by how it was had.
  auto served = [&](StatusOr<Tensor> vector, const char* result) -> StatusOr<Speaker> {
    if (!vector.ok()) return Status(vector.status()).WithParam(s.ref_audio_param);
    ref_clips_->WithLabels({result}).Inc();
    stage_seconds_->WithLabels({"speaker"}).Observe(MsSince(t0) / 1e3);
    return Speaker{.vector = *std::move(vector), .name = "ref:" + clip->sha256.substr(0, 16), .zero_shot = true};
  };
  std::promise<StatusOr<Tensor>> mine;  // kept only if this request encodes the clip
  std::shared_future<StatusOr<Tensor>> theirs;
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (auto it = cache_index_.find(clip->sha256); it != cache_index_.end()) {
      cache_.splice(cache_.begin(), cache_, it->second);
      return served(it->second->second, "cached");
    }
    if (auto it = encoding_.find(clip->sha256); it != encoding_.end()) {
      theirs = it->second;
    } else {
      encoding_.emplace(clip->sha256, mine.get_future().share());
    }
  }
  if (theirs.valid()) return served(theirs.get(), "cached");  // another request is encoding this clip
  StatusOr<Tensor> vector = Internal("reference clip not encoded");
  try {
    vector = EncodeReference(clip->bytes);
  } catch (...) {
    mine.set_exception(std::current_exception());
    std::lock_guard<std::mutex> lock(cache_mu_);
    encoding_.erase(clip->sha256);
    throw;
  }
  mine.set_value(vector);
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    encoding_.erase(clip->sha256);
    if (vector.ok() && options_.speaker_cache_entries > 0) {
      cache_.emplace_front(clip->sha256, *vector);
      cache_index_[clip->sha256] = cache_.begin();
      if (cache_.size() > options_.speaker_cache_entries) {
        cache_index_.erase(cache_.back().first);
        cache_.pop_back();
      }
    }
  }
  return served(std::move(vector), "encoded");
}

StatusOr<std::vector<float>> LoadReferenceClip(std::string_view bytes, int rate, int down_rate, double max_seconds) {
  const int decode_rate = down_rate > 0 ? down_rate : rate;
  OMNI_ASSIGN_OR_RETURN(media::Audio audio,
                        media::DecodeAudio(bytes, {.sample_rate = decode_rate, .max_seconds = max_seconds}));
  if (decode_rate == rate) return std::move(audio.samples);
  return media::ResampleMono(audio.samples, decode_rate, rate);
}

StatusOr<Tensor> AudioDecoderService::EncodeReference(const std::string& bytes) const {
  const models::UnitBigVgan& zs = *options_.zero_shot;
  OMNI_ASSIGN_OR_RETURN(std::vector<float> samples,
                        LoadReferenceClip(bytes, zs.config().sampling_rate, options_.ref_down_sample_rate,
                                          options_.max_ref_audio_seconds));
  return zs.SpeakerFromClip(samples);
}

StatusOr<AudioDecodeResult> AudioDecoderService::Decode(const AudioDecodeRequest& request) const {
  if (!request.model.empty() && request.model != options_.model_id) {
    return ModelNotFound(request.model, options_.model_id);
  }
  OMNI_ASSIGN_OR_RETURN(Speaker speaker, ResolveSpeaker(request));
  AudioDecodeResult r;
  r.speaker = speaker.name;
  r.format = request.format;
  r.sample_rate = model_.config().sampling_rate;

  // A range keeps the samples of units [first, last) of its window
  // (UnitBigVgan::VocodeRange), vocoded from only the context the vocoder's
  // receptive field needs around them: a stream's window is everything said
  // so far, and each chunk costs its own length, not the window's.
  int64_t begin = 0, end = std::ssize(request.units);
  if (request.range) {
    begin = request.range->first - request.range->window_start;
    end = request.range->last - request.range->window_start;
    if (begin < 0 || end > std::ssize(request.units) || begin >= end) {
      return InvalidArgument("range: units [first, last) must be a non-empty part of the window").WithParam("range");
    }
  }
  const models::UnitBigVgan::Context context = (speaker.zero_shot ? *options_.zero_shot : model_).context();
  r.context_left = context.left;
  r.context_right = context.right;
  if (request.range && request.range->window_start > 0 && begin < context.left) {
    return InvalidArgument(fmt::format("range: the window starts {} units before `first`; this vocoder needs {} "
                                       "(or the window must start at unit 0)",
                                       begin, context.left))
        .WithParam("range");
  }
  const int64_t lo = request.range ? std::max<int64_t>(0, begin - context.left) : 0;
  const int64_t hi = request.range ? std::min<int64_t>(std::ssize(request.units), end + context.right) : end;
  const auto t0 = SteadyClock::now();
  const std::span<const int32_t> window(request.units.data() + lo, static_cast<size_t>(hi - lo));
  const VocodeInput input{.units = window, .speaker = speaker.vector};
  OMNI_ASSIGN_OR_RETURN(std::vector<float> wave, speaker.zero_shot ? options_.vocode_zero_shot(input) : vocode_(input));
  const int64_t spu = model_.samples_per_unit();
  if (std::ssize(wave) != (hi - lo) * spu) {
    return Internal(fmt::format("the vocoder gave {} samples for {} units", wave.size(), hi - lo));
  }
  begin -= lo;
  end -= lo;
  const std::span<const float> kept(wave.data() + begin * spu, static_cast<size_t>((end - begin) * spu));
  r.units = end - begin;
  r.samples = std::ssize(kept);
  r.duration = static_cast<double>(r.samples) / r.sample_rate;
  r.times.vocode_ms = MsSince(t0);
  stage_seconds_->WithLabels({"vocode"}).Observe(r.times.vocode_ms / 1e3);

  const auto t1 = SteadyClock::now();
  const std::vector<int16_t> pcm = models::ToPcm16(kept);
  OMNI_ASSIGN_OR_RETURN(std::string bytes, media::EncodeAudio(pcm, r.sample_rate, request.format));
  r.mime = std::string(media::AudioMimeType(request.format));
  r.sha256 = Sha256Hex(bytes);
  r.bytes = bytes.size();
  r.times.encode_ms = MsSince(t1);
  stage_seconds_->WithLabels({"encode"}).Observe(r.times.encode_ms / 1e3);

  if (request.inline_audio) {
    r.audio_bytes = std::move(bytes);
    return r;
  }
  OMNI_RETURN_IF_ERROR(Store(bytes, &r));
  return r;
}

Status AudioDecoderService::Store(const std::string& bytes, AudioDecodeResult* r) const {
  const auto t0 = SteadyClock::now();
  OMNI_ASSIGN_OR_RETURN(r->key, GeneratedMediaKey(options_.model_id, r->sha256, media::AudioFormatName(r->format)));
  const ObjectMetadata meta = {{"seconds", fmt::format("{}", r->duration)},
                               {"sample_rate", std::to_string(r->sample_rate)},
                               {"samples", std::to_string(r->samples)},
                               {"units", std::to_string(r->units)},
                               {"speaker", r->speaker},
                               {"model", options_.model_id}};
  OMNI_RETURN_IF_ERROR(options_.store->Put(r->key, bytes, {.content_type = r->mime, .metadata = meta}));
  OMNI_ASSIGN_OR_RETURN(r->uri, ObjectUriInStore(options_.store_uri, r->key));
  const auto expires = options_.clock->WallNow() + options_.url_ttl;
  OMNI_ASSIGN_OR_RETURN(r->url, options_.store->Presign(r->key, PresignMethod::kGet, options_.url_ttl));
  r->expires_at = std::chrono::duration_cast<std::chrono::seconds>(expires.time_since_epoch()).count();
  r->times.store_ms = MsSince(t0);
  stage_seconds_->WithLabels({"store"}).Observe(r->times.store_ms / 1e3);
  return Status::Ok();
}

}  // namespace omni::decoder
