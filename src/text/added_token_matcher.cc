#include "text/added_token_matcher.h"

#include <algorithm>

namespace omni {
namespace {

// Hugging Face strips with char::is_whitespace; ASCII whitespace covers the
// tokenizers we load (documented in docs/TOKENIZER.md).
bool IsStripSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

}  // namespace

int32_t AddedTokenMatcher::Child(int32_t node, uint8_t byte) const {
  const auto& children = nodes_[node].children;
  auto it = std::lower_bound(children.begin(), children.end(), byte,
                             [](const std::pair<uint8_t, int32_t>& c, uint8_t b) { return c.first < b; });
  return (it != children.end() && it->first == byte) ? it->second : -1;
}

void AddedTokenMatcher::Add(const Entry& entry) {
  if (entry.content.empty()) return;
  int32_t node = 0;
  for (char c : entry.content) {
    uint8_t byte = static_cast<uint8_t>(c);
    int32_t next = Child(node, byte);
    if (next < 0) {
      next = static_cast<int32_t>(nodes_.size());
      nodes_.emplace_back();
      auto& children = nodes_[node].children;
      auto it = std::lower_bound(children.begin(), children.end(), byte,
                                 [](const std::pair<uint8_t, int32_t>& ch, uint8_t b) { return ch.first < b; });
      children.insert(it, {byte, next});
    }
    node = next;
  }
  first_byte_[static_cast<uint8_t>(entry.content[0])] = true;
  TokenInfo info{entry.id, entry.lstrip, entry.rstrip};
  if (nodes_[node].token >= 0) {
    tokens_[nodes_[node].token] = info;
  } else {
    nodes_[node].token = static_cast<int32_t>(tokens_.size());
    tokens_.push_back(info);
    ++num_tokens_;
  }
}

std::vector<AddedTokenMatch> AddedTokenMatcher::FindAll(std::string_view text) const {
  std::vector<AddedTokenMatch> matches;
  if (num_tokens_ == 0) return matches;
  size_t prev_end = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    if (!first_byte_[static_cast<uint8_t>(text[pos])]) {
      ++pos;
      continue;
    }
    int32_t node = 0;
    int32_t best_token = -1;
    size_t best_end = 0;
    for (size_t i = pos; i < text.size(); ++i) {
      node = Child(node, static_cast<uint8_t>(text[i]));
      if (node < 0) break;
      if (nodes_[node].token >= 0) {
        best_token = nodes_[node].token;
        best_end = i + 1;
      }
    }
    if (best_token < 0) {
      ++pos;
      continue;
    }
    const TokenInfo& info = tokens_[best_token];
    AddedTokenMatch m{pos, best_end, info.id};
    if (info.lstrip) {
      while (m.begin > prev_end && IsStripSpace(text[m.begin - 1])) --m.begin;
    }
    if (info.rstrip) {
      while (m.end < text.size() && IsStripSpace(text[m.end])) ++m.end;
    }
    matches.push_back(m);
    prev_end = m.end;
    pos = m.end;
  }
  return matches;
}

}  // namespace omni
