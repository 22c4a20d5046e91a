#include "media/exif.h"

#include <cstdint>

namespace omni::media {
namespace {

constexpr uint16_t kOrientationTag = 0x0112;
constexpr uint16_t kTypeShort = 3;

struct TiffReader {
  std::string_view b;
  bool little = true;

  bool U16(size_t at, uint16_t* v) const {
    if (at > b.size() || b.size() - at < 2) return false;
    auto x = [&](size_t i) { return static_cast<uint16_t>(static_cast<uint8_t>(b[at + i])); };
    *v = little ? static_cast<uint16_t>(x(0) | x(1) << 8) : static_cast<uint16_t>(x(0) << 8 | x(1));
    return true;
  }
  bool U32(size_t at, uint32_t* v) const {
    uint16_t a, c;
    if (!U16(at, &a) || !U16(at + 2, &c)) return false;
    *v = little ? (uint32_t{c} << 16 | a) : (uint32_t{a} << 16 | c);
    return true;
  }
};

}  // namespace

int ExifOrientation(std::string_view block) {
  if (block.starts_with(std::string_view("Exif\0\0", 6))) block.remove_prefix(6);
  TiffReader r{block};
  if (block.starts_with("II")) {
    r.little = true;
  } else if (block.starts_with("MM")) {
    r.little = false;
  } else {
    return 1;
  }
  uint16_t magic;
  uint32_t ifd;
  if (!r.U16(2, &magic) || magic != 42 || !r.U32(4, &ifd)) return 1;
  uint16_t count;
  if (!r.U16(ifd, &count)) return 1;
  for (uint32_t i = 0; i < count; ++i) {
    const size_t entry = static_cast<size_t>(ifd) + 2 + 12 * static_cast<size_t>(i);
    uint16_t tag, type, value;
    uint32_t n;
    if (!r.U16(entry, &tag) || !r.U16(entry + 2, &type) || !r.U32(entry + 4, &n)) return 1;
    if (tag != kOrientationTag) continue;
    if (type != kTypeShort || n != 1 || !r.U16(entry + 8, &value)) return 1;
    return value >= 1 && value <= 8 ? value : 1;
  }
  return 1;
}

}  // namespace omni::media
