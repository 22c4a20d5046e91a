#include "models/omni_vision/demo_vision_encoder.h"

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "modelfile/safetensors.h"
#include "models/demo_weights.h"

namespace omni::models {
namespace {

std::vector<NamedTensor> DemoTensors(const DemoVisionEncoderSpec& s) {
  std::vector<NamedTensor> out;
  auto add = [&](const std::string& name, const Shape& shape, double std, double offset = 0.0) {
    out.push_back({name, RandomBf16(s.seed, name, shape, std, offset)});
  };
  auto linear = [&](const std::string& name, int64_t out_features, int64_t in_features) {
    add(name + ".weight", {out_features, in_features}, 1.0 / std::sqrt(static_cast<double>(in_features)));
    add(name + ".bias", {out_features}, 0.02);
  };
  // Norm weights near 1 but not 1, so a missing norm shows.
  auto norm = [&](const std::string& name, int64_t dim, bool bias) {
    add(name + ".weight", {dim}, 0.1, 1.0);
    if (bias) add(name + ".bias", {dim}, 0.02);
  };
  const std::string v = "model.vision_model.";
  const int64_t c = s.hidden_size;
  add(v + "patch_embed.proj.weight", {c, 3, 2, 14, 14}, 1.0 / std::sqrt(3.0 * 2 * 14 * 14));
  for (int64_t i = 0; i < s.depth; ++i) {
    const std::string p = v + "blocks." + std::to_string(i) + ".";
    norm(p + "norm1", c, false);
    norm(p + "norm2", c, false);
    linear(p + "attn.qkv", 3 * c, c);
    linear(p + "attn.proj", c, c);
    linear(p + "mlp.gate_proj", s.intermediate_size, c);
    linear(p + "mlp.up_proj", s.intermediate_size, c);
    linear(p + "mlp.down_proj", c, s.intermediate_size);
  }
  norm(v + "merger.ln_q", c, false);
  linear(v + "merger.mlp.0", 4 * c, 4 * c);
  linear(v + "merger.mlp.2", s.out_hidden_size, 4 * c);
  linear("model.mm_projector", s.llm_hidden_size, s.out_hidden_size);

  const std::string t = "model.discrete_vision_model.";
  const int64_t h = s.tatok_hidden_size;
  add(t + "encoder.embeddings.patch_embedding.weight", {h, 3, 14, 14}, 1.0 / std::sqrt(3.0 * 14 * 14));
  add(t + "encoder.embeddings.patch_embedding.bias", {h}, 0.02);
  add(t + "encoder.embeddings.position_embedding.weight", {27 * 27, h}, 0.5);
  for (int64_t i = 0; i < s.tatok_layers; ++i) {
    const std::string p = t + "encoder.encoder.layers." + std::to_string(i) + ".";
    norm(p + "layer_norm1", h, true);
    norm(p + "layer_norm2", h, true);
    for (const char* proj : {"q_proj", "k_proj", "v_proj", "out_proj"}) linear(p + "self_attn." + proj, h, h);
    linear(p + "mlp.fc1", s.tatok_intermediate_size, h);
    linear(p + "mlp.fc2", h, s.tatok_intermediate_size);
  }
  norm(t + "encoder.post_layernorm", h, true);  // in the checkpoint, unused by the ids
  linear(t + "encode_task_layer.0", h, h);
  linear(t + "bottleneck.in_linear", s.bottleneck_dim, h);
  linear(t + "bottleneck.out_linear", s.bottleneck_dim, s.bottleneck_dim);
  add(t + "bottleneck.regularizer.embedding.weight", {s.codebook_size, s.bottleneck_dim}, 1.0);
  linear(t + "bottleneck.regularizer.embedding_proj", s.bottleneck_dim, s.bottleneck_dim);
  return out;
}

std::string ConfigJson(const DemoVisionEncoderSpec& s) {
  nlohmann::ordered_json j;
  j["architectures"] = {"HCXVisionV2ForCausalLM"};
  j["model_type"] = "vlm";
  j["vision_config"] = {{"model_type", "qwen2_5_vl"},
                        {"depth", s.depth},
                        {"hidden_size", s.hidden_size},
                        {"intermediate_size", s.intermediate_size},
                        {"num_heads", s.num_heads},
                        {"out_hidden_size", s.out_hidden_size},
                        {"in_channels", 3},
                        {"patch_size", 14},
                        {"temporal_patch_size", 2},
                        {"spatial_merge_size", 2},
                        {"window_size", 112},
                        {"fullatt_block_indexes", s.fullatt_block_indexes},
                        {"hidden_act", "silu"},
                        {"tokens_per_second", 2}};
  j["discrete_vision_config"] = {{"model_type", "ta_tok"},
                                 {"hidden_size", s.tatok_hidden_size},
                                 {"intermediate_size", s.tatok_intermediate_size},
                                 {"num_hidden_layers", s.tatok_layers},
                                 {"num_attention_heads", s.tatok_heads},
                                 {"layer_norm_eps", 1e-6},
                                 {"image_size", 384},
                                 {"patch_size", 14},
                                 {"select_layer", -2},
                                 {"bottleneck_dim", s.bottleneck_dim},
                                 {"codebook_size", s.codebook_size}};
  j["text_config"] = {{"hidden_size", s.llm_hidden_size}};
  return j.dump(2) + "\n";
}

std::string PreprocessorJson(const DemoVisionEncoderSpec& s) {
  nlohmann::ordered_json j;
  j["image_processor_type"] = "Qwen2VLImageProcessor";
  j["min_pixels"] = 3136;
  j["max_pixels"] = s.max_pixels;
  j["patch_size"] = 14;
  j["temporal_patch_size"] = 2;
  j["merge_size"] = 2;
  j["resample"] = 3;
  j["do_rescale"] = true;
  j["rescale_factor"] = 1.0 / 255;
  j["do_normalize"] = true;
  j["image_mean"] = {0.48145466, 0.4578275, 0.40821073};
  j["image_std"] = {0.26862954, 0.26130258, 0.27577711};
  j["do_convert_rgb"] = true;
  return j.dump(2) + "\n";
}

}  // namespace

DemoVisionEncoderSpec BenchVisionEncoderSpec(int64_t llm_hidden_size) {
  DemoVisionEncoderSpec s;
  s.depth = 4;
  s.hidden_size = 1280;
  s.intermediate_size = 3456;
  s.num_heads = 16;
  s.out_hidden_size = 5120;
  s.fullatt_block_indexes = {3};
  s.llm_hidden_size = llm_hidden_size;
  s.tatok_hidden_size = 1152;
  s.tatok_intermediate_size = 4304;
  s.tatok_layers = 3;
  s.tatok_heads = 16;
  s.bottleneck_dim = 1536;
  s.codebook_size = 65536;
  return s;
}

Status WriteDemoVisionEncoder(const DemoVisionEncoderSpec& spec, const std::string& out_dir) {
  if (spec.hidden_size % spec.num_heads != 0 || (spec.hidden_size / spec.num_heads) % 4 != 0 ||
      spec.tatok_hidden_size % spec.tatok_heads != 0 || spec.tatok_layers < 2) {
    return InvalidArgument("demo vision encoder spec: heads must divide the widths (ViT heads a multiple of 4 wide)");
  }
  const std::filesystem::path dir(out_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Internal("cannot create " + out_dir + ": " + ec.message());
  OMNI_RETURN_IF_ERROR(WriteDemoTextFile((dir / "config.json").string(), ConfigJson(spec)));
  OMNI_RETURN_IF_ERROR(WriteDemoTextFile((dir / "preprocessor_config.json").string(), PreprocessorJson(spec)));
  return WriteSafetensors((dir / "model.safetensors").string(), DemoTensors(spec), {{"format", "pt"}});
}

}  // namespace omni::models
