// Reading and writing safetensors files (safetensors_header.h has the format).
//
// Reading is zero-copy: SafetensorsFile maps the file (or keeps a buffer) and
// hands out Tensor views into it; each view holds the mapping alive. A view
// whose bytes are not aligned to its element size (possible only in files from
// writers that do not pad the header, unlike the reference writer) is copied
// into an aligned owned tensor instead, so kernels may always dereference
// typed pointers.
//
// Writing follows the reference implementation byte for byte: compact JSON,
// "__metadata__" first (only when non-empty, keys sorted), then the tensors
// ordered by dtype (I64, F32, I32, BF16, F16, U8: the reference's descending
// alignment order) and then by name (bytewise); each entry lists dtype,
// shape, data_offsets; the header is padded with spaces to a multiple of 8
// bytes and the data follow in the same order, back to back. Output is thus
// deterministic and independent of the order the caller passes tensors in.
//
// Thread-safety: a SafetensorsFile is immutable after construction; Get() may
// be called from many threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "modelfile/safetensors_header.h"
#include "tensor/tensor.h"

namespace omni {

class SafetensorsFile {
 public:
  // Maps `path` read-only and validates its header.
  static StatusOr<SafetensorsFile> Open(const std::string& path);
  // Validates `bytes` (a whole file held in memory, e.g. an object fetched
  // from a store); views point into `bytes`, which `keepalive` (may be null
  // if the caller outlives every view) keeps alive.
  static StatusOr<SafetensorsFile> FromBuffer(std::span<const uint8_t> bytes,
                                              std::shared_ptr<void> keepalive,
                                              std::string source = "<buffer>");
  // Takes ownership of `bytes`.
  static StatusOr<SafetensorsFile> FromBuffer(std::string bytes, std::string source = "<buffer>");

  const std::string& source() const { return source_; }
  const SafetensorsHeader& header() const { return header_; }
  // Tensor names in header order.
  std::vector<std::string> Names() const;
  size_t size() const { return header_.tensors.size(); }
  bool Contains(std::string_view name) const { return Find(name) != nullptr; }
  // nullptr if absent.
  const SafetensorsTensorInfo* Find(std::string_view name) const;
  // NotFound (naming the tensor and the file) if absent.
  StatusOr<Tensor> Get(std::string_view name) const;
  // The view for a tensor known to be in this file.
  Tensor View(const SafetensorsTensorInfo& info) const;
  // A "__metadata__" value; empty if the key is absent.
  std::string_view Metadata(std::string_view key) const;
  // The whole file.
  std::span<const uint8_t> bytes() const { return bytes_; }

 private:
  SafetensorsFile() = default;
  static StatusOr<SafetensorsFile> Build(std::span<const uint8_t> bytes,
                                         std::shared_ptr<void> keepalive, std::string source);

  std::string source_;
  std::span<const uint8_t> bytes_;
  std::shared_ptr<void> keepalive_;  // the mapping or the owned buffer
  SafetensorsHeader header_;
  std::map<std::string, size_t, std::less<>> index_;  // name -> header_.tensors index
};

// One tensor to write. The tensor may be strided; it is written contiguous.
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

using SafetensorsMetadata = std::map<std::string, std::string>;

// The complete file as bytes. InvalidArgument for a duplicate name,
// the reserved name "__metadata__", invalid UTF-8 in a name or metadata, or an
// undefined tensor.
StatusOr<std::string> SerializeSafetensors(const std::vector<NamedTensor>& tensors,
                                           const SafetensorsMetadata& metadata = {});

// Writes the file atomically: a temporary file in the same directory, fsync,
// then rename over `path` (readers see the old file or the new one, never a
// partial one). Tensor bytes are streamed, not gathered in one buffer.
Status WriteSafetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                        const SafetensorsMetadata& metadata = {});

}  // namespace omni
