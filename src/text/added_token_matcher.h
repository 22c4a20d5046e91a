// Finds added (and special) tokens in text before BPE runs.
//
// Hugging Face splits the input on its added tokens with a leftmost-longest
// Aho-Corasick search. A byte trie gives the same answer: scan left to right,
// and at the first position where some token starts take the longest one.
// The Omni vocabulary has ~72k added tokens (<|visionN|>, <|audioN|>), which
// share prefixes, so the trie stays small (one node per distinct prefix) and a
// position costs at most one walk down the trie, never a compare per token.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace omni {

struct AddedTokenMatch {
  size_t begin = 0;  // byte range of the match in the text (incl. stripped space)
  size_t end = 0;
  int32_t id = -1;
};

class AddedTokenMatcher {
 public:
  struct Entry {
    std::string_view content;  // copied into the trie
    int32_t id = -1;
    bool lstrip = false;  // also swallow whitespace before the token
    bool rstrip = false;  // also swallow whitespace after it
  };

  // Adds a token; a later entry with the same content replaces an earlier one.
  void Add(const Entry& entry);
  bool empty() const { return num_tokens_ == 0; }

  // All matches in `text`, in order, non-overlapping (leftmost-longest).
  std::vector<AddedTokenMatch> FindAll(std::string_view text) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;  // sorted by byte
    int32_t token = -1;  // index into tokens_, or -1
  };
  struct TokenInfo {
    int32_t id;
    bool lstrip;
    bool rstrip;
  };

  int32_t Child(int32_t node, uint8_t byte) const;

  std::vector<Node> nodes_ = std::vector<Node>(1);  // nodes_[0] is the root
  std::vector<TokenInfo> tokens_;
  std::array<bool, 256> first_byte_{};  // bytes some token starts with
  size_t num_tokens_ = 0;
};

}  // namespace omni
