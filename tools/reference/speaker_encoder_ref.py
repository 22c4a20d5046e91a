#!/usr/bin/env python3
"""Independent PyTorch reference for the zero-shot speaker path of the Omni
audio decoder ("unit BigVGAN" of HyperCLOVA X SEED Omni; goldens for the C++
tests): a reference clip -> high-pass -> loudness -> log-mel -> ECAPA-TDNN
speaker embedding -> the vocoder of tools/reference/audio_decoder_ref.py with
that embedding in place of a speaker-table row. Written from the architecture
description (ECAPA-TDNN with SE-Res2 blocks and attentive statistics
pooling), with plain torch / numpy ops, not from omniserve's C++.

Checkpoint (DIR): config.json ("finetune": false, num_mels, spk_hidden_dim H,
spk_emb_dim D, global_context_att, n_fft, hop_size, win_size, fmin, fmax
(null: sampling_rate / 2), sampling_rate and the vocoder's BigVGAN keys) and
model.safetensors: the vocoder's tensors (no spk_emb.weight) plus the
speaker encoder under `spk_emb.`; bf16 / f16 are widened to f32, all math f32
unless said otherwise.

1. Reference clip (CLIP_FORMULA, float64 numpy, then float32), at 24 kHz.
 a. High-pass: 2nd-order Butterworth at 70 Hz, bilinear transform with
    pre-warping (= scipy.signal.butter(2, 70, "highpass", fs=sr, output="sos"),
    one biquad; derivation at `butter2_highpass`), run as a transposed
    direct form II recursion in float64 over the float32 input (zero state),
    then rounded to float32.
 b. Loudness (all float32, numpy): rms = sqrt(mean(pcm ** 2)) (numpy's
    float32 mean, pairwise summation), peak = max(|pcm|),
    gain = min(float32(10 ** (-26 / 20)) / rms, float32(1) / peak),
    pcm = float32(pcm * gain).
 c. Log-mel: reflect-pad (n_fft - hop) // 2 each side; torch.stft (n_fft,
    hop, win_size, periodic Hann(win_size), center=False, onesided);
    mag = sqrt(re^2 + im^2 + 1e-9) (= sqrt(real(spec * conj(spec)) + 1e-9));
    mel = fb @ mag with fb = torchaudio melscale_fbanks(n_fft // 2 + 1, fmin,
    fmax, num_mels, sr, norm="slaney", mel_scale="slaney").T (librosa's
    default filters.mel); log(clamp(mel, 1e-5)) -> [num_mels, T],
    T = (len + 2 * pad - n_fft) // hop + 1.
2. ECAPA-TDNN on x = logmel[None] (names under spk_emb.):
    BN (eval): (x - running_mean) / sqrt(running_var + 1e-5) * weight + bias.
    Conv1dReluBn(p): BN(p.bn)(relu(conv1d(x, p.conv.weight))) (conv, ReLU,
      then BN; a p.conv.bias is added when the checkpoint has one).
    out1 = Conv1dReluBn(layer1) (k5, pad 2); out2, out3, out4 = SE_Res2Block
      (layer2 / 3 / 4, k3, dilation = padding = 2 / 3 / 4, scale 8), each on
      the previous output: r = x (or shortcut 1x1 conv when it exists);
      x = Conv1dReluBn1 (1x1); Res2: 8 channel pieces of H / 8,
      sp = piece_0 (i = 0) or sp + piece_i, sp = BN(bns.i)(relu(convs.i(sp)))
      for i < 7, outputs sp_0..sp_6, piece_7; concat; Conv1dReluBn2 (1x1);
      SE: s = mean_t(x), s = sigmoid(linear2(relu(linear1(s)))), x *= s;
      x + r.
    out = relu(conv1x1(cat(out2, out3, out4), conv.weight, conv.bias)).
    Pooling (ASP): x_in = cat(x, mean_t(x), sqrt(var_t(x) + 1e-10)) (torch.var,
      unbiased) when global_context_att else x;
      alpha = softmax_t(linear2(tanh(linear1(x_in)))) (1x1 convs);
      mean = sum_t(alpha x); std = sqrt(clamp(sum_t(alpha x^2) - mean^2, 1e-9));
      pooled = cat(mean, std).
    embedding = BN(bn_out)(linear(BN(bn)(pooled))) ([D]); the module's
      InstanceNorm is not applied (it is not in its forward).
3. Vocoder: audio_decoder_ref.Decoder.forward with the embedding as the
   speaker vector (handed over as a one-row spk_emb.weight table, index 0;
   audio_decoder_ref.py is not changed), units from its UNIT_FORMULA.

Golden (floats at 7 significant digits): the clip formula, the biquad, the
normalised clip (gain, rms, head / tail 64, all), the log-mel, the RMS of
layer1..4 / conv / pooled, the embedding, and the vocoder's samples / int16
(trunc toward zero of float32(wav * 32767)).

Usage (DIR: config.json, model.safetensors):
  /usr/bin/python3 tools/reference/speaker_encoder_ref.py --model DIR \
      --out tests/data/audio_decoder/zeroshot_golden.json [--units 12]
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
import torchaudio

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import audio_decoder_ref as adr  # noqa: E402

HP_CUTOFF = 70.0
LOUDNESS_DB = -26.0
BN_EPS = 1e-5
RES2_SCALE = 8
CLIP_SECONDS = 1.2
CLIP_FORMULA = ("n = 0..round(1.2 * sr) - 1 (sr = 24000: 28800 samples), t = n / sr (float64, numpy / libm sin, "
                "left to right as written); x[n] = float32(0.4 * sin(2 * pi * 30 * t) "
                "+ (0.6 + 0.4 * sin(2 * pi * 2.5 * t)) * (0.25 * sin(2 * pi * 220 * t) "
                "+ 0.15 * sin(2 * pi * 660 * t + 0.3)) + 0.08 * sin(2 * pi * (500 * t + 1500 * t * t)))")
GAIN_FORMULA = ("float32 throughout (\"rms\" is the high-passed clip's, before the gain): "
                "rms = sqrt(mean(pcm ** 2)) (numpy float32 mean), peak = max(abs(pcm)), "
                "gain = min(float32(10 ** (-26 / 20)) / rms, float32(1) / peak), pcm = float32(pcm * gain)")


def safetensors_dtypes(path, prefix):
    """The stored dtypes of the tensors under prefix (read_safetensors widens them)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    return sorted({v["dtype"] for k, v in header.items() if k.startswith(prefix) and k != "__metadata__"})


def g7(v):
    return float(f"{float(v):.7g}")


def rms_of(x):
    return float(x.double().pow(2).mean().sqrt())


# ---------------------------------------------------------------- 1. clip preprocessing
def make_clip(sr):
    n = np.arange(int(round(CLIP_SECONDS * sr)), dtype=np.float64)
    t = n / sr
    pi = np.pi
    x = (0.4 * np.sin(2 * pi * 30 * t)
         + (0.6 + 0.4 * np.sin(2 * pi * 2.5 * t)) * (0.25 * np.sin(2 * pi * 220 * t)
                                                      + 0.15 * np.sin(2 * pi * 660 * t + 0.3))
         + 0.08 * np.sin(2 * pi * (500 * t + 1500 * t * t)))
    return x.astype(np.float32)


def butter2_highpass(f0, fs):
    """2nd-order Butterworth high-pass by the bilinear transform with pre-warping.

    Analog low-pass prototype (cutoff 1 rad/s): H(s) = 1 / (s^2 + sqrt(2) s + 1).
    Low-pass -> high-pass at wc: s -> wc / s, H(s) = s^2 / (s^2 + sqrt(2) wc s + wc^2).
    Pre-warp so the digital cutoff lands on f0: wc = 2 fs tan(pi f0 / fs).
    Bilinear: s = 2 fs (1 - z^-1) / (1 + z^-1). With K = wc / (2 fs) = tan(pi f0 / fs),
    multiplying numerator and denominator by (1 + z^-1)^2 / (2 fs)^2:
      H(z) = (1 - z^-1)^2 / ((1 - z^-1)^2 + sqrt(2) K (1 - z^-2) + K^2 (1 + z^-1)^2)
    numerator   1 - 2 z^-1 + z^-2
    denominator (1 + sqrt(2) K + K^2) + 2 (K^2 - 1) z^-1 + (1 - sqrt(2) K + K^2) z^-2
    Dividing by a0 = 1 + sqrt(2) K + K^2:
      b = [1, -2, 1] / a0, a = [1, 2 (K^2 - 1) / a0, (1 - sqrt(2) K + K^2) / a0].
    (scipy's butter(..., output="sos") builds the same biquad through zpk; the
    gain it folds into b is the same 1 / a0.) All float64.
    """
    K = math.tan(math.pi * f0 / fs)
    r2 = math.sqrt(2.0)
    a0 = 1.0 + r2 * K + K * K
    b = [1.0 / a0, -2.0 / a0, 1.0 / a0]
    a = [1.0, 2.0 * (K * K - 1.0) / a0, (1.0 - r2 * K + K * K) / a0]
    return b, a


def butter2_highpass_zpk(f0, fs):
    """Same filter through poles / zeros (scipy's route), for the self-check."""
    fs2 = 2.0 * fs
    wc = fs2 * math.tan(math.pi * f0 / fs)
    proto = [np.exp(1j * math.pi * (2 * k + 1 + 2) / 4) for k in range(2)]  # (-1 +- j) / sqrt(2)
    p_hp = [wc / p for p in proto]  # two zeros at s = 0, gain 1 / prod(-p) = 1
    p_d = [(fs2 + p) / (fs2 - p) for p in p_hp]  # zeros map to z = 1
    k = (fs2 * fs2 / np.prod([fs2 - p for p in p_hp])).real
    a = np.real(np.poly(p_d))
    return list(k * np.array([1.0, -2.0, 1.0])), list(a)


def biquad_df2t(x, b, a):
    """Transposed direct form II in float64, zero initial state."""
    b0, b1, b2 = b
    _, a1, a2 = a
    y = np.empty(len(x), dtype=np.float64)
    w1 = w2 = 0.0
    for i, xn in enumerate(x.astype(np.float64).tolist()):
        yn = b0 * xn + w1
        w1 = b1 * xn - a1 * yn + w2
        w2 = b2 * xn - a2 * yn
        y[i] = yn
    return y


def biquad_df1(x, b, a):
    """Direct form I in float64 (self-check's alternative)."""
    y = np.empty(len(x), dtype=np.float64)
    x1 = x2 = y1 = y2 = 0.0
    for i, xn in enumerate(x.astype(np.float64).tolist()):
        yn = b[0] * xn + b[1] * x1 + b[2] * x2 - a[1] * y1 - a[2] * y2
        x2, x1, y2, y1 = x1, xn, y1, yn
        y[i] = yn
    return y


def biquad_gain_db(b, a, f, fs):
    z = np.exp(-1j * 2 * np.pi * f / fs)
    h = (b[0] + b[1] * z + b[2] * z * z) / (a[0] + a[1] * z + a[2] * z * z)
    return 20 * np.log10(abs(h))


def normalize_loudness(pcm):
    pcm = pcm.astype(np.float32)
    rms = np.sqrt(np.mean(pcm ** 2))
    peak = np.max(np.abs(pcm))
    assert rms.dtype == np.float32 and peak.dtype == np.float32
    target = np.float32(10 ** (LOUDNESS_DB / 20))
    gain = min(target / rms, np.float32(1.0) / peak)
    assert gain.dtype == np.float32
    return (pcm * gain).astype(np.float32), gain, rms


def mel_fbank(cfg):
    fmax = cfg["fmax"] if cfg.get("fmax") is not None else cfg["sampling_rate"] / 2
    fb = torchaudio.functional.melscale_fbanks(cfg["n_fft"] // 2 + 1, float(cfg["fmin"]), float(fmax),
                                               cfg["num_mels"], cfg["sampling_rate"], norm="slaney",
                                               mel_scale="slaney")
    return fb.t().contiguous().float(), float(fmax)


def log_mel(pcm, cfg, fb):
    n_fft, hop, win = cfg["n_fft"], cfg["hop_size"], cfg["win_size"]
    pad = (n_fft - hop) // 2
    x = torch.from_numpy(pcm).float().view(1, 1, -1)
    x = F.pad(x, (pad, pad), mode="reflect").view(-1)
    spec = torch.stft(x, n_fft, hop_length=hop, win_length=win, window=torch.hann_window(win),
                      center=False, onesided=True, return_complex=True)
    mag = torch.sqrt(spec.real * spec.real + spec.imag * spec.imag + 1e-9)
    mel = torch.matmul(fb, mag)
    out = torch.log(torch.clamp(mel, min=1e-5))
    assert out.shape[1] == (len(pcm) + 2 * pad - n_fft) // hop + 1
    return out


# ---------------------------------------------------------------- 2. ECAPA-TDNN
class SpeakerEncoder:
    def __init__(self, W, cfg, prefix="spk_emb."):
        self.W = {k[len(prefix):]: v.float() for k, v in W.items() if k.startswith(prefix)}
        self.gca = bool(cfg.get("global_context_att", False))
        self.used = set()
        self.biases = []

    def t(self, name):
        self.used.add(name)
        return self.W[name]

    def opt(self, name):
        if name in self.W:
            self.biases.append(name)
            return self.t(name)
        return None

    def weight(self, p):
        """p.weight, or a weight-normed one (g * v / ||v||, norm over all dims but 0)."""
        if p + ".weight" in self.W:
            return self.t(p + ".weight")
        for g, v in ((".parametrizations.weight.original0", ".parametrizations.weight.original1"),
                     (".weight_g", ".weight_v")):
            if p + v in self.W:
                g, v = self.t(p + g), self.t(p + v)
                return v * (g / torch.linalg.vector_norm(v, dim=tuple(range(1, v.dim())), keepdim=True))
        raise KeyError(f"spk_emb.{p}.weight missing")

    def bn(self, x, p):
        shape = (1, -1, 1) if x.dim() == 3 else (1, -1)
        m, v, w, b = (self.t(f"{p}.{n}").view(shape) for n in ("running_mean", "running_var", "weight", "bias"))
        self.used.add(p + ".num_batches_tracked")
        return (x - m) / torch.sqrt(v + BN_EPS) * w + b

    def conv(self, x, p, k, pad=0, dil=1, bias=True):
        w = self.weight(p)
        assert w.dim() == 3 and w.shape[-1] == k and w.shape[1] == x.shape[1], (p, tuple(w.shape), k, x.shape)
        b = self.t(p + ".bias") if bias else self.opt(p + ".bias")
        return F.conv1d(x, w, b, padding=pad, dilation=dil)

    def linear(self, x, p):
        w = self.weight(p)
        return F.linear(x, w.reshape(w.shape[0], -1), self.t(p + ".bias"))

    def conv_relu_bn(self, x, p, k=1, pad=0, dil=1):
        return self.bn(F.relu(self.conv(x, p + ".conv", k, pad, dil, bias=False)), p + ".bn")

    def res2(self, x, p, d):
        C = x.shape[1]
        assert C % RES2_SCALE == 0 and f"{p}.convs.{RES2_SCALE - 1}.weight" not in self.W
        pieces = torch.split(x, C // RES2_SCALE, dim=1)
        outs, sp = [], None
        for i in range(RES2_SCALE - 1):
            sp = pieces[0] if i == 0 else sp + pieces[i]
            sp = self.bn(F.relu(self.conv(sp, f"{p}.convs.{i}", 3, d, d, bias=False)), f"{p}.bns.{i}")
            outs.append(sp)
        outs.append(pieces[RES2_SCALE - 1])
        return torch.cat(outs, 1)

    def se(self, x, p):
        s = x.mean(dim=2)
        s = F.relu(self.linear(s, p + ".linear1"))
        s = torch.sigmoid(self.linear(s, p + ".linear2"))
        return x * s[:, :, None]

    def se_res2_block(self, x, p, d):
        residual = x
        if p + ".shortcut.weight" in self.W:
            residual = self.conv(x, p + ".shortcut", 1)
        x = self.conv_relu_bn(x, p + ".Conv1dReluBn1")
        x = self.res2(x, p + ".Res2Conv1dReluBn", d)
        x = self.conv_relu_bn(x, p + ".Conv1dReluBn2")
        x = self.se(x, p + ".SE_Connect")
        return x + residual

    def pooling(self, x, p="pooling"):
        if self.gca:
            mean = x.mean(dim=-1, keepdim=True).expand_as(x)
            std = torch.sqrt(torch.var(x, dim=-1, keepdim=True) + 1e-10).expand_as(x)
            x_in = torch.cat([x, mean, std], 1)
        else:
            x_in = x
        alpha = torch.tanh(self.conv(x_in, p + ".linear1", 1))
        alpha = torch.softmax(self.conv(alpha, p + ".linear2", 1), dim=2)
        mean = torch.sum(alpha * x, dim=2)
        resid = torch.sum(alpha * x * x, dim=2) - mean * mean
        std = torch.sqrt(torch.clamp(resid, min=1e-9))
        return torch.cat([mean, std], 1)

    def forward(self, mel):
        x = mel[None] if mel.dim() == 2 else mel
        act = {}
        out1 = self.conv_relu_bn(x, "layer1", 5, 2)
        out2 = self.se_res2_block(out1, "layer2", 2)
        out3 = self.se_res2_block(out2, "layer3", 3)
        out4 = self.se_res2_block(out3, "layer4", 4)
        out = F.relu(self.conv(torch.cat([out2, out3, out4], 1), "conv", 1))
        pooled = self.pooling(out)
        emb = self.bn(self.linear(self.bn(pooled, "bn"), "linear"), "bn_out")
        act.update(layer1=out1, layer2=out2, layer3=out3, layer4=out4, conv=out, pooled=pooled)
        return emb[0], act

    def unused(self):
        return sorted(k for k in self.W if k not in self.used)


# ---------------------------------------------------------------- self-checks
class _NNEcapa(torch.nn.Module):
    """torch.nn form of the same ECAPA-TDNN (the usual module layout), for the self-check."""

    class CRB(torch.nn.Module):
        def __init__(self, ci, co, k=1, pad=0, dil=1, bias=False):
            super().__init__()
            self.conv = torch.nn.Conv1d(ci, co, k, padding=pad, dilation=dil, bias=bias)
            self.bn = torch.nn.BatchNorm1d(co)

        def forward(self, x):
            return self.bn(F.relu(self.conv(x)))

    class Block(torch.nn.Module):
        def __init__(self, C, d, se_dim, bias):
            super().__init__()
            R = _NNEcapa
            self.Conv1dReluBn1 = R.CRB(C, C, bias=bias)
            w = C // RES2_SCALE
            self.Res2Conv1dReluBn = torch.nn.Module()
            self.Res2Conv1dReluBn.convs = torch.nn.ModuleList(
                [torch.nn.Conv1d(w, w, 3, padding=d, dilation=d, bias=bias) for _ in range(RES2_SCALE - 1)])
            self.Res2Conv1dReluBn.bns = torch.nn.ModuleList([torch.nn.BatchNorm1d(w) for _ in range(RES2_SCALE - 1)])
            self.Conv1dReluBn2 = R.CRB(C, C, bias=bias)
            self.SE_Connect = torch.nn.Module()
            self.SE_Connect.linear1 = torch.nn.Linear(C, se_dim)
            self.SE_Connect.linear2 = torch.nn.Linear(se_dim, C)

        def forward(self, x):
            r = x
            x = self.Conv1dReluBn1(x)
            spx = torch.split(x, x.shape[1] // RES2_SCALE, 1)
            out, sp = [], None
            for i, (c, b) in enumerate(zip(self.Res2Conv1dReluBn.convs, self.Res2Conv1dReluBn.bns)):
                sp = spx[0] if i == 0 else sp + spx[i]
                sp = b(F.relu(c(sp)))
                out.append(sp)
            x = self.Conv1dReluBn2(torch.cat(out + [spx[-1]], 1))
            s = torch.sigmoid(self.SE_Connect.linear2(F.relu(self.SE_Connect.linear1(x.mean(2)))))
            return x * s.unsqueeze(2) + r

    def __init__(self, n_mels, C, Cc, se_dim, att_dim, D, gca, bias):
        super().__init__()
        self.gca = gca
        self.layer1 = self.CRB(n_mels, C, 5, 2, bias=bias)
        self.layer2 = self.Block(C, 2, se_dim, bias)
        self.layer3 = self.Block(C, 3, se_dim, bias)
        self.layer4 = self.Block(C, 4, se_dim, bias)
        self.conv = torch.nn.Conv1d(3 * C, Cc, 1)
        self.pooling = torch.nn.Module()
        self.pooling.linear1 = torch.nn.Conv1d(Cc * (3 if gca else 1), att_dim, 1)
        self.pooling.linear2 = torch.nn.Conv1d(att_dim, Cc, 1)
        self.bn = torch.nn.BatchNorm1d(2 * Cc)
        self.linear = torch.nn.Linear(2 * Cc, D)
        self.bn_out = torch.nn.BatchNorm1d(D)

    def forward(self, x):
        o1 = self.layer1(x)
        o2 = self.layer2(o1)
        o3 = self.layer3(o2)
        o4 = self.layer4(o3)
        x = F.relu(self.conv(torch.cat([o2, o3, o4], 1)))
        if self.gca:
            T = x.shape[-1]
            x_in = torch.cat([x, x.mean(-1, keepdim=True).repeat(1, 1, T),
                              (x.var(-1, keepdim=True) + 1e-10).sqrt().repeat(1, 1, T)], 1)
        else:
            x_in = x
        a = torch.softmax(self.pooling.linear2(torch.tanh(self.pooling.linear1(x_in))), 2)
        m = (a * x).sum(2)
        s = ((a * x ** 2).sum(2) - m ** 2).clamp(min=1e-9).sqrt()
        return self.bn_out(self.linear(self.bn(torch.cat([m, s], 1))))


def dilated_conv_f64(x, w, d):
    """k3 conv with zero padding d, dilation d, as explicit shifted matmuls (float64). x [C, T], w [Co, C, 3]."""
    C, T = x.shape
    xp = np.concatenate([np.zeros((C, d)), x, np.zeros((C, d))], 1)
    return sum(w[:, :, j] @ xp[:, j * d:j * d + T] for j in range(3))


def se_res2_block_f64(enc, x, p, d):
    """SE_Res2Block in float64 numpy, the Res2 written as a running sum over pieces."""
    W = {k: v.double().numpy() for k, v in enc.W.items()}

    def bn(y, q):
        sh = (-1, 1) if y.ndim == 2 else (-1,)
        return ((y - W[q + ".running_mean"].reshape(sh)) / np.sqrt(W[q + ".running_var"].reshape(sh) + BN_EPS)
                * W[q + ".weight"].reshape(sh) + W[q + ".bias"].reshape(sh))

    def cb(q):
        return W[q][:, None] if q in W else 0.0

    h = bn(np.maximum(W[p + ".Conv1dReluBn1.conv.weight"][:, :, 0] @ x + cb(p + ".Conv1dReluBn1.conv.bias"), 0),
           p + ".Conv1dReluBn1.bn")
    w = h.shape[0] // RES2_SCALE
    acc = np.zeros((w, h.shape[1]))
    ys = []
    for i in range(RES2_SCALE):
        piece = h[i * w:(i + 1) * w]
        if i == RES2_SCALE - 1:
            ys.append(piece)
            break
        q = f"{p}.Res2Conv1dReluBn"
        inp = piece + (acc if i else 0.0)
        acc = bn(np.maximum(dilated_conv_f64(inp, W[f"{q}.convs.{i}.weight"], d) + cb(f"{q}.convs.{i}.bias"), 0),
                 f"{q}.bns.{i}")
        ys.append(acc)
    h = np.concatenate(ys, 0)
    h = bn(np.maximum(W[p + ".Conv1dReluBn2.conv.weight"][:, :, 0] @ h + cb(p + ".Conv1dReluBn2.conv.bias"), 0),
           p + ".Conv1dReluBn2.bn")
    s = h.mean(1)
    l1 = W[p + ".SE_Connect.linear1.weight"].reshape(-1, h.shape[0])
    s = np.maximum(l1 @ s + W[p + ".SE_Connect.linear1.bias"], 0)
    l2 = W[p + ".SE_Connect.linear2.weight"].reshape(h.shape[0], -1)
    s = 0.5 * (1 + np.tanh(0.5 * (l2 @ s + W[p + ".SE_Connect.linear2.bias"])))  # sigmoid, no overflow
    return h * s[:, None] + x


def pooling_loop_f64(enc, x):
    """Attentive statistics pooling channel by channel in float64, var as sum(alpha (x - mean)^2)."""
    W = {k: v.double().numpy() for k, v in enc.W.items()}
    C, T = x.shape
    if enc.gca:
        mu = x.mean(1)
        sd = np.sqrt(((x - mu[:, None]) ** 2).sum(1) / (T - 1) + 1e-10)
        x_in = np.concatenate([x, np.repeat(mu[:, None], T, 1), np.repeat(sd[:, None], T, 1)], 0)
    else:
        x_in = x
    w1, b1 = W["pooling.linear1.weight"][:, :, 0], W["pooling.linear1.bias"]
    w2, b2 = W["pooling.linear2.weight"][:, :, 0], W["pooling.linear2.bias"]
    hid = np.tanh(w1 @ x_in + b1[:, None])  # [A, T]
    mean, std = np.zeros(C), np.zeros(C)
    for c in range(C):
        e = np.array([sum(w2[c, k] * hid[k, t] for k in range(hid.shape[0])) + b2[c] for t in range(T)])
        a = np.exp(e - e.max())
        a /= a.sum()
        mean[c] = float(np.sum(a * x[c]))
        std[c] = math.sqrt(max(float(np.sum(a * (x[c] - mean[c]) ** 2)), 1e-9))
    return np.concatenate([mean, std])


def librosa_mel_f64(sr, n_fft, n_mels, fmin, fmax):
    """librosa.filters.mel (slaney scale, slaney norm) in float64."""
    f_sp, min_log_hz, min_log_mel, logstep = 200.0 / 3, 1000.0, 15.0, math.log(6.4) / 27.0

    def hz_to_mel(f):
        return f / f_sp if f < min_log_hz else min_log_mel + math.log(f / min_log_hz) / logstep

    def mel_to_hz(m):
        return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), f_sp * m)

    fftfreqs = np.linspace(0, sr / 2, 1 + n_fft // 2)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fftfreqs[None, :]
    w = np.zeros((n_mels, len(fftfreqs)))
    for i in range(n_mels):
        w[i] = np.maximum(0, np.minimum(-ramps[i] / fdiff[i], ramps[i + 2] / fdiff[i + 1]))
    return w * (2.0 / (mel_f[2:n_mels + 2] - mel_f[:n_mels]))[:, None]


def check_preprocessing(cfg, clip, hp32, b, a, pcm, fb, fmax, mel):
    sr = cfg["sampling_rate"]
    res = {}
    bz, az = butter2_highpass_zpk(HP_CUTOFF, sr)
    res["biquad_zpk"] = max(abs(u - v) for u, v in zip(b + a, bz + az))
    assert res["biquad_zpk"] < 1e-12, res
    db = {f: biquad_gain_db(b, a, f, sr) for f in (10.0, 30.0, 70.0, 1000.0)}
    assert abs(db[70.0] + 10 * math.log10(2)) < 1e-6, db
    assert abs(db[1000.0]) < 0.01 and db[10.0] < -30 and db[30.0] < -14, db
    res["db"] = db
    df1 = biquad_df1(clip, b, a)
    res["df1_vs_df2t"] = float(np.abs(df1 - biquad_df2t(clip, b, a)).max())
    assert res["df1_vs_df2t"] < 1e-12
    # 30 Hz content over the last 0.6 s (past the transient), before and after.
    n0 = len(clip) // 2
    t = np.arange(n0, len(clip)) / sr
    amp = lambda s: abs(np.sum(s[n0:].astype(np.float64) * np.exp(-2j * np.pi * 30 * t))) * 2 / (len(clip) - n0)
    res["amp30"] = (amp(clip), amp(hp32))
    assert res["amp30"][1] < 0.25 * res["amp30"][0], res["amp30"]
    # Loudness: the float32 formula against a float64-accumulated mean.
    rms64 = math.sqrt(float(np.mean(hp32.astype(np.float64) ** 2)))
    res["rms_vs_f64"] = abs(float(np.sqrt(np.mean(hp32 ** 2))) / rms64 - 1)
    out_rms = math.sqrt(float(np.mean(pcm.astype(np.float64) ** 2)))
    assert abs(20 * math.log10(out_rms) - LOUDNESS_DB) < 1e-3 or float(np.abs(pcm).max()) > 0.9999
    # Mel filters vs librosa's formula (float64), log-mel vs a float64 numpy STFT.
    fb64 = librosa_mel_f64(sr, cfg["n_fft"], cfg["num_mels"], float(cfg["fmin"]), fmax)
    res["fb_vs_librosa"] = float(np.abs(fb.double().numpy() - fb64).max() / np.abs(fb64).max())
    assert res["fb_vs_librosa"] < 1e-5, res["fb_vs_librosa"]
    n_fft, hop, win = cfg["n_fft"], cfg["hop_size"], cfg["win_size"]
    pad = (n_fft - hop) // 2
    xp = np.pad(pcm.astype(np.float64), (pad, pad), mode="reflect")
    wnd = np.zeros(n_fft)
    off = (n_fft - win) // 2
    wnd[off:off + win] = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(win) / win)
    T = (len(xp) - n_fft) // hop + 1
    frames = np.stack([xp[i * hop:i * hop + n_fft] * wnd for i in range(T)], 1)
    spec = np.fft.rfft(frames, axis=0)
    mel64 = np.log(np.maximum(fb64 @ np.sqrt(np.abs(spec) ** 2 + 1e-9), 1e-5))
    dev = np.abs(mel.double().numpy() - mel64)
    res["logmel_vs_f64"] = float(dev.max())
    res["logmel_vs_f64_loud"] = float(dev[mel64 > -6].max()) if (mel64 > -6).any() else 0.0
    assert mel.shape[1] == T and res["logmel_vs_f64"] < 2e-3, res["logmel_vs_f64"]
    return res


def check_encoder(enc, mel, emb, act):
    res = {}
    # BatchNorm1d eval vs the formula, 3-D and 2-D.
    C = act["layer1"].shape[1]
    m = torch.nn.BatchNorm1d(C).eval()
    with torch.no_grad():
        for n in ("weight", "bias", "running_mean", "running_var"):
            getattr(m, n).copy_(enc.W["layer1.bn." + n])
        x3 = act["layer1"].new_tensor(torch.randn(2, C, 17).numpy())
        y3 = m(x3)
        e3 = float((y3 - enc.bn(x3, "layer1.bn")).abs().max() / y3.abs().max())
        e2 = float((m(x3[:, :, 0]) - enc.bn(x3[:, :, 0], "layer1.bn")).abs().max() / y3.abs().max())
    res["bn"] = max(e3, e2)
    assert res["bn"] < 1e-4, res["bn"]
    # SE-Res2 block in float64 with explicit dilated taps and a running sum.
    errs = []
    for p, d, xin, y in (("layer2", 2, "layer1", "layer2"), ("layer3", 3, "layer2", "layer3"),
                         ("layer4", 4, "layer3", "layer4")):
        ref = se_res2_block_f64(enc, act[xin][0].double().numpy(), p, d)
        errs.append(float(np.abs(act[y][0].double().numpy() - ref).max() / max(np.abs(ref).max(), 1e-12)))
    res["res2_f64_rel"] = max(errs)
    assert res["res2_f64_rel"] < 1e-4, errs
    # Pooling by a loop over channels (float64).
    ref = pooling_loop_f64(enc, act["conv"][0].double().numpy())
    res["pool_loop_rel"] = float(np.abs(act["pooled"][0].double().numpy() - ref).max() / max(np.abs(ref).max(), 1e-12))
    assert res["pool_loop_rel"] < 1e-4, res["pool_loop_rel"]
    # The whole encoder as torch.nn modules with the checkpoint's state dict.
    W = enc.W
    H, Cc = W["layer1.conv.weight"].shape[0], W["conv.weight"].shape[0]
    bias = "layer1.conv.bias" in W
    net = _NNEcapa(mel.shape[0], H, Cc, W["layer2.SE_Connect.linear1.weight"].shape[0],
                   W["pooling.linear1.weight"].shape[0], W["linear.weight"].shape[0], enc.gca, bias).eval()
    sd = {k: v.reshape(net.state_dict()[k].shape) for k, v in W.items() if k in net.state_dict()}
    missing = [k for k in net.state_dict() if k not in sd and not k.endswith("num_batches_tracked")]
    assert not missing, f"nn form needs {missing[:4]}"
    net.load_state_dict(sd, strict=False)
    with torch.no_grad():
        e_nn = net(mel[None])[0]
    res["nn_module_rel"] = float((e_nn - emb).abs().max() / emb.abs().max())
    assert res["nn_module_rel"] < 1e-4, res["nn_module_rel"]
    return res


# ---------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--units", type=int, default=12)
    args = ap.parse_args()
    t0 = time.time()
    torch.set_grad_enabled(False)
    adr.self_check()
    st_path = os.path.join(args.model, "model.safetensors")
    W, sha = adr.read_safetensors(st_path)
    cfg = json.load(open(os.path.join(args.model, "config.json")))
    voc_keys = ["num_units", "unit_emb_dim", "spk_emb_dim", "finetune", "upsample_rates", "upsample_kernel_sizes",
                "upsample_initial_channel", "resblock", "resblock_kernel_sizes", "resblock_dilation_sizes",
                "activation", "snake_logscale", "causal", "use_bias_at_final", "use_tanh_at_final", "sampling_rate"]
    spk_keys = ["num_mels", "spk_hidden_dim", "global_context_att", "n_fft", "hop_size", "win_size", "fmin", "fmax"]
    sub = {k: cfg[k] for k in voc_keys + spk_keys if k in cfg}
    sub.setdefault("causal", True)
    sub.setdefault("use_bias_at_final", True)
    sub.setdefault("use_tanh_at_final", True)
    sub.setdefault("global_context_att", False)
    sub.setdefault("fmax", None)
    missing = [k for k in ["num_mels", "spk_hidden_dim", "spk_emb_dim", "n_fft", "hop_size", "win_size", "fmin"]
               if k not in cfg]
    assert not missing, f"config.json lacks {missing}"
    assert not cfg.get("finetune", True), "a zero-shot checkpoint has \"finetune\": false"
    assert "spk_emb.weight" not in W and "spk_emb.layer1.conv.weight" in W, "no ECAPA-TDNN under spk_emb."
    assert str(cfg["resblock"]) == "1" and cfg["activation"] == "snakebeta"
    assert math.prod(cfg["upsample_rates"]) == 960 and cfg["sampling_rate"] == 24000
    assert ("conv_post.conv.bias" in W) == sub["use_bias_at_final"], "conv_post bias vs use_bias_at_final"
    sr, H, D = cfg["sampling_rate"], cfg["spk_hidden_dim"], cfg["spk_emb_dim"]
    assert H % RES2_SCALE == 0
    spk_dtypes = safetensors_dtypes(st_path, "spk_emb.")

    # 1. clip -> high-pass -> loudness -> log-mel
    clip = make_clip(sr)
    b, a = butter2_highpass(HP_CUTOFF, sr)
    hp32 = biquad_df2t(clip, b, a).astype(np.float32)
    pcm, gain, rms = normalize_loudness(hp32)
    fb, fmax = mel_fbank(cfg)
    mel = log_mel(pcm, cfg, fb)
    pre = check_preprocessing(cfg, clip, hp32, b, a, pcm, fb, fmax, mel)

    # 2. ECAPA-TDNN
    enc = SpeakerEncoder(W, cfg)
    assert tuple(enc.W["layer1.conv.weight"].shape) == (H, cfg["num_mels"], 5), enc.W["layer1.conv.weight"].shape
    Cc = enc.W["conv.weight"].shape[0]
    assert enc.W["conv.weight"].shape[1] == 3 * H
    assert enc.W["pooling.linear1.weight"].shape[1] == Cc * (3 if enc.gca else 1), "pooling vs global_context_att"
    assert enc.W["linear.weight"].shape == (D, 2 * Cc), enc.W["linear.weight"].shape
    emb, act = enc.forward(mel)
    unused = [u for u in enc.unused() if not u.endswith("num_batches_tracked")]
    assert emb.shape == (D,) and torch.isfinite(emb).all()
    chk = check_encoder(enc, mel, emb, act)

    # 3. vocoder with the embedding as a one-row speaker table
    Wv = {k: v for k, v in W.items() if not k.startswith("spk_emb.")}
    Wv["spk_emb.weight"] = emb.view(1, -1).clone()
    assert W["conv_pre.conv.weight" if "conv_pre.conv.weight" in W else
             "conv_pre.conv.parametrizations.weight.original1" if
             "conv_pre.conv.parametrizations.weight.original1" in W else
             "conv_pre.conv.weight_v"].shape[1] == cfg["unit_emb_dim"] + D, "conv_pre in != unit_emb_dim + D"
    dec = adr.Decoder(Wv, cfg)
    units = [(t * 2731 + 17) % cfg["num_units"] for t in range(args.units)]
    wav, dec_rms = dec.forward(units, 0)
    assert wav.numel() == len(units) * 960
    i16 = (wav * 32767.0).to(torch.int16)

    print(f"weights {sha[:16]}..., spk_emb dtypes {spk_dtypes}, H {H}, conv {Cc}, D {D}, "
          f"global_context_att {enc.gca}, fmax {fmax:g}")
    print(f"biquad b {[f'{v:.10g}' for v in b]} a {[f'{v:.10g}' for v in a]}; vs zpk route {pre['biquad_zpk']:.2g}; "
          f"gain dB: " + ", ".join(f"{f:g} Hz {v:.3f}" for f, v in pre["db"].items()))
    print(f"high-pass: DF1 vs DF2T {pre['df1_vs_df2t']:.2g}; 30 Hz amplitude {pre['amp30'][0]:.4f} -> "
          f"{pre['amp30'][1]:.4f}; loudness gain {float(gain):.7g} (rms {float(rms):.7g}, vs float64 mean "
          f"{pre['rms_vs_f64']:.2g} rel), peak after {float(np.abs(pcm).max()):.4f}")
    print(f"log-mel [{mel.shape[0]}, {mel.shape[1]}]: fb vs librosa formula {pre['fb_vs_librosa']:.2g} rel, "
          f"vs float64 STFT {pre['logmel_vs_f64']:.2g} abs (bins above -6: "
          f"{pre['logmel_vs_f64_loud']:.2g}); range [{float(mel.min()):.3f}, {float(mel.max()):.3f}]")
    print(f"encoder checks: BN vs nn.BatchNorm1d {chk['bn']:.2g} rel, "
          f"SE-Res2 vs float64 {chk['res2_f64_rel']:.2g} rel, pooling vs loop {chk['pool_loop_rel']:.2g} rel, "
          f"nn.Module ECAPA {chk['nn_module_rel']:.2g} rel")
    if enc.biases:
        print(f"note: optional conv biases present and applied: {enc.biases[:4]}{'...' if len(enc.biases) > 4 else ''}")
    if unused:
        print(f"WARNING: spk_emb tensors not used: {unused}")
    print("rms: " + ", ".join(f"{k} {rms_of(v):.4g}" for k, v in act.items()) +
          f"; embedding norm {float(emb.norm()):.4g}")
    print(f"vocoder: {len(units)} units -> {wav.numel()} samples, rms {rms_of(wav):.4g}, "
          f"max abs {float(wav.abs().max()):.4g}")

    golden = {
        "generator": "tools/reference/speaker_encoder_ref.py", "weights_sha256": sha, "model": sub,
        "encoder": {"hidden": H, "conv_channels": Cc, "emb_dim": D, "res2_scale": RES2_SCALE,
                    "se_bottleneck": enc.W["layer2.SE_Connect.linear1.weight"].shape[0],
                    "attention_channels": enc.W["pooling.linear1.weight"].shape[0],
                    "spk_emb_dtypes": spk_dtypes, "conv_biases": bool(enc.biases)},
        "clip_formula": CLIP_FORMULA, "clip_samples": len(clip),
        "clip_head": [g7(v) for v in clip[:64].tolist()],
        "biquad": {"cutoff_hz": HP_CUTOFF, "b": [float(v) for v in b], "a": [float(v) for v in a]},
        "highpassed_head": [g7(v) for v in hp32[:64].tolist()],
        "normalized": {"gain_formula": GAIN_FORMULA, "gain": g7(gain), "rms": g7(rms),
                       "rms_after": g7(math.sqrt(float(np.mean(pcm.astype(np.float64) ** 2)))),
                       "head": [g7(v) for v in pcm[:64].tolist()], "tail": [g7(v) for v in pcm[-64:].tolist()],
                       "all": [g7(v) for v in pcm.tolist()]},
        "mel": {"fmax": fmax, "frames": mel.shape[1], "values": [[g7(v) for v in row] for row in mel.tolist()]},
        "rms": {k: g7(rms_of(v)) for k, v in act.items()},
        "embedding": [g7(v) for v in emb.tolist()],
        "unit_formula": adr.UNIT_FORMULA, "units": units, "num_samples": wav.numel(),
        "samples": [g7(v) for v in wav.tolist()], "int16": [int(v) for v in i16.tolist()],
        "decoder_rms": {k: g7(v) for k, v in dec_rms.items()},
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(golden, f, separators=(",", ":"))
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes) in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
