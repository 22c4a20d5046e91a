// The OpenAI Speech API on the orchestrator (docs/API.md, "Speech API"), a
// translation around the chat path as the Images and Transcriptions APIs
// are: the text becomes a streamed chat request that asks for a spoken
// answer (modalities audio, pcm16), and the audio deltas that chat answer
// carries (speech_answer.h) become the Speech API's answer, encoded as they
// come, so the first audio leaves while the LLM still generates.
//
//   POST /v1/audio/speech  JSON:
//     model            "" or absent: the caller's default model
//     input            required: the text, 1..4096 characters
//     voice            required: a voice (as the chat API's audio.voice)
//     response_format  mp3 (default), opus, aac, flac, wav, pcm
//     speed            0.25..4; only 1 is supported (400 otherwise: the
//                      vocoder has no tempo control)
//     stream_format    audio (default): the encoded audio as the body,
//                      streamed (chunked); sse: events
//                      {"type": "speech.audio.delta", "audio": base64 of
//                      encoded bytes} then {"type": "speech.audio.done",
//                      "usage": {input_tokens, output_tokens, total_tokens}}
//     instructions     optional text: the system message
// Unknown fields are refused (400 naming them). The instruction the LLM
// gets is SpeechInstruction(input).
//
// Thread-safety: pure functions; the answer writer as any ResponseWriter.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "net/http_server.h"

namespace omni::orchestrator {

struct SpeechApiRequest {
  std::string model;  // "": the caller's default
  std::string input;
  std::string voice;
  std::string response_format = "mp3";  // as our audio formats name it: pcm is "pcm16"
  bool sse = false;
  std::string instructions;
};

StatusOr<SpeechApiRequest> ParseSpeechApiRequest(std::string_view body);

// "Say the following text aloud, exactly as written:\n" + input.
std::string SpeechInstruction(std::string_view input);

// The streamed chat request that speaks `request` (max_tokens sized for the
// input's length).
std::string SpeechApiChatBody(const SpeechApiRequest& request, std::string_view model);

// The client's writer behind the chat answer (a SpeechAnswerWriter's pcm16
// stream): the Speech API's answer in `request`'s format and stream format.
std::shared_ptr<ResponseWriter> MakeSpeechApiWriter(std::shared_ptr<ResponseWriter> client,
                                                    const SpeechApiRequest& request);

}  // namespace omni::orchestrator
