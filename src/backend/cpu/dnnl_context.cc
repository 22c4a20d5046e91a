#include "backend/cpu/dnnl_context.h"

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
