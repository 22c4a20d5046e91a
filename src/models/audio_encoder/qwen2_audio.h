// The audio encoder's continuous branch: Qwen2-Audio's encoder (Whisper
// large-v3 lineage) and the Omni model's two-layer projector, from the
// shared blocks.
//
//   per 30 s chunk (WhisperMel::ComputeChunks: [128, 3000], L valid frames)
//   conv1 Conv1d(128 -> d, k3, p1) + GELU, conv2 Conv1d(d -> d, k3, s2, p1) + GELU
//   + embed_positions (a stored [1500, d] table)
//   layers   x += out_proj(MHA(LN1 x)), x += fc2(GELU(fc1(LN2 x)))   LayerNorm eps 1e-5,
//            no k_proj bias, scale head_dim^-1/2, keys restricted to the
//            chunk's L' = (L - 1) / 2 + 1 valid positions
//   AvgPool1d(2, 2), final layer_norm
//   rows kept per chunk: (L' - 2) / 2 + 1 (750 for a full chunk: 25 per second)
//   projector (model.audio_projector) fc1 d -> d, GELU, fc2 d -> LLM width
//
// Only the positions a kept row depends on are computed: the convs run over
// the first 2 L' + 1 frames and the layers over L' positions, so a 3 s clip
// costs 150 positions, not the 1500 of its zero-padded chunk. The reference
// computes all 1500 with the padded keys masked: the kept rows are the same
// (a valid position attends only to valid keys, and conv2's output at a valid
// position reads only frames up to 2 L'). Several chunks (and several clips)
// run as one packed sequence, each chunk attending to its own positions.
//
// Tensor names: model.audio_model.{conv1,conv2,embed_positions,layer_norm},
// model.audio_model.layers.{i}.{self_attn.{q,k,v,out}_proj,
// self_attn_layer_norm, fc1, fc2, final_layer_norm}, model.audio_projector.
// {fc1,fc2}. Named activations: "convs", "layers.{i}", "pooled" (after the
// final norm), "rows".
// Thread-safety: immutable after Load; Forward is const.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "core/status.h"
#include "modelfile/checkpoint.h"
#include "models/activation_callback.h"
#include "models/audio_encoder/audio_encoder_config.h"
#include "models/audio_encoder/whisper_mel.h"
#include "tensor/tensor.h"

namespace omni::models {

class Qwen2AudioEncoder {
 public:
  static StatusOr<std::unique_ptr<Qwen2AudioEncoder>> Load(const Checkpoint& ckpt, const Qwen2AudioConfig& config);
  ~Qwen2AudioEncoder();

  // Rows a chunk with `valid_frames` valid mel frames gives (0 for 2 or fewer).
  static int64_t RowsForFrames(int64_t valid_frames);

  // The chunks of one or more clips -> their kept rows one after another,
  // [sum of RowsForFrames, llm_hidden_size] f32.
  StatusOr<Tensor> Forward(std::span<const WhisperMelChunk> chunks,
                           const ActivationCallback* on_activation = nullptr) const;

  const Qwen2AudioConfig& config() const { return config_; }

 private:
  struct Weights;
  Qwen2AudioEncoder(Qwen2AudioConfig config, std::unique_ptr<Weights> weights);

  Qwen2AudioConfig config_;
  std::unique_ptr<Weights> w_;
};

}  // namespace omni::models
