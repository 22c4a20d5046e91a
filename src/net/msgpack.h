// A small MessagePack codec (https://github.com/msgpack/msgpack/blob/master/spec.md),
// enough for vLLM's KV-cache events (docs/KV_EVENTS.md) and nothing more exotic:
// nil, bool, integers of every width, float32/64, str, bin, array and map.
// Extension types (ext 8/16/32, fixext, timestamp) are rejected by the decoder
// and have no writer call.
//
//   MsgpackWriter w;
//   w.ArrayHeader(2);
//   w.Str("BlockRemoved");
//   w.Uint(42);
//   std::string bytes = std::move(w).Take();
//
//   StatusOr<MsgpackValue> v = DecodeMsgpack(bytes);  // bounded, validating
//
// The decoder reads untrusted bytes from the network: every length is checked
// against the bytes that remain before anything is allocated, nesting depth
// and element counts are bounded (MsgpackLimits), and every failure is an
// InvalidArgument (or PayloadTooLarge for a limit) naming the byte offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/status.h"

namespace omni {

// Appends MessagePack to an internal buffer. Integers take the smallest
// encoding the way msgpack-c and msgspec pick it (a non-negative signed value
// uses the unsigned formats); strings use fixstr/str8/16/32, binaries
// bin8/16/32. The caller writes exactly `n` items after ArrayHeader(n) and
// 2n after MapHeader(n); the writer does not track structure. Not thread-safe.
class MsgpackWriter {
 public:
  MsgpackWriter& Nil();
  MsgpackWriter& Bool(bool v);
  MsgpackWriter& Int(int64_t v);
  MsgpackWriter& Uint(uint64_t v);
  MsgpackWriter& Double(double v);  // float 64 (0xcb)
  MsgpackWriter& Float(float v);    // float 32 (0xca)
  MsgpackWriter& Str(std::string_view v);
  MsgpackWriter& Bin(std::span<const uint8_t> v);
  MsgpackWriter& ArrayHeader(uint32_t n);
  MsgpackWriter& MapHeader(uint32_t n);

  const std::string& bytes() const { return buf_; }
  std::string Take() && { return std::move(buf_); }
  void Clear() { buf_.clear(); }

 private:
  void Byte(uint8_t b) { buf_.push_back(static_cast<char>(b)); }
  void BigEndian(uint64_t v, int nbytes);

  std::string buf_;
};

struct MsgpackValue;

struct MsgpackNil {
  bool operator==(const MsgpackNil&) const = default;
};
// A msgpack bin (raw bytes); kept apart from str, which is UTF-8 text by spec.
struct MsgpackBin {
  std::string bytes;
  bool operator==(const MsgpackBin&) const = default;
};
struct MsgpackMapEntry;
using MsgpackArray = std::vector<MsgpackValue>;
// Entries in wire order; duplicate keys are kept (Find returns the first).
using MsgpackMap = std::vector<MsgpackMapEntry>;

// A decoded msgpack value. Integers are normalized: a non-negative value is a
// uint64_t whatever its wire width or signedness, a negative one an int64_t,
// so equal numbers compare equal. float 32 is widened to double. str is kept
// as bytes; the decoder does not validate UTF-8 (callers compare it to ASCII
// names).
struct MsgpackValue {
  using Storage = std::variant<MsgpackNil, bool, uint64_t, int64_t, double, std::string, MsgpackBin,
                               MsgpackArray, MsgpackMap>;
  Storage v;

  bool is_nil() const { return std::holds_alternative<MsgpackNil>(v); }
  bool is_int() const { return std::holds_alternative<uint64_t>(v) || std::holds_alternative<int64_t>(v); }
  const std::string* str() const { return std::get_if<std::string>(&v); }
  const MsgpackBin* bin() const { return std::get_if<MsgpackBin>(&v); }
  const MsgpackArray* array() const { return std::get_if<MsgpackArray>(&v); }
  const MsgpackMap* map() const { return std::get_if<MsgpackMap>(&v); }
  // The integer if it is one and fits, else nullopt.
  std::optional<int64_t> AsInt64() const;
  std::optional<uint64_t> AsUint64() const;
  // Any integer or float as a double (large integers round).
  std::optional<double> AsDouble() const;
  // In a map, the value of the first entry whose key is the str `key`.
  const MsgpackValue* Find(std::string_view key) const;
  // "nil", "bool", "int", "float", "str", "bin", "array" or "map".
  std::string_view TypeName() const;

  // Written out rather than defaulted: clang 14 crashes instantiating the
  // defaulted comparison of this recursive variant. Floats compare as
  // doubles (NaN != NaN).
  bool operator==(const MsgpackValue& other) const;
};

struct MsgpackMapEntry {
  MsgpackValue key;
  MsgpackValue value;
  bool operator==(const MsgpackMapEntry& o) const { return key == o.key && value == o.value; }
};

struct MsgpackLimits {
  int max_depth = 32;                           // nested arrays/maps
  uint64_t max_container_len = 1u << 20;        // entries of one array or map
  uint64_t max_total_values = 4u << 20;         // values in the whole document
  uint64_t max_input_bytes = 64ull << 20;       // the whole encoded document
};

// Decodes exactly one value spanning all of `data` (trailing bytes are an
// error). Errors: InvalidArgument for malformed input (truncated, reserved
// byte 0xc1, ext types, bad lengths, trailing bytes), PayloadTooLarge for a
// limit. Messages name the byte offset of the problem.
StatusOr<MsgpackValue> DecodeMsgpack(std::span<const uint8_t> data, const MsgpackLimits& limits = {});
StatusOr<MsgpackValue> DecodeMsgpack(std::string_view data, const MsgpackLimits& limits = {});

// Encodes a value tree canonically (smallest formats, float as float 64).
void EncodeMsgpack(const MsgpackValue& value, MsgpackWriter& out);

}  // namespace omni
