#include "models/audio_decoder/unit_bigvgan_config.h"

#include <string>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

namespace omni::models {
namespace {

using nlohmann::json;

struct Reader {
  const json& root;
  std::string_view source;

  Status Error(std::string_view key, std::string_view what) const {
    return InvalidArgument(fmt::format("{}: {} {}", source, key, what));
  }
  Status Positive(const char* key, int64_t* out, bool required) const {
    if (!root.contains(key)) return required ? Error(key, "is missing") : Status::Ok();
    const json& v = root[key];
    if (!v.is_number_integer() || v.get<int64_t>() <= 0) return Error(key, "must be a positive integer");
    *out = v.get<int64_t>();
    return Status::Ok();
  }
  Status Bool(const char* key, bool* out) const {
    if (!root.contains(key)) return Status::Ok();
    if (!root[key].is_boolean()) return Error(key, "must be true or false");
    *out = root[key].get<bool>();
    return Status::Ok();
  }
  // A number >= 0, or null (left at the default).
  Status Frequency(const char* key, double* out) const {
    if (!root.contains(key) || root[key].is_null()) return Status::Ok();
    if (!root[key].is_number() || root[key].get<double>() < 0) return Error(key, "must be a number >= 0 or null");
    *out = root[key].get<double>();
    return Status::Ok();
  }
  static bool PositiveList(const json& v, std::vector<int64_t>* out) {
    if (!v.is_array() || v.empty()) return false;
    out->clear();
    for (const json& e : v) {
      if (!e.is_number_integer() || e.get<int64_t>() <= 0) return false;
      out->push_back(e.get<int64_t>());
    }
    return true;
  }
  Status List(const char* key, std::vector<int64_t>* out) const {
    if (!root.contains(key)) return Status::Ok();
    if (!PositiveList(root[key], out)) return Error(key, "must be a non-empty list of positive integers");
    return Status::Ok();
  }
  Status Lists(const char* key, std::vector<std::vector<int64_t>>* out) const {
    if (!root.contains(key)) return Status::Ok();
    const json& v = root[key];
    if (!v.is_array() || v.empty()) return Error(key, "must be a non-empty list of lists");
    out->assign(v.size(), {});
    for (size_t i = 0; i < v.size(); ++i) {
      if (!PositiveList(v[i], &(*out)[i])) return Error(key, "must be a list of lists of positive integers");
    }
    return Status::Ok();
  }
};

}  // namespace

int64_t UnitBigVganConfig::samples_per_unit() const {
  int64_t n = 1;
  for (int64_t r : upsample_rates) n *= r;
  return n;
}

StatusOr<UnitBigVganConfig> ParseUnitBigVganConfig(std::string_view text, std::string_view source) {
  const json root = json::parse(text, nullptr, false);
  if (root.is_discarded() || !root.is_object()) return InvalidArgument(fmt::format("{}: not a JSON object", source));
  const Reader r{root, source};
  UnitBigVganConfig c;
  OMNI_RETURN_IF_ERROR(r.Positive("num_units", &c.num_units, true));
  OMNI_RETURN_IF_ERROR(r.Positive("unit_emb_dim", &c.unit_emb_dim, true));
  OMNI_RETURN_IF_ERROR(r.Positive("spk_emb_dim", &c.spk_emb_dim, true));
  OMNI_RETURN_IF_ERROR(r.Positive("upsample_initial_channel", &c.upsample_initial_channel, true));
  OMNI_RETURN_IF_ERROR(r.Bool("finetune", &c.finetune));
  if (c.finetune) {
    OMNI_RETURN_IF_ERROR(r.Positive("num_spk", &c.num_spk, true));
  } else {
    c.num_spk = 0;
  }
  OMNI_RETURN_IF_ERROR(r.Positive("num_mels", &c.num_mels, !c.finetune));
  OMNI_RETURN_IF_ERROR(r.Positive("spk_hidden_dim", &c.spk_hidden_dim, !c.finetune));
  OMNI_RETURN_IF_ERROR(r.Bool("global_context_att", &c.global_context_att));
  OMNI_RETURN_IF_ERROR(r.Positive("n_fft", &c.n_fft, false));
  OMNI_RETURN_IF_ERROR(r.Positive("hop_size", &c.hop_size, false));
  OMNI_RETURN_IF_ERROR(r.Positive("win_size", &c.win_size, false));
  OMNI_RETURN_IF_ERROR(r.Frequency("fmin", &c.fmin));
  OMNI_RETURN_IF_ERROR(r.Frequency("fmax", &c.fmax));
  OMNI_RETURN_IF_ERROR(r.List("upsample_rates", &c.upsample_rates));
  OMNI_RETURN_IF_ERROR(r.List("upsample_kernel_sizes", &c.upsample_kernel_sizes));
  OMNI_RETURN_IF_ERROR(r.List("resblock_kernel_sizes", &c.resblock_kernel_sizes));
  OMNI_RETURN_IF_ERROR(r.Lists("resblock_dilation_sizes", &c.resblock_dilation_sizes));
  OMNI_RETURN_IF_ERROR(r.Bool("snake_logscale", &c.snake_logscale));
  OMNI_RETURN_IF_ERROR(r.Bool("causal", &c.causal));
  OMNI_RETURN_IF_ERROR(r.Bool("use_bias_at_final", &c.use_bias_at_final));
  OMNI_RETURN_IF_ERROR(r.Bool("use_tanh_at_final", &c.use_tanh_at_final));
  int64_t rate = c.sampling_rate;
  OMNI_RETURN_IF_ERROR(r.Positive("sampling_rate", &rate, false));
  c.sampling_rate = static_cast<int>(rate);

  if (!c.finetune) {
    if (c.fmax == 0) c.fmax = c.sampling_rate / 2.0;
    if (c.win_size > c.n_fft || c.hop_size > c.n_fft || c.n_fft > 65536) {
      return r.Error("n_fft", "must be at most 65536 and hold win_size and hop_size");
    }
    if (c.fmin >= c.fmax || c.fmax > c.sampling_rate / 2.0) {
      return r.Error("fmax", "must be above fmin and at most half the sampling rate");
    }
    if (c.spk_hidden_dim % 8 != 0) return r.Error("spk_hidden_dim", "must be a multiple of 8 (the Res2 groups)");
  }
  if (root.contains("resblock") && root["resblock"] != "1") return r.Error("resblock", "must be \"1\" (AMPBlock1)");
  if (root.contains("activation") && root["activation"] != "snakebeta") {
    return r.Error("activation", "must be \"snakebeta\"");
  }
  if (c.upsample_rates.size() != c.upsample_kernel_sizes.size()) {
    return r.Error("upsample_kernel_sizes", "must have one kernel per upsample rate");
  }
  if (c.resblock_kernel_sizes.size() != c.resblock_dilation_sizes.size()) {
    return r.Error("resblock_dilation_sizes", "must have one list per resblock kernel size");
  }
  if (c.upsample_rates.size() > 16 || (c.upsample_initial_channel >> c.upsample_rates.size()) < 1) {
    return r.Error("upsample_initial_channel", "must stay at least 1 after halving once per upsample stage");
  }
  for (size_t i = 0; i < c.upsample_rates.size(); ++i) {
    const int64_t u = c.upsample_rates[i], k = c.upsample_kernel_sizes[i];
    if (k < u) return r.Error("upsample_kernel_sizes", "must not be smaller than their upsample rates");
    // The causal transposed conv pads ceil(k/u) - 1 inputs and crops u
    // outputs per side: exactly rate x input only when that works out.
    const int64_t pad = (k + u - 1) / u - 1;
    if (c.causal && (pad - 1) * u + k - 2 * u != 0) {
      return r.Error("upsample_kernel_sizes", fmt::format("{} does not give {} x the input causally (use 2 x rate)", k, u));
    }
  }
  return c;
}

}  // namespace omni::models
