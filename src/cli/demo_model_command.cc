#include "cli/demo_model_command.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "models/audio_decoder/demo_audio_decoder.h"
#include "models/audio_encoder/demo_audio_encoder.h"
#include "models/hyperclovax/demo_model.h"
#include "models/omni_vision/demo_vision_encoder.h"
#include "models/vision_decoder/demo_vision_decoder.h"
#include "text/demo_tokenizer.h"
#include "text/tokenizer.h"

namespace omni::cli {
namespace {

// The sizes of the LLM presets built on the llama-like config with the full
// Omni vocabulary (byte-level BPE plus every special, vision and audio token).
struct PresetSize {
  std::string_view name;
  int64_t hidden, intermediate, layers, heads, kv_heads, head_dim;
};
constexpr PresetSize kPresetSizes[] = {
    {"demo", 128, 384, 2, 4, 2, 32},       // what `omniserve up` serves: tiny
    {"small", 512, 1408, 6, 8, 2, 64},     // fleet benchmarks: several replicas on one machine
    {"bench", 1024, 2816, 12, 16, 4, 64},  // big enough for CPU performance work to mean something
};

// Those presets, plus "llama-like" and "mup": the two numerics configs the
// PyTorch goldens use (tests/data/models/).
StatusOr<models::DemoLlmSpec> PresetSpec(const std::string& preset) {
  if (preset == "llama-like") return models::LlamaLikeDemoSpec();
  if (preset == "mup") return models::MupDemoSpec();
  for (const PresetSize& p : kPresetSizes) {
    if (preset != p.name) continue;
    models::DemoLlmSpec spec = models::LlamaLikeDemoSpec();
    spec.max_position_embeddings = 8192;
    spec.hidden_size = p.hidden;
    spec.intermediate_size = p.intermediate;
    spec.num_hidden_layers = p.layers;
    spec.num_attention_heads = p.heads;
    spec.num_key_value_heads = p.kv_heads;
    spec.head_dim = p.head_dim;
    return spec;
  }
  return InvalidArgument("unknown preset '" + preset + "' (demo, small, bench, llama-like, mup)").WithParam("preset");
}

Status WriteLlm(const DemoModelFlags& flags) {
  OMNI_ASSIGN_OR_RETURN(models::DemoLlmSpec spec, PresetSpec(flags.preset));
  if (flags.seed != 0) spec.seed = flags.seed;
  if (!flags.no_tokenizer) {
    OMNI_ASSIGN_OR_RETURN(std::string tokenizer, MakeDemoTokenizerJson(DemoTokenizerSpec{}));
    OMNI_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> loaded, Tokenizer::FromJson(tokenizer));
    // The embedding table must cover every id the tokenizer can produce;
    // round up to a multiple of 64 as real checkpoints do.
    spec.vocab_size = (int64_t{loaded->vocab_size()} + 63) / 64 * 64;
    spec.tokenizer_json = std::move(tokenizer);
  }
  return models::WriteDemoLlm(spec, flags.out);
}

// The width of a preset's LLM, which the encoders' projectors write.
StatusOr<int64_t> PresetLlmWidth(const DemoModelFlags& flags, std::string_view component) {
  for (const PresetSize& p : kPresetSizes) {
    if (flags.preset == p.name) return p.hidden;
  }
  return InvalidArgument("unknown preset '" + flags.preset + "' for the " + std::string(component) +
                         " (demo, small, bench)")
      .WithParam("preset");
}

// The vision encoder of a preset: its projector writes the preset LLM's width.
Status WriteVisionEncoder(const DemoModelFlags& flags) {
  OMNI_ASSIGN_OR_RETURN(int64_t llm_hidden, PresetLlmWidth(flags, "vision encoder"));
  models::DemoVisionEncoderSpec spec = flags.preset == "bench" ? models::BenchVisionEncoderSpec(llm_hidden)
                                                                : models::DemoVisionEncoderSpec{};
  spec.llm_hidden_size = llm_hidden;
  if (flags.seed != 0) spec.seed = flags.seed;
  return models::WriteDemoVisionEncoder(spec, flags.out);
}

// The audio encoder of a preset, likewise.
Status WriteAudioEncoder(const DemoModelFlags& flags) {
  OMNI_ASSIGN_OR_RETURN(int64_t llm_hidden, PresetLlmWidth(flags, "audio encoder"));
  models::DemoAudioEncoderSpec spec = flags.preset == "bench" ? models::BenchAudioEncoderSpec(llm_hidden)
                                                               : models::DemoAudioEncoderSpec{};
  spec.llm_hidden_size = llm_hidden;
  if (flags.seed != 0) spec.seed = flags.seed;
  return models::WriteDemoAudioEncoder(spec, flags.out);
}

// The vision decoder: tiny for `demo`, the released widths for `bench`.
Status WriteVisionDecoder(const DemoModelFlags& flags) {
  if (flags.preset != "demo" && flags.preset != "bench") {
    return InvalidArgument("unknown preset '" + flags.preset + "' for the vision decoder (demo, bench)")
        .WithParam("preset");
  }
  models::DemoVisionDecoderSpec spec =
      flags.preset == "bench" ? models::BenchVisionDecoderSpec() : models::DemoVisionDecoderSpec{};
  if (flags.seed != 0) spec.seed = flags.seed;
  return models::WriteDemoVisionDecoder(spec, flags.out);
}

// The audio decoder: tiny for `demo`, BigVGAN-v2's widths for `bench`.
Status WriteAudioDecoder(const DemoModelFlags& flags) {
  if (flags.preset != "demo" && flags.preset != "bench") {
    return InvalidArgument("unknown preset '" + flags.preset + "' for the audio decoder (demo, bench)")
        .WithParam("preset");
  }
  models::DemoAudioDecoderSpec spec =
      flags.preset == "bench" ? models::BenchAudioDecoderSpec() : models::DemoAudioDecoderSpec{};
  if (flags.seed != 0) spec.seed = flags.seed;
  spec.global_context_att = flags.global_context_att;
  return models::WriteDemoAudioDecoder(spec, flags.out);
}

}  // namespace

CLI::App* AddDemoModelCommand(CLI::App& app, DemoModelFlags* flags) {
  CLI::App* cmd = app.add_subcommand("make-demo-model",
                                     "write tiny random-weight component folders with the real schema");
  cmd->add_option("--component", flags->component, "component to write")
      ->check(CLI::IsMember({"llm", "ve", "ae", "vd", "ad"}))
      ->capture_default_str();
  cmd->add_option("--out", flags->out, "output folder (created)")->required();
  cmd->add_option("--preset", flags->preset, "demo | small | bench (every component) | llama-like | mup (llm only)")
      ->capture_default_str();
  cmd->add_option("--seed", flags->seed, "weight seed (0: the preset's)")->capture_default_str();
  cmd->add_flag("--no-tokenizer", flags->no_tokenizer, "write no tokenizer.json (numerics presets)");
  cmd->add_flag("--global-context-att", flags->global_context_att,
                "ad: the zero-shot companion's speaker encoder pools with global context (numerics goldens)");
  return cmd;
}

Status WriteDemoModel(const DemoModelFlags& flags) {
  if (flags.component == "ve") return WriteVisionEncoder(flags);
  if (flags.component == "ae") return WriteAudioEncoder(flags);
  if (flags.component == "vd") return WriteVisionDecoder(flags);
  if (flags.component == "ad") return WriteAudioDecoder(flags);
  return WriteLlm(flags);
}

int RunDemoModelCommand(const DemoModelFlags& flags) {
  Status s = WriteDemoModel(flags);
  if (!s.ok()) {
    std::fprintf(stderr, "omniserve make-demo-model: %s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("wrote %s (component %s, preset %s)\n", flags.out.c_str(), flags.component.c_str(),
              flags.preset.c_str());
  return 0;
}

}  // namespace omni::cli
