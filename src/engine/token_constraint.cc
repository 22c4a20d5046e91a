#include "engine/token_constraint.h"

#include <algorithm>

namespace omni {

std::vector<TokenRange> RangesOf(std::vector<int32_t> ids) {
  std::sort(ids.begin(), ids.end());
  std::vector<TokenRange> out;
  for (int32_t id : ids) {
    if (!out.empty() && id <= out.back().end) {
      out.back().end = std::max(out.back().end, id + 1);
    } else {
      out.push_back({id, id + 1});
    }
  }
  return out;
}

bool InRanges(std::span<const TokenRange> ranges, int32_t id) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), id,
                             [](int32_t v, const TokenRange& r) { return v < r.begin; });
  return it != ranges.begin() && id < std::prev(it)->end;
}

}  // namespace omni
