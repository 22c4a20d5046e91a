// The images of a chat answer, tested against their contract (image_answer.h):
// the scrubber fed text in pieces, and ImageAnswerWriter sending whole
// answers, in front of a fake client and a fake decoder
// (image_answer_test_util.h). Streams: image_answer_stream_test.cc.
#include "services/orchestrator/image_answer_test_util.h"

namespace omni::orchestrator {
namespace {

using namespace image_test;

struct Scrubbed {
  std::string text;
  std::vector<std::string> blocks;
  bool dropped_open_block = false;
};

void Add(Scrubbed& all, VisionTextScrubber::Out out) {
  EXPECT_FALSE(HasImageText(out.text)) << out.text;
  all.text += out.text;
  for (std::string& b : out.blocks) all.blocks.push_back(std::move(b));
  all.dropped_open_block = all.dropped_open_block || out.dropped_open_block;
}

Scrubbed ScrubPieces(const std::vector<std::string_view>& pieces) {
  VisionTextScrubber scrubber;
  Scrubbed all;
  for (std::string_view p : pieces) Add(all, scrubber.Push(p));
  Add(all, scrubber.Finish());
  return all;
}

TEST(VisionTextScrubber, RemovesABlockAndHandsItBackWhole) {
  const Scrubbed s = ScrubPieces({"before " + Block(1) + " after"});
  EXPECT_EQ(s.text, "before  after");
  ASSERT_EQ(s.blocks.size(), 1u);
  EXPECT_EQ(s.blocks[0], Block(1));
  EXPECT_FALSE(s.dropped_open_block);
}

TEST(VisionTextScrubber, TwoBlocksComeBackInOrder) {
  const Scrubbed s = ScrubPieces({Block(1) + "mid" + Block(5)});
  EXPECT_EQ(s.text, "mid");
  ASSERT_EQ(s.blocks.size(), 2u);
  EXPECT_EQ(s.blocks[0], Block(1));
  EXPECT_EQ(s.blocks[1], Block(5));
}

TEST(VisionTextScrubber, RemovesStrayVisionTokens) {
  const Scrubbed s =
      ScrubPieces({"a<|vision123|>b<|vision_ratio_1:1|>c<|vision_eol|>d<|vision_token|>e<|vision_eof|>f"});
  EXPECT_EQ(s.text, "abcdef");
  EXPECT_TRUE(s.blocks.empty());
}

TEST(VisionTextScrubber, RemovesAStrayImageEndMarker) {
  // "every stray <|vision...|> or image marker token" is removed.
  const Scrubbed s = ScrubPieces({"a<|discrete_image_end|>b"});
  EXPECT_EQ(s.text, "ab");
  EXPECT_TRUE(s.blocks.empty());
}

TEST(VisionTextScrubber, TextThatIsNoImageTextPassesAtOnce) {
  for (std::string_view text :
       {"a < b", "x <| y", "<|im_end|>", "<|endoftext|> and <|im_start|>assistant", "|> < x", "if (a<|b|>c)",
        "héllo <| wörld", "<|discrete_audio_start|>"}) {
    SCOPED_TRACE(std::string(text));
    VisionTextScrubber scrubber;
    VisionTextScrubber::Out out = scrubber.Push(text);
    EXPECT_EQ(out.text, text);
    EXPECT_TRUE(out.blocks.empty());
    EXPECT_FALSE(scrubber.holding());
    VisionTextScrubber::Out end = scrubber.Finish();
    EXPECT_EQ(end.text, "");
    EXPECT_FALSE(end.dropped_open_block);
  }
}

TEST(VisionTextScrubber, HoldsAPossibleTokenStartAndFinishReleasesIt) {
  VisionTextScrubber scrubber;
  VisionTextScrubber::Out out = scrubber.Push("a <|vi");
  EXPECT_EQ(out.text.find("<|vi"), std::string::npos) << out.text;
  EXPECT_TRUE(scrubber.holding());
  VisionTextScrubber::Out end = scrubber.Finish();
  EXPECT_EQ(out.text + end.text, "a <|vi");
  EXPECT_FALSE(end.dropped_open_block);
  EXPECT_FALSE(scrubber.holding());

  // The held start proves to be other text: released at the next push.
  VisionTextScrubber s2;
  const std::string first = s2.Push("x <").text;
  const std::string second = s2.Push("|im_end|> y").text;
  EXPECT_EQ(first + second, "x <|im_end|> y");
  EXPECT_FALSE(s2.holding());
}

TEST(VisionTextScrubber, FinishDropsAnUnclosedBlock) {
  VisionTextScrubber scrubber;
  VisionTextScrubber::Out out = scrubber.Push("t <|discrete_image_start|><|vision_ratio_1:1|><|vision5|><|vision6|>");
  EXPECT_EQ(out.text, "t ");
  EXPECT_TRUE(out.blocks.empty());
  EXPECT_TRUE(scrubber.holding());
  VisionTextScrubber::Out end = scrubber.Finish();
  EXPECT_TRUE(end.dropped_open_block);
  EXPECT_EQ(end.text, "");
  EXPECT_TRUE(end.blocks.empty());
}

TEST(VisionTextScrubber, FinishWithNothingOpenDropsNothing) {
  VisionTextScrubber scrubber;
  EXPECT_EQ(scrubber.Push("plain").text, "plain");
  VisionTextScrubber::Out end = scrubber.Finish();
  EXPECT_FALSE(end.dropped_open_block);
  EXPECT_EQ(end.text, "");
}

TEST(VisionTextScrubber, EverySplitGivesTheSameResultAsOnePush) {
  const std::string input = "x < " + Block(2) + " y <|vision9|> z <|im_end|>" + Block(7) + "<|";
  const Scrubbed whole = ScrubPieces({input});
  EXPECT_EQ(whole.text, "x <  y  z <|im_end|><|");
  ASSERT_EQ(whole.blocks.size(), 2u);
  EXPECT_EQ(whole.blocks[0], Block(2));
  EXPECT_EQ(whole.blocks[1], Block(7));

  const std::string_view in = input;
  for (size_t i = 0; i <= in.size(); ++i) {
    for (size_t j = i; j <= in.size(); ++j) {
      const Scrubbed s = ScrubPieces({in.substr(0, i), in.substr(i, j - i), in.substr(j)});
      ASSERT_EQ(s.text, whole.text) << "split at " << i << ", " << j;
      ASSERT_EQ(s.blocks, whole.blocks) << "split at " << i << ", " << j;
      ASSERT_FALSE(s.dropped_open_block);
    }
  }
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < in.size(); ++i) bytes.push_back(in.substr(i, 1));
  const Scrubbed by_byte = ScrubPieces(bytes);
  EXPECT_EQ(by_byte.text, whole.text);
  EXPECT_EQ(by_byte.blocks, whole.blocks);
}

TEST(VisionTextScrubber, ARandomMixtureNeverLetsImageTextOut) {
  const std::vector<std::string> plain = {"hello", " ", "a < b", "<", "<|", "|>", "<|im_end|>", "é", "\n", "world",
                                          "<|endoftext|>", "x|"};
  const std::vector<std::string> stray = {"<|vision0|>", "<|vision8191|>", "<|vision_eol|>", "<|vision_eof|>",
                                          "<|vision_token|>", "<|vision_ratio_3:4|>", "<|vision_ratio_16:9|>"};
  std::mt19937 rng(1234);
  for (int doc = 0; doc < 300; ++doc) {
    std::string input, expected_text;
    std::vector<std::string> expected_blocks;
    const int parts = 1 + static_cast<int>(rng() % 30);
    for (int p = 0; p < parts; ++p) {
      switch (rng() % 4) {
        case 0:
        case 1: {
          const std::string& w = plain[rng() % plain.size()];
          input += w;
          expected_text += w;
          break;
        }
        case 2:
          input += stray[rng() % stray.size()];
          break;
        default: {
          const std::string b = Block(static_cast<int>(rng() % 1000));
          input += b;
          expected_blocks.push_back(b);
        }
      }
    }
    // Fed in pieces of random size.
    std::vector<std::string_view> pieces;
    const std::string_view in = input;
    for (size_t at = 0; at < in.size();) {
      const size_t n = std::min<size_t>(in.size() - at, 1 + rng() % 40);
      pieces.push_back(in.substr(at, n));
      at += n;
    }
    const Scrubbed s = ScrubPieces(pieces);
    ASSERT_EQ(s.text, expected_text) << input;
    ASSERT_EQ(s.blocks, expected_blocks) << input;
    ASSERT_FALSE(HasImageText(s.text)) << input;
  }
}


TEST(ImageAnswerWriter, AWholeAnswerWaitsForItsImageThenCarriesIt) {
  FakeDecoder decoder(FakeDecoder::Mode::kLater);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  EXPECT_TRUE(writer->Send(JsonResponse(
      200, Completion({ChoiceOf(0, Message("Here it is", {ImageCall("call_1", 5)}), "tool_calls")}))));
  EXPECT_FALSE(client->whole().has_value());  // held until the image is decoded
  ASSERT_EQ(decoder.count(), 1u);
  EXPECT_EQ(decoder.tokens(0), Block(5));

  decoder.Complete(0);
  ASSERT_EQ(client->sends(), 1);
  EXPECT_EQ(client->whole()->status, 200);
  const Json answer = AnswerOf(*client);
  const Json& message = answer.at("choices").at(0).at("message");
  ASSERT_EQ(message.at("tool_calls").size(), 1u);
  const Json& call = message.at("tool_calls").at(0);
  EXPECT_EQ(call.at("id"), "call_1");
  EXPECT_EQ(call.at("function").at("name"), kCallName);
  EXPECT_EQ(ArgumentsOf(call), Json({{"discrete_image_token", UrlOf(5)}}));
  EXPECT_EQ(message.at("content"), "Here it is");
  ASSERT_TRUE(message.contains("content_parts")) << message.dump();
  const Json& parts = message.at("content_parts");
  ASSERT_EQ(parts.size(), 2u) << parts.dump();
  EXPECT_EQ(parts.at(0).at("type"), "text");
  EXPECT_EQ(parts.at(0).at("text"), "Here it is");
  EXPECT_EQ(parts.at(1).at("type"), "image_url");
  EXPECT_EQ(parts.at(1).at("image_url").at("url"), UrlOf(5));
  EXPECT_EQ(answer.at("choices").at(0).at("finish_reason"), "tool_calls");
  EXPECT_EQ(answer.at("id"), "chatcmpl-1");
  EXPECT_TRUE(answer.contains("usage"));
}

TEST(ImageAnswerWriter, AClientThatLeavesRunsTheRelaysCallbackAndCancelsTheDecodes) {
  FakeDecoder decoder(FakeDecoder::Mode::kLater);
  auto client = std::make_shared<FakeClient>();
  int cancelled = 0, relay_told = 0;
  auto writer = std::make_shared<ImageAnswerWriter>(client, decoder.Fn(), false, [&] { ++cancelled; });
  writer->OnClientGone([&] { ++relay_told; });  // as the relay registers itself
  EXPECT_TRUE(writer->Send(JsonResponse(200, Completion({ChoiceOf(0, Message("", {ImageCall("c", 5)}), "tool_calls")}))));
  ASSERT_EQ(decoder.count(), 1u);
  client->Leave();
  EXPECT_EQ(relay_told, 1);
  EXPECT_EQ(cancelled, 1);
  decoder.Complete(0, Status(StatusCode::kCancelled, "the client went away"));
  EXPECT_EQ(client->sends(), 1);  // answered (to nobody), so the writer is done
}

TEST(ImageAnswerWriter, AWholeAnswerDecodedAtOnceGoesOutAtOnce) {
  FakeDecoder decoder(FakeDecoder::Mode::kAtOnce);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  writer->Send(JsonResponse(200, Completion({ChoiceOf(0, Message(nullptr, {ImageCall("call_1", 8)}), "tool_calls")})));
  ASSERT_EQ(client->sends(), 1);
  const Json message = AnswerOf(*client).at("choices").at(0).at("message");
  EXPECT_EQ(ArgumentsOf(message.at("tool_calls").at(0)), Json({{"discrete_image_token", UrlOf(8)}}));
  // No text: the image is the only part.
  ASSERT_EQ(message.at("content_parts").size(), 1u) << message.dump();
  EXPECT_EQ(ImageUrls(message), std::vector<std::string>{UrlOf(8)});
}

TEST(ImageAnswerWriter, TwoCallsAreDecodedConcurrentlyAndEachPlaced) {
  FakeDecoder decoder(FakeDecoder::Mode::kLater);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  writer->Send(JsonResponse(200, Completion({TwoCallChoice()})));
  // Both decodes run before either finished.
  ASSERT_EQ(decoder.count(), 2u);
  EXPECT_EQ(decoder.all_tokens(), (std::multiset<std::string>{Block(10), Block(20)}));
  EXPECT_FALSE(client->whole().has_value());
  decoder.CompleteAllTogether();

  ASSERT_EQ(client->sends(), 1);
  const Json message = AnswerOf(*client).at("choices").at(0).at("message");
  ASSERT_EQ(message.at("tool_calls").size(), 2u);
  EXPECT_EQ(message.at("tool_calls").at(0).at("id"), "call_a");
  EXPECT_EQ(ArgumentsOf(message.at("tool_calls").at(0)), Json({{"discrete_image_token", UrlOf(10)}}));
  EXPECT_EQ(message.at("tool_calls").at(1).at("id"), "call_b");
  EXPECT_EQ(ArgumentsOf(message.at("tool_calls").at(1)), Json({{"discrete_image_token", UrlOf(20)}}));
  EXPECT_EQ(message.at("content_parts").at(0).at("type"), "text");
  EXPECT_EQ(ImageUrls(message), (std::vector<std::string>{UrlOf(10), UrlOf(20)}));
}

TEST(ImageAnswerWriter, TwoChoicesEachGetTheirImage) {
  FakeDecoder decoder(FakeDecoder::Mode::kLater);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  writer->Send(JsonResponse(200, Completion({ChoiceOf(0, Message(nullptr, {ImageCall("call_0", 30)}), "tool_calls"),
                                             ChoiceOf(1, Message(nullptr, {ImageCall("call_1", 40)}), "tool_calls")})));
  ASSERT_EQ(decoder.count(), 2u);
  // The second finishes first.
  const size_t second = decoder.tokens(0) == Block(40) ? 0 : 1;
  decoder.Complete(second);
  EXPECT_FALSE(client->whole().has_value());
  decoder.Complete(1 - second);

  const Json answer = AnswerOf(*client);
  for (int i = 0; i < 2; ++i) {
    const Json& message = answer.at("choices").at(i).at("message");
    const int n = i == 0 ? 30 : 40;
    EXPECT_EQ(ArgumentsOf(message.at("tool_calls").at(0)), Json({{"discrete_image_token", UrlOf(n)}}));
    EXPECT_EQ(ImageUrls(message), std::vector<std::string>{UrlOf(n)});
  }
}

TEST(ImageAnswerWriter, ABlockInTheContentBecomesAnImagePart) {
  FakeDecoder decoder(FakeDecoder::Mode::kLater);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  writer->Send(JsonResponse(200, Completion({ChoiceOf(0, Message("Look: " + Block(3) + " done"), "stop")})));
  ASSERT_EQ(decoder.count(), 1u);
  EXPECT_EQ(decoder.tokens(0), Block(3));
  decoder.Complete(0);

  const Json message = AnswerOf(*client).at("choices").at(0).at("message");
  EXPECT_EQ(message.at("content"), "Look:  done");
  EXPECT_FALSE(message.contains("tool_calls") && !message.at("tool_calls").empty()) << message.dump();
  ASSERT_TRUE(message.contains("content_parts")) << message.dump();
  EXPECT_EQ(message.at("content_parts").at(0).at("type"), "text");
  EXPECT_EQ(message.at("content_parts").at(0).at("text"), "Look:  done");
  EXPECT_EQ(ImageUrls(message), std::vector<std::string>{UrlOf(3)});
}

TEST(ImageAnswerWriter, BlocksInTheReasoningAreDropped) {
  FakeDecoder decoder(FakeDecoder::Mode::kAtOnce);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  Json message = Message("Hi");
  message["reasoning_content"] = "thinking " + Block(4) + " more";
  writer->Send(JsonResponse(200, Completion({ChoiceOf(0, message, "stop")})));
  EXPECT_EQ(decoder.count(), 0u);
  const Json out = AnswerOf(*client).at("choices").at(0).at("message");
  EXPECT_EQ(out.at("content"), "Hi");
  EXPECT_EQ(out.at("reasoning_content"), "thinking  more");
  EXPECT_TRUE(ImageUrls(out).empty());
}

TEST(ImageAnswerWriter, AFailedImageIsTheRequestsError) {
  struct Case {
    Status failure;
    int http_status;
    std::string code;
  };
  for (const Case& c : std::vector<Case>{
           {DecodeTimeout(), 504, "image_decode_timeout"},
           {ResourceExhausted("decoder full").WithErrorCode("decoder_busy"), 429, "decoder_busy"},
           {Internal("bad tokens").WithErrorCode("image_decode_failed"), 500, "image_decode_failed"},
       }) {
    SCOPED_TRACE(c.code);
    for (FakeDecoder::Mode mode : {FakeDecoder::Mode::kAtOnce, FakeDecoder::Mode::kLater}) {
      FakeDecoder decoder(mode, c.failure);
      auto client = std::make_shared<FakeClient>();
      auto writer = MakeWriter(client, decoder);
      writer->Send(JsonResponse(
          200, Completion({ChoiceOf(0, Message("Here it is", {ImageCall("call_1", 5)}), "tool_calls")})));
      if (mode == FakeDecoder::Mode::kLater) decoder.Complete(0, c.failure);
      ASSERT_EQ(client->sends(), 1);
      EXPECT_EQ(client->whole()->status, c.http_status);
      const Json answer = AnswerOf(*client);
      ASSERT_TRUE(answer.contains("error")) << answer.dump();
      EXPECT_EQ(answer.at("error").at("code"), c.code);
      EXPECT_FALSE(answer.contains("choices"));
    }
  }
}

TEST(ImageAnswerWriter, OneOfTwoImagesFailingFailsTheAnswerOnce) {
  FakeDecoder decoder(FakeDecoder::Mode::kLater);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  writer->Send(JsonResponse(200, Completion({TwoCallChoice()})));
  ASSERT_EQ(decoder.count(), 2u);
  decoder.Complete(0, DecodeTimeout());
  decoder.Complete(1);
  ASSERT_EQ(client->sends(), 1);
  EXPECT_EQ(client->whole()->status, 504);
  EXPECT_EQ(AnswerOf(*client).at("error").at("code"), "image_decode_timeout");
}

TEST(ImageAnswerWriter, WithErrorsAsTextAFailedImageIsAnErrorOnItsChoice) {
  FakeDecoder decoder(FakeDecoder::Mode::kLater);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder, /*errors_as_text=*/true);
  writer->Send(JsonResponse(
      200, Completion({ChoiceOf(0, Message("Here it is", {ImageCall("call_1", 5)}), "tool_calls")})));
  decoder.Complete(0, DecodeTimeout());
  ASSERT_EQ(client->sends(), 1);
  EXPECT_EQ(client->whole()->status, 200);
  const Json answer = AnswerOf(*client);
  const Json& choice = answer.at("choices").at(0);
  ASSERT_TRUE(choice.contains("error")) << choice.dump();
  EXPECT_EQ(choice.at("error").at("code"), "image_decode_timeout");
  EXPECT_FALSE(choice.at("error").at("message").get<std::string>().empty());
  const Json& message = choice.at("message");
  EXPECT_EQ(message.at("content"), "Here it is");
  EXPECT_TRUE(!message.contains("tool_calls") || message.at("tool_calls").empty()) << message.dump();
  EXPECT_TRUE(ImageUrls(message).empty());
}

TEST(ImageAnswerWriter, WithErrorsAsTextTheOtherImageStillArrives) {
  FakeDecoder decoder(FakeDecoder::Mode::kLater);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder, /*errors_as_text=*/true);
  writer->Send(JsonResponse(200, Completion({ChoiceOf(0, Message(nullptr, {ImageCall("call_0", 30)}), "tool_calls"),
                                             ChoiceOf(1, Message(nullptr, {ImageCall("call_1", 40)}), "tool_calls")})));
  ASSERT_EQ(decoder.count(), 2u);
  const size_t first = decoder.tokens(0) == Block(30) ? 0 : 1;
  decoder.Complete(first, DecodeTimeout());
  decoder.Complete(1 - first);
  const Json answer = AnswerOf(*client);
  EXPECT_EQ(answer.at("choices").at(0).at("error").at("code"), "image_decode_timeout");
  EXPECT_FALSE(answer.at("choices").at(1).contains("error"));
  EXPECT_EQ(ImageUrls(answer.at("choices").at(1).at("message")), std::vector<std::string>{UrlOf(40)});
}

TEST(ImageAnswerWriter, AnErrorAnswerPassesUnchanged) {
  FakeDecoder decoder(FakeDecoder::Mode::kAtOnce);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  const std::string body = Unavailable("no llm").ToOpenAiJson();
  writer->Send(JsonResponse(503, body));
  ASSERT_EQ(client->sends(), 1);
  EXPECT_EQ(client->whole()->status, 503);
  EXPECT_EQ(client->whole()->body, body);
  EXPECT_EQ(decoder.count(), 0u);

  // A non-200 answer is not searched for images.
  auto client2 = std::make_shared<FakeClient>();
  auto writer2 = MakeWriter(client2, decoder);
  const std::string odd = Completion({ChoiceOf(0, Message("x", {ImageCall("call_1", 5)}), "tool_calls")});
  writer2->Send(JsonResponse(400, odd));
  ASSERT_EQ(client2->sends(), 1);
  EXPECT_EQ(client2->whole()->status, 400);
  EXPECT_EQ(client2->whole()->body, odd);
  EXPECT_EQ(decoder.count(), 0u);
}

TEST(ImageAnswerWriter, AnAnswerWithoutImagesPassesUnchanged) {
  FakeDecoder decoder(FakeDecoder::Mode::kAtOnce);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  Json weather = {{"id", "call_w"},
                  {"type", "function"},
                  {"function", {{"name", "get_weather"}, {"arguments", R"({"city": "Paris"})"}}}};
  const std::string body =
      Completion({ChoiceOf(0, Message("It is <b>sunny</b> a < b <|im_end|>", {weather}), "tool_calls")});
  writer->Send(JsonResponse(200, body));
  ASSERT_EQ(client->sends(), 1);
  EXPECT_EQ(client->whole()->status, 200);
  EXPECT_EQ(Json::parse(client->whole()->body), Json::parse(body));
  const Json message = AnswerOf(*client).at("choices").at(0).at("message");
  EXPECT_EQ(message.at("content"), "It is <b>sunny</b> a < b <|im_end|>");
  EXPECT_FALSE(message.contains("content_parts"));
  EXPECT_EQ(decoder.count(), 0u);
}

TEST(ImageAnswerWriter, AWholeAnswerAsTheLlmServiceWritesIt) {
  // The LLM service writes "tool_calls": [] and "reasoning_content": null
  // when there are none, and the arguments without a space.
  FakeDecoder decoder(FakeDecoder::Mode::kAtOnce);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  Json content_image = Message("Look: " + Block(3));
  content_image["tool_calls"] = Json::array();
  content_image["reasoning_content"] = nullptr;
  Json call = ImageCall("call_9", 9);
  call["function"]["arguments"] = Json{{"discrete_image_token", Block(9)}}.dump();
  Json call_image = Message(nullptr, {call});
  call_image["reasoning_content"] = nullptr;
  writer->Send(
      JsonResponse(200, Completion({ChoiceOf(0, content_image, "stop"), ChoiceOf(1, call_image, "tool_calls")})));
  EXPECT_EQ(decoder.all_tokens(), (std::multiset<std::string>{Block(3), Block(9)}));
  const Json answer = AnswerOf(*client);
  const Json& m0 = answer.at("choices").at(0).at("message");
  EXPECT_EQ(m0.at("content"), "Look: ");
  EXPECT_TRUE(m0.at("tool_calls").empty()) << m0.dump();
  EXPECT_EQ(ImageUrls(m0), std::vector<std::string>{UrlOf(3)});
  const Json& m1 = answer.at("choices").at(1).at("message");
  EXPECT_EQ(ArgumentsOf(m1.at("tool_calls").at(0)), Json({{"discrete_image_token", UrlOf(9)}}));
  EXPECT_EQ(ImageUrls(m1), std::vector<std::string>{UrlOf(9)});
}

TEST(ImageAnswerWriter, AnotherCallBesideTheImageStaysAsItIs) {
  FakeDecoder decoder(FakeDecoder::Mode::kAtOnce);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  const Json weather = {{"id", "call_w"},
                        {"type", "function"},
                        {"function", {{"name", "get_weather"}, {"arguments", R"({"city": "Paris"})"}}}};
  writer->Send(JsonResponse(
      200, Completion({ChoiceOf(0, Message("both", {weather, ImageCall("call_1", 5)}), "tool_calls")})));
  const Json message = AnswerOf(*client).at("choices").at(0).at("message");
  ASSERT_EQ(message.at("tool_calls").size(), 2u) << message.dump();
  EXPECT_EQ(message.at("tool_calls").at(0), weather);
  EXPECT_EQ(ArgumentsOf(message.at("tool_calls").at(1)), Json({{"discrete_image_token", UrlOf(5)}}));
  EXPECT_EQ(ImageUrls(message), std::vector<std::string>{UrlOf(5)});
}

TEST(ImageAnswerWriter, AnUnclosedBlockInAWholeAnswerNeverReachesTheClient) {
  // Cut by max_tokens: no image, and no image token either.
  FakeDecoder decoder(FakeDecoder::Mode::kAtOnce);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  const std::string cut = "Look: <|discrete_image_start|><|vision_ratio_1:1|><|vision5|>";
  writer->Send(JsonResponse(200, Completion({ChoiceOf(0, Message(cut), "length")})));
  EXPECT_EQ(decoder.count(), 0u);
  ASSERT_EQ(client->sends(), 1);
  const Json message = AnswerOf(*client).at("choices").at(0).at("message");  // checks no image text
  EXPECT_EQ(message.at("content"), "Look: ");
  EXPECT_TRUE(ImageUrls(message).empty());
}

TEST(ImageAnswerWriter, WithErrorsAsTextAFailedContentImageKeepsTheText) {
  FakeDecoder decoder(FakeDecoder::Mode::kAtOnce, DecodeTimeout());
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder, /*errors_as_text=*/true);
  writer->Send(JsonResponse(200, Completion({ChoiceOf(0, Message("Look: " + Block(3) + " done"), "stop")})));
  ASSERT_EQ(client->sends(), 1);
  EXPECT_EQ(client->whole()->status, 200);
  const Json answer = AnswerOf(*client);
  const Json& choice = answer.at("choices").at(0);
  EXPECT_EQ(choice.at("error").at("code"), "image_decode_timeout");
  EXPECT_EQ(choice.at("message").at("content"), "Look:  done");
  EXPECT_TRUE(ImageUrls(choice.at("message")).empty());
}


TEST(ImageAnswerWriter, ImageTokensLeaveTheLogprobsOfAWholeAnswer) {
  FakeDecoder decoder(FakeDecoder::Mode::kAtOnce);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  std::vector<std::string> tokens = {"Look", ":", " "};
  for (const std::string& t : BlockTokens(3)) tokens.push_back(t);
  tokens.push_back("<|vision_eol|>");  // a stray one
  tokens.push_back(" done");
  Json choice = ChoiceOf(0, Message("Look: " + Block(3) + "<|vision_eol|> done"), "stop");
  choice["logprobs"] = LogprobsOf(tokens);
  writer->Send(JsonResponse(200, Completion({choice})));
  ASSERT_EQ(client->sends(), 1);
  const Json answer = AnswerOf(*client);  // checks no image text anywhere
  const Json& logprobs = answer.at("choices").at(0).at("logprobs").at("content");
  std::string joined;
  for (const Json& e : logprobs) joined += e.at("token").get<std::string>();
  EXPECT_EQ(joined, "Look:  done");
}

TEST(ImageAnswerWriter, TheAnswerArrivesAfterTheRelayLetGoOfTheWriter) {
  FakeDecoder decoder(FakeDecoder::Mode::kLater);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder);
  writer->Send(JsonResponse(200, Completion({ChoiceOf(0, Message(nullptr, {ImageCall("call_1", 5)}), "tool_calls")})));
  writer.reset();
  ASSERT_EQ(decoder.count(), 1u);
  decoder.Complete(0);
  ASSERT_EQ(client->sends(), 1);
  EXPECT_EQ(ImageUrls(AnswerOf(*client).at("choices").at(0).at("message")), std::vector<std::string>{UrlOf(5)});
}

// A decode is asked only for a whole block.

TEST(ImageAnswerWriter, ACallCutShortInAWholeAnswerLeaksNoImageText) {
  for (bool errors_as_text : {false, true}) {
    SCOPED_TRACE(errors_as_text);
    FakeDecoder decoder(FakeDecoder::Mode::kAtOnce);
    auto client = std::make_shared<FakeClient>();
    auto writer = MakeWriter(client, decoder, errors_as_text);
    Json call = ImageCall("call_1", 5);
    call["function"]["arguments"] =
        "{\"discrete_image_token\": \"<|discrete_image_start|><|vision_ratio_1:1|><|vision5|>";
    writer->Send(JsonResponse(200, Completion({ChoiceOf(0, Message("Here", {call}), "length")})));
    ExpectOnlyWholeBlocksDecoded(decoder);
    ASSERT_EQ(client->sends(), 1);
    const Json answer = AnswerOf(*client);  // checks no image text anywhere
    if (client->whole()->status != 200) {
      EXPECT_FALSE(errors_as_text) << answer.dump();
      EXPECT_EQ(answer.at("error").at("code"), "image_decode_failed");
      continue;
    }
    const Json& choice = answer.at("choices").at(0);
    EXPECT_EQ(choice.at("message").at("content"), "Here");
    const Json& calls = choice.at("message").value("tool_calls", Json::array());
    EXPECT_TRUE(calls.empty()) << choice.dump();
  }
}

TEST(ImageAnswerWriter, WithErrorsAsTextOnlyTheFailedCallIsRemoved) {
  FakeDecoder decoder(FakeDecoder::Mode::kLater);
  auto client = std::make_shared<FakeClient>();
  auto writer = MakeWriter(client, decoder, /*errors_as_text=*/true);
  writer->Send(JsonResponse(200, Completion({TwoCallChoice()})));
  ASSERT_EQ(decoder.count(), 2u);
  const size_t a = decoder.tokens(0) == Block(10) ? 0 : 1;
  decoder.Complete(a, DecodeTimeout());
  decoder.Complete(1 - a);
  const Json answer = AnswerOf(*client);
  const Json& choice = answer.at("choices").at(0);
  EXPECT_EQ(choice.at("error").at("code"), "image_decode_timeout");
  const Json& calls = choice.at("message").at("tool_calls");
  ASSERT_EQ(calls.size(), 1u) << choice.dump();
  EXPECT_EQ(calls.at(0).at("id"), "call_b");
  EXPECT_EQ(ArgumentsOf(calls.at(0)), Json({{"discrete_image_token", UrlOf(20)}}));
  EXPECT_EQ(ImageUrls(choice.at("message")), std::vector<std::string>{UrlOf(20)});
}


}  // namespace
}  // namespace omni::orchestrator
