// Builders and readers for the image answer writer's stream tests
// (image_answer_stream_test.cc, image_answer_stream_failure_test.cc): the
// upstream's chunks as the LLM server writes them, and the events the fake
// client received, parsed.
#pragma once

#include "services/orchestrator/image_answer_test_util.h"

namespace omni::orchestrator::image_test {

inline std::string Data(const Json& j) { return "data: " + j.dump() + "\n\n"; }

constexpr char kDone[] = "data: [DONE]\n\n";

inline std::string Chunk(Json delta, Json finish = nullptr, int index = 0) {
  Json choices = Json::array();
  choices.push_back({{"index", index}, {"delta", std::move(delta)}, {"logprobs", nullptr}, {"finish_reason", finish}});
  return Data({{"id", "chatcmpl-1"},
               {"object", "chat.completion.chunk"},
               {"created", 1700000000},
               {"model", "omni"},
               {"choices", std::move(choices)}});
}
inline std::string TextChunk(std::string text, int index = 0) { return Chunk({{"content", std::move(text)}}, nullptr, index); }
inline std::string FinishChunk(std::string reason, int index = 0) { return Chunk(Json::object(), reason, index); }
inline std::string CallAnnounce(const std::string& id, int index = 0, int call = 0) {
  Json calls = Json::array();
  calls.push_back({{"index", call},
                   {"id", id},
                   {"type", "function"},
                   {"function", {{"name", kCallName}, {"arguments", ""}}}});
  return Chunk({{"tool_calls", std::move(calls)}}, nullptr, index);
}
inline std::string CallArgs(std::string fragment, int index = 0, int call = 0) {
  Json calls = Json::array();
  calls.push_back({{"index", call}, {"function", {{"arguments", std::move(fragment)}}}});
  return Chunk({{"tool_calls", std::move(calls)}}, nullptr, index);
}

// How an image call's arguments are cut into deltas.
enum class Cut { kBlockThenClose, kTokenByToken, kOneFragment };

// The argument fragments of call `n`; `block_done` is the index of the first
// fragment after which the block is complete.
inline std::vector<std::string> ArgFragments(int n, Cut cut, size_t* block_done) {
  std::vector<std::string> out;
  switch (cut) {
    case Cut::kBlockThenClose:
      out = {"{\"discrete_image_token\": \"" + Block(n), "\"}"};
      *block_done = 0;
      break;
    case Cut::kTokenByToken:
      out.push_back("{\"discrete_image_token\": \"");
      for (const std::string& t : BlockTokens(n)) out.push_back(t);
      *block_done = out.size() - 1;
      out.push_back("\"");
      out.push_back("}");
      break;
    case Cut::kOneFragment:
      out = {Arguments(Block(n))};
      *block_done = 0;
      break;
  }
  return out;
}

struct ClientEvent {
  bool done = false;  // data: [DONE]
  Json json;
};

inline std::vector<ClientEvent> EventsOf(FakeClient& client) {
  const std::string all = client.streamed();
  EXPECT_FALSE(HasImageText(all)) << all;
  std::vector<ClientEvent> out;
  SseParser parser;
  for (SseEvent& e : parser.Feed(all)) {
    ClientEvent c;
    if (e.data == "[DONE]") {
      c.done = true;
    } else {
      c.json = Json::parse(e.data, nullptr, false);
      EXPECT_FALSE(c.json.is_discarded()) << e.data;
    }
    out.push_back(std::move(c));
  }
  return out;
}

inline const Json* ChoiceIn(const ClientEvent& e, int index) {
  if (e.done || !e.json.contains("choices")) return nullptr;
  for (const Json& c : e.json.at("choices")) {
    if (c.value("index", -1) == index) return &c;
  }
  return nullptr;
}

constexpr size_t kNone = static_cast<size_t>(-1);

inline size_t FinishAt(const std::vector<ClientEvent>& events, int index) {
  for (size_t i = 0; i < events.size(); ++i) {
    const Json* c = ChoiceIn(events[i], index);
    if (c && c->contains("finish_reason") && !c->at("finish_reason").is_null()) return i;
  }
  return kNone;
}
inline size_t DoneAt(const std::vector<ClientEvent>& events) {
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].done) return i;
  }
  return kNone;
}
inline size_t ImageAt(const std::vector<ClientEvent>& events, int index, const std::string& url) {
  for (size_t i = 0; i < events.size(); ++i) {
    const Json* c = ChoiceIn(events[i], index);
    if (!c || !c->contains("delta")) continue;
    const std::vector<std::string> urls = ImageUrls(c->at("delta"));
    if (std::find(urls.begin(), urls.end(), url) != urls.end()) return i;
  }
  return kNone;
}
inline std::string TextOf(const std::vector<ClientEvent>& events, int index) {
  std::string text;
  for (const ClientEvent& e : events) {
    const Json* c = ChoiceIn(e, index);
    if (c && c->contains("delta") && c->at("delta").contains("content") && c->at("delta").at("content").is_string()) {
      text += c->at("delta").at("content").get<std::string>();
    }
  }
  return text;
}
// The tool call deltas the client saw for choice `index`.
inline std::vector<Json> CallsOf(const std::vector<ClientEvent>& events, int index) {
  std::vector<Json> calls;
  for (const ClientEvent& e : events) {
    const Json* c = ChoiceIn(e, index);
    if (c && c->contains("delta") && c->at("delta").contains("tool_calls")) {
      for (const Json& call : c->at("delta").at("tool_calls")) calls.push_back(call);
    }
  }
  return calls;
}
inline size_t Count(const std::vector<ClientEvent>& events, bool (*pred)(const ClientEvent&)) {
  size_t n = 0;
  for (const ClientEvent& e : events) n += pred(e) ? 1 : 0;
  return n;
}

inline HttpHeaders EventStream() {
  HttpHeaders h;
  h.Set("content-type", "text/event-stream");
  return h;
}

// The upstream's whole stream for one image call (block `n`): announce,
// arguments, finish, [DONE], and the relay's Finish.
inline void StreamOneCallToTheEnd(ImageAnswerWriter& writer, int n) {
  ASSERT_TRUE(writer.StartStream(200, EventStream()));
  EXPECT_TRUE(writer.Write(CallAnnounce("call_1")));
  EXPECT_TRUE(writer.Write(CallArgs(Arguments(Block(n)))));
  EXPECT_TRUE(writer.Write(FinishChunk("tool_calls")));
  EXPECT_TRUE(writer.Write(kDone));
  writer.Finish();
}

inline bool IsErrorEvent(const ClientEvent& e) { return !e.done && e.json.contains("error"); }
inline bool IsDone(const ClientEvent& e) { return e.done; }

}  // namespace omni::orchestrator::image_test
