#include "services/routing_sim/sim_prompts.h"

#include <xxhash.h>

#include "core/json_string.h"

namespace omni::routing_sim {

int32_t WordTokenId(std::string_view word) {
  return static_cast<int32_t>(XXH64(word.data(), word.size(), 0) % kWordVocabulary);
}

int32_t RoleTokenId(std::string_view role) {
  if (role == "system") return kWordVocabulary;
  if (role == "user") return kWordVocabulary + 1;
  if (role == "assistant") return kWordVocabulary + 2;
  return kWordVocabulary + 3;
}

void AppendWordTokens(std::string_view text, std::vector<int32_t>* out) {
  size_t i = 0;
  while (i < text.size()) {
    size_t start = text.find_first_not_of(" \t\r\n", i);
    if (start == std::string_view::npos) break;
    size_t end = text.find_first_of(" \t\r\n", start);
    if (end == std::string_view::npos) end = text.size();
    out->push_back(WordTokenId(text.substr(start, end - start)));
    i = end;
  }
}

std::vector<int32_t> ChatPromptTokens(std::span<const loadgen::ChatMessage> messages) {
  std::vector<int32_t> tokens;
  for (const loadgen::ChatMessage& m : messages) {
    tokens.push_back(RoleTokenId(m.role));
    AppendWordTokens(m.content, &tokens);
  }
  tokens.push_back(RoleTokenId("assistant"));
  return tokens;
}

std::string SerializeMessages(std::span<const loadgen::ChatMessage> messages) {
  std::string out = "[";
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i > 0) out += ',';
    out += "{\"role\":";
    AppendJsonString(messages[i].role, &out);
    out += ",\"content\":";
    AppendJsonString(messages[i].content, &out);
    out += '}';
  }
  out += ']';
  return out;
}

std::string AnswerText(uint64_t seed, int conversation, int turn, int output_len) {
  // Distinct streams per (conversation, turn); RandomWords runs splitmix64 on it.
  uint64_t state = seed ^ (0x5851f42d4c957f2dULL * (static_cast<uint64_t>(conversation) + 1)) ^
                   (0x14057b7ef767814fULL * (static_cast<uint64_t>(turn) + 1));
  return loadgen::RandomWords(&state, output_len);
}

}  // namespace omni::routing_sim
