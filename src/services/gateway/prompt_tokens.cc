#include "services/gateway/prompt_tokens.h"

#include <variant>

#include "api/openai/openai_parse.h"
#include "text/chat_template.h"

namespace omni::gateway {

StatusOr<std::unique_ptr<PromptTokenizer>> PromptTokenizer::FromModelDir(const std::string& dir) {
  OMNI_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, Tokenizer::FromFile(dir + "/tokenizer.json"));
  return std::unique_ptr<PromptTokenizer>(new PromptTokenizer(std::move(tokenizer)));
}

StatusOr<std::vector<int32_t>> PromptTokenizer::ChatPromptTokens(std::string_view body) const {
  OMNI_ASSIGN_OR_RETURN(openai::ChatRequest request, openai::ParseChatRequest(body));
  OMNI_ASSIGN_OR_RETURN(
      RenderedPrompt rendered,
      RenderChatPrompt(request.messages, request.tools,
                       ChatTemplateOptions{.add_generation_prompt = true, .skip_reasoning = request.skip_reasoning}));
  std::string_view text = rendered.text;
  if (!rendered.placeholders.empty()) text = text.substr(0, rendered.placeholders.front().byte_offset);
  return tokenizer_->Encode(text);
}

StatusOr<std::vector<int32_t>> PromptTokenizer::CompletionPromptTokens(std::string_view body) const {
  OMNI_ASSIGN_OR_RETURN(openai::CompletionRequest request, openai::ParseCompletionRequest(body));
  if (const auto* ids = std::get_if<std::vector<int32_t>>(&request.prompt)) return *ids;
  return tokenizer_->Encode(std::get<std::string>(request.prompt));
}

}  // namespace omni::gateway
