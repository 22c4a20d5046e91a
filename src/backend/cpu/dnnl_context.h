// The oneDNN engine and streams used by the CPU backend. Only backend .cc
// files include this header (it pulls in dnnl.hpp).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "tensor/dtype.h"

namespace omni::cpu {

// The process-wide CPU engine. It holds no model state; sharing it is what
// lets oneDNN share its primitive cache and thread pool.
dnnl::engine& DnnlEngine();
// A stream per calling thread: CPU streams are cheap, and a per-thread stream
// keeps concurrent Forward calls independent.
dnnl::stream& DnnlStream();
dnnl::memory::data_type DnnlType(DType dtype);

}  // namespace omni::cpu
