// The safetensors container format: parsing and validating the header.
//
// Layout (https://github.com/huggingface/safetensors, "Format"):
//   8 bytes   N, the header length, unsigned little-endian
//   N bytes   a UTF-8 JSON object: tensor name -> {"dtype", "shape",
//             "data_offsets": [begin, end)} plus an optional "__metadata__"
//             object of string -> string; may end in spaces (padding)
//   rest      the data section; offsets are relative to its start
//
// The parser accepts exactly that schema and nothing looser: unknown fields in
// a tensor entry, duplicate keys, non-integer numbers, invalid UTF-8, gaps or
// overlaps in the data section and trailing bytes are all errors, each with a
// message that names the tensor and the offending value. It never recurses
// (the schema is at most three levels deep), so hostile input cannot exhaust
// the stack, and it never reads past the span it was given.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/json_string.h"
#include "core/status.h"
#include "core/utf8.h"
#include "tensor/dtype.h"
#include "tensor/tensor.h"

namespace omni {

// Headers longer than this are refused before anything is parsed; it is the
// limit the reference implementation uses (MAX_HEADER_SIZE).
inline constexpr uint64_t kSafetensorsMaxHeaderSize = 100'000'000;

struct SafetensorsTensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  uint64_t begin = 0;  // byte offsets into the data section, [begin, end)
  uint64_t end = 0;

  uint64_t nbytes() const { return end - begin; }
};

struct SafetensorsHeader {
  uint64_t header_size = 0;  // N: JSON text including padding
  uint64_t data_size = 0;    // bytes after the header
  // In the order the header lists them.
  std::vector<SafetensorsTensorInfo> tensors;
  // "__metadata__", sorted by key; empty when absent or null.
  std::vector<std::pair<std::string, std::string>> metadata;

  uint64_t data_offset() const { return 8 + header_size; }
};

// Parses and validates the header of the safetensors file whose bytes are
// `file` (all of it: the data section's size is part of the validation).
// `source` names the file in error messages. Errors are InvalidArgument,
// except Unimplemented for a well-formed dtype omniserve has no type for
// (F64, I8, BOOL, F8_*, ...).
StatusOr<SafetensorsHeader> ParseSafetensorsHeader(std::span<const uint8_t> file,
                                                   std::string_view source = "<buffer>");


}  // namespace omni
