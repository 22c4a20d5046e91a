// SpeechStage: the orchestrator's way to the audio decoder. The units of a
// spoken answer become a `POST GATEWAY/v1/decode` (docs/DECODER.md, "Audio"):
//
//   whole     the answer's units -> an audio object in the requested format,
//             which the decoder writes to the store; the stage reads its
//             bytes back (the chat answer carries them) and makes the URL the
//             client gets (client_url.h)
//   chunk     units [first, last) of a growing answer, vocoded with the
//             context around them and answered inline as pcm16 (nothing
//             stored): a stream's audio deltas
//   finish    a stream's joined pcm16 -> the requested format, written to
//             the store by the stage itself (no second vocoding) -> its URL
//
// Decoder calls run on a pool of speech.max_concurrent threads; more wait.
// Errors carry OpenAI codes: audio_decoder_busy (429), audio_decode_timeout
// (504), audio_decoder_unavailable (503), audio_decode_failed (500).
// Thread-safety: thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "net/metrics.h"
#include "services/orchestrator/orchestrator_config.h"
#include "storage/object_store.h"
#include "storage/signed_url.h"

namespace omni::orchestrator {

class Upstream;

struct SpokenAudio {
  std::string bytes;    // the audio in `format`
  std::string format;   // wav, flac, mp3, opus, aac, pcm16
  std::string mime;
  std::string key;      // the stored object (whole, finish)
  std::string url;      // the client's URL of it
  int64_t expires_at = 0;  // unix seconds: when the URL stops working
  double duration = 0;     // seconds
};

struct SpeechJob {
  std::vector<int32_t> units;
  SpeakerSpec speaker;
  std::string format = "wav";
  // A chunk: units [first, last) of `units` (inline pcm16 answer).
  std::optional<std::pair<int64_t, int64_t>> range;
};

class SpeechStage {
 public:
  // All must outlive the stage; `store` and `signer` may be null when no
  // audio decoder is configured.
  SpeechStage(const OrchestratorConfig& config, Upstream& upstream, ObjectStore* store, const ObjectUrlSigner* signer,
              const Clock& clock, MetricsRegistry& metrics);
  ~SpeechStage();

  bool enabled() const;
  void Stop();

  // audio.voice -> the decoder's speaker: a configured voice, else an OpenAI
  // voice by its usual gender, else the name as a decoder speaker id.
  SpeakerSpec VoiceSpeaker(std::string_view voice) const;

  // The decoder's right context in units for this speaker's kind (a table
  // voice or a cloned one), from its answers; -1 until one said.
  int64_t RightContext(const SpeakerSpec& speaker) const;

  // One decoder call; blocks up to speech.decode_s.
  StatusOr<SpokenAudio> Decode(const SpeechJob& job, const std::string& public_base, const std::string& request_id);
  // On the stage's pool; `done` runs there.
  void DecodeAsync(SpeechJob job, std::string public_base, std::string request_id,
                   std::function<void(StatusOr<SpokenAudio>)> done);
  // pcm16 at 24 kHz -> `format`, stored, with its URL. Blocks.
  StatusOr<SpokenAudio> Store(std::string_view pcm16, const std::string& format, const std::string& public_base);

 private:
  StatusOr<SpokenAudio> Stored(std::string key, std::string bytes, std::string format, std::string mime,
                               double duration, const std::string& public_base);

  const OrchestratorConfig& config_;
  Upstream& upstream_;
  ObjectStore* store_;
  const ObjectUrlSigner* signer_;
  const Clock& clock_;
  CounterFamily* calls_;  // by result
  Histogram* seconds_;
  std::atomic<bool> stopping_{false};
  // The audio decoder's receptive field in units, from its answers' "context",
  // for table voices [0] and cloned ones [1] (another checkpoint; the kind
  // from the answer's speaker). A chunk's request then carries only the units
  // its samples depend on, not everything said so far.
  struct Context {
    int64_t left = 0, right = 0;
  };
  std::optional<Context> LearntContext(bool cloned) const;  // none until an answer said
  void Learn(bool cloned, Context c);
  // left << 32 | right (each below 2^30), -1 until one came: one atomic word.
  std::atomic<int64_t> context_[2] = {-1, -1};
  ThreadPool pool_;  // declared last: joined first
};

}  // namespace omni::orchestrator
