#include "models/qwen25_vit/vision_windows.h"

#include "core/check.h"

namespace omni::models {

VisionWindowPlan PlanVisionWindows(std::span<const PatchGrid> grids, int64_t merge_size, int64_t window_units) {
  OMNI_CHECK(merge_size > 0 && window_units > 0);
  VisionWindowPlan plan;
  plan.cu_window_seqlens.push_back(0);
  plan.cu_seqlens.push_back(0);
  const int64_t unit_rows = merge_size * merge_size;
  int64_t unit_base = 0;
  for (const PatchGrid& g : grids) {
    OMNI_CHECK(g.h % merge_size == 0 && g.w % merge_size == 0) << "grid " << g.h << "x" << g.w;
    const int64_t uh = g.h / merge_size, uw = g.w / merge_size;  // merge units per side
    const int64_t nwh = (uh + window_units - 1) / window_units, nww = (uw + window_units - 1) / window_units;
    for (int64_t t = 0; t < g.t; ++t) {
      for (int64_t wy = 0; wy < nwh; ++wy) {
        for (int64_t wx = 0; wx < nww; ++wx) {
          int64_t units = 0;
          for (int64_t y = wy * window_units; y < std::min(uh, (wy + 1) * window_units); ++y) {
            for (int64_t x = wx * window_units; x < std::min(uw, (wx + 1) * window_units); ++x, ++units) {
              plan.window_order.push_back(unit_base + (t * uh + y) * uw + x);
            }
          }
          if (units > 0) plan.cu_window_seqlens.push_back(plan.cu_window_seqlens.back() + units * unit_rows);
        }
      }
      plan.cu_seqlens.push_back(plan.cu_seqlens.back() + static_cast<int32_t>(g.h * g.w));
    }
    unit_base += g.t * uh * uw;
  }
  return plan;
}

}  // namespace omni::models
