#include "text/chat_template.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/json_string.h"
#include "text/omni_tokens.h"

namespace omni {
namespace {

// JSON string literal as Python's json.dumps(ensure_ascii=False) writes it,
// which is what the template's tojson produced in training.
std::string JsonQuote(std::string_view s) {
  std::string out;
  AppendJsonString(s, &out);
  return out;
}

std::string TextOf(const ChatMessage& m) {
  std::string text;
  for (const ContentPart& p : m.parts) {
    if (p.kind == ContentKind::kText) text += p.text;
  }
  return text;
}

std::string_view StripNewlines(std::string_view s, bool left, bool right) {
  while (left && !s.empty() && s.front() == '\n') s.remove_prefix(1);
  while (right && !s.empty() && s.back() == '\n') s.remove_suffix(1);
  return s;
}

class PromptWriter {
 public:
  void Append(std::string_view s) { out_.text.append(s); }
  // The current medium's block starts here.
  void BeginMedium() { block_offset_ = out_.text.size(); }
  void Placeholder(PlaceholderKind kind, std::string_view token, int media_index, int message, int part) {
    out_.placeholders.push_back({kind, out_.text.size(), block_offset_, media_index, message, part});
    out_.text.append(token);
  }
  RenderedPrompt Take() { return std::move(out_); }

 private:
  RenderedPrompt out_;
  size_t block_offset_ = 0;
};

void MimeLine(PromptWriter& w, const char* id_prefix, int index, const ContentPart& part,
              std::string_view default_type, std::string_view default_filename) {
  char id[32];
  std::snprintf(id, sizeof(id), "%s_%02d", id_prefix, index);
  w.BeginMedium();
  w.Append(kMimeStart);
  w.Append("{\"id\": " + JsonQuote(id) + ", \"type\": " +
           JsonQuote(part.mime_type.empty() ? default_type : part.mime_type) +
           ", \"filename\": " + JsonQuote(part.filename.empty() ? default_filename : part.filename) + "}");
  w.Append(kMimeEnd);
  w.Append("\n");
}

}  // namespace

std::string MediaDurationText(std::string_view seconds) {
  const std::string text(seconds);
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || text[0] < '0' || text[0] > '9' || end != text.c_str() + text.size() || !std::isfinite(value) ||
      value < 0) {
    return {};
  }
  char out[32];
  std::snprintf(out, sizeof(out), "%.2f", value);
  return out;
}

namespace {

struct MediaCounters {
  int image = 0;
  int audio = 0;
  int video = 0;
};

void UserTurn(PromptWriter& w, const ChatMessage& m, int msg_index, MediaCounters& counters) {
  w.Append(kImStart);
  w.Append("user\n");
  for (size_t i = 0; i < m.parts.size(); ++i) {
    const ContentPart& p = m.parts[i];
    int part = static_cast<int>(i);
    if (i > 0) w.Append("\n");
    switch (p.kind) {
      case ContentKind::kText:
        w.Append(p.text);
        break;
      case ContentKind::kImage: {
        int n = counters.image++;
        MimeLine(w, "image", n, p, "image/jpeg", "image.jpg");
        w.Append(kDiscreteImageStart);
        w.Placeholder(PlaceholderKind::kDiscreteImage, kDiscreteImagePad, n, msg_index, part);
        w.Append(kDiscreteImageEnd);
        w.Append("\n");
        w.Append(kImageStart);
        w.Placeholder(PlaceholderKind::kImage, kImagePad, n, msg_index, part);
        w.Append(kImageEnd);
        break;
      }
      case ContentKind::kAudio: {
        int n = counters.audio++;
        MimeLine(w, "audio", n, p, "audio/mpeg", "user_query.wav");
        w.Append(kAudioAuxStart);
        w.Append("다음 중 audio_duration은 오디오 길이 정보입니다. 참고하여 답변하세요. {\"audio_duration\": \"");
        if (p.duration.empty()) {
          w.Placeholder(PlaceholderKind::kAudioDuration, kAudioMetaDuration, n, msg_index, part);
        } else {
          w.Append(p.duration);
        }
        w.Append("\"}");
        w.Append(kAudioAuxEnd);
        w.Append("\n");
        w.Append(kDiscreteAudioStart);
        w.Placeholder(PlaceholderKind::kDiscreteAudio, kDiscreteAudioPad, n, msg_index, part);
        w.Append(kDiscreteAudioEnd);
        w.Append("\n");
        w.Append(kAudioStart);
        w.Placeholder(PlaceholderKind::kAudio, kAudioPad, n, msg_index, part);
        w.Append(kAudioEnd);
        break;
      }
      case ContentKind::kVideo: {
        int n = counters.video++;
        MimeLine(w, "video", n, p, "video/mp4", "video.mp4");
        w.Append(kVideoAuxStart);
        w.Append("다음 중 video_duration은 비디오 길이 정보입니다. 참고하여 답변하세요. {\"video_duration\": \"");
        if (p.duration.empty()) {
          w.Placeholder(PlaceholderKind::kVideoDuration, kVideoMetaDuration, n, msg_index, part);
        } else {
          w.Append(p.duration);
        }
        w.Append("\"}");
        w.Append(kVideoAuxEnd);
        w.Append("\n");
        w.Append(kVideoStart);
        w.Placeholder(PlaceholderKind::kVideo, kVideoPad, n, msg_index, part);
        w.Append(kVideoEnd);
        break;
      }
    }
  }
  w.Append(kImEnd);
  w.Append("\n");
}

void AssistantTurn(PromptWriter& w, const ChatMessage& m, bool after_last_user, bool is_last) {
  std::string text = TextOf(m);
  std::string_view content = text;
  std::string reasoning;
  if (m.has_reasoning_content) {
    reasoning = m.reasoning_content;
  } else if (size_t first_end = content.find(kThinkEnd); first_end != std::string_view::npos) {
    // content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n')
    std::string_view before = StripNewlines(content.substr(0, first_end), false, true);
    size_t open = before.rfind(kThinkStart);
    if (open != std::string_view::npos) before.remove_prefix(open + kThinkStart.size());
    reasoning = std::string(StripNewlines(before, true, false));
    // content.split('</think>')[-1].lstrip('\n')
    content = StripNewlines(content.substr(content.rfind(kThinkEnd) + kThinkEnd.size()), true, false);
  }
  w.Append(kImStart);
  w.Append("assistant\n");
  if (after_last_user && (is_last || !reasoning.empty())) {
    w.Append(kThinkStart);
    w.Append("\n");
    w.Append(StripNewlines(reasoning, true, true));
    w.Append("\n");
    w.Append(kThinkEnd);
    w.Append("\n\n");
  }
  w.Append(content);
  for (size_t i = 0; i < m.tool_calls.size(); ++i) {
    const ToolCall& call = m.tool_calls[i];
    if (i > 0 || !content.empty()) w.Append("\n");
    w.Append(kToolCallStart);
    w.Append(call.name);
    w.Append("\n");
    for (const ToolCallArgument& arg : call.arguments) {
      w.Append(kArgKeyStart);
      w.Append(arg.key);
      w.Append(kArgKeyEnd);
      w.Append("\n");
      w.Append(kArgValueStart);
      w.Append(arg.value);
      w.Append(kArgValueEnd);
      w.Append("\n");
    }
    w.Append(kToolCallEnd);
  }
  w.Append(kImEnd);
  w.Append("\n");
}

void ToolsSystemTurn(PromptWriter& w, const ChatMessage* system, std::span<const ToolDefinition> tools) {
  w.Append(kImStart);
  w.Append("system\n");
  if (system != nullptr) {
    w.Append(TextOf(*system));
    w.Append("\n\n");
  }
  w.Append(
      "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
      "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n");
  for (const ToolDefinition& t : tools) {
    std::string fn = "{\"name\": " + JsonQuote(t.name);
    if (!t.description.empty()) fn += ", \"description\": " + JsonQuote(t.description);
    fn += ", \"parameters\": " + t.parameters_json + "}";
    w.Append("{\"type\": \"function\", \"function\": " + fn + "}");
  }
  w.Append(
      "\n</tools>\n\nFor each function call, output the function name and arguments within the following "
      "XML format:\n<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>\n"
      "<arg_value>{arg-value-1}</arg_value>\n<arg_key>{arg-key-2}</arg_key>\n"
      "<arg_value>{arg-value-2}</arg_value>\n...\n</tool_call>");
  w.Append(kImEnd);
  w.Append("\n");
}

Status Validate(std::span<const ChatMessage> messages, std::span<const ToolDefinition> tools) {
  if (messages.empty()) return InvalidArgument("messages must not be empty").WithParam("messages");
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    std::string where = "messages[" + std::to_string(i) + "]";
    if (m.role != Role::kUser) {
      for (const ContentPart& p : m.parts) {
        if (p.kind != ContentKind::kText) {
          return InvalidArgument(where + ": media content is only allowed in user messages").WithParam(where);
        }
      }
    }
    if (m.role != Role::kAssistant && !m.tool_calls.empty()) {
      return InvalidArgument(where + ": only assistant messages carry tool_calls").WithParam(where);
    }
    for (const ToolCall& c : m.tool_calls) {
      if (c.name.empty()) return InvalidArgument(where + ": a tool call needs a function name").WithParam(where);
    }
  }
  for (size_t i = 0; i < tools.size(); ++i) {
    if (tools[i].name.empty()) {
      std::string where = "tools[" + std::to_string(i) + "]";
      return InvalidArgument(where + ": a tool needs a function name").WithParam(where);
    }
  }
  return Status::Ok();
}

}  // namespace

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kSystem: return "system";
    case Role::kUser: return "user";
    case Role::kAssistant: return "assistant";
    case Role::kTool: return "tool";
  }
  return "user";
}

StatusOr<RenderedPrompt> RenderChatPrompt(std::span<const ChatMessage> messages,
                                          std::span<const ToolDefinition> tools,
                                          const ChatTemplateOptions& options) {
  OMNI_RETURN_IF_ERROR(Validate(messages, tools));
  PromptWriter w;
  const ChatMessage* first_system = messages.front().role == Role::kSystem ? &messages.front() : nullptr;
  if (!tools.empty()) {
    ToolsSystemTurn(w, first_system, tools);
  } else if (first_system != nullptr) {
    w.Append(kImStart);
    w.Append("system\n");
    w.Append(TextOf(*first_system));
    w.Append(kImEnd);
    w.Append("\n");
  }
  int last_user = -1;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].role == Role::kUser) last_user = static_cast<int>(i);
  }
  MediaCounters counters;
  const int n = static_cast<int>(messages.size());
  for (int i = 0; i < n; ++i) {
    const ChatMessage& m = messages[i];
    switch (m.role) {
      case Role::kSystem:
        if (i == 0) break;  // rendered above
        w.Append(kImStart);
        w.Append("system\n");
        w.Append(TextOf(m));
        w.Append(kImEnd);
        w.Append("\n");
        break;
      case Role::kUser:
        UserTurn(w, m, i, counters);
        break;
      case Role::kAssistant:
        AssistantTurn(w, m, i > last_user, i == n - 1);
        break;
      case Role::kTool:
        if (i == 0 || messages[i - 1].role != Role::kTool) {
          w.Append(kImStart);
          w.Append("tool");
        }
        w.Append("\n<tool_response>" + m.name + "\n" + TextOf(m) + "\n</tool_response>");
        if (i == n - 1 || messages[i + 1].role != Role::kTool) {
          w.Append(kImEnd);
          w.Append("\n");
        }
        break;
    }
  }
  if (options.add_generation_prompt) {
    w.Append(kImStart);
    w.Append("assistant\n");
    w.Append(kThinkStart);
    w.Append("\n");
    if (options.skip_reasoning) {
      w.Append("\n");
      w.Append(kThinkEnd);
      w.Append("\n\n");
    }
  }
  return w.Take();
}

}  // namespace omni
