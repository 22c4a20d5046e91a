#include "text/bpe_trainer.h"

#include <map>
#include <unordered_map>

#include "text/byte_level.h"

namespace omni {

BpeTrainResult TrainByteLevelBpe(const std::vector<std::string>& pieces, int num_merges) {
  BpeTrainResult result;
  std::unordered_map<std::string, int> id_of;
  for (int b = 0; b < 256; ++b) {
    result.vocab.push_back(BytesToByteLevel(std::string(1, static_cast<char>(b))));
    id_of[result.vocab.back()] = b;
  }
  // Distinct words with their counts; std::map keeps the order deterministic.
  std::map<std::string, long> word_counts;
  for (const std::string& p : pieces) ++word_counts[p];
  std::vector<std::vector<int>> words;
  std::vector<long> counts;
  for (const auto& [word, count] : word_counts) {
    std::vector<int> symbols;
    for (char c : word) symbols.push_back(static_cast<uint8_t>(c));
    words.push_back(std::move(symbols));
    counts.push_back(count);
  }

  for (int step = 0; step < num_merges; ++step) {
    std::map<std::pair<int, int>, long> pair_counts;
    for (size_t w = 0; w < words.size(); ++w) {
      for (size_t i = 0; i + 1 < words[w].size(); ++i) pair_counts[{words[w][i], words[w][i + 1]}] += counts[w];
    }
    const std::pair<int, int>* best = nullptr;
    long best_count = 0;  // like Hugging Face min_frequency 0: any pair that occurs
    for (const auto& [pair, count] : pair_counts) {
      bool better = count > best_count;
      if (!better && best != nullptr && count == best_count) {
        const auto& [bl, br] = *best;
        better = std::make_pair(result.vocab[pair.first], result.vocab[pair.second]) <
                 std::make_pair(result.vocab[bl], result.vocab[br]);
      }
      if (better) {
        best = &pair;
        best_count = count;
      }
    }
    if (best == nullptr) break;
    auto [left, right] = *best;
    std::string merged = result.vocab[left] + result.vocab[right];
    auto [it, inserted] = id_of.try_emplace(merged, static_cast<int>(result.vocab.size()));
    if (inserted) result.vocab.push_back(merged);
    int merged_id = it->second;
    result.merges.emplace_back(result.vocab[left], result.vocab[right]);
    for (std::vector<int>& symbols : words) {
      std::vector<int> next;
      next.reserve(symbols.size());
      for (size_t i = 0; i < symbols.size(); ++i) {
        if (i + 1 < symbols.size() && symbols[i] == left && symbols[i + 1] == right) {
          next.push_back(merged_id);
          ++i;
        } else {
          next.push_back(symbols[i]);
        }
      }
      symbols = std::move(next);
    }
  }
  return result;
}

}  // namespace omni
