// What a simulated request carries to the router and the replica: the
// serialized messages for the approximate prefix scorer and token ids for
// the precise one. Words stand in for tokens (one word, one token), as in
// the bench workloads (services/loadgen/workload.h).
//
// The token layout keeps a conversation's earlier turns a prefix of its
// later ones, as a chat template does: each message is its role's marker
// token followed by its words, and the prompt ends with the assistant marker
// (the generation prompt), so turn t + 1 = turn t's prompt + its answer +
// the new user message + the assistant marker.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "services/loadgen/workload.h"

namespace omni::routing_sim {

inline constexpr int32_t kWordVocabulary = 50'000;

// A word's token id: a hash of its bytes mod kWordVocabulary.
int32_t WordTokenId(std::string_view word);
// The marker that opens a message of `role`; ids above the word range.
int32_t RoleTokenId(std::string_view role);
// Appends the token id of each whitespace-separated word of `text`.
void AppendWordTokens(std::string_view text, std::vector<int32_t>* out);

// The rendered prompt: each message's marker and words, then the assistant marker.
std::vector<int32_t> ChatPromptTokens(std::span<const loadgen::ChatMessage> messages);
// The `messages` JSON array as the request body carries it, which is what
// the gateway's prefix-cache-scorer reads.
std::string SerializeMessages(std::span<const loadgen::ChatMessage> messages);
// The simulated answer to one turn: `output_len` words, deterministic for
// (seed, conversation, turn).
std::string AnswerText(uint64_t seed, int conversation, int turn, int output_len);

}  // namespace omni::routing_sim
