#include "cli/demo_model_command.h"

#include <CLI/CLI.hpp>

#include <cstdio>

#include "models/demo_model.h"
#include "text/demo_tokenizer.h"
#include "text/tokenizer.h"

namespace omni::cli {
namespace {

// The LLM presets. "demo" is what `omniserve up` serves: tiny, with the full
// Omni vocabulary (byte-level BPE plus every special, vision and audio token).
// "bench" is big enough for CPU performance work to mean something (hidden
// 1024, 12 layers). "small" (hidden 512, 6 layers) is for fleet benchmarks
// that run several replicas on one machine. "llama-like" and "mup" are the two numerics configs the
// PyTorch goldens use (tests/data/models/).
StatusOr<models::DemoLlmSpec> PresetSpec(const std::string& preset) {
  if (preset == "llama-like") return models::LlamaLikeDemoSpec();
  if (preset == "mup") return models::MupDemoSpec();
  models::DemoLlmSpec spec = models::LlamaLikeDemoSpec();
  spec.max_position_embeddings = 8192;
  if (preset == "demo") {
    spec.hidden_size = 128;
    spec.intermediate_size = 384;
    spec.num_hidden_layers = 2;
    spec.num_attention_heads = 4;
    spec.num_key_value_heads = 2;
    spec.head_dim = 32;
    return spec;
  }
  if (preset == "small") {
    spec.hidden_size = 512;
    spec.intermediate_size = 1408;
    spec.num_hidden_layers = 6;
    spec.num_attention_heads = 8;
    spec.num_key_value_heads = 2;
    spec.head_dim = 64;
    return spec;
  }
  if (preset == "bench") {
    spec.hidden_size = 1024;
    spec.intermediate_size = 2816;
    spec.num_hidden_layers = 12;
    spec.num_attention_heads = 16;
    spec.num_key_value_heads = 4;
    spec.head_dim = 64;
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

}  // namespace

CLI::App* AddDemoModelCommand(CLI::App& app, DemoModelFlags* flags) {
  CLI::App* cmd = app.add_subcommand("make-demo-model",
                                     "write tiny random-weight component folders with the real schema");
  cmd->add_option("--component", flags->component, "component to write")
      ->check(CLI::IsMember({"llm"}))
      ->capture_default_str();
  cmd->add_option("--out", flags->out, "output folder (created)")->required();
  cmd->add_option("--preset", flags->preset, "demo | small | bench | llama-like | mup")->capture_default_str();
  cmd->add_option("--seed", flags->seed, "weight seed (0: the preset's)")->capture_default_str();
  cmd->add_flag("--no-tokenizer", flags->no_tokenizer, "write no tokenizer.json (numerics presets)");
  return cmd;
}

Status WriteDemoModel(const DemoModelFlags& flags) { return WriteLlm(flags); }

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
