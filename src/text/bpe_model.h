// The BPE model of a byte-level tokenizer: merges applied by rank to the bytes
// of one pre-tokenized piece.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"

namespace omni {

struct BpeModelSpec {
  std::vector<std::pair<std::string, int32_t>> vocab;         // byte-level token -> id
  std::vector<std::pair<std::string, std::string>> merges;    // in rank order
  // Llama-3 style: a piece that is itself in the vocab skips the merges.
  bool ignore_merges = false;
};

// Immutable after Build except for the word cache; Encode is thread-safe.
class BpeModel {
 public:
  static StatusOr<std::unique_ptr<BpeModel>> Build(const BpeModelSpec& spec);

  // Appends the ids for the raw bytes of one piece.
  void EncodePiece(std::string_view bytes, std::vector<int32_t>* ids) const;

 private:
  struct MergeResult {
    int32_t rank;
    int32_t merged_id;
  };
  static uint64_t PairKey(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  void ApplyMerges(std::string_view bytes, std::vector<int32_t>* ids) const;

  std::array<int32_t, 256> byte_ids_{};  // id of each single-byte token
  std::unordered_map<uint64_t, MergeResult> merges_;
  std::unordered_map<std::string, int32_t> vocab_;  // byte-level string -> id
  bool ignore_merges_ = false;

  // Raw piece bytes -> ids. Bounded: cleared when it grows past kMaxCache.
  static constexpr size_t kMaxCache = 1 << 16;
  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;  // guarded by cache_mu_
};

}  // namespace omni
