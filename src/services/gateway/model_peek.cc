#include "services/gateway/model_peek.h"

#include <cstring>

#include "core/json_string.h"
#include "core/utf8.h"

namespace omni {
namespace {

Status MissingModel() { return InvalidArgument("missing `model`").WithParam("model"); }

// One pass over `s_`, RFC 8259 grammar; pos_ only moves forward.
class ModelScanner {
 public:
  explicit ModelScanner(std::string_view body) : s_(body) {}

  StatusOr<std::string> Run() {
    OMNI_ASSIGN_OR_RETURN(bool found, FindTopLevelKey("model"));
    if (!found) return MissingModel();
    if (AtEnd()) return Malformed(pos_, "unexpected end of input");
    if (Peek() != '"') return InvalidArgument("`model` must be a string").WithParam("model");
    std::string model;
    OMNI_RETURN_IF_ERROR(ReadString(&model));
    return model;
  }

  StatusOr<std::optional<std::string_view>> RawMember(std::string_view wanted) {
    OMNI_ASSIGN_OR_RETURN(bool found, FindTopLevelKey(wanted));
    if (!found) return std::optional<std::string_view>();
    const size_t start = pos_;
    OMNI_RETURN_IF_ERROR(SkipValue(1));
    return std::optional<std::string_view>(s_.substr(start, pos_ - start));
  }

 private:
  // Walks the top-level object up to the value of `wanted` (pos_ then at
  // it): true; false when the object ends without it.
  StatusOr<bool> FindTopLevelKey(std::string_view wanted) {
    if (s_.starts_with("\xEF\xBB\xBF")) pos_ = 3;  // a UTF-8 BOM, which nlohmann skips too
    SkipWhitespace();
    if (Peek() != '{') return InvalidArgument("request body is not a JSON object");
    ++pos_;
    SkipWhitespace();
    if (Peek() == '}') return false;
    while (true) {
      SkipWhitespace();
      if (Peek() != '"') return Malformed(pos_, AtEnd() ? "unexpected end of input" : "expected a string key");
      std::string key;
      OMNI_RETURN_IF_ERROR(ReadString(&key));
      SkipWhitespace();
      if (Peek() != ':') return Malformed(pos_, AtEnd() ? "unexpected end of input" : "expected ':' after a key");
      ++pos_;
      SkipWhitespace();
      if (key == wanted) return true;
      OMNI_RETURN_IF_ERROR(SkipValue(1));
      SkipWhitespace();
      if (Peek() == ',') {
        ++pos_;
      } else if (Peek() == '}') {
        return false;
      } else {
        return Malformed(pos_, AtEnd() ? "unexpected end of input" : "expected ',' or '}' after a value");
      }
    }
  }

  // Unescapes the string at pos_ (its opening quote) into *out.
  Status ReadString(std::string* out) {
    size_t start = pos_++;
    while (true) {
      if (AtEnd()) return Malformed(pos_, "unterminated string");
      unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') break;
      if (c < 0x20) return Malformed(pos_, "control character in string");
      if (c != '\\') {
        out->push_back(static_cast<char>(c));
        ++pos_;
        continue;
      }
      OMNI_RETURN_IF_ERROR(ReadEscape(out));
    }
    ++pos_;
    if (!IsValidUtf8(*out)) return Malformed(start, "invalid UTF-8 in string");
    return Status::Ok();
  }

  // At a backslash inside a string.
  Status ReadEscape(std::string* out) {
    auto error = DecodeJsonEscape(s_, &pos_, out);
    if (!error) return Status::Ok();
    switch (error->kind) {
      case JsonEscapeError::Kind::kUnterminated: return Malformed(error->at, "unterminated string");
      case JsonEscapeError::Kind::kInvalidEscape: return Malformed(error->at, "invalid escape");
      case JsonEscapeError::Kind::kInvalidUnicode: return Malformed(error->at, "invalid \\u escape");
      case JsonEscapeError::Kind::kLoneHighSurrogate: return Malformed(error->at, "lone high surrogate in \\u escape");
      case JsonEscapeError::Kind::kLoneLowSurrogate: return Malformed(error->at, "lone low surrogate in \\u escape");
    }
    return Status::Ok();
  }

  // Skips the string at pos_ by finding its closing quote: a quote after an
  // even run of backslashes. memchr keeps this at memory speed on base64.
  Status SkipString() {
    size_t from = pos_ + 1;
    while (true) {
      const void* hit = from < s_.size() ? std::memchr(s_.data() + from, '"', s_.size() - from) : nullptr;
      if (hit == nullptr) return Malformed(s_.size(), "unterminated string");
      size_t quote = static_cast<const char*>(hit) - s_.data();
      size_t backslashes = 0;
      while (s_[quote - 1 - backslashes] == '\\') ++backslashes;  // stops at the opening quote at worst
      if (backslashes % 2 == 0) {
        pos_ = quote + 1;
        return Status::Ok();
      }
      from = quote + 1;
    }
  }

  // Skips one value that sits inside `depth` open containers.
  Status SkipValue(int depth) {
    if (AtEnd()) return Malformed(pos_, "unexpected end of input");
    char c = s_[pos_];
    switch (c) {
      case '"': return SkipString();
      case '{':
      case '[':
        if (depth + 1 > kMaxPeekDepth) {
          return Malformed(pos_, "nested deeper than " + std::to_string(kMaxPeekDepth) + " levels");
        }
        return c == '{' ? SkipObject(depth + 1) : SkipArray(depth + 1);
      case 't': return SkipLiteral("true");
      case 'f': return SkipLiteral("false");
      case 'n': return SkipLiteral("null");
      default:
        if (c == '-' || IsDigit(c)) return SkipNumber();
        return Malformed(pos_, "unexpected character");
    }
  }

  // At '{'; `depth` counts this object.
  Status SkipObject(int depth) {
    ++pos_;
    SkipWhitespace();
    if (Peek() == '}') {
      ++pos_;
      return Status::Ok();
    }
    while (true) {
      SkipWhitespace();
      if (Peek() != '"') return Malformed(pos_, AtEnd() ? "unexpected end of input" : "expected a string key");
      OMNI_RETURN_IF_ERROR(SkipString());
      SkipWhitespace();
      if (Peek() != ':') return Malformed(pos_, AtEnd() ? "unexpected end of input" : "expected ':' after a key");
      ++pos_;
      SkipWhitespace();
      OMNI_RETURN_IF_ERROR(SkipValue(depth));
      OMNI_RETURN_IF_ERROR(AfterElement('}'));
      if (s_[pos_ - 1] == '}') return Status::Ok();
    }
  }

  // At '['; `depth` counts this array.
  Status SkipArray(int depth) {
    ++pos_;
    SkipWhitespace();
    if (Peek() == ']') {
      ++pos_;
      return Status::Ok();
    }
    while (true) {
      SkipWhitespace();
      OMNI_RETURN_IF_ERROR(SkipValue(depth));
      OMNI_RETURN_IF_ERROR(AfterElement(']'));
      if (s_[pos_ - 1] == ']') return Status::Ok();
    }
  }

  // Consumes the ',' or `close` after an element.
  Status AfterElement(char close) {
    SkipWhitespace();
    if (Peek() == ',' || Peek() == close) {
      ++pos_;
      return Status::Ok();
    }
    if (AtEnd()) return Malformed(pos_, "unexpected end of input");
    return Malformed(pos_, std::string("expected ',' or '") + close + "'");
  }

  Status SkipNumber() {
    size_t start = pos_;
    if (Peek() == '-') ++pos_;
    if (Peek() == '0') {
      ++pos_;
    } else if (IsDigit(Peek())) {
      SkipDigits();
    } else {
      return Malformed(start, "invalid number");
    }
    if (Peek() == '.') {
      ++pos_;
      if (!IsDigit(Peek())) return Malformed(start, "invalid number");
      SkipDigits();
    }
    if (Peek() == 'e' || Peek() == 'E') {
      ++pos_;
      if (Peek() == '+' || Peek() == '-') ++pos_;
      if (!IsDigit(Peek())) return Malformed(start, "invalid number");
      SkipDigits();
    }
    return Status::Ok();
  }

  Status SkipLiteral(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return Malformed(pos_, "invalid literal");
    pos_ += word.size();
    return Status::Ok();
  }

  void SkipDigits() {
    while (IsDigit(Peek())) ++pos_;
  }
  void SkipWhitespace() {
    while (!AtEnd() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }
  bool AtEnd() const { return pos_ >= s_.size(); }
  char Peek() const { return AtEnd() ? '\0' : s_[pos_]; }

  static Status Malformed(size_t at, std::string_view what) {
    // The LLM server's code for the same body, so a client sees one answer.
    return InvalidArgument("malformed JSON at byte " + std::to_string(at) + ": " + std::string(what))
        .WithErrorCode("invalid_json");
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

StatusOr<std::string> PeekJsonModel(std::string_view body) { return ModelScanner(body).Run(); }

StatusOr<std::optional<std::string_view>> PeekJsonRawMember(std::string_view body, std::string_view key) {
  return ModelScanner(body).RawMember(key);
}

}  // namespace omni
