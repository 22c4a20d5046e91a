// The discrete vision encoder: TA-Tok (text-aligned tokenizer) over a
// SigLIP2 so400m tower, from the shared blocks.
//
//   embeddings        Conv2d patch 14 as one GEMM over the 27 x 27 patches of
//                     the 384 image (the last 6 pixels are outside every
//                     patch, as with the stride-14 conv), + learned positions
//   encoder layers    pre-LayerNorm, attention with q/k/v/out biases,
//                     tanh-GELU MLP; only the layers up to select_layer (-2:
//                     the 26th of 27) run, since the last one, the final
//                     LayerNorm and the pooling head do not reach the output
//   encode_task_layer Linear + Tanh
//   bottleneck        in_linear to 1536
//   SimVQ             ids = argmax over codes of cos(z, code), the codes being
//                     embedding_proj(embedding) l2-normalised once at load.
//                     Deterministic: the reference samples from softmax(cos /
//                     0.03), so the same image gets different ids there
//                     (spec/omni-model.md); omniserve takes the most likely id.
//
// Tensor names under model.discrete_vision_model: encoder.embeddings.
// {patch_embedding, position_embedding}, encoder.encoder.layers.{i}.
// {layer_norm1, self_attn.{q,k,v,out}_proj, layer_norm2, mlp.fc1, mlp.fc2},
// encode_task_layer.0, bottleneck.in_linear, bottleneck.regularizer.
// {embedding, embedding_proj}.
// Named activations: "embeddings", "layers.{i}", "task", "bottleneck".
// Thread-safety: immutable after Load; Forward is const.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "modelfile/checkpoint.h"
#include "models/activation_callback.h"
#include "tensor/tensor.h"

namespace omni::models {

// "discrete_vision_config" keys (omniserve's; the reference hard-codes
// them); defaults are SigLIP2 so400m-patch14-384 and the Omni model's SimVQ.
struct TaTokConfig {
  int64_t hidden_size = 1152;
  int64_t intermediate_size = 4304;
  int64_t num_hidden_layers = 27;
  int64_t num_attention_heads = 16;
  double layer_norm_eps = 1e-6;
  int64_t image_size = 384;
  int64_t patch_size = 14;
  int64_t select_layer = -2;  // as hidden_states[select_layer]: -1 is the last layer's output
  int64_t bottleneck_dim = 1536;
  int64_t codebook_size = 65536;
};

StatusOr<TaTokConfig> ParseTaTokConfig(std::string_view json, std::string_view source);

class TaTok {
 public:
  static StatusOr<std::unique_ptr<TaTok>> Load(const Checkpoint& ckpt, const TaTokConfig& config,
                                               std::string_view prefix = "model.discrete_vision_model");
  ~TaTok();

  // image [3, image_size, image_size] f32 (PreprocessTaTokImage) -> ids in
  // [0, codebook_size), (image_size / patch_size)^2 of them, row-major.
  StatusOr<std::vector<int32_t>> Encode(const Tensor& image, const ActivationCallback* on_activation = nullptr) const;
  // Several images in one forward: their tokens one after another, each
  // image attending to its own only; per image, the ids Encode gives.
  // Named activations are of the whole batch.
  StatusOr<std::vector<std::vector<int32_t>>> EncodeBatch(std::span<const Tensor> images,
                                                          const ActivationCallback* on_activation = nullptr) const;

  const TaTokConfig& config() const { return config_; }
  int64_t num_tokens() const;

 private:
  struct Weights;
  TaTok(TaTokConfig config, std::unique_ptr<Weights> weights);

  TaTokConfig config_;
  std::unique_ptr<Weights> w_;
};

}  // namespace omni::models
