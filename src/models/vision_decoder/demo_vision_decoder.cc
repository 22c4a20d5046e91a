#include "models/vision_decoder/demo_vision_decoder.h"

#include <cmath>
#include <filesystem>
#include <numeric>

#include <nlohmann/json.hpp>

#include "modelfile/safetensors.h"
#include "models/demo_weights.h"

namespace omni::models {
namespace {

// Adds weights under one component's seed, so transformer2 differs from transformer.
class TensorList {
 public:
  explicit TensorList(uint64_t seed) : seed_(seed) {}
  void Add(const std::string& name, const Shape& shape, double std, double offset = 0.0) {
    tensors_.push_back({name, RandomBf16(seed_, name, shape, std, offset)});
  }
  void Linear(const std::string& name, int64_t out, int64_t in) {
    Add(name + ".weight", {out, in}, 1.0 / std::sqrt(static_cast<double>(in)));
    Add(name + ".bias", {out}, 0.02);
  }
  void Conv(const std::string& name, int64_t out, int64_t in, int64_t k) {
    Add(name + ".weight", {out, in, k, k}, 1.0 / std::sqrt(static_cast<double>(in * k * k)));
    Add(name + ".bias", {out}, 0.02);
  }
  // Norm weights near 1 but not 1, so a missing norm shows.
  void Norm(const std::string& name, int64_t dim) {
    Add(name + ".weight", {dim}, 0.1, 1.0);
    Add(name + ".bias", {dim}, 0.02);
  }
  std::vector<NamedTensor>& tensors() { return tensors_; }

 private:
  uint64_t seed_;
  std::vector<NamedTensor> tensors_;
};

std::vector<NamedTensor> DitTensors(const DemoVisionDecoderSpec& s, uint64_t seed) {
  TensorList t(seed);
  const int64_t h = s.hidden_size, head_dim = s.hidden_size / s.num_heads;
  const auto mlp = static_cast<int64_t>(static_cast<double>(h) * s.mlp_ratio);
  t.Linear("img_in", h, s.in_channels + s.embedding_dim);
  t.Linear("time_in.in_layer", h, 256);
  t.Linear("time_in.out_layer", h, h);
  t.Linear("vector_in.in_layer", h, s.embedding_dim);
  t.Linear("vector_in.out_layer", h, h);
  for (int64_t i = 0; i < s.depth_single_blocks; ++i) {
    const std::string p = "single_blocks." + std::to_string(i) + ".";
    t.Linear(p + "linear1", 3 * h + mlp, h);
    t.Linear(p + "linear2", h, h + mlp);
    t.Add(p + "norm.query_norm.scale", {head_dim}, 0.1, 1.0);
    t.Add(p + "norm.key_norm.scale", {head_dim}, 0.1, 1.0);
    t.Linear(p + "modulation.lin", 3 * h, h);
  }
  t.Linear("final_layer.adaLN_modulation.1", 2 * h, h);
  t.Linear("final_layer.linear", s.in_channels, h);
  return std::move(t.tensors());
}

// diffusers' ResnetBlock2D: norm1, conv1, norm2, conv2, and a 1x1
// conv_shortcut when the channel count changes.
void Resnet(TensorList* t, const std::string& p, int64_t in, int64_t out) {
  t->Norm(p + "norm1", in);
  t->Conv(p + "conv1", out, in, 3);
  t->Norm(p + "norm2", out);
  t->Conv(p + "conv2", out, out, 3);
  if (in != out) t->Conv(p + "conv_shortcut", out, in, 1);
}

std::vector<NamedTensor> VaeTensors(const DemoVisionDecoderSpec& s, uint64_t seed) {
  TensorList t(seed);
  const std::vector<int64_t>& ch = s.block_out_channels;
  const int64_t top = ch.back();
  t.Conv("decoder.conv_in", top, s.in_channels, 3);
  Resnet(&t, "decoder.mid_block.resnets.0.", top, top);
  t.Norm("decoder.mid_block.attentions.0.group_norm", top);
  for (const char* proj : {"to_q", "to_k", "to_v", "to_out.0"}) {
    t.Linear(std::string("decoder.mid_block.attentions.0.") + proj, top, top);
  }
  Resnet(&t, "decoder.mid_block.resnets.1.", top, top);
  int64_t prev = top;
  const auto levels = static_cast<int64_t>(ch.size());
  for (int64_t i = 0; i < levels; ++i) {
    const int64_t out = ch[static_cast<size_t>(levels - 1 - i)];
    const std::string p = "decoder.up_blocks." + std::to_string(i) + ".";
    for (int64_t j = 0; j <= s.layers_per_block; ++j) {
      Resnet(&t, p + "resnets." + std::to_string(j) + ".", j == 0 ? prev : out, out);
    }
    if (i + 1 < levels) t.Conv(p + "upsamplers.0.conv", out, out, 3);
    prev = out;
  }
  t.Norm("decoder.conv_norm_out", ch.front());
  t.Conv("decoder.conv_out", 3, ch.front(), 3);
  return std::move(t.tensors());
}

nlohmann::ordered_json DitConfig(const DemoVisionDecoderSpec& s) {
  nlohmann::ordered_json j;
  j["_class_name"] = "VisionTransformer";
  j["_diffusers_version"] = "0.32.2";
  j["in_channels"] = s.in_channels;
  j["vec_in_dim"] = s.embedding_dim;
  j["context_in_dim"] = s.embedding_dim;
  j["hidden_size"] = s.hidden_size;
  j["mlp_ratio"] = s.mlp_ratio;
  j["num_heads"] = s.num_heads;
  j["depth"] = 0;
  j["depth_single_blocks"] = s.depth_single_blocks;
  j["axes_dim"] = s.axes_dim;
  j["theta"] = 10000;
  j["qkv_bias"] = true;
  j["guidance_embed"] = false;
  j["use_patchify"] = false;
  return j;
}

nlohmann::ordered_json VaeConfig(const DemoVisionDecoderSpec& s) {
  const std::vector<std::string> down(s.block_out_channels.size(), "DownEncoderBlock2D");
  const std::vector<std::string> up(s.block_out_channels.size(), "UpDecoderBlock2D");
  nlohmann::ordered_json j;
  j["_class_name"] = "AutoencoderKL";
  j["_diffusers_version"] = "0.32.2";
  j["act_fn"] = "silu";
  j["block_out_channels"] = s.block_out_channels;
  j["down_block_types"] = down;
  j["force_upcast"] = true;
  j["in_channels"] = 3;
  j["latent_channels"] = s.in_channels;
  j["latents_mean"] = nullptr;
  j["latents_std"] = nullptr;
  j["layers_per_block"] = s.layers_per_block;
  j["mid_block_add_attention"] = true;
  j["norm_num_groups"] = s.norm_num_groups;
  j["out_channels"] = 3;
  j["sample_size"] = 1024;
  j["scaling_factor"] = s.scaling_factor;
  j["shift_factor"] = s.shift_factor;
  j["up_block_types"] = up;
  j["use_post_quant_conv"] = false;
  j["use_quant_conv"] = false;
  return j;
}

nlohmann::ordered_json SchedulerConfig(const DemoVisionDecoderSpec& s) {
  nlohmann::ordered_json j;
  j["_class_name"] = "FlowMatchEulerDiscreteScheduler";
  j["_diffusers_version"] = "0.32.2";
  j["base_image_seq_len"] = 256;
  j["base_shift"] = 0.5;
  j["max_image_seq_len"] = 4096;
  j["max_shift"] = 1.15;
  j["num_train_timesteps"] = 1000;
  j["shift"] = s.shift;
  j["use_dynamic_shifting"] = false;
  return j;
}

nlohmann::ordered_json ModelIndex(const DemoVisionDecoderSpec& s) {
  nlohmann::ordered_json j;
  j["_class_name"] = "VisionTokenToImagePipeline";
  j["_diffusers_version"] = "0.32.2";
  j["scheduler"] = {"diffusers", "FlowMatchEulerDiscreteScheduler"};
  j["token_embedder"] = {"pipeline", "VisionTokenEmbedder"};
  j["transformer"] = {"pipeline", "VisionTransformer"};
  j["transformer2"] = s.transformer2 ? nlohmann::ordered_json{"pipeline", "VisionTransformer"}
                                     : nlohmann::ordered_json{nullptr, nullptr};
  j["vae"] = {"diffusers", "AutoencoderKL"};
  return j;
}

// Creates `dir` and writes `file_name` in it.
Status WriteJson(const std::filesystem::path& dir, const char* file_name, const nlohmann::ordered_json& json) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Internal("cannot create " + dir.string() + ": " + ec.message());
  return WriteDemoTextFile((dir / file_name).string(), json.dump(2) + "\n");
}

Status WriteComponent(const std::filesystem::path& dir, const nlohmann::ordered_json& config,
                      const std::vector<NamedTensor>& tensors) {
  OMNI_RETURN_IF_ERROR(WriteJson(dir, "config.json", config));
  return WriteSafetensors((dir / "diffusion_pytorch_model.safetensors").string(), tensors, {{"format", "pt"}});
}

}  // namespace

DemoVisionDecoderSpec BenchVisionDecoderSpec() {
  DemoVisionDecoderSpec s;
  s.hidden_size = 1920;
  s.num_heads = 24;
  s.depth_single_blocks = 2;
  s.axes_dim = {8, 36, 36};
  s.embedding_dim = 1536;
  s.block_out_channels = {128, 256, 512, 512};
  s.layers_per_block = 2;
  s.norm_num_groups = 32;
  return s;
}

Status WriteDemoVisionDecoder(const DemoVisionDecoderSpec& s, const std::string& out_dir) {
  const int64_t axes = std::accumulate(s.axes_dim.begin(), s.axes_dim.end(), int64_t{0});
  if (s.num_heads <= 0 || s.hidden_size % s.num_heads != 0 || axes != s.hidden_size / s.num_heads ||
      s.axes_dim.size() != 3) {
    return InvalidArgument("demo vision decoder spec: 3 RoPE axes must sum to the head dim (hidden / heads)");
  }
  for (int64_t c : s.block_out_channels) {
    if (c % s.norm_num_groups != 0) return InvalidArgument("demo vision decoder spec: groups must divide channels");
  }
  const std::filesystem::path dir(out_dir);
  OMNI_RETURN_IF_ERROR(WriteJson(dir / "scheduler", "scheduler_config.json", SchedulerConfig(s)));
  OMNI_RETURN_IF_ERROR(WriteComponent(dir / "transformer", DitConfig(s), DitTensors(s, s.seed)));
  if (s.transformer2) {
    OMNI_RETURN_IF_ERROR(WriteComponent(dir / "transformer2", DitConfig(s), DitTensors(s, s.seed + 1)));
  }
  OMNI_RETURN_IF_ERROR(WriteComponent(dir / "vae", VaeConfig(s), VaeTensors(s, s.seed + 2)));
  TensorList embedder(s.seed + 3);
  embedder.Add("vocab_embeddings", {s.vocab_size, s.embedding_dim}, 1.0);
  embedder.Add("uncond_embedding", {1, s.embedding_dim}, 0.0);
  nlohmann::ordered_json ec;
  ec["_class_name"] = "VisionTokenEmbedder";
  ec["_diffusers_version"] = "0.32.2";
  ec["embedding_dim"] = s.embedding_dim;
  ec["token_length"] = 729;
  ec["vocab_size"] = s.vocab_size;
  OMNI_RETURN_IF_ERROR(WriteComponent(dir / "token_embedder", ec, embedder.tensors()));
  // Last: its presence means the folder is complete (`up` reuses one that has it).
  return WriteJson(dir, "model_index.json", ModelIndex(s));
}

}  // namespace omni::models
