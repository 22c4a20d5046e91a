// The images of a chat answer, tested against their contract (image_answer.h,
// image_stage.h): the scrubber fed text in pieces, and ImageAnswerWriter in
// front of a fake client, with a fake decoder that records the blocks it was
// given and answers at once or later, from another thread.
#include "services/orchestrator/image_answer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <latch>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "net/sse.h"

namespace omni::orchestrator {
namespace {

using Json = nlohmann::json;

constexpr char kCallName[] = "t2i_model_generation";

// The tokens of one image block; `n` tells blocks apart (the fake decoder
// names its picture after the first <|visionN|>).
std::vector<std::string> BlockTokens(int n) {
  auto v = [](int i) { return "<|vision" + std::to_string(i) + "|>"; };
  return {"<|discrete_image_start|>", "<|vision_ratio_1:1|>", "<|vision_token|>", v(n), v(n + 1), "<|vision_eol|>",
          v(n + 2),                   v(n + 3),               "<|vision_eol|>",   "<|vision_eof|>",
          "<|discrete_image_end|>"};
}

std::string Block(int n) {
  std::string s;
  for (const std::string& t : BlockTokens(n)) s += t;
  return s;
}

std::string UrlOf(int n) { return "http://x/img/" + std::to_string(n) + ".png"; }

int BlockNumber(std::string_view tokens) {
  for (size_t at = tokens.find("<|vision"); at != std::string_view::npos; at = tokens.find("<|vision", at + 1)) {
    const size_t digits = at + 8;
    if (digits < tokens.size() && std::isdigit(static_cast<unsigned char>(tokens[digits]))) {
      return std::atoi(std::string(tokens.substr(digits)).c_str());
    }
  }
  return -1;
}

// A call's arguments as vLLM writes them (with a space after the colon).
std::string Arguments(std::string_view value) {
  return "{\"discrete_image_token\": \"" + std::string(value) + "\"}";
}

bool HasImageText(std::string_view s) {
  return s.find("<|vision") != std::string_view::npos || s.find("<|discrete_image") != std::string_view::npos;
}

Status DecodeTimeout() {
  return Status(StatusCode::kDeadlineExceeded, "the decode took too long").WithErrorCode("image_decode_timeout");
}

// The decoder: records each block, answers at once or when the test says.
class FakeDecoder {
 public:
  enum class Mode { kAtOnce, kLater };
  explicit FakeDecoder(Mode mode, std::optional<Status> failure = std::nullopt)
      : mode_(mode), failure_(std::move(failure)) {}

  ImageAnswerWriter::DecodeFn Fn() {
    return [this](std::string tokens, std::function<void(StatusOr<GeneratedImage>)> done) {
      StatusOr<GeneratedImage> result = Result(tokens, failure_);
      {
        std::lock_guard<std::mutex> lock(mu_);
        calls_.push_back(Call{tokens, done});
        if (mode_ == Mode::kLater) return;
        calls_.back().completed = true;
      }
      done(std::move(result));
    };
  }

  size_t count() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_.size();
  }
  std::string tokens(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_.at(i).tokens;
  }
  std::multiset<std::string> all_tokens() {
    std::lock_guard<std::mutex> lock(mu_);
    std::multiset<std::string> out;
    for (const Call& c : calls_) out.insert(c.tokens);
    return out;
  }

  // Completes call `i` on another thread and waits for it.
  void Complete(size_t i, std::optional<Status> failure = std::nullopt) {
    auto [tokens, done] = Take(i);
    std::thread t([&, tokens = tokens, done = done] { done(Result(tokens, failure)); });
    t.join();
  }
  // Completes every waiting call, each on its own thread, all released at once.
  void CompleteAllTogether() {
    std::vector<std::pair<std::string, std::function<void(StatusOr<GeneratedImage>)>>> work;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (Call& c : calls_) {
        if (c.completed) continue;
        c.completed = true;
        work.emplace_back(c.tokens, c.done);
      }
    }
    std::latch go(static_cast<std::ptrdiff_t>(work.size()));
    std::vector<std::thread> threads;
    for (auto& [tokens, done] : work) {
      threads.emplace_back([&go, &tokens = tokens, &done = done] {
        go.arrive_and_wait();
        done(Result(tokens, std::nullopt));
      });
    }
    for (std::thread& t : threads) t.join();
  }

 private:
  struct Call {
    std::string tokens;
    std::function<void(StatusOr<GeneratedImage>)> done;
    bool completed = false;
  };
  static StatusOr<GeneratedImage> Result(const std::string& tokens, const std::optional<Status>& failure) {
    if (failure) return *failure;
    const int n = BlockNumber(tokens);
    GeneratedImage image;
    image.url = UrlOf(n);
    image.key = "img/" + std::to_string(n) + ".png";
    image.width = image.height = 1024;
    image.seed = 7;
    return image;
  }
  std::pair<std::string, std::function<void(StatusOr<GeneratedImage>)>> Take(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    Call& c = calls_.at(i);
    EXPECT_FALSE(c.completed) << "decode " << i << " completed twice";
    c.completed = true;
    return {c.tokens, c.done};
  }

  const Mode mode_;
  const std::optional<Status> failure_;
  std::mutex mu_;
  std::vector<Call> calls_;  // guarded by mu_
};

// The client: records what it was sent. Decodes finish on other threads.
class FakeClient final : public ResponseWriter {
 public:
  // As the server's writer: calls after the response is complete do nothing
  // and return false.
  bool Send(HttpResponse response) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (sends_ > 0 || starts_ > 0) return false;
    ++sends_;
    whole_ = std::move(response);
    return true;
  }
  bool StartStream(int status, HttpHeaders headers) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (sends_ > 0 || starts_ > 0) return false;
    ++starts_;
    stream_status_ = status;
    stream_headers_ = std::move(headers);
    return true;
  }
  bool Write(std::string_view chunk) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (finishes_ > 0) return false;
    writes_.emplace_back(chunk);
    return true;
  }
  bool WriteNoWait(std::string_view chunk) override { return Write(chunk); }
  bool Finish() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (finishes_ > 0) return false;
    ++finishes_;
    return true;
  }
  bool client_gone() const override { return false; }
  void OnClientGone(std::function<void()> cb) override {
    std::lock_guard<std::mutex> lock(mu_);
    on_gone_ = std::move(cb);
  }
  const std::string& request_id() const override { return id_; }
  // The client leaves: its one callback runs.
  void Leave() {
    std::function<void()> cb;
    {
      std::lock_guard<std::mutex> lock(mu_);
      cb = on_gone_;
    }
    if (cb) cb();
  }

  std::optional<HttpResponse> whole() {
    std::lock_guard<std::mutex> lock(mu_);
    return whole_;
  }
  int sends() {
    std::lock_guard<std::mutex> lock(mu_);
    return sends_;
  }
  int stream_status() {
    std::lock_guard<std::mutex> lock(mu_);
    return stream_status_;
  }
  HttpHeaders stream_headers() {
    std::lock_guard<std::mutex> lock(mu_);
    return stream_headers_;
  }
  std::vector<std::string> writes() {
    std::lock_guard<std::mutex> lock(mu_);
    return writes_;
  }
  std::string streamed() {
    std::string all;
    for (const std::string& w : writes()) all += w;
    return all;
  }
  int finishes() {
    std::lock_guard<std::mutex> lock(mu_);
    return finishes_;
  }

 private:
  std::mutex mu_;
  std::optional<HttpResponse> whole_;
  int sends_ = 0;
  int starts_ = 0;
  int stream_status_ = 0;
  HttpHeaders stream_headers_;
  std::vector<std::string> writes_;
  int finishes_ = 0;
  std::string id_ = "req-1";
  std::function<void()> on_gone_;
};

std::shared_ptr<ImageAnswerWriter> MakeWriter(const std::shared_ptr<FakeClient>& client, FakeDecoder& decoder,
                                              bool errors_as_text = false) {
  return std::make_shared<ImageAnswerWriter>(client, decoder.Fn(), errors_as_text);
}

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

Json ImageCall(const std::string& id, int n) {
  return {{"id", id},
          {"type", "function"},
          {"function", {{"name", kCallName}, {"arguments", Arguments(Block(n))}}}};
}

Json Message(Json content, std::vector<Json> calls = {}) {
  Json m = {{"role", "assistant"}, {"content", std::move(content)}};
  if (!calls.empty()) m["tool_calls"] = calls;
  return m;
}

Json ChoiceOf(int index, Json message, std::string finish) {
  return {{"index", index}, {"message", std::move(message)}, {"logprobs", nullptr}, {"finish_reason", finish}};
}

std::string Completion(std::vector<Json> choices) {
  Json j = {{"id", "chatcmpl-1"},
            {"object", "chat.completion"},
            {"created", 1700000000},
            {"model", "omni"},
            {"choices", choices},
            {"usage", {{"prompt_tokens", 5}, {"completion_tokens", 20}, {"total_tokens", 25}}}};
  return j.dump();
}

// The client's whole answer, parsed; fails the test if there is none.
Json AnswerOf(FakeClient& client) {
  std::optional<HttpResponse> r = client.whole();
  if (!r) {
    ADD_FAILURE() << "the client got no answer";
    return Json();
  }
  EXPECT_FALSE(HasImageText(r->body)) << r->body;
  Json j = Json::parse(r->body, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r->body;
  return j;
}

// The image_url parts' URLs of a message (or delta), in order.
std::vector<std::string> ImageUrls(const Json& message) {
  std::vector<std::string> urls;
  if (!message.contains("content_parts")) return urls;
  for (const Json& part : message.at("content_parts")) {
    if (part.value("type", "") == "image_url") urls.push_back(part.at("image_url").at("url"));
  }
  return urls;
}

Json ArgumentsOf(const Json& call) {
  return Json::parse(call.at("function").at("arguments").get<std::string>());
}

// One choice with two image calls, blocks 10 and 20.
Json TwoCallChoice() {
  return ChoiceOf(0, Message("two", {ImageCall("call_a", 10), ImageCall("call_b", 20)}), "tool_calls");
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

Json LogprobsOf(const std::vector<std::string>& tokens) {
  Json content = Json::array();
  for (const std::string& t : tokens) {
    content.push_back({{"token", t}, {"logprob", -0.5}, {"bytes", nullptr}, {"top_logprobs", Json::array()}});
  }
  return {{"content", content}};
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
void ExpectOnlyWholeBlocksDecoded(FakeDecoder& decoder) {
  for (size_t i = 0; i < decoder.count(); ++i) {
    const std::string tokens = decoder.tokens(i);
    EXPECT_TRUE(tokens.starts_with("<|discrete_image_start|>") && tokens.ends_with("<|discrete_image_end|>"))
        << "decode " << i << " was given an incomplete block: '" << tokens << "'";
  }
}

// max_tokens cut an image call inside its block, so its arguments are not
// even JSON. The contract leaves open whether that is a failed image or a
// dropped call; either way no image text leaks and nothing is decoded.
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

std::string Data(const Json& j) { return "data: " + j.dump() + "\n\n"; }
constexpr char kDone[] = "data: [DONE]\n\n";

std::string Chunk(Json delta, Json finish = nullptr, int index = 0) {
  Json choices = Json::array();
  choices.push_back({{"index", index}, {"delta", std::move(delta)}, {"logprobs", nullptr}, {"finish_reason", finish}});
  return Data({{"id", "chatcmpl-1"},
               {"object", "chat.completion.chunk"},
               {"created", 1700000000},
               {"model", "omni"},
               {"choices", std::move(choices)}});
}
std::string TextChunk(std::string text, int index = 0) { return Chunk({{"content", std::move(text)}}, nullptr, index); }
std::string FinishChunk(std::string reason, int index = 0) { return Chunk(Json::object(), reason, index); }
std::string CallAnnounce(const std::string& id, int index = 0, int call = 0) {
  Json calls = Json::array();
  calls.push_back({{"index", call},
                   {"id", id},
                   {"type", "function"},
                   {"function", {{"name", kCallName}, {"arguments", ""}}}});
  return Chunk({{"tool_calls", std::move(calls)}}, nullptr, index);
}
std::string CallArgs(std::string fragment, int index = 0, int call = 0) {
  Json calls = Json::array();
  calls.push_back({{"index", call}, {"function", {{"arguments", std::move(fragment)}}}});
  return Chunk({{"tool_calls", std::move(calls)}}, nullptr, index);
}

// How an image call's arguments are cut into deltas.
enum class Cut { kBlockThenClose, kTokenByToken, kOneFragment };

// The argument fragments of call `n`; `block_done` is the index of the first
// fragment after which the block is complete.
std::vector<std::string> ArgFragments(int n, Cut cut, size_t* block_done) {
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

std::vector<ClientEvent> EventsOf(FakeClient& client) {
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

const Json* ChoiceIn(const ClientEvent& e, int index) {
  if (e.done || !e.json.contains("choices")) return nullptr;
  for (const Json& c : e.json.at("choices")) {
    if (c.value("index", -1) == index) return &c;
  }
  return nullptr;
}

constexpr size_t kNone = static_cast<size_t>(-1);

size_t FinishAt(const std::vector<ClientEvent>& events, int index) {
  for (size_t i = 0; i < events.size(); ++i) {
    const Json* c = ChoiceIn(events[i], index);
    if (c && c->contains("finish_reason") && !c->at("finish_reason").is_null()) return i;
  }
  return kNone;
}
size_t DoneAt(const std::vector<ClientEvent>& events) {
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].done) return i;
  }
  return kNone;
}
size_t ImageAt(const std::vector<ClientEvent>& events, int index, const std::string& url) {
  for (size_t i = 0; i < events.size(); ++i) {
    const Json* c = ChoiceIn(events[i], index);
    if (!c || !c->contains("delta")) continue;
    const std::vector<std::string> urls = ImageUrls(c->at("delta"));
    if (std::find(urls.begin(), urls.end(), url) != urls.end()) return i;
  }
  return kNone;
}
std::string TextOf(const std::vector<ClientEvent>& events, int index) {
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
std::vector<Json> CallsOf(const std::vector<ClientEvent>& events, int index) {
  std::vector<Json> calls;
  for (const ClientEvent& e : events) {
    const Json* c = ChoiceIn(e, index);
    if (c && c->contains("delta") && c->at("delta").contains("tool_calls")) {
      for (const Json& call : c->at("delta").at("tool_calls")) calls.push_back(call);
    }
  }
  return calls;
}
size_t Count(const std::vector<ClientEvent>& events, bool (*pred)(const ClientEvent&)) {
  size_t n = 0;
  for (const ClientEvent& e : events) n += pred(e) ? 1 : 0;
  return n;
}

HttpHeaders EventStream() {
  HttpHeaders h;
  h.Set("content-type", "text/event-stream");
  return h;
}

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

bool IsErrorEvent(const ClientEvent& e) { return !e.done && e.json.contains("error"); }
bool IsDone(const ClientEvent& e) { return e.done; }

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
  ASSERT_TRUE(writer->StartStream(200, EventStream()));
  EXPECT_TRUE(writer->Write(CallAnnounce("call_1")));
  EXPECT_TRUE(writer->Write(CallArgs(Arguments(Block(5)))));
  EXPECT_TRUE(writer->Write(FinishChunk("tool_calls")));
  EXPECT_TRUE(writer->Write(kDone));
  writer->Finish();
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
  ASSERT_TRUE(writer->StartStream(200, EventStream()));
  EXPECT_TRUE(writer->Write(CallAnnounce("call_1")));
  EXPECT_TRUE(writer->Write(CallArgs(Arguments(Block(5)))));
  EXPECT_TRUE(writer->Write(FinishChunk("tool_calls")));
  EXPECT_TRUE(writer->Write(kDone));
  writer->Finish();
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
