#include "backend/cpu/dnnl_context.h"

#include <cstdlib>

#include "core/check.h"

namespace omni::cpu {

dnnl::engine& DnnlEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& DnnlStream() {
  thread_local dnnl::stream stream(DnnlEngine());
  return stream;
}

dnnl::primitive_attr UserScratchpadAttr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::memory DnnlScratchpad(const dnnl::memory::desc& md) {
  struct Buffer {
    void* data = nullptr;
    size_t size = 0;
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer buf;
  const size_t bytes = md.get_size();
  if (bytes == 0) return dnnl::memory();
  if (bytes > buf.size) {
    const size_t size = (bytes + 63) / 64 * 64;  // aligned_alloc wants a multiple of the alignment
    void* data = std::aligned_alloc(64, size);
    OMNI_CHECK(data != nullptr) << "oneDNN scratchpad: cannot allocate " << size << " bytes";
    std::free(buf.data);
    buf.data = data;
    buf.size = size;
  }
  return dnnl::memory(md, DnnlEngine(), buf.data);
}

dnnl::memory::data_type DnnlType(DType dtype) {
  switch (dtype) {
    case DType::kF32: return dnnl::memory::data_type::f32;
    case DType::kBF16: return dnnl::memory::data_type::bf16;
    case DType::kF16: return dnnl::memory::data_type::f16;
    case DType::kI32: return dnnl::memory::data_type::s32;
    case DType::kU8: return dnnl::memory::data_type::u8;
    case DType::kI64: break;
  }
  OMNI_CHECK(false) << "no oneDNN type for " << DTypeName(dtype);
  return dnnl::memory::data_type::undef;
}

}  // namespace omni::cpu
