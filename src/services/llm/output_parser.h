// OutputParser: the Omni model's chat output, streamed as text, split into
// what the OpenAI API returns (spec/omni-model.md "Prompt layout", "What the
// model emits"):
//
//   reasoning   the thought the generation prompt opened ("<think>\n"), up
//               to "</think>"; everything when it never closes
//   content     the rest; leading newlines after "</think>" dropped (as
//               vLLM's reasoning parsers do); <assistant_transcript> tags
//               removed, their text kept; <user_transcript> blocks removed
//   tool calls  <tool_call>name\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>\n</tool_call>
//               for a tool of the request: arguments are a JSON object, a
//               value kept as a string when its schema type is string and
//               parsed as JSON otherwise (a string when that fails), keys
//               and values trimmed, as vLLM's GLM-4.5 parser types them;
//               <audio_decoder_call><speaker_info>{json}</speaker_info>
//               <discrete_audio>units</discrete_audio></audio_decoder_call>
//               becomes a call of `audio_synthesis` (OmniServe's parser);
//               with raw_speech (force_audio) both stay content as written,
//               so the caller gets the units as they are generated.
//
// Streaming: text that could still be the start of a tag is held back, so
// a tag split across pushes at any byte parses the same as whole. A tool
// call is announced (index, id, name) once its name line is complete and
// names a tool of the request; its arguments follow one whole argument at
// a time ('{"k": v', ', "k2": v2', then '}'), so the fragments joined are
// the final arguments. Malformed output (an unknown tool, text where a tag
// must be, a call still open at the end) is returned as content, tags and
// all, never dropped; a call already announced then stays out of calls().
//
// Thread-safety: one per choice; not thread-safe.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "api/openai/openai_types.h"

namespace omni::llm {

struct ToolCallDelta {
  int index = 0;             // among this choice's calls, from 0
  std::string id;            // set on the call's first delta
  std::string name;          // set on the call's first delta
  std::string arguments;     // the next fragment of the arguments JSON
};

struct ParsedToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON object text
};

struct OutputDelta {
  std::string reasoning;
  std::string content;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
};

// The tool the audio form becomes (OmniServe's name).
inline constexpr std::string_view kAudioSynthesisTool = "audio_synthesis";

class OutputParser {
 public:
  struct Options {
    bool starts_in_reasoning = true;  // the prompt ended inside <think>
    bool parse_tool_calls = true;     // false: tool-call text stays content (tool_choice none)
    bool raw_speech = false;          // transcript and audio tags stay content (force_audio)
    std::span<const openai::ToolSpec> tools;  // must outlive the parser
    std::function<std::string()> new_call_id;  // ids of tool calls
  };
  explicit OutputParser(Options options);

  OutputDelta Push(std::string_view text);
  // The end of the output: held text is released, an open call becomes content.
  OutputDelta Finish();

  // Complete calls, in order (those announced and then found malformed are not here).
  const std::vector<ParsedToolCall>& calls() const { return calls_; }
  bool in_reasoning() const { return state_ == State::kReasoning; }

 private:
  enum class State { kReasoning, kContent, kUserTranscript, kToolCall, kAudioCall };
  // One step over buffer_; false when it needs more text.
  bool Step(OutputDelta* out, bool at_end);
  bool StepToolCall(OutputDelta* out, bool at_end);
  bool StepAudioCall(OutputDelta* out, bool at_end);
  void EmitContent(std::string_view text, OutputDelta* out);
  // The open call is malformed: its raw text becomes content.
  void AbandonCall(OutputDelta* out);

  Options options_;
  State state_;
  std::string buffer_;        // text not yet consumed
  bool content_started_ = false;  // past the leading newlines after </think>
  std::string held_space_;    // whitespace in content, sent once text follows it

  // The open call.
  std::string call_raw_;      // its text so far, "<tool_call>" included
  int call_index_ = -1;       // announced index, -1 before
  bool name_done_ = false;
  const openai::ToolSpec* call_tool_ = nullptr;
  std::string call_args_;     // arguments JSON so far, without the closing '}'
  int call_num_args_ = 0;
  int next_index_ = 0;
  std::vector<ParsedToolCall> calls_;
};

}  // namespace omni::llm
