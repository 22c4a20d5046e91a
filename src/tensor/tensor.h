// Tensor: a shape, strides and dtype over memory that is either owned (a
// 64-byte aligned heap buffer) or viewed (an mmap'd file, a caller's buffer).
//
// Copying a Tensor shares the memory, like a shared_ptr; Copy() makes a deep,
// contiguous copy and is the only way to duplicate the bytes. Views
// (Reshape, Slice, Transpose, Permute) never copy. Strides are in elements.
//
// Thread-safety: a Tensor may be read from many threads; writers need their
// own synchronisation, as with any buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/check.h"
#include "tensor/dtype.h"

namespace omni {

using Shape = std::vector<int64_t>;

int64_t NumElements(const Shape& shape);
Shape ContiguousStrides(const Shape& shape);
std::string ShapeToString(const Shape& shape);  // "[2, 3, 4]"

class Tensor {
 public:
  Tensor() = default;

  // Owning, uninitialised, contiguous, 64-byte aligned; throws
  // std::bad_alloc when memory runs out (Zeros too).
  static Tensor Empty(const Shape& shape, DType dtype);
  static Tensor Zeros(const Shape& shape, DType dtype);
  // A view of memory the caller keeps alive; `keepalive` (if any) is held
  // for as long as any view of the tensor exists.
  static Tensor View(void* data, const Shape& shape, DType dtype,
                     std::shared_ptr<void> keepalive = nullptr);
  static Tensor View(void* data, const Shape& shape, const Shape& strides, DType dtype,
                     std::shared_ptr<void> keepalive = nullptr);
  // Owning copy of a float vector, converted to `dtype`.
  static Tensor FromFloats(std::span<const float> values, const Shape& shape, DType dtype = DType::kF32);

  bool defined() const { return data_ != nullptr || NumElements(shape_) == 0; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  // Size of dimension `d`; negative counts from the end.
  int64_t dim(int d) const;
  int64_t stride(int d) const;
  int64_t numel() const { return NumElements(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * DTypeSize(dtype_); }
  bool is_contiguous() const;

  void* raw_data() const { return data_; }
  template <typename T>
  T* data() const {
    OMNI_CHECK(DTypeOf<T>() == dtype_) << "tensor is " << DTypeName(dtype_) << ", asked for "
                                        << DTypeName(DTypeOf<T>());
    return static_cast<T*>(data_);
  }

  // Views. Reshape needs a contiguous tensor; -1 infers one dimension.
  Tensor Reshape(const Shape& shape) const;
  Tensor Slice(int d, int64_t start, int64_t end) const;  // [start, end) along d
  Tensor Transpose(int d0, int d1) const;
  Tensor Permute(const std::vector<int>& order) const;

  // Deep copies.
  Tensor Copy() const;        // contiguous, same dtype
  Tensor Contiguous() const;  // *this if already contiguous, else Copy()
  Tensor To(DType dtype) const;  // contiguous copy converted to dtype (floats and ints)

  // Element i (row-major over the logical shape) as float; for tests and debugging.
  float GetFloat(int64_t flat_index) const;
  std::vector<float> ToFloats() const;

  std::string DebugString() const;  // "Tensor(BF16, [2, 3])"

 private:
  int NormDim(int d) const;

  std::shared_ptr<void> storage_;  // owns or keeps alive the bytes; may be null for views
  void* data_ = nullptr;
  Shape shape_;
  Shape strides_;
  DType dtype_ = DType::kF32;
};

}  // namespace omni
