#include "models/audio_encoder/demo_audio_encoder.h"

#include <cmath>
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "modelfile/safetensors.h"
#include "models/demo_weights.h"

namespace omni::models {
namespace {

constexpr int64_t kMels = 128;
constexpr int64_t kPositions = 1500;  // max_source_positions: a 30 s chunk after the stride-2 conv
constexpr int64_t kS3HeadDim = 64;

// Whisper's position table: sinusoids of 1500 positions, sin half then cos
// half, timescales geometric from 1 to 10000 (the released checkpoint stores
// the same table; random values would do as well, this keeps rows sensible).
Tensor SinusoidTable(int64_t positions, int64_t width) {
  Tensor t = Tensor::Empty({positions, width}, DType::kF32);
  float* p = t.data<float>();
  const int64_t half = width / 2;
  const double step = std::log(10000.0) / static_cast<double>(half - 1);
  for (int64_t pos = 0; pos < positions; ++pos) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(pos) * std::exp(-step * static_cast<double>(i));
      p[pos * width + i] = static_cast<float>(std::sin(angle));
      p[pos * width + half + i] = static_cast<float>(std::cos(angle));
    }
  }
  return t.To(DType::kBF16);
}

std::vector<NamedTensor> DemoTensors(const DemoAudioEncoderSpec& s) {
  std::vector<NamedTensor> out;
  auto add = [&](const std::string& name, const Shape& shape, double std, double offset = 0.0) {
    out.push_back({name, RandomBf16(s.seed, name, shape, std, offset)});
  };
  auto linear = [&](const std::string& name, int64_t out_features, int64_t in_features, bool bias = true) {
    add(name + ".weight", {out_features, in_features}, 1.0 / std::sqrt(static_cast<double>(in_features)));
    if (bias) add(name + ".bias", {out_features}, 0.02);
  };
  auto conv = [&](const std::string& name, int64_t out_channels, int64_t in_channels, int64_t k) {
    add(name + ".weight", {out_channels, in_channels, k}, 1.0 / std::sqrt(static_cast<double>(in_channels * k)));
    add(name + ".bias", {out_channels}, 0.02);
  };
  // Norm weights near 1 but not 1, so a missing norm shows.
  auto norm = [&](const std::string& name, int64_t dim) {
    add(name + ".weight", {dim}, 0.1, 1.0);
    add(name + ".bias", {dim}, 0.02);
  };

  const std::string a = "model.audio_model.";
  const int64_t d = s.d_model;
  conv(a + "conv1", d, kMels, 3);
  conv(a + "conv2", d, d, 3);
  out.push_back({a + "embed_positions.weight", SinusoidTable(kPositions, d)});
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string p = a + "layers." + std::to_string(i) + ".";
    linear(p + "self_attn.q_proj", d, d);
    linear(p + "self_attn.k_proj", d, d, /*bias=*/false);
    linear(p + "self_attn.v_proj", d, d);
    linear(p + "self_attn.out_proj", d, d);
    norm(p + "self_attn_layer_norm", d);
    linear(p + "fc1", s.ffn_dim, d);
    linear(p + "fc2", d, s.ffn_dim);
    norm(p + "final_layer_norm", d);
  }
  norm(a + "layer_norm", d);
  linear("model.audio_projector.fc1", d, d);
  linear("model.audio_projector.fc2", s.llm_hidden_size, d);

  const std::string t = "model.discrete_audio_model.";
  const int64_t w = s.s3_heads * kS3HeadDim;
  conv(t + "encoder.conv1", w, kMels, 3);
  conv(t + "encoder.conv2", w, w, 3);
  for (int64_t i = 0; i < s.s3_layers; ++i) {
    const std::string p = t + "encoder.blocks." + std::to_string(i) + ".";
    linear(p + "attn.query", w, w);
    linear(p + "attn.key", w, w, /*bias=*/false);
    linear(p + "attn.value", w, w);
    linear(p + "attn.out", w, w);
    add(p + "attn.fsmn_block.weight", {w, 1, 31}, 0.1);
    norm(p + "attn_ln", w);
    linear(p + "mlp.0", 4 * w, w);
    linear(p + "mlp.2", w, 4 * w);
    norm(p + "mlp_ln", w);
  }
  // FSQ: project_down to 8 digits. A larger spread than a plain Linear's so
  // tanh() uses all three levels of each digit on the demo weights.
  add(t + "quantizer._codebook.project_down.weight", {8, w}, 3.0 / std::sqrt(static_cast<double>(w)));
  add(t + "quantizer._codebook.project_down.bias", {8}, 0.1);
  return out;
}

std::string ConfigJson(const DemoAudioEncoderSpec& s) {
  nlohmann::ordered_json j;
  j["architectures"] = {"HCXVisionV2ForCausalLM"};
  j["model_type"] = "vlm";
  j["audio_config"] = {{"model_type", "qwen2_audio_encoder"},
                       {"d_model", s.d_model},
                       {"encoder_layers", s.layers},
                       {"encoder_attention_heads", s.heads},
                       {"encoder_ffn_dim", s.ffn_dim},
                       {"num_mel_bins", kMels},
                       {"max_source_positions", kPositions},
                       {"activation_function", "gelu"}};
  j["discrete_audio_config"] = {{"model_type", "cosyvoice2"},
                                {"n_mels", kMels},
                                {"n_audio_state", s.s3_heads * kS3HeadDim},
                                {"n_audio_head", s.s3_heads},
                                {"n_audio_layer", s.s3_layers},
                                {"n_codebook_size", 6561}};
  j["audio_projector_type"] = "mlp";
  j["text_config"] = {{"hidden_size", s.llm_hidden_size}};
  return j.dump(2) + "\n";
}

std::string PreprocessorJson() {
  nlohmann::ordered_json j;
  j["feature_extractor_type"] = "WhisperFeatureExtractor";
  j["feature_size"] = kMels;
  j["sampling_rate"] = 16000;
  j["hop_length"] = 160;
  j["n_fft"] = 400;
  j["chunk_length"] = 30;
  j["n_samples"] = 480000;
  j["nb_max_frames"] = 3000;
  j["padding_side"] = "right";
  j["padding_value"] = 0.0;
  j["return_attention_mask"] = true;
  return j.dump(2) + "\n";
}

}  // namespace

DemoAudioEncoderSpec BenchAudioEncoderSpec(int64_t llm_hidden_size) {
  DemoAudioEncoderSpec s;
  s.d_model = 1280;
  s.layers = 4;
  s.heads = 20;
  s.ffn_dim = 5120;
  s.llm_hidden_size = llm_hidden_size;
  s.s3_heads = 20;
  s.s3_layers = 2;
  return s;
}

Status WriteDemoAudioEncoder(const DemoAudioEncoderSpec& spec, const std::string& out_dir) {
  if (spec.d_model % spec.heads != 0 || spec.d_model % 2 != 0 || spec.layers < 1 || spec.s3_layers < 1 ||
      spec.s3_heads < 1) {
    return InvalidArgument("demo audio encoder spec: heads must divide d_model, and every part needs a layer");
  }
  const std::filesystem::path dir(out_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Internal("cannot create " + out_dir + ": " + ec.message());
  OMNI_RETURN_IF_ERROR(WriteDemoTextFile((dir / "config.json").string(), ConfigJson(spec)));
  OMNI_RETURN_IF_ERROR(WriteDemoTextFile((dir / "preprocessor_config.json").string(), PreprocessorJson()));
  return WriteSafetensors((dir / "model.safetensors").string(), DemoTensors(spec), {{"format", "pt"}});
}

}  // namespace omni::models
