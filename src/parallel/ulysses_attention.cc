#include "parallel/ulysses_attention.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/core.h>

#include "core/check.h"
#include "ops/attention.h"

namespace omni::parallel {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct UlyssesState {
  Collective* group;
  std::vector<int64_t> shards;   // [N] tokens per rank
  std::vector<int64_t> offsets;  // [N] first token of each rank
  int64_t total = 0;
  UlyssesStats* stats;
};

// A [T, H, D] f32 tensor whose rows of H * D floats are contiguous (the
// DiT's q and k are; its v is a view into the fused projection with a wider
// token stride), so a rank's heads of a token are one memcpy.
Tensor RowContiguous(const Tensor& x) {
  if (x.stride(2) == 1 && x.stride(1) == x.dim(2)) return x;
  return x.Contiguous();
}

// Exchange buffers are uninitialised Tensors rather than std::vectors: each
// is written in full before it is read, and zero-filling a buffer of the
// sequence's q, k and v (100 MiB at the bench preset) costs a pass over it.
std::span<float> Floats(const Tensor& t) { return {t.data<float>(), static_cast<size_t>(t.numel())}; }

// [T_r, H, D] q, k, v -> [N][3][T_r][H/N][D]: rank d's part holds heads
// [d H/N, (d+1) H/N) of this rank's tokens, q then k then v.
Tensor PackTokensToHeads(std::span<const Tensor> qkv, int n, int64_t chunk) {
  const int64_t tokens = qkv[0].dim(0);
  Tensor send = Tensor::Empty({n * 3 * tokens * chunk}, DType::kF32);
  float* out = send.data<float>();
  for (int d = 0; d < n; ++d) {
    for (const Tensor& x : qkv) {
      const float* base = x.data<float>() + d * chunk;
      for (int64_t t = 0; t < tokens; ++t, out += chunk) {
        std::memcpy(out, base + t * x.stride(0), static_cast<size_t>(chunk) * sizeof(float));
      }
    }
  }
  return send;
}

// [source][3][T_source][H/N][D] -> [3][T][H/N][D], tokens in sequence order.
Tensor UnpackHeads(const UlyssesState& s, const Tensor& recv, int64_t local_heads, int64_t head_dim) {
  const int64_t chunk = local_heads * head_dim;
  Tensor full = Tensor::Empty({3, s.total, local_heads, head_dim}, DType::kF32);
  const float* in = recv.data<float>();
  for (size_t src = 0; src < s.shards.size(); ++src) {
    const int64_t floats = s.shards[src] * chunk;
    for (int i = 0; i < 3; ++i, in += floats) {
      std::memcpy(full.data<float>() + (i * s.total + s.offsets[src]) * chunk, in,
                  static_cast<size_t>(floats) * sizeof(float));
    }
  }
  return full;
}

// [source][T_r][H/N][D] -> [T_r][H][D]: source d's block holds heads [d H/N, (d+1) H/N).
Tensor UnpackTokens(const Tensor& gathered, int n, int64_t tokens, int64_t heads, int64_t head_dim) {
  const int64_t chunk = heads / n * head_dim;
  Tensor out = Tensor::Empty({tokens, heads, head_dim}, DType::kF32);
  for (int src = 0; src < n; ++src) {
    const float* block = gathered.data<float>() + src * tokens * chunk;
    for (int64_t t = 0; t < tokens; ++t) {
      std::memcpy(out.data<float>() + t * heads * head_dim + src * chunk, block + t * chunk,
                  static_cast<size_t>(chunk) * sizeof(float));
    }
  }
  return out;
}

void Exchange(const UlyssesState& s, const Tensor& send, std::span<const int64_t> send_counts, const Tensor& recv,
              std::span<const int64_t> recv_counts, std::string_view what, UlyssesStats& stats) {
  const auto start = Clock::now();
  if (Status st = s.group->AllToAllV(Floats(send), send_counts, Floats(recv), recv_counts); !st.ok()) {
    throw CollectiveError(std::move(st).Annotate(fmt::format("Ulysses attention, {}", what)));
  }
  stats.all_to_all_s += SecondsSince(start);
}

Tensor Attend(const UlyssesState& s, const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, float scale) {
  const int n = s.group->size(), me = s.group->rank();
  OMNI_CHECK(q_in.rank() == 3 && q_in.dtype() == DType::kF32) << q_in.DebugString();
  OMNI_CHECK(k_in.shape() == q_in.shape() && v_in.shape() == q_in.shape() && k_in.dtype() == DType::kF32 &&
             v_in.dtype() == DType::kF32)
      << q_in.DebugString() << " " << k_in.DebugString() << " " << v_in.DebugString();
  const int64_t tokens = q_in.dim(0), heads = q_in.dim(1), head_dim = q_in.dim(2);
  OMNI_CHECK_EQ(tokens, s.shards[static_cast<size_t>(me)]) << "rank " << me << "'s shard";
  OMNI_CHECK_EQ(heads % n, 0) << "CheckUlyssesHeads refuses this at start-up";
  const int64_t local_heads = heads / n, chunk = local_heads * head_dim;  // floats of one token for one rank
  UlyssesStats local_stats;
  UlyssesStats& stats = s.stats ? *s.stats : local_stats;

  // Sequence-sharded -> head-sharded, q, k and v in one exchange.
  auto start = Clock::now();
  const Tensor qkv[3] = {RowContiguous(q_in), RowContiguous(k_in), RowContiguous(v_in)};
  Tensor send = PackTokensToHeads(qkv, n, chunk);
  Tensor recv = Tensor::Empty({3 * s.total * chunk}, DType::kF32);
  std::vector<int64_t> send_counts, recv_counts;
  for (int64_t shard : s.shards) {
    send_counts.push_back(3 * tokens * chunk);
    recv_counts.push_back(3 * shard * chunk);
  }
  stats.pack_s += SecondsSince(start);
  Exchange(s, send, send_counts, recv, recv_counts, "tokens to heads", stats);
  start = Clock::now();
  const Tensor full = UnpackHeads(s, recv, local_heads, head_dim);  // [3, T, H/N, D]
  send = recv = Tensor();
  stats.pack_s += SecondsSince(start);

  start = Clock::now();
  auto part = [&](int i) { return full.Slice(0, i, i + 1).Reshape({s.total, local_heads, head_dim}); };
  ops::AttentionParams params;
  params.scale = scale;
  const Tensor attended = ops::Attention(part(0), part(1), part(2), params).Contiguous();  // [T, H/N, D]
  stats.attention_s += SecondsSince(start);

  // Head-sharded -> sequence-sharded: each rank's tokens of `attended` are
  // already consecutive, so they go as they are.
  std::vector<int64_t> back_send, back_recv;
  for (int64_t shard : s.shards) {
    back_send.push_back(shard * chunk);
    back_recv.push_back(tokens * chunk);
  }
  const Tensor gathered = Tensor::Empty({tokens * heads * head_dim}, DType::kF32);
  Exchange(s, attended, back_send, gathered, back_recv, "heads to tokens", stats);
  start = Clock::now();
  Tensor out = UnpackTokens(gathered, n, tokens, heads, head_dim);
  stats.pack_s += SecondsSince(start);
  stats.calls += 1;
  // q, k, v of this rank's tokens to each other rank, then the other ranks' tokens of this rank's heads.
  stats.floats_sent += 3 * tokens * chunk * (n - 1) + (s.total - tokens) * chunk;
  return out;
}

}  // namespace

Status CheckUlyssesHeads(int64_t heads, int sp) {
  if (sp < 1) return InvalidArgument(fmt::format("--sp {} must be at least 1", sp));
  if (heads % sp != 0) {
    std::string divisors;
    for (int64_t d = 1; d <= heads; ++d) {
      if (heads % d == 0) divisors += (divisors.empty() ? "" : ", ") + std::to_string(d);
    }
    return InvalidArgument(fmt::format(
        "--sp {} does not divide the DiT's {} attention heads (Ulysses gives each rank heads/sp heads); use one of {}",
        sp, heads, divisors));
  }
  return Status::Ok();
}

std::vector<int64_t> EvenShards(int64_t tokens, int parts) {
  OMNI_CHECK_GE(parts, 1);
  std::vector<int64_t> sizes(static_cast<size_t>(parts));
  for (int r = 0; r < parts; ++r) sizes[static_cast<size_t>(r)] = tokens * (r + 1) / parts - tokens * r / parts;
  return sizes;
}

SequenceAttentionFn UlyssesAttention(Collective* group, std::vector<int64_t> shard_tokens, UlyssesStats* stats) {
  OMNI_CHECK(group != nullptr);
  OMNI_CHECK_EQ(shard_tokens.size(), static_cast<size_t>(group->size()));
  auto state = std::make_shared<UlyssesState>();
  state->group = group;
  state->offsets.resize(shard_tokens.size());
  for (size_t r = 0; r < shard_tokens.size(); ++r) {
    OMNI_CHECK_GE(shard_tokens[r], 0);
    state->offsets[r] = state->total;
    state->total += shard_tokens[r];
  }
  state->shards = std::move(shard_tokens);
  state->stats = stats;
  return [state](const Tensor& q, const Tensor& k, const Tensor& v, float scale) {
    return Attend(*state, q, k, v, scale);
  };
}

}  // namespace omni::parallel
