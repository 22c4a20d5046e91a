// `omniserve generate --model DIR --prompt TEXT`: offline generation through
// the same LlmService as the server, printing the text as it is generated.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace omni::cli {

struct GenerateFlags {
  std::string model;
  std::string prompt;
  int max_tokens = 64;
  float temperature = 0.f;
  std::optional<int64_t> seed;
  bool chat = false;
  bool skip_reasoning = false;
};

CLI::App* AddGenerateCommand(CLI::App& app, GenerateFlags* flags);
int RunGenerateCommand(const GenerateFlags& flags);

}  // namespace omni::cli
