// The one EXIF field a decoder needs: the orientation (tag 0x0112 of IFD0),
// read from a TIFF-structured block (JPEG's APP1 after "Exif\0\0", PNG's
// eXIf chunk, WebP's EXIF chunk; a leading "Exif\0\0" is skipped).
// Untrusted input: every offset is bounds-checked; anything malformed reads
// as orientation 1 (no transform), as PIL treats it.
#pragma once

#include <string_view>

namespace omni::media {

// 1..8 as EXIF defines them; 1 when absent, malformed or out of range.
int ExifOrientation(std::string_view block);

}  // namespace omni::media
