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

// Attributes for a primitive that is cached and executed from any thread:
// scratchpad_mode::user. In the default (library) mode oneDNN binds a
// primitive to the scratchpad of the thread that created it, so two threads
// executing one primitive (or two primitives created on one thread) at once
// overwrite each other's temporaries. Execute such a primitive with
// DnnlScratchpad(pd.scratchpad_desc()) as DNNL_ARG_SCRATCHPAD.
dnnl::primitive_attr UserScratchpadAttr();
// A scratchpad for `md` in the calling thread's buffer (64-byte aligned,
// grown on demand, never shrunk). Valid until this thread's next call; a
// stream executes in order, so one buffer per thread suffices. Empty (a
// null memory) when md's size is 0.
dnnl::memory DnnlScratchpad(const dnnl::memory::desc& md);

}  // namespace omni::cpu
