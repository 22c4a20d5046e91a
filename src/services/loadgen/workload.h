// Workloads for `omniserve bench`: what prompts to send, in which
// conversations. Pure code: no sockets, no clocks; deterministic for a seed.
//
// Three shapes (docs/BENCH.md, spec/routing.md):
//   synthetic      one-turn requests of `input_len` random words each.
//   shared-prefix  `num_prefixes` system prompts of `prefix_len` words; request
//                  i uses prefix i % num_prefixes plus a unique question of
//                  `input_len` words (the GAIE/llm-d shape).
//   multi-turn     conversations of `turns` user turns of `input_len` words;
//                  each turn resends the whole conversation including the
//                  model's earlier answers. With prefix_len > 0, conversation
//                  c opens with system prompt c % num_prefixes.
// Lengths are in words, an approximation of tokens (docs/BENCH.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace omni::loadgen {

enum class WorkloadKind { kSynthetic, kSharedPrefix, kMultiTurn };

std::string_view WorkloadKindName(WorkloadKind kind);
StatusOr<WorkloadKind> ParseWorkloadKind(std::string_view name);

struct WorkloadOptions {
  WorkloadKind kind = WorkloadKind::kSynthetic;
  int num_requests = 100;  // total requests, counting every turn
  int input_len = 128;     // words of each prompt, question or user turn
  int num_prefixes = 1;    // shared-prefix / multi-turn: distinct system prompts
  int prefix_len = 0;      // words of each system prompt; 0: none
  int turns = 1;           // multi-turn: user turns per conversation
  uint64_t seed = 0;
};

// A sequence of user turns sent one after another; later turns carry the
// answers to earlier ones. Single-turn workloads have one turn each.
struct Conversation {
  int id = 0;
  int prefix_index = -1;  // index into Workload::prefixes, -1: no system prompt
  std::vector<std::string> user_turns;
};

struct Workload {
  std::vector<std::string> prefixes;  // shared system prompts
  std::vector<Conversation> conversations;

  int total_requests() const;
  // The system prompt of `c`, empty if it has none.
  std::string_view SystemPrompt(const Conversation& c) const;
};

// Checks the options (lengths > 0 where needed, consistent counts).
Status ValidateWorkloadOptions(const WorkloadOptions& options);
// Builds the workload; deterministic for options.seed.
StatusOr<Workload> GenerateWorkload(const WorkloadOptions& options);

// One chat message as sent to /v1/chat/completions.
struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

// The messages of turn `turn` (0-based) of `c`: the system prompt (if any),
// then each earlier user turn followed by its answer from `answers`, then the
// current user turn. Needs answers.size() >= turn.
std::vector<ChatMessage> BuildChatMessages(const Workload& workload, const Conversation& c, int turn,
                                           const std::vector<std::string>& answers);
// The same conversation as one /v1/completions prompt: the message contents
// joined by blank lines, so a shared system prompt stays a shared prefix.
std::string RenderCompletionPrompt(const std::vector<ChatMessage>& messages);

// `n` words drawn from a fixed list of short common English words, which are
// one token each in most BPE vocabularies; space-separated. Exposed for tests.
std::string RandomWords(uint64_t* rng_state, int n);
// Whitespace-separated words in `text`; tests use it to check lengths.
int CountWords(std::string_view text);

}  // namespace omni::loadgen
