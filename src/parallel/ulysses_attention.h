// Ulysses sequence parallelism (DeepSpeed-Ulysses, arXiv:2309.14509): each of
// N ranks holds a shard of the sequence and computes everything per token on
// it; attention, which needs every token, runs head-parallel instead:
//
//   q, k, v [T_r, H, D] (rank r's tokens, all heads)
//     -- all-to-all -->  [T, H/N, D] (every token, heads [r H/N, (r+1) H/N))
//     ops::Attention over the whole sequence
//     -- all-to-all -->  [T_r, H, D]
//
// so each rank moves 4 (T_r H D)(N-1)/N floats per attention (q, k and v in
// one exchange, the output in a second) and attends over all T tokens for
// its H/N heads. The shards may be uneven (T need not divide by N); N must
// divide H (CheckUlyssesHeads).
//
//   UlyssesStats stats;
//   SequenceAttentionFn attention = UlyssesAttention(group, EvenShards(T, N), &stats);
//   Tensor out = dit.Forward(shard_input, attention);   // may throw CollectiveError
//
// Errors: the attention callback must return a Tensor, so a failed exchange
// throws CollectiveError out of it (and out of the model code that called
// it). Whoever runs a model with this callback catches it at that boundary
// and turns it into a Status (VisionDecoder::GenerateSharded does).
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <vector>

#include "core/status.h"
#include "parallel/collective.h"
#include "tensor/tensor.h"

namespace omni::parallel {

// The signature of models::SequenceAttention (models/vision_decoder/dit.h),
// restated here because the parallel layer sits below the models: q, k, v
// [T_local, heads, head_dim] f32 -> [T_local, heads, head_dim] f32.
using SequenceAttentionFn = std::function<Tensor(const Tensor& q, const Tensor& k, const Tensor& v, float scale)>;

// A collective failed inside a callback that cannot return a Status.
class CollectiveError : public std::runtime_error {
 public:
  explicit CollectiveError(Status status) : std::runtime_error(status.ToString()), status_(std::move(status)) {}
  const Status& status() const { return status_; }

 private:
  Status status_;
};

// What a rank's Ulysses attention spent, accumulated over calls.
struct UlyssesStats {
  double all_to_all_s = 0;   // in the two exchanges, waiting for peers included
  double attention_s = 0;    // in ops::Attention
  double pack_s = 0;         // reordering into and out of the exchange buffers
  int64_t calls = 0;
  int64_t floats_sent = 0;   // to other ranks (a rank's own part is not counted)
};

// InvalidArgument unless sp >= 1 divides `heads`, in the words the decoder's
// start-up check shows ("--sp 3 does not divide the DiT's 4 attention heads").
Status CheckUlyssesHeads(int64_t heads, int sp);

// `parts` shard sizes for `tokens` tokens: part r holds [tokens r / parts,
// tokens (r + 1) / parts), so sizes differ by at most one.
std::vector<int64_t> EvenShards(int64_t tokens, int parts);

// Rank group->rank()'s attention callback; shard_tokens[r] is the number of
// tokens rank r holds, in sequence order (size group->size()). Every rank
// must call its callback the same number of times with the same head count.
// `group` and `stats` (nullable) must outlive the callback; it updates
// *stats from the calling thread without locking.
SequenceAttentionFn UlyssesAttention(Collective* group, std::vector<int64_t> shard_tokens,
                                     UlyssesStats* stats = nullptr);

}  // namespace omni::parallel
