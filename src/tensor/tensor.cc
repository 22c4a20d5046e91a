#include "tensor/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <numeric>
#include <sstream>

namespace omni {

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Shape ContiguousStrides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

std::string ShapeToString(const Shape& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

Tensor Tensor::Empty(const Shape& shape, DType dtype) {
  for (int64_t d : shape) OMNI_CHECK_GE(d, 0) << ShapeToString(shape);
  Tensor t;
  t.shape_ = shape;
  t.strides_ = ContiguousStrides(shape);
  t.dtype_ = dtype;
  size_t bytes = t.nbytes();
  // 64-byte alignment suits AVX-512 loads and oneDNN; round the size up as
  // aligned_alloc requires.
  size_t alloc = (bytes + 63) / 64 * 64;
  if (alloc == 0) alloc = 64;
  void* p = std::aligned_alloc(64, alloc);
  // Thrown, as operator new would: running out of memory is a condition of
  // the request being served (the model runner turns it into that step's
  // error), not a broken invariant that must end the process.
  if (p == nullptr) throw std::bad_alloc();
  t.storage_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  t.data_ = p;
  return t;
}

Tensor Tensor::Zeros(const Shape& shape, DType dtype) {
  Tensor t = Empty(shape, dtype);
  std::memset(t.data_, 0, t.nbytes());
  return t;
}

Tensor Tensor::View(void* data, const Shape& shape, DType dtype, std::shared_ptr<void> keepalive) {
  return View(data, shape, ContiguousStrides(shape), dtype, std::move(keepalive));
}

Tensor Tensor::View(void* data, const Shape& shape, const Shape& strides, DType dtype,
                    std::shared_ptr<void> keepalive) {
  OMNI_CHECK_EQ(shape.size(), strides.size());
  Tensor t;
  t.storage_ = std::move(keepalive);
  t.data_ = data;
  t.shape_ = shape;
  t.strides_ = strides;
  t.dtype_ = dtype;
  return t;
}

namespace {

void StoreFloat(void* base, int64_t i, DType dtype, float v) {
  switch (dtype) {
    case DType::kF32: static_cast<float*>(base)[i] = v; break;
    case DType::kBF16: static_cast<bf16_t*>(base)[i] = F32ToBF16(v); break;
    case DType::kF16: static_cast<f16_t*>(base)[i] = F32ToF16(v); break;
    case DType::kI32: static_cast<int32_t*>(base)[i] = static_cast<int32_t>(v); break;
    case DType::kI64: static_cast<int64_t*>(base)[i] = static_cast<int64_t>(v); break;
    case DType::kU8: static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(v); break;
  }
}

float LoadFloat(const void* base, int64_t i, DType dtype) {
  switch (dtype) {
    case DType::kF32: return static_cast<const float*>(base)[i];
    case DType::kBF16: return BF16ToF32(static_cast<const bf16_t*>(base)[i]);
    case DType::kF16: return F16ToF32(static_cast<const f16_t*>(base)[i]);
    case DType::kI32: return static_cast<float>(static_cast<const int32_t*>(base)[i]);
    case DType::kI64: return static_cast<float>(static_cast<const int64_t*>(base)[i]);
    case DType::kU8: return static_cast<float>(static_cast<const uint8_t*>(base)[i]);
  }
  return 0;
}

// Element offset (in elements) of the flat row-major index `flat`.
int64_t OffsetOf(const Shape& shape, const Shape& strides, int64_t flat) {
  int64_t off = 0;
  for (size_t d = shape.size(); d-- > 0;) {
    off += (flat % shape[d]) * strides[d];
    flat /= shape[d];
  }
  return off;
}

}  // namespace

Tensor Tensor::FromFloats(std::span<const float> values, const Shape& shape, DType dtype) {
  OMNI_CHECK_EQ(static_cast<int64_t>(values.size()), NumElements(shape));
  Tensor t = Empty(shape, dtype);
  for (size_t i = 0; i < values.size(); ++i) StoreFloat(t.data_, static_cast<int64_t>(i), dtype, values[i]);
  return t;
}

int Tensor::NormDim(int d) const {
  int r = rank();
  int nd = d < 0 ? d + r : d;
  OMNI_CHECK(nd >= 0 && nd < r) << "dim " << d << " out of range for rank " << r;
  return nd;
}

int64_t Tensor::dim(int d) const { return shape_[NormDim(d)]; }
int64_t Tensor::stride(int d) const { return strides_[NormDim(d)]; }

bool Tensor::is_contiguous() const {
  int64_t expect = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] != 1 && strides_[i] != expect) return false;
    expect *= shape_[i];
  }
  return true;
}

Tensor Tensor::Reshape(const Shape& shape) const {
  OMNI_CHECK(is_contiguous()) << "Reshape of a non-contiguous tensor; call Contiguous() first";
  Shape s = shape;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      OMNI_CHECK_EQ(infer, -1) << "more than one -1 in reshape";
      infer = static_cast<int>(i);
    } else {
      known *= s[i];
    }
  }
  if (infer >= 0) {
    OMNI_CHECK(known > 0 && numel() % known == 0) << ShapeToString(shape_) << " -> " << ShapeToString(shape);
    s[infer] = numel() / known;
  }
  OMNI_CHECK_EQ(NumElements(s), numel()) << ShapeToString(shape_) << " -> " << ShapeToString(shape);
  Tensor t = *this;
  t.shape_ = s;
  t.strides_ = ContiguousStrides(s);
  return t;
}

Tensor Tensor::Slice(int d, int64_t start, int64_t end) const {
  int nd = NormDim(d);
  OMNI_CHECK(0 <= start && start <= end && end <= shape_[nd])
      << "slice [" << start << ", " << end << ") of dim " << nd << " size " << shape_[nd];
  Tensor t = *this;
  t.data_ = static_cast<char*>(data_) + start * strides_[nd] * static_cast<int64_t>(DTypeSize(dtype_));
  t.shape_[nd] = end - start;
  return t;
}

Tensor Tensor::Transpose(int d0, int d1) const {
  int a = NormDim(d0), b = NormDim(d1);
  Tensor t = *this;
  std::swap(t.shape_[a], t.shape_[b]);
  std::swap(t.strides_[a], t.strides_[b]);
  return t;
}

Tensor Tensor::Permute(const std::vector<int>& order) const {
  OMNI_CHECK_EQ(static_cast<int>(order.size()), rank());
  std::vector<bool> used(order.size(), false);
  Tensor t = *this;
  for (size_t i = 0; i < order.size(); ++i) {
    int src = NormDim(order[i]);
    OMNI_CHECK(!used[src]) << "dimension " << src << " repeated in permute";
    used[src] = true;
    t.shape_[i] = shape_[src];
    t.strides_[i] = strides_[src];
  }
  return t;
}

Tensor Tensor::Copy() const {
  Tensor out = Empty(shape_, dtype_);
  size_t es = DTypeSize(dtype_);
  if (is_contiguous()) {
    std::memcpy(out.data_, data_, nbytes());
    return out;
  }
  // Copy runs along the innermost dimension at a time.
  int64_t n = numel();
  if (n == 0) return out;
  int64_t inner = shape_.back();
  int64_t inner_stride = strides_.back();
  const char* src = static_cast<const char*>(data_);
  char* dst = static_cast<char*>(out.data_);
  for (int64_t row = 0; row < n / inner; ++row) {
    int64_t base = OffsetOf(shape_, strides_, row * inner);
    if (inner_stride == 1) {
      std::memcpy(dst + row * inner * es, src + base * es, inner * es);
    } else {
      for (int64_t j = 0; j < inner; ++j) {
        std::memcpy(dst + (row * inner + j) * es, src + (base + j * inner_stride) * es, es);
      }
    }
  }
  return out;
}

Tensor Tensor::Contiguous() const { return is_contiguous() ? *this : Copy(); }

Tensor Tensor::To(DType dtype) const {
  if (dtype == dtype_) return Copy();
  Tensor src = Contiguous();
  Tensor out = Empty(shape_, dtype);
  int64_t n = numel();
  for (int64_t i = 0; i < n; ++i) StoreFloat(out.data_, i, dtype, LoadFloat(src.data_, i, dtype_));
  return out;
}

float Tensor::GetFloat(int64_t flat_index) const {
  OMNI_CHECK(flat_index >= 0 && flat_index < numel());
  return LoadFloat(data_, OffsetOf(shape_, strides_, flat_index), dtype_);
}

std::vector<float> Tensor::ToFloats() const {
  std::vector<float> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[i] = GetFloat(i);
  return v;
}

std::string Tensor::DebugString() const {
  return "Tensor(" + std::string(DTypeName(dtype_)) + ", " + ShapeToString(shape_) + ")";
}

}  // namespace omni
