// ImageAnswerWriter on event streams when something fails: a failed image, an
// upstream error behind a pending image, output cut short by max_tokens
// (image_answer.h); a fake client and decoder (image_answer_test_util.h).
#include "services/orchestrator/image_answer_stream_test_util.h"

namespace omni::orchestrator {
namespace {

using namespace image_test;

TEST(ImageAnswerWriter, StreamFailedImageEndsTheStreamWithAnError) {
  FakeDecoder decoder(FakeDecoder::Mode::kLater);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  ASSERT_TRUE(writer->StartStream(200, EventStream()));
  EXPECT_TRUE(writer->Write(Chunk({{"role", "assistant"}, {"content", ""}})));
  EXPECT_TRUE(writer->Write(TextChunk("Here")));
  EXPECT_TRUE(writer->Write(CallAnnounce("call_1")));
  EXPECT_TRUE(writer->Write(CallArgs(Arguments(Block(5)))));
  ASSERT_EQ(decoder.count(), 1u);
  decoder.Complete(0, DecodeTimeout());

  std::vector<ClientEvent> events = EventsOf(*client);
  ASSERT_GE(events.size(), 2u) << client->streamed();
  EXPECT_TRUE(events.back().done);
  const ClientEvent& error = events[events.size() - 2];
  ASSERT_TRUE(IsErrorEvent(error)) << client->streamed();
  EXPECT_EQ(error.json.at("error").at("code"), "image_decode_timeout");
  EXPECT_EQ(client->finishes(), 1);

  // The relay learns the stream is over.
  EXPECT_FALSE(writer->Write(FinishChunk("tool_calls")));
  EXPECT_FALSE(writer->Write(kDone));
  writer->Finish();
  events = EventsOf(*client);
  EXPECT_EQ(Count(events, IsErrorEvent), 1u);
  EXPECT_EQ(Count(events, IsDone), 1u);
  EXPECT_EQ(FinishAt(events, 0), kNone);
  EXPECT_TRUE(CallsOf(events, 0).empty());
  EXPECT_EQ(client->finishes(), 1);
}

TEST(ImageAnswerWriter, StreamFailedImageAfterTheUpstreamEnded) {
  FakeDecoder decoder(FakeDecoder::Mode::kLater);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  StreamOneCallToTheEnd(*writer, 5);
  EXPECT_EQ(client->finishes(), 0);
  decoder.Complete(0, ResourceExhausted("full").WithErrorCode("decoder_busy"));

  const std::vector<ClientEvent> events = EventsOf(*client);
  ASSERT_GE(events.size(), 2u) << client->streamed();
  EXPECT_TRUE(events.back().done);
  ASSERT_TRUE(IsErrorEvent(events[events.size() - 2])) << client->streamed();
  EXPECT_EQ(events[events.size() - 2].json.at("error").at("code"), "decoder_busy");
  EXPECT_EQ(Count(events, IsDone), 1u);
  EXPECT_EQ(client->finishes(), 1);
}

TEST(ImageAnswerWriter, StreamImageFailingAtOnceEndsTheStream) {
  FakeDecoder decoder(FakeDecoder::Mode::kAtOnce, DecodeTimeout());
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  ASSERT_TRUE(writer->StartStream(200, EventStream()));
  EXPECT_TRUE(writer->Write(TextChunk("Here")));
  EXPECT_TRUE(writer->Write(CallAnnounce("call_1")));
  writer->Write(CallArgs(Arguments(Block(5))));  // the image fails within this write
  EXPECT_FALSE(writer->Write(FinishChunk("tool_calls")));
  EXPECT_FALSE(writer->Write(kDone));
  writer->Finish();
  const std::vector<ClientEvent> events = EventsOf(*client);
  ASSERT_GE(events.size(), 2u) << client->streamed();
  EXPECT_TRUE(events.back().done);
  ASSERT_TRUE(IsErrorEvent(events[events.size() - 2])) << client->streamed();
  EXPECT_EQ(Count(events, IsDone), 1u);
  EXPECT_EQ(client->finishes(), 1);
}

TEST(ImageAnswerWriter, StreamWithErrorsAsTextFailedImageIsAnErrorDelta) {
  for (FakeDecoder::Mode mode : {FakeDecoder::Mode::kAtOnce, FakeDecoder::Mode::kLater}) {
    SCOPED_TRACE(static_cast<int>(mode));
    FakeDecoder decoder(mode, DecodeTimeout());
    auto client = std::make_shared<FakeClient>();
    auto writer = MakeWriter(client, decoder, /*errors_as_text=*/true);
    ASSERT_TRUE(writer->StartStream(200, EventStream()));
    EXPECT_TRUE(writer->Write(TextChunk("Here")));
    EXPECT_TRUE(writer->Write(CallAnnounce("call_1")));
    EXPECT_TRUE(writer->Write(CallArgs(Arguments(Block(5)))));
    if (mode == FakeDecoder::Mode::kLater) decoder.Complete(0, DecodeTimeout());
    EXPECT_TRUE(writer->Write(TextChunk(" and more")));
    EXPECT_TRUE(writer->Write(FinishChunk("tool_calls")));
    EXPECT_TRUE(writer->Write(kDone));
    EXPECT_TRUE(writer->Finish());

    const std::vector<ClientEvent> events = EventsOf(*client);
    EXPECT_EQ(Count(events, IsErrorEvent), 0u) << client->streamed();
    size_t error_delta = kNone;
    for (size_t i = 0; i < events.size(); ++i) {
      const Json* c = ChoiceIn(events[i], 0);
      if (c && c->contains("error")) {
        error_delta = i;
        EXPECT_EQ(c->at("error").at("code"), "image_decode_timeout");
        EXPECT_FALSE(c->at("error").at("message").get<std::string>().empty());
      }
    }
    ASSERT_NE(error_delta, kNone) << client->streamed();
    EXPECT_LT(error_delta, FinishAt(events, 0));
    EXPECT_EQ(TextOf(events, 0), "Here and more");
    EXPECT_TRUE(CallsOf(events, 0).empty()) << client->streamed();
    EXPECT_EQ(DoneAt(events), events.size() - 1);
    EXPECT_EQ(client->finishes(), 1);
  }
}

TEST(ImageAnswerWriter, StreamUnclosedBlockNeverReachesTheClient) {
  FakeDecoder decoder(FakeDecoder::Mode::kAtOnce);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  ASSERT_TRUE(writer->StartStream(200, EventStream()));
  EXPECT_TRUE(writer->Write(TextChunk("Look: ")));
  EXPECT_TRUE(writer->Write(TextChunk("<|discrete_image_start|><|vision_ratio_1:1|>")));
  EXPECT_TRUE(writer->Write(Chunk({{"content", "<|vision5|>"}}, "length")));
  EXPECT_TRUE(writer->Write(kDone));
  writer->Finish();
  EXPECT_EQ(decoder.count(), 0u);
  const std::vector<ClientEvent> events = EventsOf(*client);  // checks no image text
  EXPECT_EQ(TextOf(events, 0), "Look: ");
  ASSERT_NE(FinishAt(events, 0), kNone);
  EXPECT_EQ(DoneAt(events), events.size() - 1);
  EXPECT_EQ(client->finishes(), 1);
}

TEST(ImageAnswerWriter, StreamUpstreamErrorBehindAPendingImage) {
  // The LLM ends with its own error event; it reaches the client once, after
  // what was before it, and the stream ends once.
  FakeDecoder decoder(FakeDecoder::Mode::kLater);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  ASSERT_TRUE(writer->StartStream(200, EventStream()));
  EXPECT_TRUE(writer->Write(CallAnnounce("call_1")));
  EXPECT_TRUE(writer->Write(CallArgs(Arguments(Block(5)))));
  writer->Write(Data(Json::parse(Internal("the model failed").WithErrorCode("model_error").ToOpenAiJson())));
  writer->Write(kDone);
  writer->Finish();
  decoder.Complete(0);
  const std::vector<ClientEvent> events = EventsOf(*client);
  ASSERT_GE(events.size(), 2u) << client->streamed();
  EXPECT_EQ(Count(events, IsDone), 1u);
  EXPECT_TRUE(events.back().done);
  EXPECT_EQ(Count(events, IsErrorEvent), 1u) << client->streamed();
  EXPECT_TRUE(IsErrorEvent(events[events.size() - 2])) << client->streamed();
  EXPECT_EQ(client->finishes(), 1);
}

TEST(ImageAnswerWriter, StreamCallCutShortLeaksNoImageText) {
  for (bool errors_as_text : {false, true}) {
    SCOPED_TRACE(errors_as_text);
    FakeDecoder decoder(FakeDecoder::Mode::kAtOnce);
    auto client = std::make_shared<FakeClient>();
    auto writer = MakeWriter(client, decoder, errors_as_text);
    ASSERT_TRUE(writer->StartStream(200, EventStream()));
    EXPECT_TRUE(writer->Write(TextChunk("Here")));
    EXPECT_TRUE(writer->Write(CallAnnounce("call_1")));
    EXPECT_TRUE(writer->Write(CallArgs("{\"discrete_image_token\": \"<|discrete_image_start|>")));
    EXPECT_TRUE(writer->Write(CallArgs("<|vision_ratio_1:1|><|vision5|>")));
    writer->Write(FinishChunk("length"));
    writer->Write(kDone);
    writer->Finish();
    ExpectOnlyWholeBlocksDecoded(decoder);
    const std::vector<ClientEvent> events = EventsOf(*client);  // checks no image text anywhere
    EXPECT_EQ(TextOf(events, 0), "Here");
    EXPECT_TRUE(CallsOf(events, 0).empty()) << client->streamed();
    ASSERT_GE(events.size(), 2u);
    EXPECT_EQ(Count(events, IsDone), 1u);
    EXPECT_TRUE(events.back().done);
    EXPECT_EQ(client->finishes(), 1);
    if (Count(events, IsErrorEvent) > 0) {
      EXPECT_FALSE(errors_as_text) << client->streamed();
      EXPECT_EQ(events[events.size() - 2].json.at("error").at("code"), "image_decode_failed");
    } else {
      EXPECT_NE(FinishAt(events, 0), kNone) << client->streamed();
    }
  }
}

TEST(ImageAnswerWriter, StreamWithErrorsAsTextFailingAfterTheUpstreamEnded) {
  FakeDecoder decoder(FakeDecoder::Mode::kLater);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder, /*errors_as_text=*/true);
  ASSERT_TRUE(writer->StartStream(200, EventStream()));
  EXPECT_TRUE(writer->Write(TextChunk("Here", 0)));
  EXPECT_TRUE(writer->Write(TextChunk("There", 1)));
  EXPECT_TRUE(writer->Write(CallAnnounce("call_0", 0)));
  EXPECT_TRUE(writer->Write(CallArgs(Arguments(Block(30)), 0)));
  EXPECT_TRUE(writer->Write(CallAnnounce("call_1", 1)));
  EXPECT_TRUE(writer->Write(CallArgs(Arguments(Block(40)), 1)));
  EXPECT_TRUE(writer->Write(FinishChunk("tool_calls", 0)));
  EXPECT_TRUE(writer->Write(FinishChunk("tool_calls", 1)));
  EXPECT_TRUE(writer->Write(kDone));
  writer->Finish();
  ASSERT_EQ(decoder.count(), 2u);
  const size_t first = decoder.tokens(0) == Block(30) ? 0 : 1;
  decoder.Complete(first, DecodeTimeout());
  EXPECT_EQ(client->finishes(), 0);
  decoder.Complete(1 - first);

  const std::vector<ClientEvent> events = EventsOf(*client);
  EXPECT_EQ(Count(events, IsErrorEvent), 0u) << client->streamed();
  size_t error_delta = kNone;
  for (size_t i = 0; i < events.size(); ++i) {
    const Json* c = ChoiceIn(events[i], 0);
    if (c && c->contains("error")) error_delta = i;
  }
  ASSERT_NE(error_delta, kNone) << client->streamed();
  EXPECT_LT(error_delta, FinishAt(events, 0));
  EXPECT_TRUE(CallsOf(events, 0).empty());
  ASSERT_NE(ImageAt(events, 1, UrlOf(40)), kNone) << client->streamed();
  EXPECT_LT(ImageAt(events, 1, UrlOf(40)), FinishAt(events, 1));
  EXPECT_EQ(TextOf(events, 0), "Here");
  EXPECT_EQ(TextOf(events, 1), "There");
  EXPECT_EQ(DoneAt(events), events.size() - 1);
  EXPECT_EQ(client->finishes(), 1);
}

}  // namespace
}  // namespace omni::orchestrator
