#include "backend/cpu/huge_buffer.h"

#include <sys/mman.h>

#include <utility>

#include "core/check.h"

namespace omni::cpu {
namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}  // namespace

HugeBuffer::HugeBuffer(size_t bytes) {
  if (bytes == 0) return;
  size_ = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  // Anonymous mmap: zero-filled, page aligned; over-map by one huge page and
  // trim so the start is 2 MiB aligned (mmap itself only promises 4 KiB).
  void* raw = mmap(nullptr, size_ + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  OMNI_CHECK(raw != MAP_FAILED) << "mmap of " << size_ << " bytes failed";
  const auto addr = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (addr + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > addr) munmap(raw, aligned - addr);
  const uintptr_t end = addr + size_ + kHugePage;
  if (end > aligned + size_) munmap(reinterpret_cast<void*>(aligned + size_), end - aligned - size_);
  data_ = reinterpret_cast<void*>(aligned);
  // Advice only: EINVAL where THP is compiled out is not an error for us.
  (void)madvise(data_, size_, MADV_HUGEPAGE);
}

HugeBuffer::~HugeBuffer() {
  if (data_) munmap(data_, size_);
}

HugeBuffer::HugeBuffer(HugeBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

HugeBuffer& HugeBuffer::operator=(HugeBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

}  // namespace omni::cpu
