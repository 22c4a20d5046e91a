// The roles of the one `omniserve` binary, for --help and for `up`, which
// starts the ones this build has (docs/CLI.md).
#pragma once

#include <string_view>

namespace omni::cli {

struct RoleInfo {
  std::string_view name;
  std::string_view summary;
  bool built;                // false: planned, not in this build yet
  std::string_view tracked;  // where the missing work is tracked
};

inline constexpr RoleInfo kRoles[] = {
    {"up", "run the whole stack on loopback behind one client port (supervisor)", true, ""},
    {"orchestrator", "OpenAI Chat Completions front: calls encoders, LLM, decoders", true, ""},
    {"gateway", "one entry for every model server; cache-aware endpoint picking", true, ""},
    {"llm", "OpenAI-compatible LLM server (paged KV cache, prefix caching, batching)", true, ""},
    {"encoder", "vision encoder server (POST /v1/encode); audio comes later", true, ""},
    {"decoder", "vision decoder server (POST /v1/decode); audio comes later", true, ""},
    {"make-demo-model", "write tiny random-weight component folders with the real schema", true, ""},
    {"store", "put/get/head/ls/rm/presign objects in a file:// or s3:// store", true, ""},
    {"bench", "load generator for OpenAI-compatible endpoints", true, ""},
    {"generate", "offline generation from a model folder", true, ""},
    {"version", "print the version and build details", true, ""},
};

}  // namespace omni::cli
