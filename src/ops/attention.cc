#include "ops/attention.h"

#include "backend/cpu/attention_cpu.h"

namespace omni::ops {

Tensor Attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionParams& params) {
  OMNI_CHECK(q.rank() == 3 && k.rank() == 3 && v.rank() == 3)
      << q.DebugString() << " " << k.DebugString() << " " << v.DebugString();
  OMNI_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype() &&
             (q.dtype() == DType::kF32 || q.dtype() == DType::kBF16))
      << "attention needs f32 or bf16 q/k/v of one dtype";
  OMNI_CHECK(k.shape() == v.shape()) << k.DebugString() << " vs " << v.DebugString();
  const int64_t sq = q.dim(0), hq = q.dim(1), d = q.dim(2), skv = k.dim(0), hkv = k.dim(1);
  OMNI_CHECK_EQ(k.dim(2), d);
  OMNI_CHECK(hkv > 0 && hq % hkv == 0) << "Hq " << hq << " not a multiple of Hkv " << hkv;
  const AttentionMask& m = params.mask;
  std::span<const int32_t> kv_seg = m.kv_segments.empty() ? m.q_segments : m.kv_segments;
  if (!m.q_segments.empty()) {
    OMNI_CHECK_EQ(static_cast<int64_t>(m.q_segments.size()), sq);
    OMNI_CHECK_EQ(static_cast<int64_t>(kv_seg.size()), skv);
  }
  OMNI_CHECK(m.block_size == 0 || m.block_visible) << "block_size set without block_visible";

  Tensor out = Tensor::Empty({sq, hq, d}, q.dtype());
  if (out.numel() == 0) return out;
  if (skv == 0) return Tensor::Zeros({sq, hq, d}, q.dtype());
  Tensor qc = q.stride(2) == 1 ? q : q.Contiguous();
  Tensor kc = k.stride(2) == 1 ? k : k.Contiguous();
  Tensor vc = v.stride(2) == 1 ? v : v.Contiguous();

  std::vector<uint8_t> block_visible;
  cpu::AttentionProblem p;
  if (m.block_size > 0) {
    const int64_t nqb = (sq + m.block_size - 1) / m.block_size, nkb = (skv + m.block_size - 1) / m.block_size;
    block_visible.resize(nqb * nkb);
    for (int64_t a = 0; a < nqb; ++a)
      for (int64_t b = 0; b < nkb; ++b) block_visible[a * nkb + b] = m.block_visible(a, b) ? 1 : 0;
    p.block_size = m.block_size;
    p.block_visible = &block_visible;
  }
  p.q = qc.raw_data();
  p.k = kc.raw_data();
  p.v = vc.raw_data();
  p.out = out.raw_data();
  p.dtype = q.dtype();
  p.out_dtype = out.dtype();
  p.sq = sq, p.skv = skv, p.hq = hq, p.hkv = hkv, p.d = d;
  p.q_row = qc.stride(0), p.q_head = qc.stride(1);
  p.k_row = kc.stride(0), p.k_head = kc.stride(1);
  p.v_row = vc.stride(0), p.v_head = vc.stride(1);
  p.scale = params.scale;
  p.causal = m.causal;
  p.q_offset = m.q_offset;
  p.window = m.window;
  if (!m.q_segments.empty()) {
    p.q_segments = m.q_segments.data();
    p.kv_segments = kv_seg.data();
  }
  cpu::Attention({&p, 1});
  return out;
}

Tensor PagedAttention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                      std::span<const PagedSequence> sequences, float scale) {
  OMNI_CHECK(q.rank() == 3 && k_cache.rank() == 4 && k_cache.shape() == v_cache.shape())
      << q.DebugString() << " " << k_cache.DebugString() << " " << v_cache.DebugString();
  OMNI_CHECK(q.dtype() == k_cache.dtype() && q.dtype() == v_cache.dtype() &&
             (q.dtype() == DType::kF32 || q.dtype() == DType::kBF16))
      << "paged attention needs f32 or bf16 q and caches of one dtype";
  OMNI_CHECK(k_cache.is_contiguous() && v_cache.is_contiguous()) << "paged attention needs contiguous caches";
  const int64_t total = q.dim(0), hq = q.dim(1), d = q.dim(2);
  const int64_t block_size = k_cache.dim(1), hkv = k_cache.dim(2);
  OMNI_CHECK_EQ(k_cache.dim(3), d);
  OMNI_CHECK(hkv > 0 && hq % hkv == 0) << "Hq " << hq << " not a multiple of Hkv " << hkv;
  OMNI_CHECK(block_size > 0 && block_size % 2 == 0) << "cache block size " << block_size << " must be even";
  Tensor qc = q.stride(2) == 1 ? q : q.Contiguous();
  Tensor out = Tensor::Empty({total, hq, d}, q.dtype());
  const size_t elem = DTypeSize(q.dtype());
  std::vector<cpu::AttentionProblem> problems;
  problems.reserve(sequences.size());
  int64_t offset = 0;
  for (const PagedSequence& s : sequences) {
    const int64_t skv = s.start_position + s.num_queries;
    OMNI_CHECK(s.num_queries >= 1 && s.start_position >= 0 && offset + s.num_queries <= total)
        << "sequence of " << s.num_queries << " queries at " << s.start_position << " past the " << total << " rows";
    OMNI_CHECK_GE(static_cast<int64_t>(s.block_table.size()) * block_size, skv) << "block table too short";
    cpu::AttentionProblem p;
    p.q = static_cast<const uint8_t*>(qc.raw_data()) + offset * qc.stride(0) * elem;
    p.k = k_cache.raw_data();
    p.v = v_cache.raw_data();
    p.out = static_cast<uint8_t*>(out.raw_data()) + offset * hq * d * elem;
    p.dtype = p.out_dtype = q.dtype();
    p.sq = s.num_queries, p.skv = skv, p.hq = hq, p.hkv = hkv, p.d = d;
    p.q_row = qc.stride(0), p.q_head = qc.stride(1);
    p.k_row = p.v_row = hkv * d, p.k_head = p.v_head = d;
    p.scale = scale;
    p.causal = true;
    p.q_offset = s.start_position;
    p.kv_block_size = block_size;
    p.kv_block_table = s.block_table.data();
    problems.push_back(p);
    offset += s.num_queries;
  }
  OMNI_CHECK_EQ(offset, total) << "sequences cover " << offset << " of " << total << " query rows";
  cpu::Attention(problems);
  return out;
}

std::vector<int32_t> SegmentIdsFromCuSeqlens(std::span<const int32_t> cu_seqlens) {
  OMNI_CHECK(!cu_seqlens.empty() && cu_seqlens[0] == 0) << "cu_seqlens must start at 0";
  std::vector<int32_t> ids;
  ids.reserve(cu_seqlens.back());
  for (size_t s = 1; s < cu_seqlens.size(); ++s) {
    OMNI_CHECK_LE(cu_seqlens[s - 1], cu_seqlens[s]) << "cu_seqlens must not decrease";
    ids.insert(ids.end(), cu_seqlens[s] - cu_seqlens[s - 1], static_cast<int32_t>(s - 1));
  }
  return ids;
}

}  // namespace omni::ops
