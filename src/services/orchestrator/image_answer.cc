#include "services/orchestrator/image_answer.h"

#include <map>

#include <nlohmann/json.hpp>

#include "api/openai/openai_types.h"
#include "core/log.h"
#include "services/orchestrator/sse_events.h"

namespace omni::orchestrator {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kBlockStart = "<|discrete_image_start|>";
constexpr std::string_view kBlockEnd = "<|discrete_image_end|>";
// Tokens that never reach the client outside a block: every <|vision...|>
// (codes, ratio, row and end markers) and a stray block end.
constexpr std::string_view kVisionPrefix = "<|vision";
constexpr size_t kMaxTokenBytes = 64;        // longer "<|vision..." text is no token
constexpr size_t kMaxBlockBytes = 64 << 10;  // 729 codes and markers are ~10 KiB

// Dumps without throwing on invalid UTF-8 in relayed text.
std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

// Drops the logprob entries whose token is image text (a block's tokens).
void ScrubLogprobs(Json& choice) {
  if (!choice.contains("logprobs") || !choice["logprobs"].is_object()) return;
  Json& lp = choice["logprobs"];
  if (!lp.contains("content") || !lp["content"].is_array()) return;
  Json kept = Json::array();
  for (Json& e : lp["content"]) {
    const bool image = e.is_object() && e.contains("token") && e["token"].is_string() &&
                       (e["token"].get<std::string>().find(kVisionPrefix) != std::string::npos ||
                        e["token"].get<std::string>().find("<|discrete_image_") != std::string::npos);
    if (!image) kept.push_back(std::move(e));
  }
  lp["content"] = std::move(kept);
}

// The image block of a t2i_model_generation call's arguments, "" when it
// has none.
std::string ImageArgument(const std::string& arguments) {
  const Json args = Json::parse(arguments, nullptr, false);
  if (!args.is_object() || !args.contains(openai::kImageToolParam) || !args[openai::kImageToolParam].is_string()) {
    return "";
  }
  return args[openai::kImageToolParam].get<std::string>();
}

std::string ImageArguments(const std::string& url) {
  return Dump(Json{{std::string(openai::kImageToolParam), url}});
}

Json ImagePart(const std::string& url) { return Json{{"type", "image_url"}, {"image_url", {{"url", url}}}}; }

Json ErrorField(const Status& s) {
  return Json{{"message", s.message()}, {"code", s.error_code().empty() ? "image_decode_failed" : s.error_code()}};
}

Status MissingTokens() {
  return Internal("the model's image call carries no complete discrete_image_token")
      .WithErrorCode("image_decode_failed");
}

}  // namespace

// ---- VisionTextScrubber --------------------------------------------------

VisionTextScrubber::Out VisionTextScrubber::Push(std::string_view piece) {
  Out out;
  held_.append(piece);
  Scan(&out);
  return out;
}

VisionTextScrubber::Out VisionTextScrubber::Finish() {
  Out out;
  Scan(&out);
  if (in_block_) {
    out.dropped_open_block = true;
    in_block_ = false;
    block_.clear();
  }
  // What is left may only be the start of a token: text, unless it is image text.
  if (held_.find(kVisionPrefix) == std::string::npos && held_.find("<|discrete_image") == std::string::npos) {
    out.text += held_;
  }
  held_.clear();
  return out;
}

void VisionTextScrubber::Scan(Out* out) {
  std::string_view rest = held_;
  for (;;) {
    if (in_block_) {
      const size_t end = rest.find(kBlockEnd);
      if (end == std::string_view::npos) {
        // Keep the tail that may begin the end marker in `held_`.
        const size_t keep = std::min(rest.size(), kBlockEnd.size() - 1);
        block_.append(rest.substr(0, rest.size() - keep));
        rest = rest.substr(rest.size() - keep);
        if (block_.size() > kMaxBlockBytes) {  // no image: a runaway block is dropped
          in_block_ = false;
          block_.clear();
          out->dropped_open_block = true;
        }
        break;
      }
      block_.append(rest.substr(0, end + kBlockEnd.size()));
      out->blocks.push_back(std::move(block_));
      block_.clear();
      in_block_ = false;
      rest = rest.substr(end + kBlockEnd.size());
      continue;
    }
    const size_t lt = rest.find('<');
    if (lt == std::string_view::npos) {
      out->text.append(rest);
      rest = {};
      break;
    }
    out->text.append(rest.substr(0, lt));
    rest = rest.substr(lt);
    if (rest.starts_with(kBlockStart)) {
      in_block_ = true;
      block_.assign(kBlockStart);
      rest = rest.substr(kBlockStart.size());
      continue;
    }
    const bool vision = rest.starts_with(kVisionPrefix) || rest.starts_with(kBlockEnd);
    if (vision) {
      const size_t close = rest.find("|>", 2);
      if (close != std::string_view::npos && close < kMaxTokenBytes) {
        rest = rest.substr(close + 2);  // a stray image token: dropped
        continue;
      }
      if (close == std::string_view::npos && rest.size() < kMaxTokenBytes) break;  // may still close: held
      // Too long to be a token: its "<|vision" start is dropped, the rest is text.
      rest = rest.substr(2);
      continue;
    }
    // A proper prefix of a marker: held until the next piece decides.
    const bool may_start = kBlockStart.starts_with(rest) || kVisionPrefix.starts_with(rest) ||
                           kBlockEnd.starts_with(rest);
    if (may_start) break;
    out->text.push_back('<');
    rest = rest.substr(1);
  }
  held_ = std::string(rest);
}

// ---- ImageAnswerWriter ---------------------------------------------------

struct ImageAnswerWriter::Site {
  int choice = 0;
  int tool_index = -1;  // in the choice's tool calls; -1: a block in the content
  std::string call_id;
  std::string tokens;
  bool done = false;
  StatusOr<GeneratedImage> result = Internal("not decoded");
};

struct ImageAnswerWriter::Choice {
  VisionTextScrubber content, reasoning;
  struct Call {
    std::string id, name, arguments;
    bool started = false;
  };
  std::map<int, Call> calls;  // by tool-call index
};

// A whole answer: its images decoded concurrently, then sent in place.
struct ImageAnswerWriter::Whole {
  Json answer;
  HttpResponse response;
};

ImageAnswerWriter::ImageAnswerWriter(std::shared_ptr<ResponseWriter> client, DecodeFn decode, bool errors_as_text,
                                     std::function<void()> on_client_gone)
    : client_(std::move(client)),
      decode_(std::move(decode)),
      errors_as_text_(errors_as_text),
      on_client_gone_(std::move(on_client_gone)) {}

void ImageAnswerWriter::OnClientGone(std::function<void()> cb) {
  // The client's writer keeps one callback: both go in it.
  client_->OnClientGone([cb = std::move(cb), cancel = on_client_gone_] {
    if (cb) cb();
    if (cancel) cancel();
  });
}

ImageAnswerWriter::~ImageAnswerWriter() = default;

ImageAnswerWriter::Choice& ImageAnswerWriter::ChoiceAt(int index) {
  index = std::clamp(index, 0, 1023);
  while (std::ssize(choices_) <= index) choices_.push_back(std::make_unique<Choice>());
  return *choices_[index];
}

void ImageAnswerWriter::Launch(const std::vector<size_t>& sites, bool whole) {
  // Each decode holds the writer: the relay lets go of it once the upstream
  // answer is in, and the client's answer waits for the images.
  std::shared_ptr<ImageAnswerWriter> self = shared_from_this();
  for (size_t i : sites) {
    auto done = [self, i, whole](StatusOr<GeneratedImage> image) {
      if (whole) {
        self->WholeImageDone(i, std::move(image));
      } else {
        self->ImageDone(i, std::move(image));
      }
    };
    // A call cut short (max_tokens) has no block: it fails here, no decoder asked.
    if (sites_[i]->tokens.empty()) {
      done(MissingTokens());
    } else {
      decode_(sites_[i]->tokens, std::move(done));
    }
  }
}

bool ImageAnswerWriter::Send(HttpResponse response) {
  // Most answers hold no image text at all: relayed byte for byte.
  const bool maybe_images = response.body.find("<|") != std::string::npos ||
                            response.body.find(openai::kImageTool) != std::string::npos;
  if (response.status != 200 || !maybe_images) return client_->Send(std::move(response));
  Json j = Json::parse(response.body, nullptr, false);
  if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array()) return client_->Send(std::move(response));
  std::vector<size_t> to_start;
  {
    std::lock_guard lock(mu_);
    for (size_t ci = 0; ci < j["choices"].size(); ++ci) {
      Json& choice = j["choices"][ci];
      if (!choice.is_object() || !choice.contains("message") || !choice["message"].is_object()) continue;
      ScrubLogprobs(choice);
      Json& message = choice["message"];
      if (message.contains("reasoning_content") && message["reasoning_content"].is_string()) {
        VisionTextScrubber s;
        std::string text = s.Push(message["reasoning_content"].get<std::string>()).text;
        message["reasoning_content"] = text + s.Finish().text;
      }
      if (message.contains("content") && message["content"].is_string()) {
        VisionTextScrubber s;
        VisionTextScrubber::Out a = s.Push(message["content"].get<std::string>());
        VisionTextScrubber::Out b = s.Finish();
        message["content"] = a.text + b.text;
        for (auto* out : {&a, &b}) {
          for (std::string& block : out->blocks) {
            sites_.push_back(std::make_unique<Site>(Site{.choice = static_cast<int>(ci), .tokens = std::move(block)}));
          }
        }
      }
      if (message.contains("tool_calls") && message["tool_calls"].is_array()) {
        Json& calls = message["tool_calls"];
        for (size_t k = 0; k < calls.size(); ++k) {
          if (!calls[k].is_object()) continue;
          const Json fn = calls[k].value("function", Json::object());
          if (!fn.is_object() || fn.value("name", "") != openai::kImageTool) continue;
          const std::string args = fn.contains("arguments") && fn["arguments"].is_string() ? fn["arguments"].get<std::string>() : "";
          sites_.push_back(std::make_unique<Site>(Site{.choice = static_cast<int>(ci),
                                                       .tool_index = static_cast<int>(k),
                                                       .tokens = ImageArgument(args)}));
        }
      }
    }
    if (sites_.empty()) {
      response.body = Dump(j);
      return client_->Send(std::move(response));
    }
    whole_ = std::make_unique<Whole>(Whole{.answer = std::move(j), .response = std::move(response)});
    for (size_t i = 0; i < sites_.size(); ++i) to_start.push_back(i);
    pending_ = static_cast<int>(sites_.size());
  }
  // Outside the lock: a decode may finish at once, on this thread.
  Launch(to_start, /*whole=*/true);
  return true;
}

void ImageAnswerWriter::WholeImageDone(size_t site, StatusOr<GeneratedImage> image) {
  std::unique_lock lock(mu_);
  sites_[site]->result = std::move(image);
  sites_[site]->done = true;
  if (--pending_ > 0) return;
  std::unique_ptr<Whole> whole = std::move(whole_);
  lock.unlock();
  Json& answer = whole->answer;
  for (const auto& s : sites_) {
    if (!s->result.ok() && !errors_as_text_) {
      client_->Send(ErrorResponse(s->result.status()));
      return;
    }
  }
  // Per choice: image parts in site order; failed calls removed.
  std::map<int, std::vector<Json>> parts;
  std::map<int, std::vector<int>> removed_calls;
  for (const auto& s : sites_) {
    Json& choice = answer["choices"][s->choice];
    if (s->result.ok()) {
      parts[s->choice].push_back(ImagePart(s->result->url));
      if (s->tool_index >= 0) {
        choice["message"]["tool_calls"][s->tool_index]["function"]["arguments"] = ImageArguments(s->result->url);
      }
    } else {
      choice["error"] = ErrorField(s->result.status());
      if (s->tool_index >= 0) removed_calls[s->choice].push_back(s->tool_index);
    }
  }
  for (auto& [ci, indices] : removed_calls) {
    Json& calls = answer["choices"][ci]["message"]["tool_calls"];
    for (auto it = indices.rbegin(); it != indices.rend(); ++it) calls.erase(static_cast<size_t>(*it));
  }
  for (auto& [ci, images] : parts) {
    Json& message = answer["choices"][ci]["message"];
    Json list = Json::array();
    if (message.contains("content") && message["content"].is_string() && !message["content"].get<std::string>().empty()) {
      list.push_back(Json{{"type", "text"}, {"text", message["content"]}});
    }
    for (Json& p : images) list.push_back(std::move(p));
    message["content_parts"] = std::move(list);
  }
  whole->response.body = Dump(answer);
  client_->Send(std::move(whole->response));
}

bool ImageAnswerWriter::StartStream(int status, HttpHeaders headers) {
  {
    std::lock_guard lock(mu_);
    streaming_ = status == 200 && headers.GetOr("content-type", "").find("text/event-stream") != std::string::npos;
    passthrough_ = !streaming_;
  }
  return client_->StartStream(status, std::move(headers));
}

bool ImageAnswerWriter::Write(std::string_view chunk) {
  std::vector<size_t> starts;
  const bool ok = WriteLocked(chunk, &starts);
  Launch(starts, /*whole=*/false);  // outside the lock: a decode may finish at once
  return ok;
}

bool ImageAnswerWriter::WriteLocked(std::string_view chunk, std::vector<size_t>* starts) {
  std::lock_guard lock(mu_);
  if (passthrough_) return client_->WriteNoWait(chunk);
  if (failed_) return false;  // the stream ended with an image's error: the upstream may stop
  partial_.append(chunk);
  SplitSseEvents(
      partial_, [this](const std::string& data) { EditEvent(data); },
      [this](const std::string& event) {
        if (held_.empty()) client_->WriteNoWait(event);
      });
  if (failed_) return false;
  starts->swap(to_start_);
  return !client_->client_gone();
}

void ImageAnswerWriter::Emit(std::string data) {
  if (!held_.empty()) {
    held_.push_back(std::move(data));
  } else {
    client_->WriteSseEventNoWait(data);
  }
}

void ImageAnswerWriter::EditEvent(std::string_view data) {
  // [DONE], usage and error events wait for the images.
  auto barrier = [this](std::string d) {
    if (pending_ > 0 || !held_.empty()) {
      held_.push_back(std::move(d));
    } else {
      client_->WriteSseEventNoWait(d);
    }
  };
  if (data == "[DONE]") return barrier(std::string(data));
  Json j = data.find("\"choices\"") == std::string_view::npos ? Json() : Json::parse(data, nullptr, false);
  if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) {
    return barrier(std::string(data));
  }
  header_ = Dump(Json{{"id", j.value("id", Json())},
                      {"object", j.value("object", Json("chat.completion.chunk"))},
                      {"created", j.value("created", Json())},
                      {"model", j.value("model", Json())}});
  bool changed = false, finishing = false, meaningful = false;
  std::vector<size_t> started;
  for (Json& ch : j["choices"]) {
    if (!ch.is_object()) continue;
    const int ci = ch.value("index", 0);
    Choice& c = ChoiceAt(ci);
    if (ch.contains("logprobs") && ch["logprobs"].is_object()) {
      const size_t before = ch["logprobs"].value("content", Json::array()).size();
      ScrubLogprobs(ch);
      changed = changed || ch["logprobs"].value("content", Json::array()).size() != before;
    }
    if (!ch.contains("delta") || !ch["delta"].is_object()) continue;
    Json& delta = ch["delta"];
    const bool finish = ch.contains("finish_reason") && !ch["finish_reason"].is_null();
    auto add_sites = [&](std::vector<std::string>& blocks) {
      for (std::string& block : blocks) {
        sites_.push_back(std::make_unique<Site>(Site{.choice = ci, .tokens = std::move(block)}));
        started.push_back(sites_.size() - 1);
      }
    };
    for (const char* field : {"content", "reasoning_content"}) {
      const bool is_content = std::string_view(field) == "content";
      VisionTextScrubber& scrubber = is_content ? c.content : c.reasoning;
      std::string in = delta.contains(field) && delta[field].is_string() ? delta[field].get<std::string>() : "";
      if (in.empty() && !(finish && scrubber.holding())) continue;
      VisionTextScrubber::Out out = scrubber.Push(in);
      if (finish) {
        VisionTextScrubber::Out rest = scrubber.Finish();
        out.text += rest.text;
        for (std::string& b : rest.blocks) out.blocks.push_back(std::move(b));
      }
      if (out.text != in) {
        changed = true;
        if (out.text.empty() && !delta.contains(field)) {
          // nothing held came out
        } else {
          delta[field] = out.text;
        }
      }
      if (is_content) add_sites(out.blocks);
    }
    if (delta.contains("tool_calls") && delta["tool_calls"].is_array()) {
      Json kept = Json::array();
      for (Json& call : delta["tool_calls"]) {
        const int k = call.is_object() ? call.value("index", 0) : 0;
        Choice::Call& known = c.calls[k];
        const Json fn = call.is_object() ? call.value("function", Json::object()) : Json::object();
        if (fn.is_object() && fn.contains("name") && fn["name"].is_string()) known.name = fn["name"].get<std::string>();
        if (call.is_object() && call.contains("id") && call["id"].is_string()) known.id = call["id"].get<std::string>();
        if (known.name != openai::kImageTool) {
          kept.push_back(std::move(call));
          continue;
        }
        changed = true;  // an image call: held back
        if (fn.is_object() && fn.contains("arguments") && fn["arguments"].is_string()) {
          known.arguments += fn["arguments"].get<std::string>();
        }
        std::string tokens = known.started ? "" : ImageArgument(known.arguments);
        if (!tokens.empty()) {
          known.started = true;
          sites_.push_back(std::make_unique<Site>(
              Site{.choice = ci, .tool_index = k, .call_id = known.id, .tokens = std::move(tokens)}));
          started.push_back(sites_.size() - 1);
        }
      }
      if (kept.empty()) {
        delta.erase("tool_calls");
      } else {
        delta["tool_calls"] = std::move(kept);
      }
    }
    if (finish) {
      // An image call the stream ended without completing: an error, never raw tokens.
      for (auto& [k, call] : c.calls) {
        if (call.name == openai::kImageTool && !call.started) {
          call.started = true;
          sites_.push_back(std::make_unique<Site>(Site{.choice = ci, .tool_index = k, .call_id = call.id}));
          started.push_back(sites_.size() - 1);
        }
      }
      finishing = true;
    }
    meaningful = meaningful || finish || delta.contains("role") || delta.contains("tool_calls") ||
                 (delta.contains("content") && delta["content"].is_string() && !delta["content"].get<std::string>().empty()) ||
                 (delta.contains("reasoning_content") && delta["reasoning_content"].is_string() &&
                  !delta["reasoning_content"].get<std::string>().empty());
  }
  for (size_t s : started) {
    ++pending_;
    to_start_.push_back(s);
  }
  if (changed && !meaningful) return;  // only image text: nothing to send
  std::string out = changed ? Dump(j) : std::string(data);
  if (finishing) return barrier(std::move(out));
  Emit(std::move(out));
}

void ImageAnswerWriter::ImageDone(size_t site, StatusOr<GeneratedImage> image) {
  std::lock_guard lock(mu_);
  if (failed_) return;
  --pending_;
  Site& s = *sites_[site];
  s.result = std::move(image);
  s.done = true;
  if (!s.result.ok() && !errors_as_text_) {
    failed_ = true;
    held_.clear();
    client_->WriteSseEventNoWait(s.result.status().ToOpenAiJson());
    client_->WriteSseEventNoWait("[DONE]");
    client_->Finish();
    return;
  }
  Json delta = Json::object();
  Json choice = {{"index", s.choice}};
  if (s.result.ok()) {
    if (s.tool_index >= 0) {
      delta["tool_calls"] = Json::array({Json{{"index", s.tool_index},
                                              {"id", s.call_id},
                                              {"type", "function"},
                                              {"function",
                                               {{"name", openai::kImageTool},
                                                {"arguments", ImageArguments(s.result->url)}}}}});
    }
    delta["content_parts"] = Json::array({ImagePart(s.result->url)});
    choice["delta"] = std::move(delta);
  } else {
    choice["delta"] = std::move(delta);
    choice["error"] = ErrorField(s.result.status());
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = nullptr;
  Json event = Json::parse(header_.empty() ? "{}" : header_, nullptr, false);
  if (!event.is_object()) event = Json::object();
  event["choices"] = Json::array({std::move(choice)});
  client_->WriteSseEventNoWait(Dump(event));
  if (pending_ == 0) Flush();
}

void ImageAnswerWriter::Flush() {
  for (std::string& d : held_) client_->WriteSseEventNoWait(d);
  held_.clear();
  if (finish_asked_) client_->Finish();
}

bool ImageAnswerWriter::Finish() {
  std::lock_guard lock(mu_);
  if (failed_) return false;
  if (passthrough_ || (pending_ == 0 && held_.empty())) return client_->Finish();
  finish_asked_ = true;
  return true;
}

}  // namespace omni::orchestrator
