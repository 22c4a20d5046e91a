// The OpenAI Transcriptions API on the orchestrator (docs/API.md,
// "Transcriptions API"), as a translation around the chat path, like the
// Images API (images_api.h): the upload becomes a chat request in which the
// LLM hears the audio (an input_audio part) and is asked for a verbatim
// transcript; the chat answer becomes the Transcriptions answer.
//
//   POST /v1/audio/transcriptions  multipart/form-data:
//     file                      required: the audio (any kind DecodeAudio
//                               reads: wav, mp3, flac, ogg, m4a, aac, webm,
//                               mp4, ...); at most limits.max_seconds long
//     model                     "" or absent: the caller's default model
//     language                  ISO-639-1 code, 2 or 3 lowercase letters
//     prompt                    text that precedes the audio (names, spelling)
//     response_format           json (default), text, srt, verbose_json, vtt
//     temperature               0..1; default 0, OpenAI's default
//     timestamp_granularities[] "segment" (one segment spans the clip);
//                               "word" is refused: the model gives no timings
//     stream                    "false"; "true" is refused (not supported yet)
//     chunking_strategy         "auto", a server_vad object (as JSON text or
//                               as chunking_strategy[type] etc., the form the
//                               SDKs send): checked, no effect (the clip is
//                               heard whole)
//     include[]                 refused: OpenAI's one value, "logprobs", is
//                               not supported, anything else is unknown
// Unknown fields are refused (400 naming them), as the Images API does: a
// misspelt "langauge" would otherwise silently change the answer. A scalar
// field given twice is refused too. Every error is InvalidArgument with the
// field as param, except the file's own, which keep DecodeAudio's codes (400
// corrupt or truncated, 413 too long, 415 not audio) with param "file", and
// a body that is not multipart/form-data (400, no param).
//
// The instruction (TranscriptionInstruction) is, exactly:
//   "Transcribe this audio verbatim. Write only the words that are spoken,
//   in the language they are spoken in, with punctuation. Do not translate,
//   summarize, answer or comment, and add no timestamps or labels. If
//   nothing is spoken, write nothing."
// then, with a language, " The speech is in Korean." (the language's English
// name for a known code, else "in the language with the ISO 639 code
// \"xx\""), then, with a prompt, "\n\nThe text that comes just before this
// audio, for context and spelling (it is not part of the audio; do not repeat
// it):\n" and the prompt.
//
// The transcript is the chat answer's message.content, its thought
// (<think>...</think>, or a prefix ending in </think>) and stray special
// tokens (<|...|>) removed, trimmed. Answers, by format:
//   json          {"text", "usage": {"type": "duration", "seconds": S}}
//   verbose_json  {"task": "transcribe", "language", "duration", "text",
//                  "segments": [one segment, 0 to duration; none for an
//                  empty transcript], "usage"}
//   text          text/plain: the transcript and "\n" ("" when empty)
//   srt           text/plain: "1\n00:00:00,000 --> 00:00:03,000\nTEXT\n\n"
//   vtt           text/vtt: "WEBVTT\n\n00:00:00.000 --> 00:00:03.000\nTEXT\n\n"
// S is the duration rounded up to whole seconds (whisper-1's billing shape;
// OpenAI's token usage needs the audio/text split of the prompt, which the
// chat answer does not give). A cue's text has no blank line (lines are
// trimmed, empty ones dropped), "-->" becomes "->" (as whisper writes its
// subtitles) and in vtt '&' and '<' are escaped; a cue ends in a blank line,
// as whisper's writers end theirs; an empty transcript has no cue.
// Untrusted input: fuzzed by fuzz/transcriptions_request_fuzz.cc.
//
// Thread-safety: pure functions; the answer writer as any ResponseWriter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "media/media_kind.h"
#include "net/http_server.h"

namespace omni::orchestrator {

enum class TranscriptionFormat { kJson, kText, kSrt, kVerboseJson, kVtt };

struct TranscriptionLimits {
  double max_seconds = 600;        // longer audio is 413
  size_t max_prompt_bytes = 4096;  // `prompt`, UTF-8 bytes
};

struct TranscriptionRequest {
  std::string model;     // "": the caller's default
  std::string filename;  // the file part's, as sent ("" if none)
  // What the LLM hears: the upload's bytes as sent when they are an audio
  // file; for a video container (mp4, webm, mkv, mov, avi: the media stage
  // takes only audio in an audio part) its soundtrack as 16 kHz mono 16-bit
  // PCM WAV.
  std::string audio;
  media::MediaKind kind = media::MediaKind::kUnknown;       // of `audio`, sniffed
  media::MediaKind file_kind = media::MediaKind::kUnknown;  // of the upload, sniffed
  std::string mime;                                         // of `audio`: "audio/mpeg", ...
  double seconds = 0;                                       // the audio's duration
  std::string language;                                     // "" if not given
  std::string prompt;
  TranscriptionFormat format = TranscriptionFormat::kJson;
  double temperature = 0;
};

// Blocks while it decodes the audio (to check it and learn its duration;
// a 10-minute MP3 takes about a second): call it off the io threads.
StatusOr<TranscriptionRequest> ParseTranscriptionRequest(std::string_view content_type, std::string_view body,
                                                         const TranscriptionLimits& limits);

// The transcript's token bound: 64 + 16 per second of audio (speech runs at
// 2-4 words a second), so a model that loops stops well before the context
// length.
int64_t TranscriptionMaxTokens(double seconds);

// The text part of the chat request (the header comment has it word for word).
std::string TranscriptionInstruction(const TranscriptionRequest& request);

// The chat request that transcribes `request`: {"model" (absent when
// `model` is ""), "messages": [{"role": "user", "content": [{"type":
// "input_audio", "input_audio": {"data": base64, "format": "wav" | "mp3" |
// ... (the kind's extension)}}, {"type": "text", "text": instruction}]}],
// "chat_template_kwargs": {"skip_reasoning": true}, "temperature",
// "max_tokens": TranscriptionMaxTokens(seconds), "stream": false}.
std::string TranscriptionChatBody(const TranscriptionRequest& request, std::string_view model);

// The transcript in a chat message's content: thought and <|...|> tokens
// removed, trimmed.
std::string TranscriptFromChatContent(std::string_view content);

// The language's name as whisper-1 reports it in verbose_json ("korean" for
// "ko"); `code` itself when unknown, "unknown" when empty.
std::string WhisperLanguageName(std::string_view code);

// "HH:MM:SS,mmm" (srt, `decimal` ',') or "HH:MM:SS.mmm" (vtt, '.'), rounded
// to the millisecond; hours take as many digits as they need.
std::string SubtitleTimestamp(double seconds, char decimal);

// The whole answer body for `format` (what the writer sends with 200).
std::string TranscriptionAnswerBody(TranscriptionFormat format, std::string_view transcript, double seconds,
                                    std::string_view language);
// "application/json", "text/plain; charset=utf-8" or "text/vtt; charset=utf-8".
std::string_view TranscriptionContentType(TranscriptionFormat format);

// In front of the client's writer: a 200 chat completion becomes the
// Transcriptions answer in `format`, for audio `seconds` long in `language`
// (the request's code, "" if none); errors pass through as they are; a 200
// without a choice is a 500.
std::shared_ptr<ResponseWriter> MakeTranscriptionAnswerWriter(std::shared_ptr<ResponseWriter> client,
                                                              TranscriptionFormat format, double seconds,
                                                              std::string language);

}  // namespace omni::orchestrator
