#include "net/msgpack.h"

#include <bit>
#include <cstring>
#include <limits>

#include "fmt/format.h"

namespace omni {

void MsgpackWriter::BigEndian(uint64_t v, int nbytes) {
  for (int i = nbytes - 1; i >= 0; --i) Byte(static_cast<uint8_t>(v >> (8 * i)));
}

MsgpackWriter& MsgpackWriter::Nil() {
  Byte(0xc0);
  return *this;
}

MsgpackWriter& MsgpackWriter::Bool(bool v) {
  Byte(v ? 0xc3 : 0xc2);
  return *this;
}

MsgpackWriter& MsgpackWriter::Uint(uint64_t v) {
  if (v <= 0x7f) {
    Byte(static_cast<uint8_t>(v));  // positive fixint
  } else if (v <= 0xff) {
    Byte(0xcc);
    BigEndian(v, 1);
  } else if (v <= 0xffff) {
    Byte(0xcd);
    BigEndian(v, 2);
  } else if (v <= 0xffffffffu) {
    Byte(0xce);
    BigEndian(v, 4);
  } else {
    Byte(0xcf);
    BigEndian(v, 8);
  }
  return *this;
}

MsgpackWriter& MsgpackWriter::Int(int64_t v) {
  if (v >= 0) return Uint(static_cast<uint64_t>(v));
  const uint64_t bits = static_cast<uint64_t>(v);
  if (v >= -32) {
    Byte(static_cast<uint8_t>(bits));  // negative fixint 111xxxxx
  } else if (v >= std::numeric_limits<int8_t>::min()) {
    Byte(0xd0);
    BigEndian(bits, 1);
  } else if (v >= std::numeric_limits<int16_t>::min()) {
    Byte(0xd1);
    BigEndian(bits, 2);
  } else if (v >= std::numeric_limits<int32_t>::min()) {
    Byte(0xd2);
    BigEndian(bits, 4);
  } else {
    Byte(0xd3);
    BigEndian(bits, 8);
  }
  return *this;
}

MsgpackWriter& MsgpackWriter::Double(double v) {
  Byte(0xcb);
  BigEndian(std::bit_cast<uint64_t>(v), 8);
  return *this;
}

MsgpackWriter& MsgpackWriter::Float(float v) {
  Byte(0xca);
  BigEndian(std::bit_cast<uint32_t>(v), 4);
  return *this;
}

MsgpackWriter& MsgpackWriter::Str(std::string_view v) {
  const uint64_t n = v.size();
  OMNI_CHECK_LE(n, 0xffffffffu) << "msgpack str longer than 2^32-1 bytes";
  if (n <= 31) {
    Byte(static_cast<uint8_t>(0xa0 | n));
  } else if (n <= 0xff) {
    Byte(0xd9);
    BigEndian(n, 1);
  } else if (n <= 0xffff) {
    Byte(0xda);
    BigEndian(n, 2);
  } else {
    Byte(0xdb);
    BigEndian(n, 4);
  }
  buf_.append(v);
  return *this;
}

MsgpackWriter& MsgpackWriter::Bin(std::span<const uint8_t> v) {
  const uint64_t n = v.size();
  OMNI_CHECK_LE(n, 0xffffffffu) << "msgpack bin longer than 2^32-1 bytes";
  if (n <= 0xff) {
    Byte(0xc4);
    BigEndian(n, 1);
  } else if (n <= 0xffff) {
    Byte(0xc5);
    BigEndian(n, 2);
  } else {
    Byte(0xc6);
    BigEndian(n, 4);
  }
  buf_.append(reinterpret_cast<const char*>(v.data()), v.size());
  return *this;
}

MsgpackWriter& MsgpackWriter::ArrayHeader(uint32_t n) {
  if (n <= 15) {
    Byte(static_cast<uint8_t>(0x90 | n));
  } else if (n <= 0xffff) {
    Byte(0xdc);
    BigEndian(n, 2);
  } else {
    Byte(0xdd);
    BigEndian(n, 4);
  }
  return *this;
}

MsgpackWriter& MsgpackWriter::MapHeader(uint32_t n) {
  if (n <= 15) {
    Byte(static_cast<uint8_t>(0x80 | n));
  } else if (n <= 0xffff) {
    Byte(0xde);
    BigEndian(n, 2);
  } else {
    Byte(0xdf);
    BigEndian(n, 4);
  }
  return *this;
}

bool MsgpackValue::operator==(const MsgpackValue& other) const {
  if (v.index() != other.v.index()) return false;
  if (const MsgpackArray* a = array()) {
    const MsgpackArray& b = *other.array();
    if (a->size() != b.size()) return false;
    for (size_t i = 0; i < a->size(); ++i) {
      if (!((*a)[i] == b[i])) return false;
    }
    return true;
  }
  if (const MsgpackMap* a = map()) {
    const MsgpackMap& b = *other.map();
    if (a->size() != b.size()) return false;
    for (size_t i = 0; i < a->size(); ++i) {
      if (!((*a)[i].key == b[i].key) || !((*a)[i].value == b[i].value)) return false;
    }
    return true;
  }
  if (is_nil()) return true;
  if (const auto* x = std::get_if<bool>(&v)) return *x == std::get<bool>(other.v);
  if (const auto* x = std::get_if<uint64_t>(&v)) return *x == std::get<uint64_t>(other.v);
  if (const auto* x = std::get_if<int64_t>(&v)) return *x == std::get<int64_t>(other.v);
  if (const auto* x = std::get_if<double>(&v)) return *x == std::get<double>(other.v);
  if (const auto* x = str()) return *x == *other.str();
  return bin()->bytes == other.bin()->bytes;
}

std::optional<int64_t> MsgpackValue::AsInt64() const {
  if (const auto* u = std::get_if<uint64_t>(&v)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(*u);
  }
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  return std::nullopt;
}

std::optional<uint64_t> MsgpackValue::AsUint64() const {
  if (const auto* u = std::get_if<uint64_t>(&v)) return *u;
  return std::nullopt;  // a stored int64_t is always negative
}

std::optional<double> MsgpackValue::AsDouble() const {
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* u = std::get_if<uint64_t>(&v)) return static_cast<double>(*u);
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return std::nullopt;
}

const MsgpackValue* MsgpackValue::Find(std::string_view key) const {
  const MsgpackMap* m = map();
  if (m == nullptr) return nullptr;
  for (const auto& [k, val] : *m) {
    if (const std::string* s = k.str(); s != nullptr && *s == key) return &val;
  }
  return nullptr;
}

std::string_view MsgpackValue::TypeName() const {
  static constexpr std::string_view kNames[] = {"nil", "bool", "int", "int", "float",
                                                "str", "bin",  "array", "map"};
  static_assert(std::size(kNames) == std::variant_size_v<Storage>);
  return kNames[v.index()];
}

namespace {

// Recursive-descent reader over one buffer. Recursion depth is bounded by
// limits.max_depth (32 by default), so the native stack is safe.
class MsgpackReader {
 public:
  MsgpackReader(std::span<const uint8_t> data, const MsgpackLimits& limits)
      : data_(data), limits_(limits) {}

  StatusOr<MsgpackValue> ReadDocument() {
    if (data_.size() > limits_.max_input_bytes) {
      return PayloadTooLarge(fmt::format("msgpack: input of {} bytes exceeds the limit of {}",
                                         data_.size(), limits_.max_input_bytes));
    }
    MsgpackValue root;
    OMNI_RETURN_IF_ERROR(ReadValue(0, root));
    if (pos_ != data_.size()) {
      return InvalidArgument(fmt::format("msgpack: {} trailing bytes after the value at offset {}",
                                         data_.size() - pos_, pos_));
    }
    return root;
  }

 private:
  size_t remaining() const { return data_.size() - pos_; }

  Status Truncated(size_t at, std::string_view what, uint64_t need) const {
    return InvalidArgument(fmt::format("msgpack: truncated {} at offset {}: needs {} bytes, {} remain",
                                       what, at, need, data_.size() - pos_));
  }

  // Reads an n-byte big-endian unsigned integer; the caller checked remaining().
  uint64_t TakeBigEndian(int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 8) | data_[pos_++];
    return v;
  }

  Status ReadFixed(size_t at, std::string_view what, int n, uint64_t& out) {
    if (remaining() < static_cast<size_t>(n)) return Truncated(at, what, n);
    out = TakeBigEndian(n);
    return Status::Ok();
  }

  Status CountValues(size_t at, uint64_t n) {
    if (n > limits_.max_total_values - total_values_) {
      return PayloadTooLarge(fmt::format("msgpack: more than {} values in the document (at offset {})",
                                         limits_.max_total_values, at));
    }
    total_values_ += n;
    return Status::Ok();
  }

  Status ReadBytes(size_t at, std::string_view what, uint64_t n, std::string& out) {
    if (n > remaining()) return Truncated(at, what, n);
    out.assign(reinterpret_cast<const char*>(data_.data() + pos_), n);
    pos_ += n;
    return Status::Ok();
  }

  Status ReadArray(size_t at, uint64_t n, int depth, MsgpackValue& out) {
    OMNI_RETURN_IF_ERROR(CheckContainer(at, "array", n, n, depth));
    MsgpackArray arr;
    arr.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      OMNI_RETURN_IF_ERROR(ReadValue(depth + 1, arr.emplace_back()));
    }
    out.v = std::move(arr);
    return Status::Ok();
  }

  Status ReadMap(size_t at, uint64_t n, int depth, MsgpackValue& out) {
    OMNI_RETURN_IF_ERROR(CheckContainer(at, "map", n, 2 * n, depth));
    MsgpackMap map;
    map.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      auto& [key, value] = map.emplace_back();
      OMNI_RETURN_IF_ERROR(ReadValue(depth + 1, key));
      OMNI_RETURN_IF_ERROR(ReadValue(depth + 1, value));
    }
    out.v = std::move(map);
    return Status::Ok();
  }

  // Every value takes at least one byte, so a container of `min_bytes`
  // children that cannot fit in what remains is rejected before reserving.
  Status CheckContainer(size_t at, std::string_view what, uint64_t n, uint64_t min_bytes, int depth) {
    if (depth + 1 > limits_.max_depth) {
      return InvalidArgument(fmt::format("msgpack: {} at offset {} nests deeper than {} levels", what, at,
                                         limits_.max_depth));
    }
    if (n > limits_.max_container_len) {
      return PayloadTooLarge(fmt::format("msgpack: {} at offset {} has {} entries, over the limit of {}",
                                         what, at, n, limits_.max_container_len));
    }
    if (min_bytes > remaining()) {
      return InvalidArgument(fmt::format("msgpack: {} at offset {} declares {} entries but only {} bytes remain",
                                         what, at, n, remaining()));
    }
    return CountValues(at, min_bytes);  // a map holds 2n values
  }

  Status ReadValue(int depth, MsgpackValue& out) {
    const size_t at = pos_;
    if (remaining() == 0) return Truncated(at, "value", 1);
    if (depth == 0) OMNI_RETURN_IF_ERROR(CountValues(at, 1));
    const uint8_t b = data_[pos_++];
    uint64_t n = 0;
    if (b <= 0x7f) {
      out.v = uint64_t{b};
      return Status::Ok();
    }
    if (b >= 0xe0) {
      out.v = static_cast<int64_t>(static_cast<int8_t>(b));
      return Status::Ok();
    }
    if ((b & 0xf0) == 0x80) return ReadMap(at, b & 0x0f, depth, out);
    if ((b & 0xf0) == 0x90) return ReadArray(at, b & 0x0f, depth, out);
    if ((b & 0xe0) == 0xa0) {
      std::string s;
      OMNI_RETURN_IF_ERROR(ReadBytes(at, "fixstr", b & 0x1f, s));
      out.v = std::move(s);
      return Status::Ok();
    }
    switch (b) {
      case 0xc0: out.v = MsgpackNil{}; return Status::Ok();
      case 0xc2: out.v = false; return Status::Ok();
      case 0xc3: out.v = true; return Status::Ok();
      case 0xc4: case 0xc5: case 0xc6: {
        const int width = 1 << (b - 0xc4);
        OMNI_RETURN_IF_ERROR(ReadFixed(at, "bin length", width, n));
        MsgpackBin bin;
        OMNI_RETURN_IF_ERROR(ReadBytes(at, "bin", n, bin.bytes));
        out.v = std::move(bin);
        return Status::Ok();
      }
      case 0xca: {
        OMNI_RETURN_IF_ERROR(ReadFixed(at, "float 32", 4, n));
        out.v = static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(n)));
        return Status::Ok();
      }
      case 0xcb: {
        OMNI_RETURN_IF_ERROR(ReadFixed(at, "float 64", 8, n));
        out.v = std::bit_cast<double>(n);
        return Status::Ok();
      }
      case 0xcc: case 0xcd: case 0xce: case 0xcf: {
        OMNI_RETURN_IF_ERROR(ReadFixed(at, "uint", 1 << (b - 0xcc), n));
        out.v = n;
        return Status::Ok();
      }
      case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
        const int width = 1 << (b - 0xd0);
        OMNI_RETURN_IF_ERROR(ReadFixed(at, "int", width, n));
        // Sign-extend from `width` bytes.
        const int shift = 64 - 8 * width;
        const int64_t value = static_cast<int64_t>(n << shift) >> shift;
        if (value >= 0) {
          out.v = static_cast<uint64_t>(value);
        } else {
          out.v = value;
        }
        return Status::Ok();
      }
      case 0xd9: case 0xda: case 0xdb: {
        OMNI_RETURN_IF_ERROR(ReadFixed(at, "str length", 1 << (b - 0xd9), n));
        std::string s;
        OMNI_RETURN_IF_ERROR(ReadBytes(at, "str", n, s));
        out.v = std::move(s);
        return Status::Ok();
      }
      case 0xdc: case 0xdd:
        OMNI_RETURN_IF_ERROR(ReadFixed(at, "array length", b == 0xdc ? 2 : 4, n));
        return ReadArray(at, n, depth, out);
      case 0xde: case 0xdf:
        OMNI_RETURN_IF_ERROR(ReadFixed(at, "map length", b == 0xde ? 2 : 4, n));
        return ReadMap(at, n, depth, out);
      case 0xc1:
        return InvalidArgument(fmt::format("msgpack: reserved byte 0xc1 at offset {}", at));
      default:  // 0xc7-0xc9 ext 8/16/32, 0xd4-0xd8 fixext
        return InvalidArgument(
            fmt::format("msgpack: extension type (byte 0x{:02x}) at offset {} is not supported", b, at));
    }
  }

  std::span<const uint8_t> data_;
  const MsgpackLimits& limits_;
  size_t pos_ = 0;
  uint64_t total_values_ = 0;
};

}  // namespace

StatusOr<MsgpackValue> DecodeMsgpack(std::span<const uint8_t> data, const MsgpackLimits& limits) {
  return MsgpackReader(data, limits).ReadDocument();
}

StatusOr<MsgpackValue> DecodeMsgpack(std::string_view data, const MsgpackLimits& limits) {
  return DecodeMsgpack(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data.data()), data.size()),
                       limits);
}

void EncodeMsgpack(const MsgpackValue& value, MsgpackWriter& out) {
  struct Visitor {
    MsgpackWriter& w;
    void operator()(const MsgpackNil&) { w.Nil(); }
    void operator()(bool b) { w.Bool(b); }
    void operator()(uint64_t u) { w.Uint(u); }
    void operator()(int64_t i) { w.Int(i); }
    void operator()(double d) { w.Double(d); }
    void operator()(const std::string& s) { w.Str(s); }
    void operator()(const MsgpackBin& b) {
      w.Bin(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(b.bytes.data()), b.bytes.size()));
    }
    void operator()(const MsgpackArray& a) {
      OMNI_CHECK_LE(a.size(), 0xffffffffu);
      w.ArrayHeader(static_cast<uint32_t>(a.size()));
      for (const MsgpackValue& e : a) EncodeMsgpack(e, w);
    }
    void operator()(const MsgpackMap& m) {
      OMNI_CHECK_LE(m.size(), 0xffffffffu);
      w.MapHeader(static_cast<uint32_t>(m.size()));
      for (const auto& [k, v] : m) {
        EncodeMsgpack(k, w);
        EncodeMsgpack(v, w);
      }
    }
  };
  std::visit(Visitor{out}, value.v);
}

}  // namespace omni
