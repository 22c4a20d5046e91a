// A random-weight audio decoder folder (`make-demo-model --component ad`) in
// the real schema: config.json (BigVGAN's keys, unit_bigvgan_config.h),
// model.safetensors with the generator's state-dict names and PyTorch's
// weight-norm parametrization (…parametrizations.weight.original0/1) and the
// anti-aliasing filter buffers, spk_list.txt (the speaker table's names, one
// per row) and speaker_config.json (OmniServe's age x gender map to speaker
// names). A zero-shot folder (finetune false) has the ECAPA-TDNN speaker
// encoder under spk_emb.* (BatchNorm running statistics included) and no
// speaker files. Deterministic for a seed (demo_weights.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace omni::models {

struct DemoAudioDecoderSpec {
  uint64_t seed = 13;
  int64_t num_units = 6561;
  int64_t unit_emb_dim = 32;
  int64_t spk_emb_dim = 16;
  int64_t num_mels = 100;  // zero-shot: the reference log-mel bins
  // The speaker table: OmniServe's default "fkms" first.
  std::vector<std::string> speakers{"fkms", "mhwj", "fphj", "mphw"};
  int64_t upsample_initial_channel = 128;
  std::vector<int64_t> upsample_rates{5, 4, 4, 3, 2, 2};
  std::vector<int64_t> upsample_kernel_sizes{10, 8, 8, 6, 4, 4};
  std::vector<int64_t> resblock_kernel_sizes{3, 7, 11};
  std::vector<int64_t> resblock_dilations{1, 3, 5};
  bool causal = true;
  bool use_tanh_at_final = false;  // clamp, as the Omni decoder does
  // A zero-shot checkpoint instead (finetune false): no speaker table, an
  // ECAPA-TDNN of this width under spk_emb.*, the reference log-mel's keys.
  bool zero_shot = false;
  int64_t spk_hidden_dim = 64;
  bool global_context_att = false;
};

// The `bench` preset: BigVGAN-v2's widths (1536 initial channels, unit and
// speaker embeddings 512 and 256) with the same six stages.
DemoAudioDecoderSpec BenchAudioDecoderSpec();

// Writes the folder; for a speaker-table spec also its zero-shot companion
// in out_dir/zeroshot (the same vocoder sizes, another seed), which
// `omniserve decoder --modality audio` loads for reference-clip speakers.
Status WriteDemoAudioDecoder(const DemoAudioDecoderSpec& spec, const std::string& out_dir);

}  // namespace omni::models
