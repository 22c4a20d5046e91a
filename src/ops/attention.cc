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
  cpu::Attention(p);
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
