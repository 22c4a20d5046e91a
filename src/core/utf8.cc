#include "core/utf8.h"

namespace omni {
namespace {

// Length of the sequence a lead byte starts, or 0 for a byte that cannot lead.
int SequenceLength(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// The allowed range of the second byte depends on the lead (Unicode Table 3-7):
// this is what excludes overlongs, surrogates and code points past U+10FFFF.
bool SecondByteOk(uint8_t lead, uint8_t b) {
  switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F;
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F;
    default: return b >= 0x80 && b <= 0xBF;
  }
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Length of the well-formed prefix of the sequence at s[i]: equal to the
// sequence length when complete and valid, smaller when it breaks off.
int ValidPrefix(std::string_view s, size_t i, int len) {
  int n = 1;
  while (n < len && i + n < s.size()) {
    uint8_t b = static_cast<uint8_t>(s[i + n]);
    bool ok = n == 1 ? SecondByteOk(static_cast<uint8_t>(s[i]), b) : (b >= 0x80 && b <= 0xBF);
    if (!ok) break;
    ++n;
  }
  return n;
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    int len = SequenceLength(static_cast<uint8_t>(s[i]));
    if (len == 0 || ValidPrefix(s, i, len) != len) return false;
    i += len;
  }
  return true;
}

size_t AppendUtf8Lossy(std::string_view bytes, bool final, std::string* out) {
  size_t i = 0;
  while (i < bytes.size()) {
    size_t run = i;
    while (run < bytes.size() && static_cast<uint8_t>(bytes[run]) < 0x80) ++run;
    out->append(bytes.substr(i, run - i));
    i = run;
    if (i == bytes.size()) break;
    int len = SequenceLength(static_cast<uint8_t>(bytes[i]));
    if (len == 0) {
      out->append(kReplacement);
      ++i;
      continue;
    }
    int valid = ValidPrefix(bytes, i, len);
    if (valid == len) {
      out->append(bytes.substr(i, len));
      i += len;
    } else if (i + valid == bytes.size() && !final) {
      return i;  // may still complete with the next bytes
    } else {
      out->append(kReplacement);
      i += valid;
    }
  }
  return i;
}

void AppendCodePoint(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

uint32_t NextCodePoint(std::string_view s, size_t* pos) {
  uint8_t b = static_cast<uint8_t>(s[*pos]);
  int len = SequenceLength(b);
  if (len <= 1) {
    ++*pos;
    return b;
  }
  uint32_t cp = b & (0x7F >> len);
  for (int k = 1; k < len && *pos + k < s.size(); ++k) {
    cp = (cp << 6) | (static_cast<uint8_t>(s[*pos + k]) & 0x3F);
  }
  *pos += len;
  return cp;
}

}  // namespace omni
