// A chat request's audio output options, as the OpenAI API has them:
//
//   "modalities": ["text", "audio"],             audio output on ("audio" listed)
//   "audio": {"voice": "alloy", "format": "wav"}  voice: an OpenAI voice or a
//                                                 speaker id of the decoder;
//                                                 format: wav | mp3 | flac |
//                                                 opus | aac | pcm16
//
// and omniserve's extras: "audio": {"speaker": {"id"} | {"gender", "age"} |
// {"ref_audio": URL}} (wins over voice; ref_audio clones the clip's voice
// through the decoder's zero-shot vocoder), and OmniServe's top-level
// "is_ref_audio": true, which clones the voice of the messages' last audio
// part (input_audio data, or an audio_url). Audio output is off when "modalities" does not list
// "audio"; then "audio" is ignored, as OpenAI ignores it.
// Errors: InvalidArgument naming the param (modalities, audio.voice,
// audio.format, audio.speaker, is_ref_audio).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "services/orchestrator/orchestrator_config.h"

namespace omni::orchestrator {

struct SpeechRequestOptions {
  std::string voice;           // as given ("" when none)
  std::optional<SpeakerSpec> speaker;  // audio.speaker, when given
  std::string format = "wav";
};

// nullopt: no audio output asked for.
StatusOr<std::optional<SpeechRequestOptions>> ParseSpeechOptions(std::string_view body);

// `body` with "force_audio": true and without "modalities", "audio" and
// "is_ref_audio" (the
// LLM server's form of a spoken answer, docs/LLM_SERVER.md).
StatusOr<std::string> ForceAudioBody(std::string_view body);

}  // namespace omni::orchestrator
