#include "services/loadgen/workload.h"

#include <algorithm>
#include <iterator>

namespace omni::loadgen {
namespace {

// Short, common words: each is a single token (with its leading space) in
// GPT-2, Llama and similar byte-level BPE vocabularies, so a prompt of n words
// is close to n tokens there.
constexpr std::string_view kWords[] = {
    "the",    "of",     "and",   "to",     "in",     "is",    "was",   "that",  "for",    "on",    "are",
    "with",   "as",     "at",    "be",     "this",   "have",  "from",  "or",    "one",    "had",   "by",
    "word",   "but",    "not",   "what",   "all",    "were",  "we",    "when",  "your",   "can",   "said",
    "there",  "use",    "an",    "each",   "which",  "she",   "do",    "how",   "their",  "if",    "will",
    "up",     "other",  "about", "out",    "many",   "then",  "them",  "these", "so",     "some",  "her",
    "would",  "make",   "like",  "him",    "into",   "time",  "has",   "look",  "two",    "more",  "write",
    "go",     "see",    "number", "no",    "way",    "could", "people", "my",   "than",   "first", "water",
    "been",   "call",   "who",   "its",    "now",    "find",  "long",  "down",  "day",    "did",   "get",
    "come",   "made",   "may",   "part",   "over",   "new",   "sound", "take",  "only",   "little", "work",
    "know",   "place",  "year",  "live",   "me",     "back",  "give",  "most",  "very",   "after", "thing",
    "our",    "just",   "name",  "good",   "man",    "think", "say",   "great", "where",  "help",  "through",
    "much",   "before", "line",  "right",  "too",    "mean",  "old",   "any",   "same",   "tell",  "boy",
    "follow", "came",   "want",  "show",   "also",   "around", "form", "three", "small",  "set",   "put",
    "end",    "does",   "another", "well", "large",  "must",  "big",   "even",  "such",   "because", "turn",
    "here",   "why",    "ask",   "went",   "men",    "read",  "need",  "land",  "different", "home", "us",
    "move",   "try",    "kind",  "hand",   "picture", "again", "change", "off", "play",   "spell", "air",
    "away",   "animal", "house", "point",  "page",   "letter", "mother", "answer", "found", "study", "still",
    "learn",  "should", "world", "high",   "every",  "near",  "add",   "food",  "between", "own",  "below",
    "country", "plant", "last",  "school", "father", "keep",
};

// splitmix64: tiny, portable and the same on every standard library, so a
// seed names the same workload everywhere.
uint64_t NextRandom(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

std::string_view WorkloadKindName(WorkloadKind kind) {
  switch (kind) {
    case WorkloadKind::kSynthetic: return "synthetic";
    case WorkloadKind::kSharedPrefix: return "shared-prefix";
    case WorkloadKind::kMultiTurn: return "multi-turn";
  }
  return "unknown";
}

StatusOr<WorkloadKind> ParseWorkloadKind(std::string_view name) {
  for (WorkloadKind k : {WorkloadKind::kSynthetic, WorkloadKind::kSharedPrefix, WorkloadKind::kMultiTurn}) {
    if (WorkloadKindName(k) == name) return k;
  }
  return InvalidArgument("unknown workload '" + std::string(name) + "' (synthetic|shared-prefix|multi-turn)");
}

int Workload::total_requests() const {
  int n = 0;
  for (const auto& c : conversations) n += static_cast<int>(c.user_turns.size());
  return n;
}

std::string_view Workload::SystemPrompt(const Conversation& c) const {
  if (c.prefix_index < 0) return {};
  return prefixes[static_cast<size_t>(c.prefix_index)];
}

std::string RandomWords(uint64_t* rng_state, int n) {
  std::string out;
  out.reserve(static_cast<size_t>(n) * 6);
  for (int i = 0; i < n; ++i) {
    if (i > 0) out += ' ';
    out += kWords[NextRandom(rng_state) % std::size(kWords)];
  }
  return out;
}

int CountWords(std::string_view text) {
  int n = 0;
  bool in_word = false;
  for (char ch : text) {
    bool space = ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r';
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n;
}

Status ValidateWorkloadOptions(const WorkloadOptions& o) {
  if (o.num_requests < 1) return InvalidArgument("--num-requests must be >= 1");
  if (o.input_len < 1) return InvalidArgument("--input-len must be >= 1");
  if (o.prefix_len < 0) return InvalidArgument("--prefix-len must be >= 0");
  if (o.num_prefixes < 1) return InvalidArgument("--num-prefixes must be >= 1");
  if (o.turns < 1) return InvalidArgument("--turns must be >= 1");
  if (o.kind == WorkloadKind::kSharedPrefix && o.prefix_len < 1) {
    return InvalidArgument("the shared-prefix workload needs --prefix-len >= 1");
  }
  if (o.kind != WorkloadKind::kMultiTurn && o.turns != 1) {
    return InvalidArgument("--turns applies to the multi-turn workload only");
  }
  return Status::Ok();
}

StatusOr<Workload> GenerateWorkload(const WorkloadOptions& o) {
  OMNI_RETURN_IF_ERROR(ValidateWorkloadOptions(o));
  Workload w;
  uint64_t rng = o.seed;
  bool with_prefixes = o.kind != WorkloadKind::kSynthetic && o.prefix_len > 0;
  if (with_prefixes) {
    for (int p = 0; p < o.num_prefixes; ++p) w.prefixes.push_back(RandomWords(&rng, o.prefix_len));
  }
  int turns = o.kind == WorkloadKind::kMultiTurn ? o.turns : 1;
  int num_conversations = (o.num_requests + turns - 1) / turns;
  int left = o.num_requests;
  for (int c = 0; c < num_conversations; ++c) {
    Conversation conv;
    conv.id = c;
    if (with_prefixes) conv.prefix_index = c % o.num_prefixes;
    // The last conversation is shorter when num_requests is not a multiple
    // of turns, so the total is exactly num_requests.
    int n = std::min(turns, left);
    for (int t = 0; t < n; ++t) conv.user_turns.push_back(RandomWords(&rng, o.input_len));
    left -= n;
    w.conversations.push_back(std::move(conv));
  }
  return w;
}

std::vector<ChatMessage> BuildChatMessages(const Workload& workload, const Conversation& c, int turn,
                                           const std::vector<std::string>& answers) {
  OMNI_CHECK_GE(turn, 0);
  OMNI_CHECK_LT(static_cast<size_t>(turn), c.user_turns.size());
  OMNI_CHECK_GE(answers.size(), static_cast<size_t>(turn));
  std::vector<ChatMessage> messages;
  std::string_view system = workload.SystemPrompt(c);
  if (!system.empty()) messages.push_back({"system", std::string(system)});
  for (int t = 0; t < turn; ++t) {
    messages.push_back({"user", c.user_turns[static_cast<size_t>(t)]});
    messages.push_back({"assistant", answers[static_cast<size_t>(t)]});
  }
  messages.push_back({"user", c.user_turns[static_cast<size_t>(turn)]});
  return messages;
}

std::string RenderCompletionPrompt(const std::vector<ChatMessage>& messages) {
  std::string out;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i > 0) out += "\n\n";
    out += messages[i].content;
  }
  return out;
}

}  // namespace omni::loadgen
