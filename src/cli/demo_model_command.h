// `omniserve make-demo-model`: writes tiny random-weight component folders
// with the real schema (config keys, tensor names, special tokens), so every
// code path the real model takes runs on a CPU in seconds.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace CLI {
class App;
}

namespace omni::cli {

struct DemoModelFlags {
  std::string component = "llm";
  std::string out;
  std::string preset = "demo";
  uint64_t seed = 0;
  bool no_tokenizer = false;
  bool global_context_att = false;  // ad: the zero-shot speaker encoder's pooling
};

CLI::App* AddDemoModelCommand(CLI::App& app, DemoModelFlags* flags);
// Writes the component folder `flags` describe.
Status WriteDemoModel(const DemoModelFlags& flags);
// Returns the process exit code; errors are one line on stderr.
int RunDemoModelCommand(const DemoModelFlags& flags);

}  // namespace omni::cli
