#include "cli/generate_command.h"

#include <CLI/CLI.hpp>

#include <cstdio>

#include "core/log.h"
#include "net/metrics.h"
#include "services/llm/llm_service.h"

namespace omni::cli {

CLI::App* AddGenerateCommand(CLI::App& app, GenerateFlags* f) {
  CLI::App* sub = app.add_subcommand("generate", "offline generation from a model folder");
  sub->add_option("--model", f->model, "model folder")->required();
  sub->add_option("--prompt", f->prompt, "prompt text")->required();
  sub->add_option("--max-tokens", f->max_tokens, "tokens to generate at most")->capture_default_str();
  sub->add_option("--temperature", f->temperature, "0 is greedy")->capture_default_str();
  sub->add_option("--seed", f->seed, "sampling seed");
  sub->add_flag("--chat", f->chat, "wrap the prompt in the chat template as one user turn");
  sub->add_flag("--skip-reasoning", f->skip_reasoning, "with --chat: chat_template_kwargs.skip_reasoning");
  return sub;
}

int RunGenerateCommand(const GenerateFlags& f) {
  MetricsRegistry registry;
  llm::LlmServiceOptions options;
  options.model_dir = f.model;
  options.kv_cache_memory_bytes = 64ll << 20;
  options.metrics = &registry;
  auto created = llm::LlmService::Create(std::move(options));
  if (!created.ok()) {
    std::fprintf(stderr, "omniserve generate: %s\n", created.status().ToString().c_str());
    return 2;
  }
  auto& service = **created;
  if (Status s = service.Load(); !s.ok()) {
    std::fprintf(stderr, "omniserve generate: %s\n", s.ToString().c_str());
    return 1;
  }
  llm::GenerationOptions gen;
  gen.sampling.max_tokens = f.max_tokens;
  gen.max_tokens_set = true;
  gen.sampling.temperature = f.temperature;
  if (f.seed) gen.sampling.seed = static_cast<uint64_t>(*f.seed);
  StatusOr<llm::PreparedGeneration> prepared = [&]() -> StatusOr<llm::PreparedGeneration> {
    if (f.chat) {
      llm::ChatRequest req;
      req.messages.push_back(ChatMessage{.role = Role::kUser, .parts = {ContentPart{.text = f.prompt}}});
      req.skip_reasoning = f.skip_reasoning;
      req.options = gen;
      return service.PrepareChat(req);
    }
    llm::CompletionRequest req;
    req.prompt = f.prompt;
    req.options = gen;
    return service.PrepareCompletion(req);
  }();
  if (!prepared.ok()) {
    std::fprintf(stderr, "omniserve generate: %s\n", prepared.status().ToString().c_str());
    return 2;
  }
  std::string finish;
  StatusOr<llm::Usage> usage = service.Generate(*prepared, [&](const llm::GenerationEvent& e) {
    if (e.kind == llm::GenerationEvent::Kind::kDelta) {
      std::fwrite(e.text.data(), 1, e.text.size(), stdout);
      std::fflush(stdout);
    } else {
      finish = e.finish_reason;
    }
    return true;
  });
  std::printf("\n");
  if (!usage.ok()) {
    std::fprintf(stderr, "omniserve generate: %s\n", usage.status().ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "[finish_reason=%s prompt_tokens=%d completion_tokens=%d]\n", finish.c_str(),
               usage->prompt_tokens, usage->completion_tokens);
  service.Shutdown();
  return 0;
}

}  // namespace omni::cli
