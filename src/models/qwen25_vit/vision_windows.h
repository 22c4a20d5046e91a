// Qwen2.5-VL's window attention plan for a batch of images (or videos),
// computed from their patch grids alone:
//  - window_order: the merge units (2x2 patch blocks, in the processor's row
//    order) regrouped window by window. A window is window_size /
//    patch_size / merge_size = 4 x 4 merge units from the top-left of each
//    frame, partial at the right and bottom edges;
//  - cu_window_seqlens: the windows as patch-row offsets into the regrouped
//    sequence (empty windows dropped); window blocks attend within these;
//  - cu_seqlens: each frame's patch rows; the full-attention blocks attend
//    within these.
// The ViT regroups its rows (and their rotary angles) by window_order before
// the blocks and restores the order after the merger.
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace omni::models {

struct PatchGrid {
  int64_t t = 1, h = 0, w = 0;  // frames (temporal patches) and patches per side
};

struct VisionWindowPlan {
  std::vector<int64_t> window_order;       // [merge units]: source unit of each regrouped unit
  std::vector<int32_t> cu_window_seqlens;  // [windows + 1], in patch rows
  std::vector<int32_t> cu_seqlens;         // [frames + 1], in patch rows
};

// grid h and w must be multiples of merge_size.
VisionWindowPlan PlanVisionWindows(std::span<const PatchGrid> grids, int64_t merge_size, int64_t window_units);

}  // namespace omni::models
