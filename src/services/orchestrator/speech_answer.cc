#include "services/orchestrator/speech_answer.h"

#include <map>
#include <utility>

#include "core/base64.h"
#include "services/orchestrator/sse_events.h"

namespace omni::orchestrator {
namespace {

using Json = nlohmann::ordered_json;

constexpr size_t kMinUnits = 3;

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Status NoSpeech(size_t units) {
  return Internal("the model's answer holds " + std::to_string(units) +
                  " audio units, fewer than the 3 a spoken answer needs (was it cut short by max_tokens?)")
      .WithErrorCode("audio_missing");
}

}  // namespace

struct SpeechAnswerWriter::Choice {
  int index = 0;
  std::string audio_id;
  SpeechTextScrubber scrubber;
  size_t vocoded = 0;   // units handed to a chunk decode
  int pending = 0;      // chunk decodes running
  bool ended = false;   // its finish_reason arrived
  std::map<size_t, std::string> chunks;  // slot -> its pcm16, until the whole is stored
  bool storing = false;
  size_t final_slot = 0;  // the slot of its last audio delta (stored object)
};

SpeechAnswerWriter::SpeechAnswerWriter(std::shared_ptr<ResponseWriter> client, DecodeFn decode, StoreFn store,
                                       SpeechAnswerOptions options)
    : client_(std::move(client)), decode_(std::move(decode)), store_(std::move(store)), options_(std::move(options)) {}

SpeechAnswerWriter::~SpeechAnswerWriter() = default;

SpeechAnswerWriter::Choice& SpeechAnswerWriter::ChoiceAt(int index) {
  for (auto& c : choices_) {
    if (c->index == index) return *c;
  }
  auto c = std::make_unique<Choice>();
  c->index = index;
  c->audio_id = "audio_" + client_->request_id() + "_" + std::to_string(index);
  choices_.push_back(std::move(c));
  return *choices_.back();
}

// ---- whole answers -------------------------------------------------------

bool SpeechAnswerWriter::Send(HttpResponse response) {
  if (response.status != 200) return client_->Send(std::move(response));
  Json j = Json::parse(response.body, nullptr, false);
  if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array()) return client_->Send(std::move(response));
  std::vector<std::pair<size_t, SpeechJob>> jobs;
  {
    std::lock_guard lock(mu_);
    for (size_t ci = 0; ci < j["choices"].size(); ++ci) {
      Json& choice = j["choices"][ci];
      if (!choice.is_object() || !choice.contains("message") || !choice["message"].is_object()) continue;
      Json& message = choice["message"];
      SpeechTextScrubber s;
      std::string transcript;
      if (message.contains("content") && message["content"].is_string()) {
        transcript = s.Push(message["content"].get<std::string>()).transcript;
      }
      transcript += s.Finish().transcript;
      if (s.units().size() < kMinUnits) return client_->Send(ErrorResponse(NoSpeech(s.units().size())));
      message["content"] = nullptr;
      whole_sites_.push_back(WholeSite{.choice = ci, .transcript = transcript});
      jobs.emplace_back(whole_sites_.size() - 1,
                        SpeechJob{.units = s.units(), .speaker = options_.speaker, .format = options_.format});
    }
    if (jobs.empty()) return client_->Send(std::move(response));
    whole_pending_ = static_cast<int>(jobs.size());
    whole_answer_ = std::move(j);
    whole_response_ = std::move(response);
  }
  for (auto& [site, job] : jobs) {
    decode_(std::move(job), [self = shared_from_this(), site](StatusOr<SpokenAudio> a) { self->WholeDone(site, std::move(a)); });
  }
  return true;
}

void SpeechAnswerWriter::WholeDone(size_t site, StatusOr<SpokenAudio> audio) {
  std::lock_guard lock(mu_);
  whole_sites_[site].audio = std::move(audio);
  if (--whole_pending_ > 0) return;
  for (const WholeSite& s : whole_sites_) {
    if (!s.audio.ok()) {
      client_->Send(ErrorResponse(s.audio.status()));
      return;
    }
  }
  for (const WholeSite& s : whole_sites_) {
    Json& choice = whole_answer_["choices"][s.choice];
    const std::string id = "audio_" + client_->request_id() + "_" + std::to_string(s.choice);
    choice["message"]["audio"] = Json{{"id", id},
                                      {"data", Base64Encode(s.audio->bytes)},
                                      {"expires_at", s.audio->expires_at},
                                      {"transcript", s.transcript},
                                      {"url", s.audio->url},
                                      {"format", s.audio->format},
                                      {"duration", s.audio->duration}};
    if (choice.contains("finish_reason") && choice["finish_reason"] == "tool_calls" &&
        !choice["message"].contains("tool_calls")) {
      choice["finish_reason"] = "stop";
    }
  }
  whole_response_.body = Dump(whole_answer_);
  client_->Send(std::move(whole_response_));
}

// ---- streams -------------------------------------------------------------

bool SpeechAnswerWriter::StartStream(int status, HttpHeaders headers) {
  {
    std::lock_guard lock(mu_);
    streaming_ = status == 200 && headers.GetOr("content-type", "").find("text/event-stream") != std::string::npos;
    passthrough_ = !streaming_;
  }
  return client_->StartStream(status, std::move(headers));
}

bool SpeechAnswerWriter::Write(std::string_view chunk) {
  std::vector<Job> jobs;
  {
    std::lock_guard lock(mu_);
    if (passthrough_) return client_->WriteNoWait(chunk);
    if (failed_) return false;
    partial_.append(chunk);
    SplitSseEvents(
        partial_, [&](const std::string& data) { EditEvent(data, &jobs); },
        [&](std::string event) { slots_.push_back(Slot{.data = "\x01" + std::move(event)}); });
    Flush();
    if (failed_) return false;
  }
  Launch(std::move(jobs));  // outside the lock: a decode may finish at once
  return !client_->client_gone();
}

std::string SpeechAnswerWriter::AudioEvent(int choice, const Json& audio) const {
  Json event = Json::parse(header_.empty() ? "{}" : header_, nullptr, false);
  if (!event.is_object()) event = Json::object();
  event["choices"] = Json::array(
      {Json{{"index", choice}, {"delta", Json{{"audio", audio}}}, {"logprobs", nullptr}, {"finish_reason", nullptr}}});
  return Dump(event);
}

void SpeechAnswerWriter::EditEvent(std::string_view data, std::vector<Job>* jobs) {
  Json j = data.find("\"choices\"") == std::string_view::npos ? Json() : Json::parse(data, nullptr, false);
  if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) {
    slots_.push_back(Slot{.data = std::string(data)});  // usage, [DONE], errors: in order, behind the audio
    return;
  }
  Json header = Json::object();
  for (const char* k : {"id", "object", "created", "model"}) {
    if (j.contains(k)) header[k] = j[k];
  }
  header_ = Dump(header);
  std::vector<Json> endings;  // choices' finish events, sent after their audio
  for (Json& ch : j["choices"]) {
    if (!ch.is_object()) continue;
    Choice& c = ChoiceAt(ch.value("index", 0));
    std::string transcript;
    if (ch.contains("delta") && ch["delta"].is_object()) {
      Json& delta = ch["delta"];
      if (delta.contains("content") && delta["content"].is_string()) {
        transcript = c.scrubber.Push(delta["content"].get<std::string>()).transcript;
        delta.erase("content");
      }
    }
    const bool ends = ch.contains("finish_reason") && !ch["finish_reason"].is_null();
    if (ends) transcript += c.scrubber.Finish().transcript;
    if (!transcript.empty()) ch["delta"]["audio"] = Json{{"id", c.audio_id}, {"transcript", transcript}};
    if (ends) {
      c.ended = true;
      if (c.scrubber.units().size() < kMinUnits) return Fail(NoSpeech(c.scrubber.units().size()));
      if (ch["finish_reason"] == "tool_calls" && !ch["delta"].contains("tool_calls")) ch["finish_reason"] = "stop";
      Json ending = ch;
      ending["delta"] = Json::object();
      endings.push_back(std::move(ending));
      ch["finish_reason"] = nullptr;
    }
    // The text first, then the chunks its units completed.
    if (ch.contains("delta") && ch["delta"].is_object() && !ch["delta"].empty()) {
      Json event = j;
      event["choices"] = Json::array({ch});
      slots_.push_back(Slot{.data = Dump(event)});
    }
    Chunks(c, ends, jobs);
  }
  for (Json& ending : endings) {
    Json event = j;
    event["choices"] = Json::array({std::move(ending)});
    slots_.push_back(Slot{.data = Dump(event)});
  }
}

void SpeechAnswerWriter::Chunks(Choice& c, bool final, std::vector<Job>* jobs) {
  const std::vector<int32_t>& units = c.scrubber.units();
  auto launch = [&](size_t last, bool is_last) {
    slots_.push_back(Slot{.ready = false});
    jobs->push_back(Job{.job = SpeechJob{.units = units,
                                         .speaker = options_.speaker,
                                         .format = "pcm16",
                                         .range = std::make_pair<int64_t, int64_t>(c.vocoded, last)},
                        .slot = first_slot_ + slots_.size() - 1,
                        .choice = c.index,
                        .last = is_last});
    c.vocoded = last;
    ++c.pending;
  };
  const int64_t learnt = options_.right_context ? options_.right_context() : -1;
  const size_t chunk = static_cast<size_t>(options_.chunk_units),
               ahead = static_cast<size_t>(std::max(options_.lookahead_units, learnt));
  // Strictly more than a chunk and its lookahead: the last chunk (launched
  // at the end) always has a unit, so it is the one that stores the whole.
  while (units.size() > c.vocoded + chunk + ahead) launch(c.vocoded + chunk, false);
  if (!final) return;
  if (units.size() > c.vocoded) launch(units.size(), false);
  // The stored whole: a slot filled once every chunk is in.
  slots_.push_back(Slot{.ready = false});
  c.final_slot = first_slot_ + slots_.size() - 1;
}

void SpeechAnswerWriter::Launch(std::vector<Job> jobs) {
  for (Job& j : jobs) {
    decode_(std::move(j.job), [self = shared_from_this(), slot = j.slot, choice = j.choice, last = j.last](
                                  StatusOr<SpokenAudio> a) { self->ChunkDone(slot, choice, last, std::move(a)); });
  }
}

void SpeechAnswerWriter::ChunkDone(size_t slot, int choice, bool, StatusOr<SpokenAudio> audio) {
  std::unique_lock lock(mu_);
  if (failed_) return;
  if (!audio.ok()) return Fail(audio.status());
  Choice& c = ChoiceAt(choice);
  --c.pending;
  Slot& s = slots_[slot - first_slot_];
  s.data = AudioEvent(choice, Json{{"id", c.audio_id}, {"data", Base64Encode(audio->bytes)}});
  s.ready = true;
  c.chunks[slot] = std::move(audio->bytes);
  if (c.ended && c.pending == 0 && !c.storing) {
    // Every chunk of this choice is in: the whole, stored in the requested format.
    c.storing = true;
    std::string pcm;
    for (auto& [at, bytes] : c.chunks) pcm += bytes;  // slot order is unit order
    c.chunks.clear();
    const size_t final_slot = c.final_slot;
    const std::string id = c.audio_id;
    Flush();  // the chunks go out while the whole is encoded
    lock.unlock();
    StatusOr<SpokenAudio> stored = store_(pcm);
    lock.lock();
    if (failed_) return;
    if (!stored.ok()) return Fail(stored.status());
    Slot& f = slots_[final_slot - first_slot_];
    f.data = AudioEvent(choice, Json{{"id", id},
                                     {"expires_at", stored->expires_at},
                                     {"url", stored->url},
                                     {"format", stored->format},
                                     {"duration", stored->duration}});
    f.ready = true;
  }
  Flush();
}

void SpeechAnswerWriter::Flush() {
  while (!slots_.empty() && slots_.front().ready) {
    Slot& s = slots_.front();
    if (!s.data.empty() && s.data[0] == '\x01') {
      client_->WriteNoWait(std::string_view(s.data).substr(1));
    } else {
      client_->WriteSseEventNoWait(s.data);
    }
    slots_.pop_front();
    ++first_slot_;
  }
  if (slots_.empty() && finish_asked_) client_->Finish();
}

void SpeechAnswerWriter::Fail(const Status& status) {
  failed_ = true;
  slots_.clear();
  client_->WriteSseEventNoWait(status.ToOpenAiJson());
  client_->WriteSseEventNoWait("[DONE]");
  client_->Finish();
}

bool SpeechAnswerWriter::Finish() {
  std::lock_guard lock(mu_);
  if (failed_) return false;
  if (passthrough_ || slots_.empty()) return client_->Finish();
  finish_asked_ = true;
  return true;
}

}  // namespace omni::orchestrator
