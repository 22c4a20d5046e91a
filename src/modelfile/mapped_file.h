// A read-only memory mapping of a whole file.
//
// Tensors viewed from a safetensors file hold a shared_ptr to its
// MappedFile, so the mapping lives as long as any view. The pages are mapped
// PROT_READ: writing through a view is a bug and faults. If another process
// truncates the file while it is mapped, touching the lost pages raises
// SIGBUS; model files are treated as immutable, as every mmap loader does.
//
// Thread-safety: immutable after Open; share freely.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/status.h"

namespace omni {

class MappedFile {
 public:
  // NotFound if the file does not exist; InvalidArgument if it is not a
  // regular file; Internal for other system errors (with errno's text).
  static StatusOr<std::shared_ptr<MappedFile>> Open(const std::string& path);

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {static_cast<const uint8_t*>(data_), size_}; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, void* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  void* data_;   // nullptr for an empty file (mmap cannot map 0 bytes)
  size_t size_;
};

}  // namespace omni
