// ImageAnswerWriter on event streams, tested against its contract
// (image_answer.h), in front of a fake client and a fake decoder
// (image_answer_test_util.h): text, images and their order. Failures and
// cut-short output: image_answer_stream_failure_test.cc.
#include "services/orchestrator/image_answer_stream_test_util.h"

namespace omni::orchestrator {
namespace {

using namespace image_test;

TEST(ImageAnswerWriter, StreamTextPassesAsItComes) {
  FakeDecoder decoder(FakeDecoder::Mode::kAtOnce);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  ASSERT_TRUE(writer->StartStream(200, EventStream()));
  EXPECT_EQ(client->stream_status(), 200);
  EXPECT_TRUE(writer->Write(Chunk({{"role", "assistant"}, {"content", ""}})));
  EXPECT_TRUE(writer->Write(TextChunk("Hello")));
  EXPECT_EQ(TextOf(EventsOf(*client), 0), "Hello");
  EXPECT_TRUE(writer->Write(TextChunk(" a < b")));
  EXPECT_EQ(TextOf(EventsOf(*client), 0), "Hello a < b");
  EXPECT_TRUE(writer->Write(FinishChunk("stop")));
  EXPECT_TRUE(writer->Write(kDone));
  EXPECT_TRUE(writer->Finish());
  const std::vector<ClientEvent> events = EventsOf(*client);
  EXPECT_EQ(TextOf(events, 0), "Hello a < b");
  EXPECT_NE(FinishAt(events, 0), kNone);
  EXPECT_EQ(DoneAt(events), events.size() - 1);
  EXPECT_EQ(client->finishes(), 1);
  EXPECT_EQ(decoder.count(), 0u);
}

// One choice: text, an image call cut as `cut`, finish, [DONE], Finish().
// With a later decoder the image arrives after the upstream ended.
void StreamOneImageCall(Cut cut, FakeDecoder::Mode mode) {
  FakeDecoder decoder(mode);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  ASSERT_TRUE(writer->StartStream(200, EventStream()));
  EXPECT_TRUE(writer->Write(Chunk({{"role", "assistant"}, {"content", ""}})));
  EXPECT_TRUE(writer->Write(TextChunk("Here")));
  EXPECT_TRUE(writer->Write(TextChunk(" it is")));
  EXPECT_EQ(TextOf(EventsOf(*client), 0), "Here it is");  // text is not held behind the call

  EXPECT_TRUE(writer->Write(CallAnnounce("call_1")));
  size_t block_done = 0;
  const std::vector<std::string> fragments = ArgFragments(5, cut, &block_done);
  for (size_t i = 0; i < fragments.size(); ++i) {
    EXPECT_TRUE(writer->Write(CallArgs(fragments[i])));
    if (i < block_done) {
      EXPECT_EQ(decoder.count(), 0u) << "decode started before the block was complete, at " << i;
    }
  }
  ASSERT_EQ(decoder.count(), 1u);  // started before the upstream finished
  EXPECT_EQ(decoder.tokens(0), Block(5));
  EXPECT_TRUE(CallsOf(EventsOf(*client), 0).empty() || mode == FakeDecoder::Mode::kAtOnce)
      << "a raw tool call delta reached the client";

  EXPECT_TRUE(writer->Write(FinishChunk("tool_calls")));
  EXPECT_TRUE(writer->Write(kDone));
  writer->Finish();
  if (mode == FakeDecoder::Mode::kLater) {
    const std::vector<ClientEvent> before = EventsOf(*client);
    EXPECT_EQ(FinishAt(before, 0), kNone) << "finish went out before the image";
    EXPECT_EQ(DoneAt(before), kNone) << "[DONE] went out before the image";
    EXPECT_TRUE(CallsOf(before, 0).empty()) << "a raw tool call delta reached the client";
    EXPECT_EQ(client->finishes(), 0);
    decoder.Complete(0);
  }

  const std::vector<ClientEvent> events = EventsOf(*client);
  EXPECT_EQ(TextOf(events, 0), "Here it is");
  const size_t image = ImageAt(events, 0, UrlOf(5));
  const size_t finish = FinishAt(events, 0);
  const size_t done = DoneAt(events);
  ASSERT_NE(image, kNone) << client->streamed();
  ASSERT_NE(finish, kNone) << client->streamed();
  ASSERT_NE(done, kNone) << client->streamed();
  EXPECT_LT(image, finish);
  EXPECT_LT(finish, done);
  EXPECT_EQ(done, events.size() - 1);
  EXPECT_EQ(events.at(finish).json.at("choices").at(0).at("finish_reason"), "tool_calls");
  EXPECT_EQ(client->finishes(), 1);

  // The only call the client sees is the image's, with the URL as argument.
  const std::vector<Json> calls = CallsOf(events, 0);
  ASSERT_EQ(calls.size(), 1u) << client->streamed();
  EXPECT_EQ(calls[0].at("id"), "call_1");
  EXPECT_EQ(calls[0].at("function").at("name"), kCallName);
  EXPECT_EQ(ArgumentsOf(calls[0]), Json({{"discrete_image_token", UrlOf(5)}}));
  const Json& delta = events.at(image).json.at("choices").at(0).at("delta");
  EXPECT_TRUE(delta.contains("tool_calls")) << delta.dump();  // the image delta carries both
}

TEST(ImageAnswerWriter, StreamImageCallDecodedAtOnce) {
  for (Cut cut : {Cut::kBlockThenClose, Cut::kTokenByToken, Cut::kOneFragment}) {
    SCOPED_TRACE(static_cast<int>(cut));
    StreamOneImageCall(cut, FakeDecoder::Mode::kAtOnce);
  }
}

TEST(ImageAnswerWriter, StreamImageCallDecodedAfterTheUpstreamEnded) {
  for (Cut cut : {Cut::kBlockThenClose, Cut::kTokenByToken, Cut::kOneFragment}) {
    SCOPED_TRACE(static_cast<int>(cut));
    StreamOneImageCall(cut, FakeDecoder::Mode::kLater);
  }
}

// The whole upstream byte stream of StreamOneImageCall.
std::string ImageCallUpstream() {
  size_t block_done = 0;
  std::string s = Chunk({{"role", "assistant"}, {"content", ""}}) + TextChunk("Here") + TextChunk(" it is") +
                  CallAnnounce("call_1");
  for (const std::string& f : ArgFragments(5, Cut::kTokenByToken, &block_done)) s += CallArgs(f);
  return s + FinishChunk("tool_calls") + kDone;
}

TEST(ImageAnswerWriter, StreamEventsCutAcrossWritesAreReassembled) {
  const std::string upstream = ImageCallUpstream();
  std::vector<Json> reference;
  for (size_t size : {size_t{0}, size_t{1}, size_t{3}, size_t{7}, size_t{64}}) {
    SCOPED_TRACE(size);
    FakeDecoder decoder(FakeDecoder::Mode::kAtOnce);
    auto client = std::make_shared<FakeClient>();
    auto writer = MakeWriter(client, decoder);
    ASSERT_TRUE(writer->StartStream(200, EventStream()));
    if (size == 0) {
      EXPECT_TRUE(writer->Write(upstream));
    } else {
      for (size_t at = 0; at < upstream.size(); at += size) {
        EXPECT_TRUE(writer->Write(std::string_view(upstream).substr(at, size)));
      }
    }
    writer->Finish();
    ASSERT_EQ(decoder.count(), 1u);
    EXPECT_EQ(decoder.tokens(0), Block(5));
    std::vector<Json> got;
    for (const ClientEvent& e : EventsOf(*client)) got.push_back(e.done ? Json("[DONE]") : e.json);
    ASSERT_FALSE(got.empty());
    EXPECT_EQ(got.back(), Json("[DONE]"));
    EXPECT_EQ(client->finishes(), 1);
    if (reference.empty()) {
      reference = got;
    } else {
      EXPECT_EQ(got, reference);
    }
  }
}

TEST(ImageAnswerWriter, StreamContentBlockBecomesAnImageDelta) {
  for (FakeDecoder::Mode mode : {FakeDecoder::Mode::kAtOnce, FakeDecoder::Mode::kLater}) {
    SCOPED_TRACE(static_cast<int>(mode));
    FakeDecoder decoder(mode);
    auto client = std::make_shared<FakeClient>();
    auto writer = MakeWriter(client, decoder);
    ASSERT_TRUE(writer->StartStream(200, EventStream()));
    EXPECT_TRUE(writer->Write(Chunk({{"role", "assistant"}, {"content", ""}})));
    EXPECT_TRUE(writer->Write(TextChunk("Look: ")));
    const std::vector<std::string> tokens = BlockTokens(3);
    for (size_t i = 0; i < tokens.size(); ++i) {
      EXPECT_TRUE(writer->Write(TextChunk(tokens[i])));
      if (i + 1 < tokens.size()) {
        EXPECT_EQ(decoder.count(), 0u);
      }
    }
    ASSERT_EQ(decoder.count(), 1u);
    EXPECT_EQ(decoder.tokens(0), Block(3));
    EXPECT_TRUE(writer->Write(TextChunk(" done")));
    EXPECT_TRUE(writer->Write(FinishChunk("stop")));
    EXPECT_TRUE(writer->Write(kDone));
    writer->Finish();
    for (const std::string& w : client->writes()) EXPECT_FALSE(HasImageText(w)) << w;
    if (mode == FakeDecoder::Mode::kLater) {
      EXPECT_EQ(DoneAt(EventsOf(*client)), kNone);
      EXPECT_EQ(client->finishes(), 0);
      decoder.Complete(0);
    }
    for (const std::string& w : client->writes()) EXPECT_FALSE(HasImageText(w)) << w;

    const std::vector<ClientEvent> events = EventsOf(*client);
    EXPECT_EQ(TextOf(events, 0), "Look:  done");
    const size_t image = ImageAt(events, 0, UrlOf(3));
    ASSERT_NE(image, kNone) << client->streamed();
    EXPECT_LT(image, FinishAt(events, 0));
    EXPECT_LT(FinishAt(events, 0), DoneAt(events));
    EXPECT_EQ(DoneAt(events), events.size() - 1);
    EXPECT_TRUE(CallsOf(events, 0).empty()) << "an image in the content has no call";
    EXPECT_EQ(client->finishes(), 1);
  }
}

TEST(ImageAnswerWriter, StreamReasoningBlocksAreDropped) {
  FakeDecoder decoder(FakeDecoder::Mode::kAtOnce);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  ASSERT_TRUE(writer->StartStream(200, EventStream()));
  EXPECT_TRUE(writer->Write(Chunk({{"reasoning_content", "think "}})));
  for (const std::string& t : BlockTokens(4)) EXPECT_TRUE(writer->Write(Chunk({{"reasoning_content", t}})));
  EXPECT_TRUE(writer->Write(Chunk({{"reasoning_content", " more"}})));
  EXPECT_TRUE(writer->Write(TextChunk("Hi")));
  EXPECT_TRUE(writer->Write(FinishChunk("stop")));
  EXPECT_TRUE(writer->Write(kDone));
  writer->Finish();
  EXPECT_EQ(decoder.count(), 0u);
  const std::vector<ClientEvent> events = EventsOf(*client);  // checks no image text
  EXPECT_EQ(TextOf(events, 0), "Hi");
  std::string reasoning;
  for (const ClientEvent& e : events) {
    const Json* c = ChoiceIn(e, 0);
    if (c && c->at("delta").contains("reasoning_content")) {
      reasoning += c->at("delta").at("reasoning_content").get<std::string>();
    }
  }
  EXPECT_EQ(reasoning, "think  more");
  EXPECT_EQ(DoneAt(events), events.size() - 1);
  EXPECT_EQ(client->finishes(), 1);
}

TEST(ImageAnswerWriter, StreamTwoChoicesEachHoldTheirFinishForTheirImage) {
  FakeDecoder decoder(FakeDecoder::Mode::kLater);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  ASSERT_TRUE(writer->StartStream(200, EventStream()));
  for (int index : {0, 1}) {
    EXPECT_TRUE(writer->Write(Chunk({{"role", "assistant"}, {"content", ""}}, nullptr, index)));
    EXPECT_TRUE(writer->Write(CallAnnounce("call_" + std::to_string(index), index)));
    EXPECT_TRUE(writer->Write(CallArgs(Arguments(Block(index == 0 ? 30 : 40)), index)));
  }
  EXPECT_TRUE(writer->Write(FinishChunk("tool_calls", 0)));
  EXPECT_TRUE(writer->Write(FinishChunk("tool_calls", 1)));
  EXPECT_TRUE(writer->Write(kDone));
  writer->Finish();
  ASSERT_EQ(decoder.count(), 2u);
  const size_t second = decoder.tokens(0) == Block(40) ? 0 : 1;
  decoder.Complete(second);
  EXPECT_EQ(DoneAt(EventsOf(*client)), kNone);
  EXPECT_EQ(client->finishes(), 0);
  decoder.Complete(1 - second);

  const std::vector<ClientEvent> events = EventsOf(*client);
  for (int index : {0, 1}) {
    SCOPED_TRACE(index);
    const size_t image = ImageAt(events, index, UrlOf(index == 0 ? 30 : 40));
    ASSERT_NE(image, kNone) << client->streamed();
    ASSERT_NE(FinishAt(events, index), kNone);
    EXPECT_LT(image, FinishAt(events, index));
    const std::vector<Json> calls = CallsOf(events, index);
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0].at("id"), "call_" + std::to_string(index));
    EXPECT_EQ(ArgumentsOf(calls[0]), Json({{"discrete_image_token", UrlOf(index == 0 ? 30 : 40)}}));
  }
  EXPECT_EQ(DoneAt(events), events.size() - 1);
  EXPECT_EQ(client->finishes(), 1);
}

TEST(ImageAnswerWriter, StreamFinishChunkCarryingTheLastFragment) {
  // The LLM service's finish event may carry the call's last arguments.
  for (FakeDecoder::Mode mode : {FakeDecoder::Mode::kAtOnce, FakeDecoder::Mode::kLater}) {
    SCOPED_TRACE(static_cast<int>(mode));
    FakeDecoder decoder(mode);
    auto client = std::make_shared<FakeClient>();
    auto writer = MakeWriter(client, decoder);
    ASSERT_TRUE(writer->StartStream(200, EventStream()));
    // The first chunk carries the role and the call's announcement.
    Json calls = Json::array();
    calls.push_back({{"index", 0},
                     {"id", "call_1"},
                     {"type", "function"},
                     {"function", {{"name", kCallName}, {"arguments", ""}}}});
    EXPECT_TRUE(writer->Write(Chunk({{"role", "assistant"}, {"tool_calls", calls}})));
    EXPECT_TRUE(writer->Write(CallArgs("{\"discrete_image_token\":\"" + Block(5))));
    Json last = Json::array();
    last.push_back({{"index", 0}, {"function", {{"arguments", "\"}"}}}});
    EXPECT_TRUE(writer->Write(Chunk({{"tool_calls", last}}, "tool_calls")));
    ASSERT_EQ(decoder.count(), 1u);
    EXPECT_EQ(decoder.tokens(0), Block(5));
    EXPECT_TRUE(writer->Write(kDone));
    writer->Finish();
    if (mode == FakeDecoder::Mode::kLater) {
      EXPECT_EQ(FinishAt(EventsOf(*client), 0), kNone);
      decoder.Complete(0);
    }
    const std::vector<ClientEvent> events = EventsOf(*client);
    const size_t image = ImageAt(events, 0, UrlOf(5));
    ASSERT_NE(image, kNone) << client->streamed();
    ASSERT_NE(FinishAt(events, 0), kNone) << client->streamed();
    EXPECT_LE(image, FinishAt(events, 0));
    EXPECT_EQ(DoneAt(events), events.size() - 1);
    const std::vector<Json> seen = CallsOf(events, 0);
    ASSERT_EQ(seen.size(), 1u) << client->streamed();
    EXPECT_EQ(ArgumentsOf(seen[0]), Json({{"discrete_image_token", UrlOf(5)}}));
    bool role = false;
    for (const ClientEvent& e : events) {
      const Json* c = ChoiceIn(e, 0);
      role = role || (c && c->at("delta").value("role", "") == "assistant");
    }
    EXPECT_TRUE(role) << "the role went with the held call: " << client->streamed();
    EXPECT_EQ(client->finishes(), 1);
  }
}

TEST(ImageAnswerWriter, StreamFinishChunkCarryingTheBlockEndInTheContent) {
  FakeDecoder decoder(FakeDecoder::Mode::kLater);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  ASSERT_TRUE(writer->StartStream(200, EventStream()));
  const std::string block = Block(3);
  const size_t end = block.find("<|discrete_image_end|>");
  EXPECT_TRUE(writer->Write(TextChunk("Look: " + block.substr(0, end))));
  EXPECT_TRUE(writer->Write(Chunk({{"content", block.substr(end)}}, "stop")));
  ASSERT_EQ(decoder.count(), 1u);
  EXPECT_TRUE(writer->Write(kDone));
  writer->Finish();
  EXPECT_EQ(FinishAt(EventsOf(*client), 0), kNone);
  decoder.Complete(0);
  const std::vector<ClientEvent> events = EventsOf(*client);
  EXPECT_EQ(TextOf(events, 0), "Look: ");
  const size_t image = ImageAt(events, 0, UrlOf(3));
  ASSERT_NE(image, kNone) << client->streamed();
  EXPECT_LE(image, FinishAt(events, 0));
  EXPECT_EQ(DoneAt(events), events.size() - 1);
}

TEST(ImageAnswerWriter, StreamUsageChunkWaitsBehindThePendingImage) {
  FakeDecoder decoder(FakeDecoder::Mode::kLater);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  ASSERT_TRUE(writer->StartStream(200, EventStream()));
  EXPECT_TRUE(writer->Write(TextChunk("Here")));
  EXPECT_TRUE(writer->Write(CallAnnounce("call_1")));
  EXPECT_TRUE(writer->Write(CallArgs(Arguments(Block(5)))));
  EXPECT_TRUE(writer->Write(FinishChunk("tool_calls")));
  const Json usage_chunk = {{"id", "chatcmpl-1"},
                            {"object", "chat.completion.chunk"},
                            {"created", 1700000000},
                            {"model", "omni"},
                            {"choices", Json::array()},
                            {"usage", {{"prompt_tokens", 5}, {"completion_tokens", 20}, {"total_tokens", 25}}}};
  EXPECT_TRUE(writer->Write(Data(usage_chunk)));
  EXPECT_TRUE(writer->Write(kDone));
  writer->Finish();
  decoder.Complete(0);
  const std::vector<ClientEvent> events = EventsOf(*client);
  size_t usage = kNone;
  for (size_t i = 0; i < events.size(); ++i) {
    if (!events[i].done && events[i].json.contains("usage") && events[i].json.at("usage").is_object()) usage = i;
  }
  ASSERT_NE(usage, kNone) << client->streamed();
  const size_t image = ImageAt(events, 0, UrlOf(5));
  ASSERT_NE(image, kNone);
  EXPECT_LT(image, FinishAt(events, 0));
  EXPECT_LT(FinishAt(events, 0), usage);
  EXPECT_EQ(usage + 1, DoneAt(events));
  EXPECT_EQ(DoneAt(events), events.size() - 1);
}

TEST(ImageAnswerWriter, StreamContentBlockCutAtEveryByte) {
  const std::string text = "Look: " + Block(3) + " done";
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    SCOPED_TRACE(cut);
    FakeDecoder decoder(FakeDecoder::Mode::kAtOnce);
    auto client = std::make_shared<FakeClient>();
    auto writer = MakeWriter(client, decoder);
    ASSERT_TRUE(writer->StartStream(200, EventStream()));
    EXPECT_TRUE(writer->Write(TextChunk(text.substr(0, cut))));
    EXPECT_TRUE(writer->Write(TextChunk(text.substr(cut))));
    EXPECT_TRUE(writer->Write(FinishChunk("stop")));
    EXPECT_TRUE(writer->Write(kDone));
    writer->Finish();
    ASSERT_EQ(decoder.count(), 1u);
    EXPECT_EQ(decoder.tokens(0), Block(3));
    const std::vector<ClientEvent> events = EventsOf(*client);
    ASSERT_EQ(TextOf(events, 0), "Look:  done");
    ASSERT_NE(ImageAt(events, 0, UrlOf(3)), kNone);
    ASSERT_EQ(DoneAt(events), events.size() - 1);
  }
}

TEST(ImageAnswerWriter, StreamAnotherCallPassesAsItComes) {
  FakeDecoder decoder(FakeDecoder::Mode::kLater);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  HttpHeaders h;
  h.Set("content-type", "text/event-stream; charset=utf-8");
  ASSERT_TRUE(writer->StartStream(200, h));
  Json calls = Json::array();
  calls.push_back({{"index", 0},
                   {"id", "call_w"},
                   {"type", "function"},
                   {"function", {{"name", "get_weather"}, {"arguments", ""}}}});
  EXPECT_TRUE(writer->Write(Chunk({{"tool_calls", calls}})));
  EXPECT_TRUE(writer->Write(CallArgs(R"({"city": "Paris"})", 0, 0)));
  EXPECT_EQ(CallsOf(EventsOf(*client), 0).size(), 2u) << client->streamed();
  EXPECT_TRUE(writer->Write(CallAnnounce("call_1", 0, 1)));
  EXPECT_TRUE(writer->Write(CallArgs(Arguments(Block(5)), 0, 1)));
  ASSERT_EQ(decoder.count(), 1u);
  EXPECT_TRUE(writer->Write(FinishChunk("tool_calls")));
  EXPECT_TRUE(writer->Write(kDone));
  writer->Finish();
  decoder.Complete(0);
  const std::vector<ClientEvent> events = EventsOf(*client);
  const std::vector<Json> seen = CallsOf(events, 0);
  ASSERT_EQ(seen.size(), 3u) << client->streamed();
  EXPECT_EQ(seen[0].at("function").at("name"), "get_weather");
  EXPECT_EQ(seen[1].at("function").at("arguments"), R"({"city": "Paris"})");
  EXPECT_EQ(seen[2].at("index"), 1);
  EXPECT_EQ(ArgumentsOf(seen[2]), Json({{"discrete_image_token", UrlOf(5)}}));
  EXPECT_LT(ImageAt(events, 0, UrlOf(5)), FinishAt(events, 0));
  EXPECT_EQ(DoneAt(events), events.size() - 1);
}

TEST(ImageAnswerWriter, ImageTokensLeaveTheLogprobsOfAStream) {
  FakeDecoder decoder(FakeDecoder::Mode::kAtOnce);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  ASSERT_TRUE(writer->StartStream(200, EventStream()));
  auto with_logprobs = [](const std::string& token, Json finish = nullptr) {
    Json j = Json::parse(TextChunk(token).substr(6));
    j["choices"][0]["logprobs"] = LogprobsOf({token});
    j["choices"][0]["finish_reason"] = finish;
    return Data(j);
  };
  EXPECT_TRUE(writer->Write(with_logprobs("Look: ")));
  for (const std::string& t : BlockTokens(3)) EXPECT_TRUE(writer->Write(with_logprobs(t)));
  EXPECT_TRUE(writer->Write(with_logprobs("<|vision_eol|>")));
  EXPECT_TRUE(writer->Write(with_logprobs(" done", "stop")));
  EXPECT_TRUE(writer->Write(kDone));
  writer->Finish();
  const std::vector<ClientEvent> events = EventsOf(*client);  // checks no image text anywhere
  EXPECT_EQ(TextOf(events, 0), "Look:  done");
  std::string joined;
  for (const ClientEvent& e : events) {
    const Json* c = ChoiceIn(e, 0);
    if (!c || !c->contains("logprobs") || !c->at("logprobs").is_object()) continue;
    for (const Json& entry : c->at("logprobs").at("content")) joined += entry.at("token").get<std::string>();
  }
  EXPECT_EQ(joined, "Look:  done");
  EXPECT_NE(ImageAt(events, 0, UrlOf(3)), kNone);
}

TEST(ImageAnswerWriter, TheStreamEndsAfterTheRelayLetGoOfTheWriter) {
  FakeDecoder decoder(FakeDecoder::Mode::kLater);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  StreamOneCallToTheEnd(*writer, 5);
  writer.reset();
  decoder.Complete(0);
  const std::vector<ClientEvent> events = EventsOf(*client);
  ASSERT_NE(ImageAt(events, 0, UrlOf(5)), kNone) << client->streamed();
  EXPECT_LT(ImageAt(events, 0, UrlOf(5)), FinishAt(events, 0));
  EXPECT_EQ(DoneAt(events), events.size() - 1);
  EXPECT_EQ(client->finishes(), 1);
}

// Decodes finish on their own threads while the relay keeps writing.
TEST(ImageAnswerWriter, StreamImagesFinishingWhileTheRelayWrites) {
  constexpr int kChoices = 4;
  constexpr int kImagesPerChoice = 3;
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE(round);
    std::mutex mu;
    std::vector<std::function<void()>> ready;  // guarded by mu
    ImageAnswerWriter::DecodeFn decode = [&](std::string tokens, std::function<void(StatusOr<GeneratedImage>)> done) {
      std::lock_guard<std::mutex> lock(mu);
      ready.push_back([tokens, done] {
        GeneratedImage image;
        image.url = UrlOf(BlockNumber(tokens));
        done(image);
      });
    };
    auto client = std::make_shared<FakeClient>();
    auto writer = std::make_shared<ImageAnswerWriter>(client, decode, false);
    std::atomic<bool> relay_done{false};
    std::thread decoder([&] {
      std::mt19937 rng(static_cast<unsigned>(round));
      for (;;) {
        std::function<void()> next;
        {
          std::lock_guard<std::mutex> lock(mu);
          if (!ready.empty()) {
            const size_t i = rng() % ready.size();
            next = std::move(ready[i]);
            ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(i));
          }
        }
        if (next) {
          std::thread([next] { next(); }).join();
          continue;
        }
        if (relay_done.load()) {
          std::lock_guard<std::mutex> lock(mu);
          if (ready.empty()) return;
        }
        std::this_thread::yield();
      }
    });
    ASSERT_TRUE(writer->StartStream(200, EventStream()));
    for (int k = 0; k < kImagesPerChoice; ++k) {
      for (int c = 0; c < kChoices; ++c) {
        const int n = 100 * (c + 1) + 10 * k;
        std::string text = "t";
        text += std::to_string(k);  // not "t" + ...: GCC 12 warns -Wrestrict there wrongly
        EXPECT_TRUE(writer->Write(TextChunk(text, c)));
        EXPECT_TRUE(writer->Write(CallAnnounce("call_" + std::to_string(n), c, k)));
        EXPECT_TRUE(writer->Write(CallArgs("{\"discrete_image_token\": \"" + Block(n), c, k)));
        EXPECT_TRUE(writer->Write(CallArgs("\"}", c, k)));
      }
    }
    for (int c = 0; c < kChoices; ++c) EXPECT_TRUE(writer->Write(FinishChunk("tool_calls", c)));
    EXPECT_TRUE(writer->Write(kDone));
    writer->Finish();
    writer.reset();
    relay_done = true;
    decoder.join();

    const std::vector<ClientEvent> events = EventsOf(*client);
    ASSERT_EQ(client->finishes(), 1);
    ASSERT_EQ(Count(events, IsDone), 1u);
    ASSERT_EQ(DoneAt(events), events.size() - 1);
    for (int c = 0; c < kChoices; ++c) {
      EXPECT_EQ(TextOf(events, c), "t0t1t2");
      const size_t finish = FinishAt(events, c);
      ASSERT_NE(finish, kNone);
      for (int k = 0; k < kImagesPerChoice; ++k) {
        const size_t image = ImageAt(events, c, UrlOf(100 * (c + 1) + 10 * k));
        ASSERT_NE(image, kNone) << "choice " << c << " image " << k;
        EXPECT_LT(image, finish);
      }
      EXPECT_EQ(CallsOf(events, c).size(), static_cast<size_t>(kImagesPerChoice));
    }
  }
}

TEST(ImageAnswerWriter, StreamCommentsDoNotDisturbTheImage) {
  FakeDecoder decoder(FakeDecoder::Mode::kAtOnce);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  ASSERT_TRUE(writer->StartStream(200, EventStream()));
  EXPECT_TRUE(writer->Write(TextChunk("Here")));
  EXPECT_TRUE(writer->Write(EncodeSseComment("keep-alive")));
  EXPECT_TRUE(writer->Write(CallAnnounce("call_1")));
  EXPECT_TRUE(writer->Write(CallArgs(Arguments(Block(5)))));
  EXPECT_TRUE(writer->Write(EncodeSseComment("keep-alive")));
  EXPECT_TRUE(writer->Write(FinishChunk("tool_calls")));
  EXPECT_TRUE(writer->Write(kDone));
  writer->Finish();
  const std::vector<ClientEvent> events = EventsOf(*client);
  EXPECT_EQ(TextOf(events, 0), "Here");
  ASSERT_NE(ImageAt(events, 0, UrlOf(5)), kNone) << client->streamed();
  EXPECT_LT(ImageAt(events, 0, UrlOf(5)), FinishAt(events, 0));
  EXPECT_EQ(DoneAt(events), events.size() - 1);
}

TEST(ImageAnswerWriter, AStreamThatIsNoEventStreamPassesAsIs) {
  struct Case {
    int status;
    std::string content_type;
  };
  const std::vector<std::string> chunks = {"data: {\"x\": \"" + Block(5) + "\"}\n\n", "{\"error\":", " 1}",
                                           "<|vision3|>"};
  for (const Case& c : std::vector<Case>{{500, "text/event-stream"}, {200, "application/json"}, {429, "text/plain"}}) {
    SCOPED_TRACE(c.status);
    FakeDecoder decoder(FakeDecoder::Mode::kAtOnce);
    auto client = std::make_shared<FakeClient>();
    auto writer = MakeWriter(client, decoder);
    HttpHeaders h;
    h.Set("content-type", c.content_type);
    h.Set("x-extra", "1");
    EXPECT_TRUE(writer->StartStream(c.status, h));
    std::string sent;
    for (const std::string& chunk : chunks) {
      EXPECT_TRUE(writer->Write(chunk));
      sent += chunk;
    }
    EXPECT_TRUE(writer->Finish());
    EXPECT_EQ(client->stream_status(), c.status);
    EXPECT_EQ(client->stream_headers().GetOr("content-type", ""), c.content_type);
    EXPECT_EQ(client->stream_headers().GetOr("x-extra", ""), "1");
    EXPECT_EQ(client->streamed(), sent);
    EXPECT_EQ(client->finishes(), 1);
    EXPECT_EQ(decoder.count(), 0u);
  }
}

}  // namespace
}  // namespace omni::orchestrator
