// The textbook byte-level BPE training loop, for the demo tokenizer: start
// from the 256 byte tokens, repeatedly merge the most frequent adjacent pair.
// Deterministic: ties go to the pair whose (left, right) byte-level strings
// compare smallest.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace omni {

struct BpeTrainResult {
  std::vector<std::string> vocab;  // byte-level token strings, index = id; 0..255 are the bytes
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
};

// `pieces` are pre-tokenized raw byte strings, each counted once per
// occurrence. Stops after `num_merges` merges or when every word is one token.
BpeTrainResult TrainByteLevelBpe(const std::vector<std::string>& pieces, int num_merges);

}  // namespace omni
