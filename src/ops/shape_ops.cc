#include "ops/shape_ops.h"

#include <cstring>

#include "backend/cpu/elementwise_cpu.h"

namespace omni::ops {

Tensor Embedding(const Tensor& table, const Tensor& ids) {
  OMNI_CHECK_EQ(table.rank(), 2) << table.DebugString();
  OMNI_CHECK(ids.dtype() == DType::kI32 || ids.dtype() == DType::kI64) << "ids i32/i64: " << ids.DebugString();
  const int64_t vocab = table.dim(0), n = ids.numel();
  std::vector<int64_t> idx(n);
  Tensor ic = ids.Contiguous();
  for (int64_t i = 0; i < n; ++i) {
    idx[i] = ic.dtype() == DType::kI64 ? ic.data<int64_t>()[i] : ic.data<int32_t>()[i];
    OMNI_CHECK(idx[i] >= 0 && idx[i] < vocab) << "token id " << idx[i] << " outside vocab " << vocab;
  }
  Shape shape = ids.shape();
  shape.push_back(table.dim(1));
  Tensor out = Tensor::Empty(shape, table.dtype());
  cpu::Embedding(table.Contiguous(), idx, out.Reshape({n, table.dim(1)}));
  return out;
}

Tensor Concat(std::span<const Tensor> tensors, int dim) {
  OMNI_CHECK(!tensors.empty());
  const Tensor& first = tensors[0];
  const int d = dim < 0 ? dim + first.rank() : dim;
  OMNI_CHECK(d >= 0 && d < first.rank()) << "concat dim " << dim;
  Shape shape = first.shape();
  shape[d] = 0;
  for (const Tensor& t : tensors) {
    OMNI_CHECK(t.rank() == first.rank() && t.dtype() == first.dtype()) << t.DebugString();
    for (int i = 0; i < t.rank(); ++i) {
      OMNI_CHECK(i == d || t.dim(i) == first.dim(i)) << t.DebugString() << " vs " << first.DebugString();
    }
    shape[d] += t.dim(d);
  }
  Tensor out = Tensor::Empty(shape, first.dtype());
  // Each piece is `outer` runs of (dim size x inner) contiguous elements.
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < d; ++i) outer *= shape[i];
  for (int i = d + 1; i < first.rank(); ++i) inner *= shape[i];
  const size_t es = DTypeSize(first.dtype());
  int64_t offset = 0;
  char* dst = static_cast<char*>(out.raw_data());
  for (const Tensor& t : tensors) {
    Tensor c = t.Contiguous();
    const int64_t run = t.dim(d) * inner;
    const char* src = static_cast<const char*>(c.raw_data());
    for (int64_t o = 0; o < outer && run > 0; ++o) {
      std::memcpy(dst + (o * shape[d] * inner + offset) * es, src + o * run * es, run * es);
    }
    offset += run;
  }
  return out;
}

std::vector<Tensor> Split(const Tensor& x, std::span<const int64_t> sizes, int dim) {
  std::vector<Tensor> parts;
  int64_t start = 0;
  for (int64_t s : sizes) {
    parts.push_back(x.Slice(dim, start, start + s));
    start += s;
  }
  OMNI_CHECK_EQ(start, x.dim(dim)) << "split sizes must cover the dim";
  return parts;
}

Tensor Permute(const Tensor& x, const std::vector<int>& order) { return x.Permute(order).Copy(); }

}  // namespace omni::ops
