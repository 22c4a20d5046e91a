// The spoken part of a chat answer: a ResponseWriter in front of the
// client's that turns the LLM's audio block (speech_text.h) into OpenAI's
// audio fields, so that no unit or speech tag ever reaches the client
// (docs/API.md, "Audio output").
//
//   whole answer   each choice's units are vocoded in one decoder call
//                  (speech_stage.h); message.content becomes null and
//                  message.audio = {id, data: base64 audio in the requested
//                  format, transcript, expires_at, url (omniserve: the
//                  object's URL), format, duration}
//   stream         transcript text goes out at once as delta.audio.transcript;
//                  units are vocoded chunk by chunk while the LLM still
//                  generates (chunk_units each, once lookahead_units more
//                  have arrived: the vocoder's right context, so the joined
//                  chunks equal the whole answer's audio), each sent as
//                  delta.audio.data (base64 pcm16, 24 kHz mono, as OpenAI
//                  streams audio); at the choice's end the joined audio is
//                  stored in the requested format and a last delta carries
//                  {id, expires_at, url, format, duration}; the finish, usage
//                  and [DONE] events wait behind the audio.
// An answer without at least 3 units (the LLM was cut short before it could
// speak) is an error: the whole answer's OpenAI error, or in a stream an
// error event and [DONE].
//
// Thread-safety: driven by the relay on one thread while decodes finish on
// the stage's; it locks.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "net/http_server.h"
#include "services/orchestrator/speech_stage.h"
#include "services/orchestrator/speech_text.h"

namespace omni::orchestrator {

struct SpeechAnswerOptions {
  SpeakerSpec speaker;
  std::string format = "wav";
  int64_t chunk_units = 25;
  int64_t lookahead_units = 12;
  // The audio decoder's right context in units for this answer's speaker,
  // as its answers reported it (SpeechStage::RightContext), or -1 before
  // any did. A chunk waits for at least that many units past it, whatever
  // lookahead_units says, so its last samples are the one-shot waveform's.
  std::function<int64_t()> right_context;
};

class SpeechAnswerWriter final : public ResponseWriter, public std::enable_shared_from_this<SpeechAnswerWriter> {
 public:
  // Starts one decoder call (SpeechStage::DecodeAsync); `done` may run on
  // any thread, exactly once.
  using DecodeFn = std::function<void(SpeechJob job, std::function<void(StatusOr<SpokenAudio>)> done)>;
  // pcm16 -> the requested format, stored (SpeechStage::Store); blocks.
  using StoreFn = std::function<StatusOr<SpokenAudio>(std::string_view pcm16)>;

  SpeechAnswerWriter(std::shared_ptr<ResponseWriter> client, DecodeFn decode, StoreFn store,
                     SpeechAnswerOptions options);
  ~SpeechAnswerWriter() override;

  bool Send(HttpResponse response) override;
  bool StartStream(int status, HttpHeaders headers) override;
  bool Write(std::string_view chunk) override;
  bool WriteNoWait(std::string_view chunk) override { return Write(chunk); }
  bool Finish() override;
  bool client_gone() const override { return client_->client_gone(); }
  void OnClientGone(std::function<void()> cb) override { client_->OnClientGone(std::move(cb)); }
  const std::string& request_id() const override { return client_->request_id(); }

 private:
  struct Choice;
  struct Slot {  // one event to send, in order; a chunk's waits for its audio
    std::string data;
    bool ready = true;
  };
  struct Job {  // a decode to start once the lock is released
    SpeechJob job;
    size_t slot;
    int choice;
    bool last;
  };

  // Under mu_.
  void EditEvent(std::string_view data, std::vector<Job>* jobs);
  void Chunks(Choice& c, bool final, std::vector<Job>* jobs);
  std::string AudioEvent(int choice, const nlohmann::ordered_json& audio) const;
  void Flush();
  void Fail(const Status& status);
  Choice& ChoiceAt(int index);
  // Outside mu_.
  void Launch(std::vector<Job> jobs);
  void ChunkDone(size_t slot, int choice, bool last, StatusOr<SpokenAudio> audio);
  void WholeDone(size_t site, StatusOr<SpokenAudio> audio);

  std::shared_ptr<ResponseWriter> client_;
  const DecodeFn decode_;
  const StoreFn store_;
  const SpeechAnswerOptions options_;

  std::mutex mu_;
  bool streaming_ = false, passthrough_ = false, failed_ = false, finish_asked_ = false;
  std::string partial_;  // bytes of an event not yet complete
  std::string header_;   // the last chunk's id/object/created/model, as a JSON object
  std::vector<std::unique_ptr<Choice>> choices_;
  size_t first_slot_ = 0;   // index of slots_.front()
  std::deque<Slot> slots_;
  // A whole answer waiting for its audio: per choice spoken, its index and transcript.
  HttpResponse whole_response_;
  nlohmann::ordered_json whole_answer_;
  struct WholeSite {
    size_t choice;
    std::string transcript;
    StatusOr<SpokenAudio> audio = Internal("pending");
  };
  std::vector<WholeSite> whole_sites_;
  int whole_pending_ = 0;
};

}  // namespace omni::orchestrator
