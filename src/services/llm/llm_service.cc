#include "services/llm/llm_service.h"

#include <algorithm>
#include <ctime>
#include <future>
#include <filesystem>
#include <random>
#include <utility>

#include "core/log.h"
#include "engine/kv_cache.h"
#include "services/llm/choice_decoder.h"
#include "services/llm/model_runner_adapter.h"
#include "services/llm/prompt_builder.h"
#include "text/omni_tokens.h"

namespace omni::llm {
namespace {

using SteadyClock = std::chrono::steady_clock;

double SecondsBetween(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string FolderName(const std::string& dir) {
  std::filesystem::path p(dir);
  while (!p.empty() && p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}


std::string EngineId(const PreparedGeneration& r, int choice) { return r.id + "-" + std::to_string(choice); }

}  // namespace

StatusOr<std::unique_ptr<LlmService>> LlmService::Create(LlmServiceOptions options) {
  if (options.model_dir.empty()) return InvalidArgument("--model is required").WithParam("model");
  if (options.metrics == nullptr) return InvalidArgument("LlmService needs a metrics registry");
  return std::unique_ptr<LlmService>(new LlmService(std::move(options)));
}

LlmService::LlmService(LlmServiceOptions options) : options_(std::move(options)) {
  served_name_ = options_.served_model_name.empty() ? FolderName(options_.model_dir) : options_.served_model_name;
  fetcher_ = std::make_unique<EmbeddingFetcher>(EmbeddingFetcherOptions{
      .store = options_.store, .store_uri = options_.store_uri, .http_client = options_.http_client,
      .cache_bytes = options_.embedding_cache_bytes, .max_object_bytes = options_.fetch_max_bytes,
      .fetch_timeout = options_.fetch_timeout, .fetch_policy = options_.fetch_policy});
  metrics_ = std::make_unique<LlmMetrics>(*options_.metrics, served_name_);
  output_ = std::make_unique<ThreadPool>(1);
}

LlmService::~LlmService() { Shutdown(); }

Status LlmService::Load() {
  Status s = [&]() -> Status {
    OMNI_ASSIGN_OR_RETURN(tokenizer_, Tokenizer::FromFile(options_.model_dir + "/tokenizer.json"));
    ModelLoader load = options_.model_loader ? options_.model_loader : ModelLoader(LoadHyperClovax);
    OMNI_ASSIGN_OR_RETURN(model_, load(options_.model_dir));
    if (tokenizer_->vocab_size() > model_->vocab_size()) {
      return InvalidArgument("the tokenizer has " + std::to_string(tokenizer_->vocab_size()) +
                             " ids but the model's vocabulary is " + std::to_string(model_->vocab_size()));
    }
    const KvCacheSpec spec = model_->kv_spec(options_.kv_dtype);
    num_kv_blocks_ = options_.num_kv_blocks;
    if (num_kv_blocks_ <= 0) {
      OMNI_ASSIGN_OR_RETURN(num_kv_blocks_, NumBlocksForBudget(spec, options_.kv_cache_memory_bytes));
    }
    const int pool_tokens = num_kv_blocks_ * kBlockSize;
    max_model_len_ = options_.max_model_len > 0
                         ? options_.max_model_len
                         : static_cast<int>(std::min<int64_t>(model_->max_position_embeddings(), pool_tokens));
    if (max_model_len_ > pool_tokens) {
      return InvalidArgument("--max-model-len " + std::to_string(max_model_len_) + " does not fit the KV pool of " +
                             std::to_string(num_kv_blocks_) + " blocks (" + std::to_string(pool_tokens) + " tokens)");
    }
    EngineConfig config;
    config.num_kv_blocks = num_kv_blocks_;
    config.max_model_len = max_model_len_;
    config.max_num_batched_tokens = options_.max_num_batched_tokens;
    config.max_num_seqs = options_.max_num_seqs;
    config.enable_prefix_caching = options_.enable_prefix_caching;
    config.default_seed = options_.default_seed;
    const std::vector<int64_t> eos = model_->eos_token_ids();
    if (!eos.empty()) config.eos_token_id = static_cast<int32_t>(eos.front());
    for (std::string_view t : {kImEnd, kEndOfText}) {
      if (auto id = tokenizer_->TokenToId(t)) chat_stop_ids_.push_back(*id);
    }
    for (size_t i = 1; i < eos.size(); ++i) chat_stop_ids_.push_back(static_cast<int32_t>(eos[i]));
    grammar_tokens_ = OmniGrammarTokens::Resolve(*tokenizer_, tokenizer_->TokenToId(kImEnd).value_or(-1));
    // The tags the output parser reads stay in the text even if this
    // checkpoint marks them special (OmniServe decodes them for its parsers).
    for (const OmniAddedToken& t : OmniAddedTokens()) {
      if (t.special) continue;
      if (std::optional<int32_t> id = tokenizer_->TokenToId(t.content)) output_tag_ids_.push_back(*id);
    }
    std::sort(output_tag_ids_.begin(), output_tag_ids_.end());
    OMNI_ASSIGN_OR_RETURN(engine_, Engine::Start(config, model_->MakeRunner(spec, num_kv_blocks_), options_.kv_events));
    metrics_->SetCacheConfig(num_kv_blocks_);
    return Status::Ok();
  }();
  if (!s.ok()) {
    load_failed_ = true;
    return std::move(s).Annotate("loading " + options_.model_dir);
  }
  loaded_.store(true, std::memory_order_release);
  OMNI_LOG(kInfo, "llm: serving {} ({} KV blocks, max_model_len {})", served_name_, num_kv_blocks_, max_model_len_);
  return Status::Ok();
}

Status LlmService::Ready() const {
  if (loaded_.load(std::memory_order_acquire)) return Status::Ok();
  return Unavailable(load_failed_ ? "the model failed to load" : "the model is loading");
}

Status LlmService::CheckModel(const std::string& model) const {
  OMNI_RETURN_IF_ERROR(Ready());
  if (model.empty() || model == served_name_) return Status::Ok();
  return ModelNotFound(model, served_name_);
}

std::string LlmService::NewId(std::string_view prefix) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%llx%012llx", static_cast<unsigned long long>(next_id_.fetch_add(1)),
                static_cast<unsigned long long>(rng() & 0xffffffffffffull));
  return std::string(prefix) + buf;
}

Status LlmService::FinishPrepare(const GenerationOptions& options, PreparedGeneration* out) const {
  const std::string prompt_param = out->chat ? "messages" : "prompt";
  const int n = static_cast<int>(out->prompt_ids.size());
  if (n == 0) return InvalidArgument("the prompt is empty").WithParam(prompt_param);
  if (n >= max_model_len_) {
    return InvalidArgument("This model's maximum context length is " + std::to_string(max_model_len_) +
                           " tokens. However, your prompt has " + std::to_string(n) +
                           " tokens and at least one token must be generated.")
        .WithParam(prompt_param)
        .WithErrorCode("context_length_exceeded");
  }
  out->sampling = options.sampling;
  if (options.max_tokens_set) {
    if (int64_t{n} + out->sampling.max_tokens > max_model_len_) {
      return InvalidArgument("This model's maximum context length is " + std::to_string(max_model_len_) +
                             " tokens. However, you requested " +
                             std::to_string(int64_t{n} + out->sampling.max_tokens) + " tokens (" + std::to_string(n) +
                             " in the prompt, " + std::to_string(out->sampling.max_tokens) +
                             " for the completion). Please reduce the prompt or max_tokens.")
          .WithParam("max_tokens")
          .WithErrorCode("context_length_exceeded");
    }
  } else {
    out->sampling.max_tokens = max_model_len_ - n;
  }
  out->cache_salt = options.cache_salt;
  out->stop = options.stop;
  out->stream = options.stream;
  out->include_usage = options.include_usage;
  out->model = served_name_;
  out->created = static_cast<int64_t>(std::time(nullptr));
  return Status::Ok();
}

Status LlmService::ValidateOnce(PreparedGeneration* out) const {
  // The engine's check, once per request here at the edge; the choices are
  // then submitted unchecked. The prompt is moved in and out, not copied.
  EngineRequest probe;
  probe.request_id = "validate";
  probe.prompt_token_ids = std::move(out->prompt_ids);
  probe.media = std::move(out->media);
  probe.sampling = out->sampling;
  Status s = engine_->Validate(probe);
  out->prompt_ids = std::move(probe.prompt_token_ids);
  out->media = std::move(probe.media);
  if (!s.ok() && out->chat && s.param() == "prompt") return std::move(s).WithParam("messages");
  return s;
}

StatusOr<PreparedGeneration> LlmService::PrepareChat(const ChatRequest& request) {
  OMNI_RETURN_IF_ERROR(CheckModel(request.model));
  std::vector<PlacedEmbedding> embeddings;
  for (const MediaPart& part : request.media) {
    StatusOr<std::shared_ptr<const FetchedEmbedding>> e = fetcher_->Fetch(part.url);
    if (!e.ok()) {
      return e.status().WithParam("messages[" + std::to_string(part.message_index) + "].content[" +
                                  std::to_string(part.part_index) + "]");
    }
    embeddings.push_back({part.message_index, part.part_index, std::move(e).value()});
  }
  // The mime line of each medium says what the encoder saw (the sniffed type
  // and the name it came under), and an audio or video duration hint the
  // length it measured, where the object records them.
  std::vector<ChatMessage> described;
  if (!embeddings.empty()) {
    described = request.messages;
    for (const PlacedEmbedding& e : embeddings) {
      if (e.message_index < 0 || e.message_index >= static_cast<int>(described.size())) continue;
      auto& parts = described[e.message_index].parts;
      if (e.part_index < 0 || e.part_index >= static_cast<int>(parts.size())) continue;
      for (const auto& [name, value] : e.embedding->object.metadata) {
        if (name == "mime") parts[e.part_index].mime_type = value;
        if (name == "filename") parts[e.part_index].filename = value;
        if (name == "seconds") parts[e.part_index].duration = MediaDurationText(value);
      }
    }
  }
  StatusOr<RenderedPrompt> rendered = RenderChatPrompt(
      embeddings.empty() ? request.messages : described, request.tools,
      ChatTemplateOptions{.add_generation_prompt = true, .skip_reasoning = request.skip_reasoning});
  if (!rendered.ok()) return rendered.status().WithParam("messages");
  PreparedGeneration out;
  out.chat = true;
  OMNI_ASSIGN_OR_RETURN(EnginePrompt prompt,
                        BuildEnginePrompt(*tokenizer_, *rendered, embeddings, model_->hidden_size()));
  out.prompt_ids = std::move(prompt.token_ids);
  out.media = std::move(prompt.media);
  OMNI_RETURN_IF_ERROR(FinishPrepare(request.options, &out));
  if (!out.sampling.ignore_eos) {
    for (int32_t id : chat_stop_ids_) out.sampling.stop_token_ids.push_back(id);
  }
  out.parse_output = true;
  out.starts_in_reasoning = !request.skip_reasoning;
  out.parse_tool_calls = request.tool_choice.mode != openai::ToolChoice::Mode::kNone;
  out.raw_speech = request.force_audio;
  out.tools = std::make_shared<const std::vector<openai::ToolSpec>>(request.tool_specs);
  StatusOr<std::shared_ptr<const OutputGrammar>> grammar =
      OutputGrammar::Create(grammar_tokens_, OutputGrammar::Options{.starts_in_reasoning = out.starts_in_reasoning,
                                                                    .thinking_token_budget = request.thinking_token_budget,
                                                                    .tool_choice = request.tool_choice,
                                                                    .tools = request.tool_specs,
                                                                    .force_audio = request.force_audio,
                                                                    .max_tokens = out.sampling.max_tokens});
  OMNI_RETURN_IF_ERROR(grammar.status());
  out.grammar = std::move(grammar).value();
  OMNI_RETURN_IF_ERROR(ValidateOnce(&out));
  out.id = NewId("chatcmpl-");
  return out;
}

StatusOr<PreparedGeneration> LlmService::PrepareCompletion(const CompletionRequest& request) {
  OMNI_RETURN_IF_ERROR(CheckModel(request.model));
  PreparedGeneration out;
  if (const auto* text = std::get_if<std::string>(&request.prompt)) {
    StatusOr<std::vector<int32_t>> ids = tokenizer_->Encode(*text);
    if (!ids.ok()) return ids.status().WithParam("prompt");
    out.prompt_ids = std::move(ids).value();
    if (request.echo) out.echo_text = *text;
  } else {
    out.prompt_ids = std::get<std::vector<int32_t>>(request.prompt);
    if (request.echo) {
      OMNI_ASSIGN_OR_RETURN(out.echo_text, tokenizer_->Decode(out.prompt_ids));
    }
  }
  OMNI_RETURN_IF_ERROR(FinishPrepare(request.options, &out));
  OMNI_RETURN_IF_ERROR(ValidateOnce(&out));
  out.id = NewId("cmpl-");
  return out;
}

struct LlmService::Run {
  PreparedGeneration request;  // prompt and media dropped once submitted
  GenerationSink sink;
  GenerationDone done;
  std::vector<ChoiceDecoder> choices;         // [n]
  std::vector<SteadyClock::time_point> last_token;  // [n]; for inter-token latency
  std::vector<bool> has_token;                      // [n]
  SteadyClock::time_point start;
  int prompt_tokens = 0;
  int submitted = 0;
  int finished = 0;
  Status submit_error;
  bool consumer_gone = false;

  void CancelAll(Engine& engine) const {
    for (int i = 0; i < submitted; ++i) engine.Cancel(EngineId(request, i));
  }
  void Emit(Engine& engine, const GenerationEvent& e) {
    if (consumer_gone) return;
    if (!sink(e)) {
      consumer_gone = true;
      CancelAll(engine);
    }
  }
};

void LlmService::StartGenerate(PreparedGeneration request, GenerationSink sink, GenerationDone done) {
  if (Status s = Ready(); !s.ok()) {
    done(std::move(s));
    return;
  }
  auto run = std::make_shared<Run>();
  run->request = std::move(request);
  run->sink = std::move(sink);
  run->done = std::move(done);
  if (!output_->Post([this, run] { SubmitRun(run); })) {
    run->done(Unavailable("the server is shutting down"));
  }
}

void LlmService::SubmitRun(const std::shared_ptr<Run>& run) {
  const PreparedGeneration& request = run->request;
  const int n = request.sampling.n;
  run->start = SteadyClock::now();
  run->prompt_tokens = static_cast<int>(request.prompt_ids.size());
  run->choices.reserve(n);
  for (int i = 0; i < n; ++i) {
    std::optional<OutputParser::Options> parse;
    if (request.parse_output) {
      parse = OutputParser::Options{.starts_in_reasoning = request.starts_in_reasoning,
                                    .parse_tool_calls = request.parse_tool_calls,
                                    .raw_speech = request.raw_speech,
                                    .tools = *request.tools,
                                    .new_call_id = [this] { return NewId("chatcmpl-tool-"); }};
    }
    run->choices.emplace_back(*tokenizer_, i, request.stop, request.sampling.logprobs, std::move(parse),
                              request.parse_output ? std::span<const int32_t>(output_tag_ids_) : std::span<const int32_t>());
  }
  run->last_token.resize(n);
  run->has_token.assign(n, false);
  for (int i = 0; i < n; ++i) {
    EngineRequest er;
    er.request_id = EngineId(request, i);
    er.prompt_token_ids = request.prompt_ids;
    er.media = request.media;  // tensors are shared, not copied
    er.sampling = request.sampling;
    er.sampling.n = 1;
    if (er.sampling.seed) er.sampling.seed = *er.sampling.seed + static_cast<uint64_t>(i);
    er.cache_salt = request.cache_salt;
    if (request.grammar) er.constraint = request.grammar->NewConstraint();
    // On the engine thread: hand the output over and return.
    Status s = engine_->SubmitValidated(std::move(er), [this, run, i](const TokenOutput& o) {
      output_->Post([this, run, i, o] {
        try {
          HandleOutput(*run, i, o);
        } catch (const std::exception& e) {  // bad_alloc: fail this request, not the process
          OMNI_LOG(kError, "llm: request {}: {}", run->request.id, e.what());
          run->consumer_gone = true;
          run->CancelAll(*engine_);
        }
      });
    });
    if (!s.ok()) {
      run->submit_error = std::move(s);
      break;
    }
    ++run->submitted;
  }
  run->request.prompt_ids = {};
  run->request.media = {};
  if (run->submit_error.ok()) return;
  if (run->submitted == 0) {
    run->done(run->submit_error);
    return;
  }
  run->consumer_gone = true;  // report nothing; drain what was started
  run->CancelAll(*engine_);
}

void LlmService::HandleOutput(Run& run, int i, const TokenOutput& out) {
  ChoiceDecoder& choice = run.choices[i];
  if (choice.finished()) return;
  if (out.token) {
    const auto now = SteadyClock::now();
    if (!run.has_token[i] && i == 0) metrics_->ObserveTimeToFirstToken(SecondsBetween(run.start, now));
    if (run.has_token[i]) metrics_->ObserveInterTokenLatency(SecondsBetween(run.last_token[i], now));
    run.has_token[i] = true;
    run.last_token[i] = now;
  }
  ChoiceDecoder::Result r = choice.Push(out);
  if (r.stop_string_matched) engine_->Finish(EngineId(run.request, i), FinishReason::kStop);
  const bool was_gone = run.consumer_gone;
  for (const GenerationEvent& e : r.events) run.Emit(*engine_, e);
  if (run.consumer_gone && !was_gone && run.submit_error.ok()) metrics_->ObserveClientGone();
  if (!choice.finished() || ++run.finished < run.submitted) return;

  if (!run.submit_error.ok()) {
    run.done(run.submit_error);
    return;
  }
  Usage usage;
  usage.prompt_tokens = run.prompt_tokens;
  for (const ChoiceDecoder& c : run.choices) usage.completion_tokens += c.output_tokens();
  usage.cached_tokens = run.choices[0].cached_tokens();
  metrics_->ObserveRequest(SecondsBetween(run.start, SteadyClock::now()), run.choices[0].finish_reason());
  run.done(usage);
}

StatusOr<Usage> LlmService::Generate(const PreparedGeneration& request, const GenerationSink& sink) {
  std::promise<StatusOr<Usage>> result;
  StartGenerate(request, sink, [&result](StatusOr<Usage> usage) { result.set_value(std::move(usage)); });
  return result.get_future().get();
}

void LlmService::StartComplete(PreparedGeneration request, std::function<bool()> client_present,
                               CompletionDone done) {
  auto result = std::make_shared<CompletionResult>();
  result->choices.resize(request.sampling.n);
  auto collect = [result, client_present = std::move(client_present)](const GenerationEvent& e) {
    ChoiceResult& c = result->choices[e.choice];
    if (e.kind == GenerationEvent::Kind::kDelta) {
      c.text += e.text;
      c.reasoning += e.reasoning;
      c.logprobs.insert(c.logprobs.end(), e.logprobs.begin(), e.logprobs.end());
    } else {
      c.finish_reason = e.finish_reason;
      c.tool_calls = e.calls;
      c.has_reasoning = e.has_reasoning;
    }
    return client_present();
  };
  StartGenerate(std::move(request), std::move(collect), [result, done = std::move(done)](StatusOr<Usage> usage) {
    if (!usage.ok()) {
      done(usage.status());
      return;
    }
    for (const ChoiceResult& c : result->choices) {
      if (c.finish_reason == "error") {
        done(Internal("the model failed while generating"));
        return;
      }
      if (c.finish_reason == "abort") {
        done(Unavailable("the request was aborted (server shutting down or client gone)"));
        return;
      }
    }
    result->usage = *usage;
    done(std::move(*result));
  });
}

void LlmService::Cancel(const PreparedGeneration& request) {
  if (!loaded_.load(std::memory_order_acquire)) return;
  for (int i = 0; i < request.sampling.n; ++i) engine_->Cancel(EngineId(request, i));
}

StatusOr<TokenizeResult> LlmService::Tokenize(const TokenizeRequest& request) {
  OMNI_RETURN_IF_ERROR(CheckModel(request.model));
  TokenizeResult out;
  out.max_model_len = max_model_len_;
  if (request.chat) {
    OMNI_ASSIGN_OR_RETURN(PreparedGeneration p, PrepareChat(*request.chat));
    out.tokens = std::move(p.prompt_ids);
    return out;
  }
  StatusOr<std::vector<int32_t>> ids = tokenizer_->Encode(request.prompt.value_or(""));
  if (!ids.ok()) return ids.status().WithParam("prompt");
  out.tokens = std::move(ids).value();
  return out;
}

StatusOr<std::string> LlmService::Detokenize(const DetokenizeRequest& request) {
  OMNI_RETURN_IF_ERROR(CheckModel(request.model));
  StatusOr<std::string> text = tokenizer_->Decode(request.tokens);
  if (!text.ok()) return text.status().WithParam("tokens");
  return text;
}

EngineMetrics LlmService::engine_metrics() const {
  if (!loaded_.load(std::memory_order_acquire)) return {};
  return engine_->Metrics();
}

void LlmService::UpdateEngineMetrics() {
  if (loaded_.load(std::memory_order_acquire)) metrics_->UpdateFromEngine(engine_->Metrics());
}

void LlmService::Shutdown() {
  // The engine first: its aborts go through the output thread, which then
  // delivers them (and every queued submission's Unavailable) and stops.
  if (loaded_.load(std::memory_order_acquire)) engine_->Stop();
  output_->Shutdown();
}

}  // namespace omni::llm
