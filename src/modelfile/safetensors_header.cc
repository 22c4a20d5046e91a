#include "modelfile/safetensors_header.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <unordered_set>

#include "core/json_string.h"

namespace omni {

namespace {

// Dtypes the format defines that omniserve has no DType for. Named so the
// error can say "unsupported" rather than "unknown".
constexpr std::array<std::string_view, 14> kUnsupportedDTypes = {
    "BOOL", "I8", "I16", "U16", "U32", "U64", "F64", "F8_E5M2", "F8_E4M3", "F8_E8M0",
    "F4", "F6_E2M3", "F6_E3M2", "C64"};

// Error messages quote names and values from the file; keep them readable
// when the file holds a megabyte-long name.
std::string Quote(std::string_view s) {
  constexpr size_t kMax = 120;
  std::string out = "'";
  if (s.size() <= kMax) {
    out += s;
  } else {
    size_t n = kMax;
    while (n > 0 && (static_cast<uint8_t>(s[n]) & 0xC0) == 0x80) --n;  // whole code points
    out += s.substr(0, n);
    out += "...";
  }
  out += "'";
  return out;
}

std::string Range(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

// Length of the UTF-8 sequence starting at s[i], or 0 if it is malformed.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  uint8_t c = byte(i);
  if (c < 0x80) return 1;
  size_t len;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 0;  // continuation byte, 0xC0/0xC1 (overlong) or 0xF5+
  }
  if (s.size() - i < len) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
  if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
  return len;
}

// A recursive-descent parser for exactly the safetensors header schema. The
// schema has three fixed levels (header object, tensor entry, shape/offset
// array), so each level is its own function and nothing recurses.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string_view source, uint64_t data_size)
      : text_(text), source_(source), data_size_(data_size) {}

  Status Parse(SafetensorsHeader* out);

 private:
  Status SyntaxError(std::string_view message) const {
    return InvalidArgument(std::string(source_) + ": invalid safetensors header: " +
                           std::string(message) + " at byte " + std::to_string(pos_) +
                           " of the header");
  }
  Status TensorError(std::string_view name, std::string_view message) const {
    return InvalidArgument(std::string(source_) + ": tensor " + Quote(name) + ": " +
                           std::string(message));
  }

  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }
  void SkipWhitespace() {
    while (!AtEnd() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                        text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  Status Expect(char c, std::string_view context) {
    SkipWhitespace();
    if (Peek() != c || AtEnd()) {
      return SyntaxError("expected '" + std::string(1, c) + "' " + std::string(context) +
                         (AtEnd() ? ", found the end of the header" : ""));
    }
    ++pos_;
    return Status::Ok();
  }
  // After an element: true if another follows (','), false at `close`.
  StatusOr<bool> NextElement(char close, std::string_view context) {
    SkipWhitespace();
    if (Peek() == ',' && !AtEnd()) {
      ++pos_;
      return true;
    }
    if (Peek() == close && !AtEnd()) {
      ++pos_;
      return false;
    }
    return SyntaxError("expected ',' or '" + std::string(1, close) + "' " + std::string(context));
  }

  Status ParseString(std::string* out);
  Status ParseEscape(std::string* out);
  // A JSON number token that must be a non-negative integer <= `max`.
  Status ParseUnsigned(std::string_view name, std::string_view what, uint64_t max, uint64_t* out);
  Status ParseUnsignedArray(std::string_view name, std::string_view field, uint64_t max,
                            std::vector<uint64_t>* out);
  Status ParseTensor(std::string name, SafetensorsTensorInfo* out);
  Status CheckTensor(const SafetensorsTensorInfo& t) const;
  Status ParseMetadata(SafetensorsHeader* out);
  Status CheckCoverage(const std::vector<SafetensorsTensorInfo>& tensors) const;

  std::string_view text_;
  std::string_view source_;
  uint64_t data_size_;
  size_t pos_ = 0;
};

Status HeaderParser::ParseString(std::string* out) {
  SkipWhitespace();
  if (Peek() != '"' || AtEnd()) return SyntaxError("expected a string");
  ++pos_;
  out->clear();
  while (true) {
    if (AtEnd()) return SyntaxError("unterminated string");
    uint8_t c = static_cast<uint8_t>(text_[pos_]);
    if (c == '"') {
      ++pos_;
      return Status::Ok();
    }
    if (c == '\\') {
      OMNI_RETURN_IF_ERROR(ParseEscape(out));
      continue;
    }
    if (c < 0x20) return SyntaxError("unescaped control character in a string");
    size_t len = Utf8SequenceLength(text_, pos_);
    if (len == 0) return SyntaxError("invalid UTF-8 in a string");
    out->append(text_.substr(pos_, len));
    pos_ += len;
  }
}

Status HeaderParser::ParseEscape(std::string* out) {
  const size_t backslash = pos_;
  auto error = DecodeJsonEscape(text_, &pos_, out);
  if (!error) return Status::Ok();
  switch (error->kind) {
    case JsonEscapeError::Kind::kUnterminated: return SyntaxError("unterminated escape");
    case JsonEscapeError::Kind::kInvalidEscape:
      return SyntaxError("invalid escape '\\" + std::string(1, text_[backslash + 1]) + "'");
    case JsonEscapeError::Kind::kInvalidUnicode: return SyntaxError("invalid \\u escape");
    case JsonEscapeError::Kind::kLoneHighSurrogate: return SyntaxError("unpaired high surrogate in \\u escape");
    case JsonEscapeError::Kind::kLoneLowSurrogate: return SyntaxError("unpaired low surrogate in \\u escape");
  }
  return Status::Ok();
}

Status HeaderParser::ParseUnsigned(std::string_view name, std::string_view what, uint64_t max,
                                   uint64_t* out) {
  SkipWhitespace();
  size_t start = pos_;
  // Scan the longest run that could belong to a number token, so the message
  // can show what was there.
  while (!AtEnd() && std::strchr("+-0123456789.eE", text_[pos_]) != nullptr) ++pos_;
  std::string_view token = text_.substr(start, pos_ - start);
  if (token.empty()) {
    pos_ = start;
    return TensorError(name, std::string(what) + " must be a non-negative integer");
  }
  if (token[0] == '-') {
    return TensorError(name, std::string(what) + " must be a non-negative integer, got " +
                                 Quote(token));
  }
  if (token.find_first_not_of("0123456789") != std::string_view::npos) {
    return TensorError(name, std::string(what) + " must be an integer, got " + Quote(token));
  }
  if (token.size() > 1 && token[0] == '0') {
    pos_ = start;
    return SyntaxError("number with a leading zero");
  }
  uint64_t v = 0;
  for (char c : token) {
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (max - digit) / 10) {
      return TensorError(name, std::string(what) + " " + Quote(token) + " is too large (limit " +
                                   std::to_string(max) + ")");
    }
    v = v * 10 + digit;
  }
  *out = v;
  return Status::Ok();
}

Status HeaderParser::ParseUnsignedArray(std::string_view name, std::string_view field, uint64_t max,
                                        std::vector<uint64_t>* out) {
  OMNI_RETURN_IF_ERROR(Expect('[', "to open " + std::string(field)));
  out->clear();
  SkipWhitespace();
  if (Peek() == ']' && !AtEnd()) {
    ++pos_;
    return Status::Ok();
  }
  while (true) {
    uint64_t v = 0;
    std::string what = std::string(field) + "[" + std::to_string(out->size()) + "]";
    OMNI_RETURN_IF_ERROR(ParseUnsigned(name, what, max, &v));
    out->push_back(v);
    OMNI_ASSIGN_OR_RETURN(bool more, NextElement(']', "in " + std::string(field)));
    if (!more) return Status::Ok();
  }
}

Status HeaderParser::ParseTensor(std::string name, SafetensorsTensorInfo* out) {
  out->name = std::move(name);
  const std::string& n = out->name;
  SkipWhitespace();
  if (Peek() != '{' || AtEnd()) {
    return TensorError(n, "entry must be an object {\"dtype\", \"shape\", \"data_offsets\"}");
  }
  ++pos_;
  bool has_dtype = false, has_shape = false, has_offsets = false;
  std::string dtype_name;
  std::vector<uint64_t> dims, offsets;
  SkipWhitespace();
  bool more = !(Peek() == '}' && !AtEnd());
  if (!more) ++pos_;
  while (more) {
    std::string field;
    OMNI_RETURN_IF_ERROR(ParseString(&field));
    OMNI_RETURN_IF_ERROR(Expect(':', "after a field name"));
    bool* seen;
    if (field == "dtype") {
      seen = &has_dtype;
      SkipWhitespace();
      if (Peek() != '"' || AtEnd()) return TensorError(n, "dtype must be a string");
      OMNI_RETURN_IF_ERROR(ParseString(&dtype_name));
    } else if (field == "shape") {
      seen = &has_shape;
      OMNI_RETURN_IF_ERROR(ParseUnsignedArray(n, "shape", INT64_MAX, &dims));
    } else if (field == "data_offsets") {
      seen = &has_offsets;
      OMNI_RETURN_IF_ERROR(ParseUnsignedArray(n, "data_offsets", UINT64_MAX, &offsets));
    } else {
      return TensorError(n, "unknown field " + Quote(field) +
                                " (a tensor entry has dtype, shape and data_offsets)");
    }
    if (*seen) return TensorError(n, "duplicate field " + Quote(field));
    *seen = true;
    OMNI_ASSIGN_OR_RETURN(more, NextElement('}', "in a tensor entry"));
  }
  if (!has_dtype) return TensorError(n, "missing field 'dtype'");
  if (!has_shape) return TensorError(n, "missing field 'shape'");
  if (!has_offsets) return TensorError(n, "missing field 'data_offsets'");

  if (!ParseDTypeName(dtype_name, &out->dtype)) {
    if (std::find(kUnsupportedDTypes.begin(), kUnsupportedDTypes.end(), dtype_name) !=
        kUnsupportedDTypes.end()) {
      return Status(StatusCode::kUnimplemented,
                    std::string(source_) + ": tensor " + Quote(n) + ": unsupported dtype " +
                        dtype_name + " (omniserve reads F32, BF16, F16, I32, I64 and U8)");
    }
    return TensorError(n, "unknown dtype " + Quote(dtype_name));
  }
  if (offsets.size() != 2) {
    return TensorError(n, "data_offsets must hold 2 integers [begin, end], got " +
                              std::to_string(offsets.size()));
  }
  out->shape.assign(dims.begin(), dims.end());
  out->begin = offsets[0];
  out->end = offsets[1];
  return CheckTensor(*out);
}

Status HeaderParser::CheckTensor(const SafetensorsTensorInfo& t) const {
  // Element count and byte size, without overflow: every dim is <= 2^63-1
  // already. The product of the nonzero dims must fit int64 even when a zero
  // dim makes the tensor empty: strides are products of trailing dims, and
  // an empty [0, 1e6, 1e13] would overflow them.
  uint64_t numel = 1;
  for (int64_t d : t.shape) {
    if (d == 0) continue;
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel) ||
        numel > static_cast<uint64_t>(INT64_MAX)) {
      return TensorError(t.name, "shape " + ShapeToString(t.shape) + " has too many elements");
    }
  }
  if (std::find(t.shape.begin(), t.shape.end(), 0) != t.shape.end()) numel = 0;
  uint64_t nbytes;
  if (__builtin_mul_overflow(numel, static_cast<uint64_t>(DTypeSize(t.dtype)), &nbytes)) {
    return TensorError(t.name, "shape " + ShapeToString(t.shape) + " is too large in bytes");
  }
  if (t.begin > t.end) {
    return TensorError(t.name, "data_offsets " + Range(t.begin, t.end) + " end before they begin");
  }
  if (t.end > data_size_) {
    return TensorError(t.name, "data_offsets " + Range(t.begin, t.end) +
                                   " run past the end of the data section (" +
                                   std::to_string(data_size_) + " bytes)");
  }
  if (t.end - t.begin != nbytes) {
    return TensorError(t.name, "data_offsets " + Range(t.begin, t.end) + " hold " +
                                   std::to_string(t.end - t.begin) + " bytes, but " +
                                   std::string(DTypeName(t.dtype)) + " " +
                                   ShapeToString(t.shape) + " needs " + std::to_string(nbytes));
  }
  return Status::Ok();
}

Status HeaderParser::ParseMetadata(SafetensorsHeader* out) {
  SkipWhitespace();
  if (text_.substr(pos_, 4) == "null") {  // serde reads null as "no metadata"
    pos_ += 4;
    return Status::Ok();
  }
  if (Peek() != '{' || AtEnd()) {
    return InvalidArgument(std::string(source_) +
                           ": __metadata__ must be an object of string values");
  }
  ++pos_;
  SkipWhitespace();
  bool more = !(Peek() == '}' && !AtEnd());
  if (!more) ++pos_;
  while (more) {
    std::string key, value;
    OMNI_RETURN_IF_ERROR(ParseString(&key));
    OMNI_RETURN_IF_ERROR(Expect(':', "after a metadata key"));
    SkipWhitespace();
    if (Peek() != '"' || AtEnd()) {
      return InvalidArgument(std::string(source_) + ": __metadata__[" + Quote(key) +
                             "] must be a string");
    }
    OMNI_RETURN_IF_ERROR(ParseString(&value));
    out->metadata.emplace_back(std::move(key), std::move(value));
    OMNI_ASSIGN_OR_RETURN(more, NextElement('}', "in __metadata__"));
  }
  std::sort(out->metadata.begin(), out->metadata.end());
  for (size_t i = 1; i < out->metadata.size(); ++i) {
    if (out->metadata[i].first == out->metadata[i - 1].first) {
      return InvalidArgument(std::string(source_) + ": __metadata__ has the key " +
                             Quote(out->metadata[i].first) + " twice");
    }
  }
  return Status::Ok();
}

// The format requires the tensors to tile the data section exactly: sorted by
// offset, each begins where the previous ended, and the last ends at the end
// of the file. (The reference reader rejects gaps and trailing bytes too.)
Status HeaderParser::CheckCoverage(const std::vector<SafetensorsTensorInfo>& tensors) const {
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(tensors[a].begin, tensors[a].end) < std::tie(tensors[b].begin, tensors[b].end);
  });
  uint64_t covered = 0;
  const SafetensorsTensorInfo* prev = nullptr;
  for (size_t i : order) {
    const SafetensorsTensorInfo& t = tensors[i];
    if (t.begin < covered) {
      return InvalidArgument(std::string(source_) + ": tensor " + Quote(t.name) + " at " +
                             Range(t.begin, t.end) + " overlaps tensor " + Quote(prev->name) +
                             " at " + Range(prev->begin, prev->end));
    }
    if (t.begin > covered) {
      return InvalidArgument(std::string(source_) + ": bytes " + Range(covered, t.begin) +
                             " of the data section belong to no tensor (gap before " +
                             Quote(t.name) + ")");
    }
    covered = t.end;
    prev = &t;
  }
  if (covered != data_size_) {
    return InvalidArgument(std::string(source_) + ": bytes " + Range(covered, data_size_) +
                           " at the end of the data section belong to no tensor");
  }
  return Status::Ok();
}

Status HeaderParser::Parse(SafetensorsHeader* out) {
  // The reference implementation insists on '{' as the very first byte.
  if (Peek() != '{') return SyntaxError("the header must start with '{'");
  ++pos_;
  std::unordered_set<std::string_view> names;
  bool has_metadata = false;
  SkipWhitespace();
  bool more = !(Peek() == '}' && !AtEnd());
  if (!more) ++pos_;
  while (more) {
    std::string key;
    OMNI_RETURN_IF_ERROR(ParseString(&key));
    OMNI_RETURN_IF_ERROR(Expect(':', "after a tensor name"));
    if (key == "__metadata__") {
      if (has_metadata) return InvalidArgument(std::string(source_) + ": __metadata__ appears twice");
      has_metadata = true;
      OMNI_RETURN_IF_ERROR(ParseMetadata(out));
    } else {
      OMNI_RETURN_IF_ERROR(ParseTensor(std::move(key), &out->tensors.emplace_back()));
    }
    OMNI_ASSIGN_OR_RETURN(more, NextElement('}', "in the header object"));
  }
  SkipWhitespace();  // the writer pads with spaces to a multiple of 8 bytes
  if (!AtEnd()) return SyntaxError("unexpected bytes after the header object");
  // Names are checked once all are parsed: string_views into a vector that
  // still grows would dangle.
  for (const SafetensorsTensorInfo& t : out->tensors) {
    if (!names.insert(t.name).second) {
      return InvalidArgument(std::string(source_) + ": tensor name " + Quote(t.name) +
                             " appears twice");
    }
  }
  return CheckCoverage(out->tensors);
}

}  // namespace

StatusOr<SafetensorsHeader> ParseSafetensorsHeader(std::span<const uint8_t> file,
                                                   std::string_view source) {
  std::string src(source);
  if (file.size() < 8) {
    return InvalidArgument(src + ": file is " + std::to_string(file.size()) +
                           " bytes, shorter than the 8-byte header length");
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | file[i];  // little-endian
  if (n < 2) {
    return InvalidArgument(src + ": header length " + std::to_string(n) +
                           " is too small (the smallest header, '{}', is 2 bytes)");
  }
  if (n > kSafetensorsMaxHeaderSize) {
    return InvalidArgument(src + ": header length " + std::to_string(n) + " exceeds the limit of " +
                           std::to_string(kSafetensorsMaxHeaderSize) + " bytes");
  }
  if (n > file.size() - 8) {
    return InvalidArgument(src + ": header length " + std::to_string(n) +
                           " runs past the end of the file (" + std::to_string(file.size()) +
                           " bytes)");
  }
  SafetensorsHeader header;
  header.header_size = n;
  header.data_size = file.size() - 8 - n;
  std::string_view text(reinterpret_cast<const char*>(file.data()) + 8, static_cast<size_t>(n));
  HeaderParser parser(text, source, header.data_size);
  OMNI_RETURN_IF_ERROR(parser.Parse(&header));
  return header;
}

}  // namespace omni
