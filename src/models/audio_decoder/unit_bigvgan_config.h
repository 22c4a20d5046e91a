// The unit vocoder's hyper-parameters: BigVGAN's config.json as OmniServe's
// audio decoder reads it (its AttrDict keys), checked once at load.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace omni::models {

struct UnitBigVganConfig {
  int64_t num_units = 6561;  // unit_emb rows: the LLM's <|audioN|>, N < num_units
  int64_t unit_emb_dim = 512;
  int64_t spk_emb_dim = 256;
  int64_t num_spk = 1;     // rows of the speaker table (finetune); 0 for zero-shot
  bool finetune = true;    // speakers from a table; false: ECAPA-TDNN on a reference clip
  // Zero-shot only: the reference clip's log-mel and the ECAPA-TDNN's width
  // (speaker_reference.h, ecapa_tdnn.h).
  int64_t num_mels = 100;
  int64_t spk_hidden_dim = 512;
  bool global_context_att = false;
  int64_t n_fft = 1024, hop_size = 256, win_size = 1024;
  double fmin = 0;
  double fmax = 0;  // 0 or config.json's null: sampling_rate / 2
  std::vector<int64_t> upsample_rates{5, 4, 4, 3, 2, 2};
  std::vector<int64_t> upsample_kernel_sizes{10, 8, 8, 6, 4, 4};
  int64_t upsample_initial_channel = 1536;
  std::vector<int64_t> resblock_kernel_sizes{3, 7, 11};
  std::vector<std::vector<int64_t>> resblock_dilation_sizes{{1, 3, 5}, {1, 3, 5}, {1, 3, 5}};
  bool snake_logscale = true;
  bool causal = true;  // absent in config.json means causal, as in OmniServe's BigVGAN
  bool use_bias_at_final = true;
  bool use_tanh_at_final = true;  // false: clamp to [-1, 1]
  int sampling_rate = 24000;

  // Output samples per unit: the product of the upsample rates.
  int64_t samples_per_unit() const;
  // Channels after upsampling stage i (0-based): initial / 2^(i+1).
  int64_t stage_channels(size_t i) const { return upsample_initial_channel >> (i + 1); }
};

// InvalidArgument naming `source` and the key for anything missing, of the
// wrong type or outside what the vocoder implements (resblock "1",
// activation "snakebeta", stage channels that halve to at least 1, kernels
// that keep each transposed convolution's output at exactly rate x input).
StatusOr<UnitBigVganConfig> ParseUnitBigVganConfig(std::string_view json, std::string_view source);

}  // namespace omni::models
