#include "models/vision_decoder/vision_tokens.h"

#include <array>
#include <charconv>

#include <fmt/core.h>

#include "text/omni_tokens.h"

namespace omni::models {
namespace {

struct RatioEntry {
  std::string_view ratio;
  ImageSize size;
};

// The portrait and square sizes; the landscape ratios transpose them.
constexpr std::array<RatioEntry, 7> kRatios = {{{"1:1", {768, 768}},
                                                {"1:2", {528, 1072}},
                                                {"3:4", {656, 880}},
                                                {"3:5", {592, 976}},
                                                {"4:5", {672, 848}},
                                                {"6:9", {624, 928}},
                                                {"9:16", {576, 1024}}}};

constexpr std::string_view kCodePrefix = "<|vision";
constexpr std::string_view kRatioPrefix = "<|vision_ratio_";

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// A token as an error message may show it: short printable ASCII as it is,
// anything else (a client's bytes) by its length only.
std::string Shown(std::string_view token) {
  bool printable = token.size() <= 40;
  for (char c : token) printable = printable && c >= 0x20 && c <= 0x7e;
  return printable ? std::string(token) : fmt::format("of {} bytes", token.size());
}

}  // namespace

std::optional<ImageSize> VisionRatioSize(std::string_view ratio) {
  for (const RatioEntry& e : kRatios) {
    if (ratio == e.ratio) return e.size;
    const size_t colon = e.ratio.find(':');
    const std::string transposed =
        std::string(e.ratio.substr(colon + 1)) + ":" + std::string(e.ratio.substr(0, colon));
    if (ratio == transposed) return ImageSize{e.size.height, e.size.width};
  }
  return std::nullopt;
}

StatusOr<VisionTokens> ParseVisionTokens(std::string_view text, int num_ids, int num_codes) {
  VisionTokens out;
  std::optional<std::string> ratio;
  bool ratio_seen = false;
  size_t codes = 0;
  for (size_t at = 0; at < text.size();) {
    if (IsSpace(text[at])) {
      ++at;
      continue;
    }
    const std::string_view rest = text.substr(at);
    const size_t end = rest.starts_with("<|") ? rest.find("|>") : std::string_view::npos;
    if (end == std::string_view::npos) {
      // The text itself is not quoted: it is a client's, of any bytes.
      return InvalidArgument(fmt::format("the image tokens hold text that is not a token at byte {}", at));
    }
    const std::string_view token = rest.substr(0, end + 2);
    at += token.size();
    if (token == kDiscreteImageStart || token == kDiscreteImageEnd || token == kVisionToken || token == kVisionEol ||
        token == kVisionEof) {
      continue;
    }
    if (token.starts_with(kRatioPrefix)) {
      if (!ratio_seen) {
        ratio_seen = true;
        ratio = std::string(token.substr(kRatioPrefix.size(), token.size() - kRatioPrefix.size() - 2));
      }
      continue;
    }
    if (token.starts_with(kCodePrefix)) {
      const std::string_view digits = token.substr(kCodePrefix.size(), token.size() - kCodePrefix.size() - 2);
      int64_t id = -1;
      auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
      if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string_view::npos ||
          ec != std::errc() || p != digits.data() + digits.size()) {
        return InvalidArgument(fmt::format("the image tokens hold an unknown token {} at byte {}", Shown(token),
                                           at - token.size()));
      }
      if (id >= num_codes) {
        return InvalidArgument(fmt::format("image id {} is outside the decoder's table of {} codes", id, num_codes));
      }
      ++codes;
      if (static_cast<int>(out.ids.size()) < num_ids) out.ids.push_back(static_cast<int32_t>(id));
      continue;
    }
    return InvalidArgument(
        fmt::format("the image tokens hold an unknown token {} at byte {}", Shown(token), at - token.size()));
  }
  if (static_cast<int>(out.ids.size()) < num_ids) {
    return InvalidArgument(fmt::format("the image tokens hold {} image ids; the decoder needs {}", codes, num_ids));
  }
  if (codes > static_cast<size_t>(num_ids)) {
    out.warnings.push_back(fmt::format("{} image ids were given; the first {} were used", codes, num_ids));
  }
  std::optional<ImageSize> size = ratio ? VisionRatioSize(*ratio) : std::nullopt;
  if (!size) {
    out.warnings.push_back(ratio ? fmt::format("unknown aspect ratio {}; drawn at 1:1", Shown(*ratio))
                                 : std::string("no aspect ratio token; drawn at 1:1"));
    ratio = "1:1";
    size = VisionRatioSize("1:1");
  }
  out.ratio = *ratio;
  out.size = *size;
  return out;
}

}  // namespace omni::models
