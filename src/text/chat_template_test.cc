// Expected prompts written by hand from spec/omni-model.md and OmniServe's
// track_b chat_template.jinja.
#include "text/chat_template.h"

#include <gtest/gtest.h>

namespace omni {
namespace {

ContentPart Text(std::string t) { return {ContentKind::kText, std::move(t), "", ""}; }
ContentPart Media(ContentKind k) { return {k, "", "", ""}; }
ChatMessage Msg(Role role, std::vector<ContentPart> parts) {
  ChatMessage m;
  m.role = role;
  m.parts = std::move(parts);
  return m;
}

std::string Render(const std::vector<ChatMessage>& messages, const std::vector<ToolDefinition>& tools = {},
                   ChatTemplateOptions options = {}) {
  auto r = RenderChatPrompt(messages, tools, options);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r->text : "";
}

TEST(MediaDurationText, TwoDecimalsOfAFiniteNonNegativeNumber) {
  EXPECT_EQ(MediaDurationText("3.000000"), "3.00");
  EXPECT_EQ(MediaDurationText("1.375"), "1.38");
  EXPECT_EQ(MediaDurationText("0"), "0.00");
  for (const char* bad : {"", "-1", "nan", "inf", "3s", " 3", "1e999"}) EXPECT_EQ(MediaDurationText(bad), "") << bad;
}

TEST(ChatTemplate, TextTurnsAndGenerationPrompt) {
  std::vector<ChatMessage> m = {Msg(Role::kSystem, {Text("You are helpful.")}), Msg(Role::kUser, {Text("Hi")})};
  EXPECT_EQ(Render(m),
            "<|im_start|>system\nYou are helpful.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n");
  EXPECT_EQ(Render(m, {}, {.add_generation_prompt = true, .skip_reasoning = true}),
            "<|im_start|>system\nYou are helpful.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\n");
  EXPECT_EQ(Render({Msg(Role::kUser, {Text("Hi")})}, {}, {.add_generation_prompt = false}),
            "<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplate, MultiTurnHistoryHasNoThinkBlock) {
  std::vector<ChatMessage> m = {Msg(Role::kUser, {Text("Q1")}),
                                Msg(Role::kAssistant, {Text("<think>\nold thought\n</think>\n\nA1")}),
                                Msg(Role::kSystem, {Text("late system")}), Msg(Role::kUser, {Text("Q2")}),
                                Msg(Role::kAssistant, {Text("<think>\nnew thought\n</think>\n\nA2")})};
  EXPECT_EQ(Render(m, {}, {.add_generation_prompt = false}),
            "<|im_start|>user\nQ1<|im_end|>\n"
            "<|im_start|>assistant\nA1<|im_end|>\n"
            "<|im_start|>system\nlate system<|im_end|>\n"
            "<|im_start|>user\nQ2<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nnew thought\n</think>\n\nA2<|im_end|>\n");
}

TEST(ChatTemplate, ImageAudioVideoBlocksAndPlaceholders) {
  std::vector<ChatMessage> m = {
      Msg(Role::kUser, {Media(ContentKind::kImage), Text("이 표정 어때?")}),
      Msg(Role::kAssistant, {Text("좋네요.")}),
      Msg(Role::kUser, {Media(ContentKind::kVideo), Media(ContentKind::kAudio), Media(ContentKind::kImage)})};
  auto r = RenderChatPrompt(m, {}, {});
  ASSERT_TRUE(r.ok());
  const std::string image0 =
      "<|mime_start|>{\"id\": \"image_00\", \"type\": \"image/jpeg\", \"filename\": \"image.jpg\"}<|mime_end|>\n"
      "<|discrete_image_start|><|DISCRETE_IMAGE_PAD|><|discrete_image_end|>\n"
      "<|image_start|><|IMAGE_PAD|><|image_end|>";
  const std::string video0 =
      "<|mime_start|>{\"id\": \"video_00\", \"type\": \"video/mp4\", \"filename\": \"video.mp4\"}<|mime_end|>\n"
      "<|video_aux_start|>다음 중 video_duration은 비디오 길이 정보입니다. 참고하여 답변하세요. "
      "{\"video_duration\": \"<|video_meta_duration|>\"}<|video_aux_end|>\n"
      "<|video_start|><|VIDEO_PAD|><|video_end|>";
  const std::string audio0 =
      "<|mime_start|>{\"id\": \"audio_00\", \"type\": \"audio/mpeg\", \"filename\": \"user_query.wav\"}"
      "<|mime_end|>\n"
      "<|audio_aux_start|>다음 중 audio_duration은 오디오 길이 정보입니다. 참고하여 답변하세요. "
      "{\"audio_duration\": \"<|audio_meta_duration|>\"}<|audio_aux_end|>\n"
      "<|discrete_audio_start|><|DISCRETE_AUDIO_PAD|><|discrete_audio_end|>\n"
      "<|audio_start|><|AUDIO_PAD|><|audio_end|>";
  const std::string image1 =
      "<|mime_start|>{\"id\": \"image_01\", \"type\": \"image/jpeg\", \"filename\": \"image.jpg\"}<|mime_end|>\n"
      "<|discrete_image_start|><|DISCRETE_IMAGE_PAD|><|discrete_image_end|>\n"
      "<|image_start|><|IMAGE_PAD|><|image_end|>";
  EXPECT_EQ(r->text, "<|im_start|>user\n" + image0 + "\n이 표정 어때?<|im_end|>\n" +
                         "<|im_start|>assistant\n좋네요.<|im_end|>\n" + "<|im_start|>user\n" + video0 + "\n" +
                         audio0 + "\n" + image1 + "<|im_end|>\n" + "<|im_start|>assistant\n<think>\n");

  struct Want {
    PlaceholderKind kind;
    std::string_view token;
    int media_index, message_index, part_index;
  };
  std::vector<Want> want = {
      {PlaceholderKind::kDiscreteImage, "<|DISCRETE_IMAGE_PAD|>", 0, 0, 0},
      {PlaceholderKind::kImage, "<|IMAGE_PAD|>", 0, 0, 0},
      {PlaceholderKind::kVideoDuration, "<|video_meta_duration|>", 0, 2, 0},
      {PlaceholderKind::kVideo, "<|VIDEO_PAD|>", 0, 2, 0},
      {PlaceholderKind::kAudioDuration, "<|audio_meta_duration|>", 0, 2, 1},
      {PlaceholderKind::kDiscreteAudio, "<|DISCRETE_AUDIO_PAD|>", 0, 2, 1},
      {PlaceholderKind::kAudio, "<|AUDIO_PAD|>", 0, 2, 1},
      {PlaceholderKind::kDiscreteImage, "<|DISCRETE_IMAGE_PAD|>", 1, 2, 2},
      {PlaceholderKind::kImage, "<|IMAGE_PAD|>", 1, 2, 2},
  };
  ASSERT_EQ(r->placeholders.size(), want.size());
  // With the measured durations the hints carry them and no duration placeholder is left.
  {
    std::vector<ChatMessage> timed = m;
    for (ContentPart& p : timed[2].parts) {
      if (p.kind == ContentKind::kAudio || p.kind == ContentKind::kVideo) p.duration = MediaDurationText("3.000000");
    }
    auto t = RenderChatPrompt(timed, {}, ChatTemplateOptions{.add_generation_prompt = true});
    ASSERT_TRUE(t.ok());
    EXPECT_NE(t->text.find("{\"audio_duration\": \"3.00\"}"), std::string::npos) << t->text;
    EXPECT_NE(t->text.find("{\"video_duration\": \"3.00\"}"), std::string::npos) << t->text;
    EXPECT_EQ(t->text.find("meta_duration"), std::string::npos);
    EXPECT_EQ(t->placeholders.size(), want.size() - 2);
  }
  size_t search_from = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const MediaPlaceholder& p = r->placeholders[i];
    size_t at = r->text.find(want[i].token, search_from);
    EXPECT_EQ(p.kind, want[i].kind) << i;
    EXPECT_EQ(p.byte_offset, at) << i;
    EXPECT_EQ(p.media_index, want[i].media_index) << i;
    EXPECT_EQ(p.message_index, want[i].message_index) << i;
    EXPECT_EQ(p.part_index, want[i].part_index) << i;
    search_from = at + 1;
  }
}

TEST(ChatTemplate, CustomMimeTypeIsJsonEscaped) {
  ContentPart img = Media(ContentKind::kImage);
  img.mime_type = "image/png";
  img.filename = "a \"b\".png";
  std::string text = Render({Msg(Role::kUser, {img})}, {}, {.add_generation_prompt = false});
  EXPECT_NE(text.find("{\"id\": \"image_00\", \"type\": \"image/png\", \"filename\": \"a \\\"b\\\".png\"}"),
            std::string::npos)
      << text;
}

TEST(ChatTemplate, ToolsToolCallsAndToolResults) {
  ToolDefinition t2i;
  t2i.name = "t2i_model_generation";
  t2i.description = "Generates an \"RGB\" image.";
  t2i.parameters_json = "{\"type\": \"object\", \"required\": [\"discrete_image_token\"]}";
  ToolDefinition weather;
  weather.name = "get_weather";
  weather.parameters_json = "{}";

  ChatMessage call = Msg(Role::kAssistant, {});
  call.tool_calls = {{"call_1", "t2i_model_generation", {{"discrete_image_token", "<|vision1|>"}}}};
  ChatMessage two_calls = Msg(Role::kAssistant, {Text("Checking.")});
  two_calls.tool_calls = {{"c2", "get_weather", {{"city", "Seoul"}, {"days", "3"}}},
                          {"c3", "get_weather", {}}};
  ChatMessage result1 = Msg(Role::kTool, {Text("{\"ok\": true}")});
  result1.name = "get_weather";
  ChatMessage result2 = Msg(Role::kTool, {Text("rainy")});
  result2.name = "get_weather";
  ChatMessage image_result = Msg(Role::kTool, {Text("done")});
  image_result.name = "t2i_model_generation";

  std::vector<ChatMessage> m = {Msg(Role::kSystem, {Text("S")}), Msg(Role::kUser, {Text("Draw")}), call,
                                image_result, two_calls, result1, result2};
  EXPECT_EQ(Render(m, {t2i, weather}),
            "<|im_start|>system\nS\n\n# Tools\n\n"
            "You may call one or more functions to assist with the user query.\n\n"
            "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
            "{\"type\": \"function\", \"function\": {\"name\": \"t2i_model_generation\", "
            "\"description\": \"Generates an \\\"RGB\\\" image.\", "
            "\"parameters\": {\"type\": \"object\", \"required\": [\"discrete_image_token\"]}}}"
            "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {}}}"
            "\n</tools>\n\n"
            "For each function call, output the function name and arguments within the following XML format:\n"
            "<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>\n<arg_value>{arg-value-1}</arg_value>\n"
            "<arg_key>{arg-key-2}</arg_key>\n<arg_value>{arg-value-2}</arg_value>\n...\n</tool_call><|im_end|>\n"
            "<|im_start|>user\nDraw<|im_end|>\n"
            "<|im_start|>assistant\n<tool_call>t2i_model_generation\n"
            "<arg_key>discrete_image_token</arg_key>\n<arg_value><|vision1|></arg_value>\n</tool_call><|im_end|>\n"
            "<|im_start|>tool\n<tool_response>t2i_model_generation\ndone\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\nChecking.\n<tool_call>get_weather\n"
            "<arg_key>city</arg_key>\n<arg_value>Seoul</arg_value>\n"
            "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>\n"
            "<tool_call>get_weather\n</tool_call><|im_end|>\n"
            "<|im_start|>tool\n<tool_response>get_weather\n{\"ok\": true}\n</tool_response>"
            "\n<tool_response>get_weather\nrainy\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n<think>\n");
  // Tools without a system message: the tools block alone.
  std::string no_system = Render({Msg(Role::kUser, {Text("x")})}, {weather}, {.add_generation_prompt = false});
  EXPECT_EQ(no_system.rfind("<|im_start|>system\n# Tools\n\n", 0), 0u) << no_system;
}

TEST(ChatTemplate, ReasoningContentField) {
  ChatMessage a = Msg(Role::kAssistant, {Text("answer")});
  a.has_reasoning_content = true;
  a.reasoning_content = "\nthought\n";
  ChatMessage t = Msg(Role::kTool, {Text("r")});
  // After the last user turn a non-empty thought is kept even if not last.
  EXPECT_EQ(Render({Msg(Role::kUser, {Text("q")}), a, t}, {}, {.add_generation_prompt = false}),
            "<|im_start|>user\nq<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nthought\n</think>\n\nanswer<|im_end|>\n"
            "<|im_start|>tool\n<tool_response>\nr\n</tool_response><|im_end|>\n");
}

TEST(ChatTemplate, RejectsInvalidConversations) {
  EXPECT_EQ(RenderChatPrompt({}, {}, {}).status().code(), StatusCode::kInvalidArgument);
  std::vector<ChatMessage> media_in_assistant = {Msg(Role::kAssistant, {Media(ContentKind::kImage)})};
  EXPECT_EQ(RenderChatPrompt(media_in_assistant, {}, {}).status().code(), StatusCode::kInvalidArgument);
  ChatMessage user = Msg(Role::kUser, {Text("x")});
  user.tool_calls = {{"id", "f", {}}};
  std::vector<ChatMessage> calls_in_user = {user};
  EXPECT_EQ(RenderChatPrompt(calls_in_user, {}, {}).status().code(), StatusCode::kInvalidArgument);
  std::vector<ToolDefinition> unnamed = {ToolDefinition{}};
  std::vector<ChatMessage> ok = {Msg(Role::kUser, {Text("x")})};
  EXPECT_EQ(RenderChatPrompt(ok, unnamed, {}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace omni
