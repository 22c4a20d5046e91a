// The Omni model's audio decoder: a unit BigVGAN vocoder. Units (the LLM's
// <|audioN|>, 25 per second) and a speaker vector in, 24 kHz mono out,
// exactly samples_per_unit() (960) samples per unit.
//
//   auto vocoder = UnitBigVgan::Load("/models/omni/ad");
//   Tensor speaker = (*vocoder)->SpeakerRow(0);               // the table's row
//   StatusOr<std::vector<float>> wav = (*vocoder)->Vocode(units, speaker);
//
// Architecture (OmniServe's BigVGAN, "finetune" speakers): x = unit_emb[u] /
// sqrt(unit_emb_dim) concatenated over channels with the speaker vector
// repeated in time; conv_pre (k7); per stage a transposed convolution (rate
// u_i, channels halve) then the mean of one AMP block per resblock kernel
// size, each block three times x += conv2(act(conv1_d(act(x)))) with BigVGAN's
// anti-aliased SnakeBeta (ops/anti_alias.h); a last anti-aliased SnakeBeta,
// conv_post (k7) to one channel, tanh or clamp. Every convolution carries
// weight norm; the loader folds it (g * v / |v| per output slice) and also
// takes the old weight_g/weight_v names and plain weights. `causal` switches
// every convolution to left-only padding (transposed ones replicate-pad
// ceil(k/u) - 1 inputs on the left and crop u outputs on each side); the
// activations' resampling is symmetric in both modes, as in OmniServe's.
//
// Files: config.json (unit_bigvgan_config.h) and model.safetensors with the
// generator's state-dict names (unit_emb.weight, spk_emb.weight,
// conv_pre.conv.*, ups.{i}.0.deconv.*, resblocks.{r}.convs{1,2}.{n}.conv.*,
// resblocks.{r}.activations.{m}.act.{alpha,beta}, activation_post.act.*,
// conv_post.conv.*). A zero-shot checkpoint (finetune false) has the
// ECAPA-TDNN under spk_emb.* instead of the table. OmniServe's released
// decoders are torch pickles ("generator" in a .pt): load the state dict
// with torch and save it with safetensors.torch.save_file under the same
// names: tools/convert_unit_bigvgan.py.
// Compute is f32 throughout (OmniServe's default AUDIOLLM_DTYPE).
//
// Thread-safety: immutable after Load; Vocode/Forward are const and may run
// concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/activation_callback.h"
#include "models/audio_decoder/unit_bigvgan_config.h"
#include "modelfile/checkpoint.h"
#include "tensor/tensor.h"

namespace omni::models {

class UnitBigVgan {
 public:
  // Reads dir/config.json and the safetensors in dir (model.safetensors).
  static StatusOr<std::unique_ptr<UnitBigVgan>> Load(const std::string& dir);
  static StatusOr<std::unique_ptr<UnitBigVgan>> Load(const Checkpoint& ckpt, const UnitBigVganConfig& config);
  ~UnitBigVgan();

  const UnitBigVganConfig& config() const { return config_; }
  int64_t samples_per_unit() const { return config_.samples_per_unit(); }

  // Row `index` of the speaker table as [spk_emb_dim] f32 (finetune models);
  // InvalidArgument past the table (a zero-shot model has none).
  StatusOr<Tensor> SpeakerRow(int64_t index) const;

  // A zero-shot model (config finetune false) has no table: its speaker
  // vector comes from a reference clip through the ECAPA-TDNN under
  // spk_emb. (ecapa_tdnn.h, speaker_reference.h).
  bool zero_shot() const { return !config_.finetune; }
  // The clip, mono at config().sampling_rate, high-passed, normalised, as a
  // log-mel through the speaker encoder: [spk_emb_dim] f32.
  // FailedPrecondition on a finetune model; InvalidArgument for a silent,
  // non-finite or too short clip. The callback sees "normalized" ([n]),
  // "mel" ([num_mels, T]) and the encoder's activations.
  StatusOr<Tensor> SpeakerFromClip(std::span<const float> samples, const ActivationCallback* callback = nullptr) const;

  // One clip: units in [0, num_units) (InvalidArgument naming the first bad
  // one), speaker [spk_emb_dim] -> units.size() * samples_per_unit() samples
  // in [-1, 1].
  StatusOr<std::vector<float>> Vocode(std::span<const int32_t> units, const Tensor& speaker,
                                      const ActivationCallback* callback = nullptr) const;

  // Several clips, each with its speaker: the samples of each clip's own
  // one-shot forward.
  //
  // oneDNN builds primitives per input shape, and on this CPU that costs
  // seconds for the whole net (far more than a short clip's forward), so a
  // causal vocoder runs only fixed shapes: each clip is one row right-padded
  // to the smallest of Windows() that holds it (the activations end the row
  // at its own length; a causal convolution never reads ahead), and a longer
  // clip is vocoded in chunks of the largest window with the receptive
  // field's context around each (exact: context()). Rows run one forward
  // each: a batched forward of 8 rows measured 0.8x of one row at a time on
  // 2 cores (docs/PERFORMANCE.md). A centred vocoder runs one forward per
  // distinct length, its clips stacked.
  StatusOr<std::vector<std::vector<float>>> VocodeBatch(std::span<const std::vector<int32_t>> clips,
                                                        std::span<const Tensor> speakers) const;
  // The window lengths (units) a causal vocoder's forwards use, ascending.
  std::vector<int64_t> Windows() const;
  // Builds the primitives of every window's shape (a causal vocoder), so the
  // first requests do not pay for them. Takes seconds.
  void WarmUp() const;

  // Chunked vocoding. Units [first, last) of a longer sequence, vocoded
  // from `window` (a slice of the sequence starting at unit window_start,
  // covering [first, last)): their samples, ((last - first) *
  // samples_per_unit()). With context().left units before `first` and
  // context().right after `last` in the window (or the sequence's own ends),
  // the chunks joined equal the one-shot waveform up to f32 rounding.
  struct Context {
    int64_t left = 0, right = 0;  // units
  };
  Context context() const { return context_; }
  StatusOr<std::vector<float>> VocodeRange(std::span<const int32_t> window, int64_t window_start, int64_t first,
                                           int64_t last, const Tensor& speaker) const;

  // The forward: units [B, T] i64 (checked by the caller), speakers
  // [B, spk_emb_dim] f32 -> [B, T * samples_per_unit()] f32. lengths: empty,
  // or (causal only) each row's units, the rest of the row padding; samples
  // past a row's length are meaningless. The callback sees "conv_pre",
  // "ups.{i}" (after the stage's AMP blocks), "activation_post" and
  // "conv_post" ([B, C, T'] before tanh/clamp).
  Tensor Forward(const Tensor& units, const Tensor& speakers, std::span<const int64_t> lengths = {},
                 const ActivationCallback* callback = nullptr) const;

 private:
  struct Impl;
  explicit UnitBigVgan(UnitBigVganConfig config);

  // Causal: one clip through fixed windows; one window's forward.
  std::vector<float> VocodeWindowed(std::span<const int32_t> units, const Tensor& speaker) const;
  std::vector<float> VocodeWindow(std::span<const int32_t> units, const Tensor& speaker, int64_t window,
                                  int64_t keep_first, int64_t keep_last) const;

  UnitBigVganConfig config_;
  Context context_;
  std::unique_ptr<Impl> impl_;
};

// int16 PCM as OmniServe writes it: (wav * 32767) truncated toward zero.
std::vector<int16_t> ToPcm16(std::span<const float> wav);

}  // namespace omni::models
