// RoPE frequencies of a Hugging Face LLM config, computed once at load.
//
// Follows transformers' ROPE_INIT_FUNCTIONS (modeling_rope_utils.py) for the
// scaling types LlmConfig knows:
//  - none:    inv_freq[i] = 1 / theta^(2i / dim)
//  - linear:  inv_freq / factor
//  - dynamic: the default frequencies. HF rescales theta only once a sequence
//             grows past max_position_embeddings; serving caps the context at
//             max_position_embeddings, so the static frequencies are what HF
//             computes for every sequence we accept.
//  - llama3:  per-frequency blend of inv_freq and inv_freq / factor by
//             wavelength (low_freq_factor, high_freq_factor,
//             original_max_position_embeddings).
//  - yarn:    NTK-by-parts blend with a linear ramp between beta_fast and
//             beta_slow, and attention_scaling = attention_factor or
//             0.1 * ln(factor) + 1 (the mscale / mscale_all_dim variants of
//             DeepSeek configs are not read).
#pragma once

#include "core/status.h"
#include "modelfile/hf_config.h"
#include "ops/rope.h"

namespace omni::models {

// RopeParams for ops::ApplyRope (NeoX rotate-half, rot = head_dim).
StatusOr<ops::RopeParams> RopeParamsForConfig(const LlmConfig& config);

}  // namespace omni::models
