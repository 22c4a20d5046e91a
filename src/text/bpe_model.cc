#include "text/bpe_model.h"

#include <queue>

#include "text/byte_level.h"

namespace omni {

StatusOr<std::unique_ptr<BpeModel>> BpeModel::Build(const BpeModelSpec& spec) {
  std::unique_ptr<BpeModel> model(new BpeModel());
  model->ignore_merges_ = spec.ignore_merges;
  model->vocab_.reserve(spec.vocab.size());
  for (const auto& [token, id] : spec.vocab) model->vocab_[token] = id;
  for (int b = 0; b < 256; ++b) {
    std::string token = BytesToByteLevel(std::string(1, static_cast<char>(b)));
    auto it = model->vocab_.find(token);
    if (it == model->vocab_.end()) {
      return InvalidArgument("byte-level vocab has no token for byte " + std::to_string(b) + " ('" +
                             token + "')");
    }
    model->byte_ids_[b] = it->second;
  }
  model->merges_.reserve(spec.merges.size());
  for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
    const auto& [left, right] = spec.merges[rank];
    auto l = model->vocab_.find(left);
    auto r = model->vocab_.find(right);
    auto m = model->vocab_.find(left + right);
    if (l == model->vocab_.end() || r == model->vocab_.end() || m == model->vocab_.end()) {
      return InvalidArgument("merge " + std::to_string(rank) + " ('" + left + "' '" + right +
                             "') uses a token missing from the vocab");
    }
    // The first (lowest-rank) occurrence of a pair wins, as in Hugging Face.
    model->merges_.try_emplace(PairKey(l->second, r->second),
                               MergeResult{static_cast<int32_t>(rank), m->second});
  }
  return model;
}

void BpeModel::EncodePiece(std::string_view bytes, std::vector<int32_t>* ids) const {
  if (bytes.empty()) return;
  if (bytes.size() == 1) {
    ids->push_back(byte_ids_[static_cast<uint8_t>(bytes[0])]);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto it = cache_.find(std::string(bytes));
    if (it != cache_.end()) {
      ids->insert(ids->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> word;
  if (ignore_merges_) {
    auto it = vocab_.find(BytesToByteLevel(bytes));
    if (it != vocab_.end()) word.push_back(it->second);
  }
  if (word.empty()) ApplyMerges(bytes, &word);
  ids->insert(ids->end(), word.begin(), word.end());
  std::lock_guard<std::mutex> lock(cache_mu_);
  if (cache_.size() >= kMaxCache) cache_.clear();
  cache_.emplace(std::string(bytes), std::move(word));
}

// Merges the lowest-rank adjacent pair first, the leftmost among equals, with
// a heap over candidate pairs and a linked list of symbols: O(n log n) even
// for a piece of thousands of bytes (the textbook loop is O(n^2)).
void BpeModel::ApplyMerges(std::string_view bytes, std::vector<int32_t>* ids) const {
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    bool alive;
  };
  struct Candidate {
    int32_t rank;
    int32_t left;  // symbol index
    int32_t right;
    int32_t left_id;
    int32_t right_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  const int32_t n = static_cast<int32_t>(bytes.size());
  std::vector<Symbol> symbols(n);
  for (int32_t i = 0; i < n; ++i) {
    symbols[i] = {byte_ids_[static_cast<uint8_t>(bytes[i])], i - 1, i + 1 < n ? i + 1 : -1, true};
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  auto push_pair = [&](int32_t left) {
    if (left < 0) return;
    int32_t right = symbols[left].next;
    if (right < 0) return;
    auto it = merges_.find(PairKey(symbols[left].id, symbols[right].id));
    if (it == merges_.end()) return;
    heap.push({it->second.rank, left, right, symbols[left].id, symbols[right].id});
  };
  for (int32_t i = 0; i + 1 < n; ++i) push_pair(i);
  while (!heap.empty()) {
    Candidate c = heap.top();
    heap.pop();
    Symbol& l = symbols[c.left];
    Symbol& r = symbols[c.right];
    // Stale if either side was merged away or changed since the push.
    if (!l.alive || !r.alive || l.next != c.right || l.id != c.left_id || r.id != c.right_id) continue;
    l.id = merges_.at(PairKey(c.left_id, c.right_id)).merged_id;
    r.alive = false;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = c.left;
    push_pair(l.prev);
    push_pair(c.left);
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) ids->push_back(symbols[i].id);
}

}  // namespace omni
