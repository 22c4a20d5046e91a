// A zero-filled buffer for large read-mostly data (packed weights) on 2 MiB
// boundaries, with the kernel asked for transparent huge pages. Decode
// streams every weight once per token: on 4 KiB pages each page costs a TLB
// walk and restarts the hardware prefetcher, which holds a GEMV well below
// the machine's streaming bandwidth. Where THP is off ("never") the buffer
// is still correct, only slower.
#pragma once

#include <cstddef>

namespace omni::cpu {

class HugeBuffer {
 public:
  HugeBuffer() = default;
  explicit HugeBuffer(size_t bytes);
  ~HugeBuffer();
  HugeBuffer(HugeBuffer&& other) noexcept;
  HugeBuffer& operator=(HugeBuffer&& other) noexcept;
  HugeBuffer(const HugeBuffer&) = delete;
  HugeBuffer& operator=(const HugeBuffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;  // rounded up to whole 2 MiB pages
};

}  // namespace omni::cpu
