// The Omni output parser on model output written by hand from
// spec/omni-model.md ("Prompt layout", "What the model emits") and
// OmniServe's parser, whole and split across pushes at every byte.
#include "services/llm/output_parser.h"

#include <gtest/gtest.h>

#include <array>
#include <map>
#include <string>
#include <vector>

namespace omni::llm {
namespace {

using openai::ParamType;
using openai::ToolParameter;
using openai::ToolSpec;

std::vector<ToolSpec> WeatherTools() {
  return {ToolSpec{.name = "get_weather",
                   .parameters = {ToolParameter{.name = "city", .type = ParamType::kString},
                                  ToolParameter{.name = "days", .type = ParamType::kInteger},
                                  ToolParameter{.name = "metric", .type = ParamType::kBoolean},
                                  ToolParameter{.name = "extra", .type = ParamType::kObject}}},
          ToolSpec{.name = "get_time", .parameters = {}}};
}

struct Parsed {
  std::string reasoning, content;
  std::vector<ParsedToolCall> calls;            // OutputParser::calls()
  std::map<int, ParsedToolCall> streamed;        // joined deltas by index
};

Parsed ParseAll(const std::vector<std::string>& pieces, const std::vector<ToolSpec>& tools, bool in_reasoning = true,
           bool parse_tools = true) {
  int next_id = 0;
  OutputParser parser(OutputParser::Options{.starts_in_reasoning = in_reasoning,
                                            .parse_tool_calls = parse_tools,
                                            .tools = tools,
                                            .new_call_id = [&] { return "call_" + std::to_string(next_id++); }});
  Parsed p;
  auto take = [&](const OutputDelta& d) {
    p.reasoning += d.reasoning;
    p.content += d.content;
    for (const ToolCallDelta& t : d.tool_calls) {
      ParsedToolCall& c = p.streamed[t.index];
      if (!t.id.empty()) {
        EXPECT_TRUE(c.id.empty()) << "a call announced twice";
        c.id = t.id;
        c.name = t.name;
      }
      c.arguments += t.arguments;
    }
  };
  for (const std::string& piece : pieces) take(parser.Push(piece));
  take(parser.Finish());
  p.calls = parser.calls();
  return p;
}

// Whole, split in two at every byte, and one byte at a time: all the same.
void ExpectParses(const std::string& text, const std::vector<ToolSpec>& tools, const std::string& reasoning,
                  const std::string& content, const std::vector<std::pair<std::string, std::string>>& calls,
                  bool in_reasoning = true) {
  std::vector<std::vector<std::string>> splits = {{text}};
  for (size_t cut = 1; cut < text.size(); ++cut) splits.push_back({text.substr(0, cut), text.substr(cut)});
  std::vector<std::string> bytes;
  for (char c : text) bytes.push_back(std::string(1, c));
  splits.push_back(bytes);
  for (const auto& pieces : splits) {
    const std::string where = pieces.size() == 2 ? "cut at " + std::to_string(pieces[0].size())
                                                 : std::to_string(pieces.size()) + " pieces";
    const Parsed p = ParseAll(pieces, tools, in_reasoning);
    EXPECT_EQ(p.reasoning, reasoning) << where;
    EXPECT_EQ(p.content, content) << where;
    ASSERT_EQ(p.calls.size(), calls.size()) << where;
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(p.calls[i].name, calls[i].first) << where;
      EXPECT_EQ(p.calls[i].arguments, calls[i].second) << where;
      EXPECT_EQ(p.calls[i].id, "call_" + std::to_string(i)) << where;
      // The streamed fragments join to the same call.
      const ParsedToolCall& s = p.streamed.at(static_cast<int>(i));
      EXPECT_EQ(s.id, p.calls[i].id) << where;
      EXPECT_EQ(s.name, calls[i].first) << where;
      EXPECT_EQ(s.arguments, calls[i].second) << where;
    }
  }
}

TEST(OutputParserTest, ThoughtThenAnswer) {
  ExpectParses("The user greets me.\n</think>\n\nHello there!", {}, "The user greets me.\n", "Hello there!", {});
}

TEST(OutputParserTest, ThoughtNeverClosedIsAllReasoning) {
  ExpectParses("Still thinking about <tool_call> and </thin", WeatherTools(),
               "Still thinking about <tool_call> and </thin", "", {});
}

TEST(OutputParserTest, SkipReasoningStartsInContent) {
  ExpectParses("Plain answer, no thought.", {}, "", "Plain answer, no thought.", {}, /*in_reasoning=*/false);
}

TEST(OutputParserTest, ToolCallArgumentsTypedBySchema) {
  const std::string text =
      "Need the weather.\n</think>\n\n<tool_call>get_weather\n"
      "<arg_key>city</arg_key>\n<arg_value>서울</arg_value>\n"
      "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n"
      "<arg_key>metric</arg_key>\n<arg_value>true</arg_value>\n"
      "</tool_call>";
  ExpectParses(text, WeatherTools(), "Need the weather.\n", "",
               {{"get_weather", "{\"city\": \"서울\", \"days\": 3, \"metric\": true}"}});
}

TEST(OutputParserTest, StringParameterStaysAStringAndUnknownKeysAreParsedAsJson) {
  const std::string text =
      "</think><tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value> 42 </arg_value>\n"
      "<arg_key>extra</arg_key>\n<arg_value>{\"a\": [1, 2]}</arg_value>\n"
      "<arg_key>note</arg_key>\n<arg_value>not json</arg_value>\n"
      "<arg_key>count</arg_key>\n<arg_value>7</arg_value>\n</tool_call>";
  ExpectParses(text, WeatherTools(), "", "",
               {{"get_weather", "{\"city\": \"42\", \"extra\": {\"a\": [1, 2]}, \"note\": \"not json\", \"count\": 7}"}});
}

TEST(OutputParserTest, TwoCallsWithTextAroundThem) {
  const std::string text =
      "</think>\n\nChecking both.\n<tool_call>get_time\n</tool_call>\n"
      "<tool_call>get_weather\n<arg_key>days</arg_key><arg_value>-2</arg_value></tool_call>\n";
  ExpectParses(text, WeatherTools(), "", "Checking both.", {{"get_time", "{}"}, {"get_weather", "{\"days\": -2}"}});
}

TEST(OutputParserTest, UnknownToolIsReturnedAsText) {
  const std::string call = "<tool_call>launch_rocket\n<arg_key>when</arg_key>\n<arg_value>now</arg_value>\n</tool_call>";
  ExpectParses("</think>\n\n" + call, WeatherTools(), "", call, {});
}

TEST(OutputParserTest, UnclosedCallIsReturnedAsText) {
  const std::string call = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Par";
  ExpectParses("ok</think>" + call, WeatherTools(), "ok", call, {});
}

TEST(OutputParserTest, TextWhereATagMustBeIsReturnedAsText) {
  const std::string call = "<tool_call>get_weather\n<arg_key>city</arg_key> oops <arg_value>x</arg_value>\n</tool_call>";
  ExpectParses("</think>" + call + " after", WeatherTools(), "", call + " after", {});
}

TEST(OutputParserTest, ToolChoiceNoneLeavesCallsAsText) {
  const std::string call = "<tool_call>get_time\n</tool_call>";
  const Parsed p = ParseAll({"</think>" + call}, WeatherTools(), true, /*parse_tools=*/false);
  EXPECT_EQ(p.content, call);
  EXPECT_TRUE(p.calls.empty());
}

TEST(OutputParserTest, AudioFormBecomesAudioSynthesisAndTranscriptsGoToContent) {
  const std::string text =
      "</think>\n\n<user_transcript>what time is it</user_transcript>\n"
      "<assistant_transcript>It is noon.</assistant_transcript>\n"
      "<audio_decoder_call><speaker_info>{\"gender\": \"f\", \"age\": 30}</speaker_info>\n"
      "<discrete_audio><|audio1|><|audio22|><|audio6560|></discrete_audio></audio_decoder_call>";
  ExpectParses(text, {}, "", "It is noon.",
               {{"audio_synthesis",
                 "{\"speaker_info\": {\"gender\": \"f\", \"age\": 30}, "
                 "\"discrete_audio\": \"<|audio1|><|audio22|><|audio6560|>\", \"units\": [1, 22, 6560]}"}});
}

TEST(OutputParserTest, AudioFormWithoutSpeakerAndWithBadSpeakerJson) {
  ExpectParses("</think><audio_decoder_call><discrete_audio><|audio5|></discrete_audio></audio_decoder_call>", {},
               "", "", {{"audio_synthesis", "{\"speaker_info\": {}, \"discrete_audio\": \"<|audio5|>\", \"units\": [5]}"}});
  ExpectParses(
      "</think><audio_decoder_call><speaker_info>male voice</speaker_info><discrete_audio><|audio0|></discrete_audio>"
      "</audio_decoder_call>",
      {}, "", "",
      {{"audio_synthesis",
        "{\"speaker_info\": {\"raw\": \"male voice\"}, \"discrete_audio\": \"<|audio0|>\", \"units\": [0]}"}});
}

TEST(OutputParserTest, MalformedAudioFormIsReturnedAsText) {
  const std::string block = "<audio_decoder_call><speaker_info>{}</speaker_info>units?</audio_decoder_call>";
  ExpectParses("</think>" + block, {}, "", block, {});
  const std::string open = "<audio_decoder_call><speaker_info>{}</speaker_info><discrete_audio><|audio1|>";
  ExpectParses("</think>" + open, {}, "", open, {});
}

TEST(OutputParserTest, ImageToolCallCarriesItsBlockVerbatim) {
  std::string block = "<|discrete_image_start|><|vision_ratio_4:3|><|vision_token|>";
  for (int row = 0; row < 2; ++row) block += "<|vision7|><|vision65535|><|vision_eol|>";
  block += "<|vision_eof|><|discrete_image_end|>";
  const std::vector<ToolSpec> tools = {ToolSpec{
      .name = "t2i_model_generation",
      .parameters = {ToolParameter{.name = "discrete_image_token", .type = ParamType::kString}}}};
  ExpectParses("</think>\n\n<tool_call>t2i_model_generation\n<arg_key>discrete_image_token</arg_key>\n<arg_value>" +
                   block + "</arg_value>\n</tool_call>",
               tools, "", "", {{"t2i_model_generation", "{\"discrete_image_token\": \"" + block + "\"}"}});
}

// The name line's limit (256 bytes) is on where its end starts, whatever
// splits the text: a padded name whose end tag straddles byte 256 is still a
// call, one whose end starts past it is text.
TEST(OutputParserTest, NameLineLimitIsIndependentOfSplits) {
  // Each way a name line ends, the rest of a well-formed call, its arguments.
  const std::vector<std::array<std::string, 3>> ends = {
      {"<arg_key>", "k</arg_key><arg_value>1</arg_value></tool_call>", "{\"k\": 1}"},
      {"</tool_call>", "", "{}"},
      {"\n", "</tool_call>", "{}"}};
  for (const auto& [end, rest, args] : ends) {
    for (size_t pad = 245; pad <= 256; ++pad) {
      const std::string name = std::string(pad - 8, ' ') + "get_time";  // `pad` bytes before the end
      ExpectParses("<tool_call>" + name + end + rest, WeatherTools(), "", "", {{"get_time", args}},
                   /*in_reasoning=*/false);
    }
    const std::string too_long = "<tool_call>" + std::string(249, ' ') + "get_time" + end + rest;
    ExpectParses(too_long, WeatherTools(), "", too_long, {}, /*in_reasoning=*/false);
  }
}

}  // namespace
}  // namespace omni::llm
