// Fakes and builders shared by the image answer tests (image_answer_test.cc:
// the scrubber and whole answers; image_answer_stream_test.cc: streams): a
// client writer that records what it was sent, a decoder that records the
// blocks it was given and answers at once or later from another thread, and
// chat answers built by hand.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <latch>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "net/sse.h"
#include "services/orchestrator/image_answer.h"

namespace omni::orchestrator::image_test {

using Json = nlohmann::json;

constexpr char kCallName[] = "t2i_model_generation";

// The tokens of one image block; `n` tells blocks apart (the fake decoder
// names its picture after the first <|visionN|>).
inline std::vector<std::string> BlockTokens(int n) {
  auto v = [](int i) { return "<|vision" + std::to_string(i) + "|>"; };
  return {"<|discrete_image_start|>", "<|vision_ratio_1:1|>", "<|vision_token|>", v(n), v(n + 1), "<|vision_eol|>",
          v(n + 2),                   v(n + 3),               "<|vision_eol|>",   "<|vision_eof|>",
          "<|discrete_image_end|>"};
}

inline std::string Block(int n) {
  std::string s;
  for (const std::string& t : BlockTokens(n)) s += t;
  return s;
}

inline std::string UrlOf(int n) { return "http://x/img/" + std::to_string(n) + ".png"; }

inline int BlockNumber(std::string_view tokens) {
  for (size_t at = tokens.find("<|vision"); at != std::string_view::npos; at = tokens.find("<|vision", at + 1)) {
    const size_t digits = at + 8;
    if (digits < tokens.size() && std::isdigit(static_cast<unsigned char>(tokens[digits]))) {
      return std::atoi(std::string(tokens.substr(digits)).c_str());
    }
  }
  return -1;
}

// A call's arguments as vLLM writes them (with a space after the colon).
inline std::string Arguments(std::string_view value) {
  return "{\"discrete_image_token\": \"" + std::string(value) + "\"}";
}

inline bool HasImageText(std::string_view s) {
  return s.find("<|vision") != std::string_view::npos || s.find("<|discrete_image") != std::string_view::npos;
}

inline Status DecodeTimeout() {
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

inline std::shared_ptr<ImageAnswerWriter> MakeWriter(const std::shared_ptr<FakeClient>& client, FakeDecoder& decoder,
                                              bool errors_as_text = false) {
  return std::make_shared<ImageAnswerWriter>(client, decoder.Fn(), errors_as_text);
}


inline Json ImageCall(const std::string& id, int n) {
  return {{"id", id},
          {"type", "function"},
          {"function", {{"name", kCallName}, {"arguments", Arguments(Block(n))}}}};
}

inline Json Message(Json content, std::vector<Json> calls = {}) {
  Json m = {{"role", "assistant"}, {"content", std::move(content)}};
  if (!calls.empty()) m["tool_calls"] = calls;
  return m;
}

inline Json ChoiceOf(int index, Json message, std::string finish) {
  return {{"index", index}, {"message", std::move(message)}, {"logprobs", nullptr}, {"finish_reason", finish}};
}

inline std::string Completion(std::vector<Json> choices) {
  Json j = {{"id", "chatcmpl-1"},
            {"object", "chat.completion"},
            {"created", 1700000000},
            {"model", "omni"},
            {"choices", choices},
            {"usage", {{"prompt_tokens", 5}, {"completion_tokens", 20}, {"total_tokens", 25}}}};
  return j.dump();
}

// The client's whole answer, parsed; fails the test if there is none.
inline Json AnswerOf(FakeClient& client) {
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
inline std::vector<std::string> ImageUrls(const Json& message) {
  std::vector<std::string> urls;
  if (!message.contains("content_parts")) return urls;
  for (const Json& part : message.at("content_parts")) {
    if (part.value("type", "") == "image_url") urls.push_back(part.at("image_url").at("url"));
  }
  return urls;
}

inline Json ArgumentsOf(const Json& call) {
  return Json::parse(call.at("function").at("arguments").get<std::string>());
}

// One choice with two image calls, blocks 10 and 20.
inline Json TwoCallChoice() {
  return ChoiceOf(0, Message("two", {ImageCall("call_a", 10), ImageCall("call_b", 20)}), "tool_calls");
}


inline Json LogprobsOf(const std::vector<std::string>& tokens) {
  Json content = Json::array();
  for (const std::string& t : tokens) {
    content.push_back({{"token", t}, {"logprob", -0.5}, {"bytes", nullptr}, {"top_logprobs", Json::array()}});
  }
  return {{"content", content}};
}


inline void ExpectOnlyWholeBlocksDecoded(FakeDecoder& decoder) {
  for (size_t i = 0; i < decoder.count(); ++i) {
    const std::string tokens = decoder.tokens(i);
    EXPECT_TRUE(tokens.starts_with("<|discrete_image_start|>") && tokens.ends_with("<|discrete_image_end|>"))
        << "decode " << i << " was given an incomplete block: '" << tokens << "'";
  }
}

// max_tokens cut an image call inside its block, so its arguments are not
// even JSON. The contract leaves open whether that is a failed image or a
// dropped call; either way no image text leaks and nothing is decoded.

}  // namespace omni::orchestrator::image_test
