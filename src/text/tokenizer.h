// A byte-level BPE tokenizer loaded from a Hugging Face `tokenizer.json`.
//
// Supported (docs/TOKENIZER.md has the full list): model BPE with merges as
// "a b" strings or [a, b] pairs; pre_tokenizer ByteLevel, Split (regex or
// literal, every behaviour, invert) and Sequence; decoder ByteLevel; added
// tokens with special / lstrip / rstrip / normalized; normalizer null. Anything
// else is rejected at load time with kUnimplemented naming the feature, never
// silently tokenized differently.
//
// Thread-safety: a loaded Tokenizer is immutable (its BPE cache is internally
// locked); Encode and Decode may run concurrently.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "text/added_token_matcher.h"
#include "text/bpe_model.h"
#include "text/pretokenizer.h"

namespace omni {

struct EncodeOptions {
  // When false, special added tokens in the text are not recognised and are
  // tokenized as plain text (use for untrusted user text that must not be
  // able to forge <|im_start|>). Non-special added tokens still match.
  bool parse_special_tokens = true;
};

struct DecodeOptions {
  bool skip_special_tokens = false;
  // Special tokens kept even with skip_special_tokens (sorted ids): the
  // output parsers' tags, should a checkpoint mark them special.
  std::span<const int32_t> keep_special;
  bool Skips(int32_t id, bool special) const {
    return skip_special_tokens && special && !std::binary_search(keep_special.begin(), keep_special.end(), id);
  }
};

struct AddedTokenSpec {
  int32_t id = -1;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
};

// Everything a Tokenizer is built from: tokenizer.json after parsing.
struct TokenizerSpec {
  BpeModelSpec model;
  std::vector<AddedTokenSpec> added_tokens;
  PreTokenizer pre_tokenizer;
};

// Parses the text of a tokenizer.json. `source_name` prefixes error messages.
StatusOr<TokenizerSpec> ParseTokenizerJson(std::string_view json, std::string_view source_name);

class Tokenizer {
 public:
  static StatusOr<std::unique_ptr<Tokenizer>> FromSpec(TokenizerSpec spec);
  static StatusOr<std::unique_ptr<Tokenizer>> FromJson(std::string_view json,
                                                       std::string_view source_name = "tokenizer.json");
  static StatusOr<std::unique_ptr<Tokenizer>> FromFile(const std::string& path);

  // Fails with kInvalidArgument if `text` is not valid UTF-8.
  StatusOr<std::vector<int32_t>> Encode(std::string_view text, const EncodeOptions& options = {}) const;
  // Fails with kInvalidArgument on an id outside the vocabulary. Invalid UTF-8
  // from a bad id sequence becomes U+FFFD, as in Hugging Face.
  StatusOr<std::string> Decode(std::span<const int32_t> ids, const DecodeOptions& options = {}) const;

  std::optional<int32_t> TokenToId(std::string_view token) const;
  // The token's string as stored (byte-level characters for vocab tokens).
  std::optional<std::string_view> IdToToken(int32_t id) const;
  // The raw bytes the token decodes to (possibly part of a UTF-8 character).
  std::optional<std::string_view> TokenBytes(int32_t id) const;
  bool IsSpecial(int32_t id) const;
  // An added token (tokenizer.json "added_tokens"), special or not.
  bool IsAdded(int32_t id) const;
  // A vocabulary id with a token (not a hole).
  bool IsAssigned(int32_t id) const { return id >= 0 && id < vocab_size() && assigned_[id]; }
  // One past the largest id (ids below it may be unassigned holes).
  int32_t vocab_size() const { return static_cast<int32_t>(id_to_token_.size()); }

 private:
  Tokenizer() = default;
  // Splits `text` around added tokens, then BPE-encodes the gaps.
  Status EncodeSegment(std::string_view text, const AddedTokenMatcher& raw,
                       const AddedTokenMatcher& normalized, std::vector<int32_t>* ids) const;
  Status EncodePlain(std::string_view text, std::vector<int32_t>* ids) const;

  std::unique_ptr<BpeModel> bpe_;
  PreTokenizer pre_tokenizer_;
  std::vector<std::string> id_to_token_;  // [vocab_size], "" for holes
  std::vector<std::string> token_bytes_;  // [vocab_size] decoded bytes
  std::vector<uint8_t> assigned_;         // [vocab_size]
  std::vector<uint8_t> special_;          // [vocab_size]
  std::vector<uint8_t> added_;            // [vocab_size]
  std::unordered_map<std::string, int32_t> token_to_id_;  // added tokens win
  // Hugging Face matches added tokens with normalized=false on the raw text
  // first, then normalized=true ones in what is left; one pair of matchers
  // with all added tokens, one without the special ones.
  AddedTokenMatcher raw_all_, normalized_all_, raw_plain_, normalized_plain_;
};

}  // namespace omni
