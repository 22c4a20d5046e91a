#!/usr/bin/env python3
"""Independent PyTorch reference for the Omni audio decoder, the "unit BigVGAN"
vocoder of HyperCLOVA X SEED Omni (goldens for the audio decoder's C++ tests):
discrete units in [0, num_units) at 25 Hz plus a speaker -> 24 kHz samples
(960 per unit). Written from the architecture description (BigVGAN v2 with a
unit / speaker embedding front end), with plain torch ops, not from
omniserve's C++.

Weights: every conv is weight-normed, w = v * (g / ||v||), the norm over all
dims but 0 (for ConvTranspose1d dim 0 is the input channel), from
`.parametrizations.weight.original0/1`, `.weight_g/.weight_v` or a plain
`.weight`. bf16 tensors are widened to f32; all math is f32.

Forward for units u[0..T) and speaker s:
  x = cat(unit_emb[u] * float32(unit_emb_dim^-0.5), spk_emb[s] repeated) on
  channels ([1, unit_emb_dim + spk_emb_dim, T]); conv_pre (k7); per stage i:
  ups[i] (ConvTranspose1d, rate u_i, kernel k_i), then (AMP_0(x) + AMP_1(x) +
  AMP_2(x)) / 3 (summed in that order); activation_post; conv_post (k7,
  bias iff use_bias_at_final); tanh (use_tanh_at_final) or clamp to [-1, 1].
  AMP block (kernel k, dilations d): x += convs2[n](A(2n+1)(convs1[n](A(2n)(x))))
  for n = 0..2, convs1[n] with dilation d[n], convs2[n] with dilation 1.
Padding, non-causal: Conv1d zero padding (k*d - d) // 2 on both sides;
  ConvTranspose1d padding ceil((k - u) / 2), output_padding (k - u) % 2.
Padding, causal: Conv1d zero-pads (k - 1) * d on the left only;
  ConvTranspose1d replicate-pads the input on the left by ceil(k / u) - 1,
  no padding, then the first u and the last u outputs are dropped (length
  T * u only when k == 2u, which the script asserts through the lengths).
Anti-aliased activation A (always non-causal): K = 12 Kaiser-windowed sinc,
  cutoff 0.25, half width 0.3 (beta from the Kaiser formula), normalised to
  sum 1, same filter up and down. Up: replicate-pad 5 / 5, 2 *
  conv_transpose1d(stride 2, groups C), crop 15 / 15 -> 2T. SnakeBeta:
  x + 1 / (exp(beta) + 1e-9) * sin(x * exp(alpha))^2. Down: replicate-pad
  5 / 6, conv1d(stride 2, groups C) -> T.
int16 = trunc_toward_zero(float32(wav * 32767)).

Golden: units from UNIT_FORMULA; one case per speaker (first and last row of
spk_emb) with all samples (7 significant digits), their int16 and the RMS of
the checkpoints conv_pre, ups.{i} (after the AMP mean), activation_post,
conv_post (before tanh); "activation": resblocks.0.activations.0 alone on
ACT_FORMULA's [C, 50] input.

Usage (DIR: config.json, model.safetensors, spk_list.txt):
  /usr/bin/python3 tools/reference/audio_decoder_ref.py --model DIR \
      --out tests/data/audio_decoder/decoder_golden.json [--units 20]
"""
import argparse
import hashlib
import json
import math
import os
import struct
import time

import numpy as np
import torch
import torch.nn.functional as F

AA_K = 12
AA_CUTOFF = 0.5 / 2
AA_HALF_WIDTH = 0.6 / 2
UNIT_FORMULA = "u[t] = (t * 2731 + 17) % num_units"
ACT_FORMULA = "x[c][t] = float32(sin(0.37 * t + 0.5 * c) * (1 + 0.1 * c)) (float64 math)"
ACT_T = 50


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        raw, dt = data[8 + n + b:8 + n + e], info["dtype"]
        if dt == "F32":
            a = np.frombuffer(raw, "<f4").copy()
        elif dt == "BF16":
            a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        elif dt == "F16":
            a = np.frombuffer(raw, "<f2").astype(np.float32)
        elif dt == "I64":
            a = np.frombuffer(raw, "<i8").copy()
        else:
            raise ValueError(f"{name}: dtype {dt} not handled")
        out[name] = torch.from_numpy(a.reshape(info["shape"]))
    return out, hashlib.sha256(data).hexdigest()


def kaiser_sinc_filter(K=AA_K, cutoff=AA_CUTOFF, half_width=AA_HALF_WIDTH):
    assert K % 2 == 0
    half = K // 2
    delta_f = 4 * half_width
    A = 2.285 * (half - 1) * math.pi * delta_f + 7.95
    if A > 50.0:
        beta = 0.1102 * (A - 8.7)
    elif A >= 21.0:
        beta = 0.5842 * (A - 21) ** 0.4 + 0.07886 * (A - 21.0)
    else:
        beta = 0.0
    window = torch.kaiser_window(K, periodic=False, beta=beta, dtype=torch.float32)
    time_ = torch.arange(-half, half, dtype=torch.float32) + 0.5
    filt = 2 * cutoff * window * torch.sinc(2 * cutoff * time_)
    return filt / filt.sum()


class Decoder:
    def __init__(self, W, cfg):
        self.W, self.cfg = W, cfg
        self.causal = cfg.get("causal", True)
        self.filt = kaiser_sinc_filter()
        self.logscale = cfg.get("snake_logscale", True)

    def weight(self, p):
        W = self.W
        if p + ".parametrizations.weight.original1" in W:
            g, v = W[p + ".parametrizations.weight.original0"], W[p + ".parametrizations.weight.original1"]
        elif p + ".weight_v" in W:
            g, v = W[p + ".weight_g"], W[p + ".weight_v"]
        else:
            return W[p + ".weight"].float()
        g, v = g.float(), v.float()
        norm = torch.linalg.vector_norm(v, dim=tuple(range(1, v.dim())), keepdim=True)
        return v * (g / norm)

    def bias(self, p):
        return self.W.get(p + ".bias")

    def conv(self, x, p, k, d=1):
        w = self.weight(p)
        assert w.shape[-1] == k, (p, w.shape, k)
        if self.causal:
            x = F.pad(x, ((k - 1) * d, 0))
        else:
            pad = (k * d - d) // 2
            x = F.pad(x, (pad, pad))
        return F.conv1d(x, w, self.bias(p), dilation=d)

    def deconv(self, x, p, u, k):
        w = self.weight(p)
        assert w.shape[-1] == k, (p, w.shape, k)
        T = x.shape[-1]
        if self.causal:
            x = F.pad(x, (math.ceil(k / u) - 1, 0), mode="replicate")
            y = F.conv_transpose1d(x, w, self.bias(p), stride=u)
            y = y[..., u:y.shape[-1] - u]
        else:
            y = F.conv_transpose1d(x, w, self.bias(p), stride=u, padding=math.ceil((k - u) / 2),
                                   output_padding=(k - u) % 2)
        assert y.shape[-1] == T * u, f"{p}: {T} * {u} != {y.shape[-1]} (kernel {k})"
        return y

    def check_filters(self, p):
        for key in (p + ".upsample.filter", p + ".downsample.lowpass.filter"):
            if key in self.W:
                stored = self.W[key].float().reshape(-1)
                err = float((stored - self.filt).abs().max())
                assert stored.numel() == AA_K and err < 1e-6, f"{key}: stored filter differs by {err}"

    def upsample2(self, x):
        C, pad = x.shape[1], AA_K // 2 - 1
        y = 2 * F.conv_transpose1d(F.pad(x, (pad, pad), mode="replicate"),
                                   self.filt.view(1, 1, -1).expand(C, 1, AA_K), stride=2, groups=C)
        left, right = pad * 2 + (AA_K - 2) // 2, pad * 2 + (AA_K - 2 + 1) // 2
        return y[..., left:y.shape[-1] - right]

    def downsample2(self, x):
        C = x.shape[1]
        x = F.pad(x, (AA_K // 2 - 1, AA_K // 2), mode="replicate")
        return F.conv1d(x, self.filt.view(1, 1, -1).expand(C, 1, AA_K), stride=2, groups=C)

    def snake(self, x, p):
        a, b = self.W[p + ".act.alpha"].float().view(1, -1, 1), self.W[p + ".act.beta"].float().view(1, -1, 1)
        if self.logscale:
            a, b = torch.exp(a), torch.exp(b)
        return x + 1.0 / (b + 1e-9) * torch.sin(x * a) ** 2

    def act(self, x, p):
        self.check_filters(p)
        T = x.shape[-1]
        y = self.downsample2(self.snake(self.upsample2(x), p))
        assert y.shape[-1] == T
        return y

    def amp_block(self, x, r, k, dil):
        p = f"resblocks.{r}"
        for n, d in enumerate(dil):
            xt = self.act(x, f"{p}.activations.{2 * n}")
            xt = self.conv(xt, f"{p}.convs1.{n}.conv", k, d)
            xt = self.act(xt, f"{p}.activations.{2 * n + 1}")
            xt = self.conv(xt, f"{p}.convs2.{n}.conv", k, 1)
            x = x + xt
        return x

    def forward(self, units, spk):
        c, W = self.cfg, self.W
        T = len(units)
        scale = torch.tensor(c["unit_emb_dim"] ** -0.5, dtype=torch.float32)
        ue = W["unit_emb.weight"].float()[torch.tensor(units, dtype=torch.long)] * scale  # [T, D]
        se = W["spk_emb.weight"].float()[spk].view(-1, 1).expand(-1, T)
        x = torch.cat([ue.t(), se], 0)[None].contiguous()
        rms = {}
        x = self.conv(x, "conv_pre.conv", 7)
        rms["conv_pre"] = x
        nk = len(c["resblock_kernel_sizes"])
        for i, (u, k) in enumerate(zip(c["upsample_rates"], c["upsample_kernel_sizes"])):
            x = self.deconv(x, f"ups.{i}.0.deconv", u, k)
            xs = None
            for j, (rk, rd) in enumerate(zip(c["resblock_kernel_sizes"], c["resblock_dilation_sizes"])):
                y = self.amp_block(x, i * nk + j, rk, rd)
                xs = y if xs is None else xs + y
            x = xs / nk
            rms[f"ups.{i}"] = x
        x = self.act(x, "activation_post")
        rms["activation_post"] = x
        x = self.conv(x, "conv_post.conv", 7)
        rms["conv_post"] = x
        wav = torch.tanh(x) if c.get("use_tanh_at_final", True) else torch.clamp(x, -1.0, 1.0)
        rms = {k: float(v.double().pow(2).mean().sqrt()) for k, v in rms.items()}
        return wav.reshape(-1), rms


# ---------------------------------------------------------------- self-checks
def naive_deconv(x, w, u):
    """Scatter form of a transposed conv (no padding): x [Ci, T], w [Ci, Co, k] -> [Co, (T-1)u + k]."""
    Ci, T = x.shape
    k = w.shape[-1]
    y = np.zeros((w.shape[1], (T - 1) * u + k))
    for t in range(T):
        for j in range(k):
            y[:, t * u + j] += x[:, t] @ w[:, :, j]
    return y


def self_check():
    torch.manual_seed(0)
    dec = Decoder({}, {})
    err = 0.0
    for causal in (False, True):
        dec.causal = causal
        for k, d in ((7, 1), (3, 3), (11, 5)):
            m = torch.nn.Conv1d(6, 5, k, dilation=d, padding=(k - 1) * d if causal else (k * d - d) // 2)
            dec.W = {"c.weight": m.weight.detach(), "c.bias": m.bias.detach()}
            x = torch.randn(1, 6, 40)
            ref = m(x).detach()[..., :40]  # causal: the first T of the two-sided padded output
            err = max(err, float((dec.conv(x, "c", k, d) - ref).abs().max()))
        for u in (5, 4, 3, 2):
            k = 2 * u
            w, b, x = torch.randn(6, 5, k), torch.randn(5), torch.randn(1, 6, 30)
            dec.W = {"c.weight": w, "c.bias": b}
            xs = F.pad(x, (1, 0), mode="replicate") if causal else x
            full = naive_deconv(xs[0].double().numpy(), w.double().numpy(), u) + b.double().numpy()[:, None]
            if causal:
                ref = full[:, u:full.shape[1] - u]
            else:
                m = torch.nn.ConvTranspose1d(6, 5, k, stride=u, padding=math.ceil((k - u) / 2),
                                             output_padding=(k - u) % 2)
                m.weight.data.copy_(w)
                m.bias.data.copy_(b)
                p = math.ceil((k - u) / 2)
                ref = full[:, p:p + 30 * u]
                err = max(err, float((m(x).detach()[0].double() - torch.from_numpy(ref)).abs().max()))
            err = max(err, float((dec.deconv(x, "c", u, k)[0].double() - torch.from_numpy(ref)).abs().max()))
    assert err < 1e-4, f"conv padding self-check failed: {err}"
    # Anti-aliasing: zero-stuffing + correlation with the flipped filter equals the transposed conv.
    x = torch.randn(1, 3, 40)
    pad = AA_K // 2 - 1
    xp = F.pad(x, (pad, pad), mode="replicate")
    z = torch.zeros(1, 3, 2 * xp.shape[-1] - 1)
    z[..., ::2] = xp
    z = F.pad(z, (AA_K - 1, AA_K - 1))
    y2 = 2 * F.conv1d(z, dec.filt.flip(0).view(1, 1, -1).expand(3, 1, AA_K), groups=3)
    y2 = y2[..., 15:15 + 80]
    up_err = float((dec.upsample2(x) - y2).abs().max())
    assert up_err < 1e-5, f"upsample self-check failed: {up_err}"
    # Low-frequency sine through up + down (no SnakeBeta) comes back, away from the edges.
    t = torch.arange(200, dtype=torch.float32)
    s = torch.sin(2 * math.pi * 0.02 * t).view(1, 1, -1)
    up = dec.upsample2(s)
    s2 = torch.sin(2 * math.pi * 0.01 * (torch.arange(400, dtype=torch.float32) - 0.5)).view(1, 1, -1)
    rt = dec.downsample2(up)
    up_dev = float((up - s2)[..., 20:-20].abs().max())
    rt_dev = float((rt - s)[..., 10:-10].abs().max())
    assert up_dev < 0.02 and rt_dev < 0.02, f"anti-alias round trip: up {up_dev}, up+down {rt_dev}"
    print(f"self-check ok: conv/deconv padding err {err:.2g}, upsample forms {up_err:.2g}, "
          f"sine up {up_dev:.3g} / up+down {rt_dev:.3g}")


# ---------------------------------------------------------------- main
def g7(v):
    return float(f"{float(v):.7g}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--units", type=int, default=20)
    args = ap.parse_args()
    t0 = time.time()
    self_check()
    W, sha = read_safetensors(os.path.join(args.model, "model.safetensors"))
    cfg = json.load(open(os.path.join(args.model, "config.json")))
    keys = ["num_units", "unit_emb_dim", "spk_emb_dim", "num_spk", "finetune", "upsample_rates",
            "upsample_kernel_sizes", "upsample_initial_channel", "resblock", "resblock_kernel_sizes",
            "resblock_dilation_sizes", "activation", "snake_logscale", "causal", "use_bias_at_final",
            "use_tanh_at_final", "sampling_rate"]
    sub = {k: cfg[k] for k in keys if k in cfg}
    sub.setdefault("causal", True)
    sub.setdefault("use_bias_at_final", True)
    sub.setdefault("use_tanh_at_final", True)
    assert cfg.get("finetune", True), "only finetune (speaker table) models are handled"
    assert str(cfg["resblock"]) == "1" and cfg["activation"] == "snakebeta"
    assert math.prod(cfg["upsample_rates"]) == 960 and cfg["sampling_rate"] == 24000
    assert ("conv_post.conv.bias" in W) == sub["use_bias_at_final"], "conv_post bias vs use_bias_at_final"
    spk_path = os.path.join(args.model, "spk_list.txt")
    names = open(spk_path).read().splitlines() if os.path.exists(spk_path) else []
    while names and not names[-1].strip():
        names.pop()
    nspk = W["spk_emb.weight"].shape[0]
    assert nspk == cfg["num_spk"] and (not names or len(names) == nspk), (nspk, len(names))
    names = [n.strip() for n in names] or [f"spk{i}" for i in range(nspk)]
    print(f"weights {sha[:16]}..., causal {sub['causal']}, channels {cfg['upsample_initial_channel']}, "
          f"rates {cfg['upsample_rates']}, speakers {nspk}")
    dec = Decoder(W, cfg)
    units = [(t * 2731 + 17) % cfg["num_units"] for t in range(args.units)]
    golden = {"generator": "tools/reference/audio_decoder_ref.py", "weights_sha256": sha, "model": sub,
              "unit_formula": UNIT_FORMULA, "units": units, "cases": []}
    for s in sorted({0, nspk - 1}):
        with torch.no_grad():
            wav, rms = dec.forward(units, s)
        assert wav.numel() == len(units) * 960
        i16 = (wav * 32767.0).to(torch.int16)
        golden["cases"].append({"speaker": names[s], "speaker_index": s, "num_samples": wav.numel(),
                                "samples": [g7(v) for v in wav.tolist()], "int16": [int(v) for v in i16.tolist()],
                                "rms": {k: g7(v) for k, v in rms.items()}})
        print(f"speaker {s} ({names[s]}): {wav.numel()} samples, rms {float(wav.pow(2).mean().sqrt()):.4g}, "
              f"max abs {float(wav.abs().max()):.4g}; checkpoints " +
              ", ".join(f"{k} {v:.4g}" for k, v in rms.items()))
    C = cfg["upsample_initial_channel"] // 2
    c = np.arange(C, dtype=np.float64)[:, None]
    t = np.arange(ACT_T, dtype=np.float64)[None]
    xa = torch.from_numpy((np.sin(0.37 * t + 0.5 * c) * (1 + 0.1 * c)).astype(np.float32))
    assert W["resblocks.0.activations.0.act.alpha"].numel() == C
    with torch.no_grad():
        ya = dec.act(xa[None], "resblocks.0.activations.0")[0]
    golden["activation"] = {"block": "resblocks.0.activations.0", "input_formula": ACT_FORMULA, "C": C, "T": ACT_T,
                            "filter": [g7(v) for v in dec.filt.tolist()],
                            "output": [[g7(v) for v in row] for row in ya.tolist()]}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(golden, f, separators=(",", ":"))
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes) in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
