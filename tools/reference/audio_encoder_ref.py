#!/usr/bin/env python3
"""Independent PyTorch reference for the Omni audio encoder (goldens for the
audio encoder's C++ tests): the continuous branch (Qwen2-Audio encoder plus
the two-layer audio projector -> [Tc, llm_width] rows at 25 Hz) and the
discrete branch (CosyVoice2's S3 tokenizer v2 -> Td ids in [0, 6561) at
25 Hz). Written from the architectures (spec/omni-model.md, "Audio details";
transformers' Qwen2AudioEncoder and OmniServe's encoder/audio/track_b/app/
model/__init__.py and cosyvoice.py as references), with plain torch ops, not
from omniserve's C++.

Log-mel: tools/reference/whisper_mel_ref.py (float64), rounded to f32.

Continuous branch, as OmniServe's Model._process_audio: the samples are cut
into 30 s pieces of 480000 (the last shorter), each zero-padded to 480000
before the mel ([128, 3000] with its own max); L = ceil(piece / 160) valid
frames, L' = (L - 1) // 2 + 1 valid positions after conv2. Per chunk:
conv1 (k3 s1 p1) + GELU, conv2 (k3 s2 p1) + GELU -> [1500, d], plus
embed_positions.weight; pre-LN layers (LayerNorm eps 1e-5):
x += out_proj(MHA(self_attn_layer_norm(x))) with q * head_dim^-0.5 and the
keys restricted to the first L' positions (all 1500 queries are computed,
the rows past L' are dropped later), x += fc2(GELU(fc1(final_layer_norm(x))));
AvgPool1d(2, 2); final layer_norm; the first ((L' - 2) // 2 + 1) rows are
kept (750 for a full chunk). Kept rows of all chunks are concatenated and go
through the projector fc1 -> GELU -> fc2.

Discrete branch, as cosyvoice.py: a clip longer than 80 s (1280000 samples)
is cut into 80 s pieces (the last shorter), each tokenised on its own, ids
concatenated. Per piece: the mel with no padding (frames = samples // 160,
max over the piece); conv1 (k3 s2 p1) + GELU, conv2 (k3 s2 p1) + GELU ->
[T, S]; no absolute positions; blocks: a = attn_ln(x) (eps 1e-6);
q = query(a), k = key(a) (no bias), v = value(a); heads of 64; RoPE on q and
k at positions 0..T-1 (angle = pos * 10000^(-2j/64), j < 32, the 32 angles
used twice, rotate-half); q and k each times 64^-0.25; softmax attention (no
mask); fsmn = v + depthwise_conv_k31(v) (zero padding 15 / 15, no bias, on
the un-rotated v); x += out(attn) + fsmn; x += mlp.2(GELU(mlp.0(mlp_ln(x))))
(eps 1e-5). FSQ: h = tanh(project_down(x)) * 0.9990000128746033,
d_i = round_half_even(h_i) + 1, id = sum_i d_i 3^i.

Numerics (the runtime's, so goldens are comparable): weights are the bf16
values of the folder, held as f32; the input of every Linear and of
conv1 / conv2 (both branches) is rounded to bf16, products accumulate in
f32, biases are added in f32. LayerNorm, attention (scores, softmax,
weighted sum), RoPE (angles and cos / sin in f32), exact (erf) GELU, the
depthwise FSMN conv (bf16 weight values, f32 input, no rounding), the
average pool, tanh and FSQ are f32. The golden stores each id's margin,
min over the 8 digits of | |h_i| - 0.5 |, so a test can skip ids that sit
on a rounding boundary.

Input signals (regenerated bit for bit by the C++ test): for (seconds D,
seed s), n = round(D * 16000); for i < n, t = i / 16000 (float64),
  state_0 = s, state_{i+1} = (state_i * 6364136223846793005
                              + 1442695040888963407) mod 2^64,
  noise_i = ((state_{i+1} >> 40) / 2^24) * 2 - 1,
  y_i = 0.5 * sin(2 * pi * 220 * t) * (0.6 + 0.4 * sin(2 * pi * 0.5 * t))
        + 0.25 * sin(2 * pi * (300 + 400 * t / D) * t) + 0.05 * noise_i
  (float64, left to right as written, libm sin), except y_i = 0 for
  1.0 <= t < 1.5 (the LCG still steps there);
  s_i = clamp(round_half_away_from_zero(32767 * y_i), -32768, 32767),
  x_i = s_i / 32768 (float32). The golden has s_0..s_7 and sum(s_i).

Usage:
  build/omniserve make-demo-model --component ae --out /tmp/ae && /usr/bin/python3 tools/reference/audio_encoder_ref.py /tmp/ae tests/data/audio_encoder/encoder_golden.json
"""
import hashlib
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import whisper_mel_ref  # noqa: E402

SAMPLE_RATE = 16000
HOP = 160
CHUNK_SAMPLES = 30 * SAMPLE_RATE  # continuous branch
PIECE_SAMPLES = 80 * SAMPLE_RATE  # discrete branch
CHUNK_FRAMES = 3000
FSMN_KERNEL = 31
HEAD_DIM_DISCRETE = 64
FSQ_SCALE = 0.9990000128746033
CASES = [("short", 3.0, 1), ("odd", 1.37, 2), ("long", 45.0, 3), ("very_long", 85.0, 4)]
DTYPES = {"BF16": torch.bfloat16, "F32": torch.float32, "F16": torch.float16}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out, dtypes = {}, {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        raw = bytearray(data[8 + n + b:8 + n + e])
        dt = DTYPES[info["dtype"]]
        t = torch.frombuffer(raw, dtype=dt) if raw else torch.empty(0, dtype=dt)
        out[name] = t.reshape(info["shape"]).float()
        dtypes[info["dtype"]] = dtypes.get(info["dtype"], 0) + 1
    return out, hashlib.sha256(data).hexdigest(), dtypes


# ---------------------------------------------------------------- signals
def make_signal(seconds, seed):
    """The case's samples: (int16 values as a Python list, float32 array)."""
    n = round(seconds * SAMPLE_RATE)
    mask64 = (1 << 64) - 1
    state = seed
    ints = []
    for i in range(n):
        state = (state * 6364136223846793005 + 1442695040888963407) & mask64
        noise = ((state >> 40) / 16777216.0) * 2 - 1
        t = i / 16000
        if 1.0 <= t < 1.5:
            y = 0.0
        else:
            y = (0.5 * math.sin(2 * math.pi * 220 * t) * (0.6 + 0.4 * math.sin(2 * math.pi * 0.5 * t))
                 + 0.25 * math.sin(2 * math.pi * (300 + 400 * t / seconds) * t) + 0.05 * noise)
        v = 32767 * y
        a = abs(v)
        r = math.floor(a)
        if a - r >= 0.5:
            r += 1
        s = int(r) if v >= 0 else -int(r)
        ints.append(max(-32768, min(32767, s)))
    x = (np.array(ints, dtype=np.float64) / 32768.0).astype(np.float32)
    return ints, x


# ---------------------------------------------------------------- ops
class Ops:
    def __init__(self, W):
        self.W = W

    @staticmethod
    def bf16(x):
        return x.to(torch.bfloat16).float()

    def lin(self, x, name, bias=True):
        y = self.bf16(x) @ self.W[name + ".weight"].t()
        return y + self.W[name + ".bias"] if bias else y

    def conv(self, x, name, stride):
        # x [C_in, T] -> [C_out, T'], kernel 3, padding 1; input rounded to bf16.
        return F.conv1d(self.bf16(x)[None], self.W[name + ".weight"], self.W[name + ".bias"], stride=stride,
                        padding=1)[0]

    def ln(self, x, name, eps):
        return F.layer_norm(x, (x.shape[-1],), self.W[name + ".weight"], self.W[name + ".bias"], eps)


def attention(q, k, v, n_valid=None):
    """q, k, v [T, H, D] (q and k already scaled); keys >= n_valid masked."""
    s = torch.einsum("thd,shd->hts", q, k)
    if n_valid is not None and n_valid < k.shape[0]:
        s[:, :, n_valid:] = float("-inf")
    return torch.einsum("hts,shd->thd", torch.softmax(s, -1), v)


# ---------------------------------------------------------------- continuous
def continuous(ops, ac, samples, fb):
    """Rows [Tc, llm_width] and the rows per 30 s chunk."""
    d, heads = ac["d_model"], ac["encoder_attention_heads"]
    hd = d // heads
    p = "model.audio_model."
    kept_all, chunk_rows = [], []
    for start in range(0, len(samples), CHUNK_SAMPLES):
        piece = samples[start:start + CHUNK_SAMPLES]
        padded = np.zeros(CHUNK_SAMPLES, dtype=np.float32)
        padded[:len(piece)] = piece
        mel = torch.from_numpy(whisper_mel_ref.log_mel(padded, fb)).float()  # [128, 3000]
        assert mel.shape == (128, CHUNK_FRAMES)
        frames = -(-len(piece) // HOP)
        valid = (frames - 1) // 2 + 1
        keep = (valid - 2) // 2 + 1
        x = F.gelu(ops.conv(mel, p + "conv1", 1))
        x = F.gelu(ops.conv(x, p + "conv2", 2)).t()  # [1500, d]
        n = x.shape[0]
        x = x + ops.W[p + "embed_positions.weight"][:n]
        for i in range(ac["encoder_layers"]):
            lp = f"{p}layers.{i}."
            a = ops.ln(x, lp + "self_attn_layer_norm", 1e-5)
            q = (ops.lin(a, lp + "self_attn.q_proj") * hd ** -0.5).reshape(n, heads, hd)
            k = ops.lin(a, lp + "self_attn.k_proj", bias=False).reshape(n, heads, hd)
            v = ops.lin(a, lp + "self_attn.v_proj").reshape(n, heads, hd)
            x = x + ops.lin(attention(q, k, v, valid).reshape(n, d), lp + "self_attn.out_proj")
            a = ops.ln(x, lp + "final_layer_norm", 1e-5)
            x = x + ops.lin(F.gelu(ops.lin(a, lp + "fc1")), lp + "fc2")
        x = (x[0::2] + x[1::2]) / 2  # AvgPool1d(2, 2) over time
        x = ops.ln(x, p + "layer_norm", 1e-5)
        kept_all.append(x[:keep])
        chunk_rows.append(keep)
    h = torch.cat(kept_all, 0)
    rows = ops.lin(F.gelu(ops.lin(h, "model.audio_projector.fc1")), "model.audio_projector.fc2")
    return rows, chunk_rows


# ---------------------------------------------------------------- discrete
def rope_tables(T):
    j = torch.arange(0, HEAD_DIM_DISCRETE, 2, dtype=torch.float32)
    freqs = 1.0 / (10000.0 ** (j / HEAD_DIM_DISCRETE))  # [32]
    angles = torch.outer(torch.arange(T, dtype=torch.float32), freqs)  # [T, 32] f32
    cos, sin = torch.cos(angles), torch.sin(angles)
    return torch.cat([cos, cos], -1)[:, None], torch.cat([sin, sin], -1)[:, None]  # [T, 1, 64]


def rotate(x, cos, sin):
    half = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], -1) * sin


def discrete_piece(ops, dc, samples, fb):
    """ids [T] (int) and margins [T] for one piece."""
    S, heads = dc["n_audio_state"], dc["n_audio_head"]
    hd = S // heads
    assert hd == HEAD_DIM_DISCRETE, f"S3 tokenizer heads must be 64 wide (S {S}, heads {heads})"
    p = "model.discrete_audio_model."
    mel = torch.from_numpy(whisper_mel_ref.log_mel(samples, fb)).float()  # [128, len // 160]
    x = F.gelu(ops.conv(mel, p + "encoder.conv1", 2))
    x = F.gelu(ops.conv(x, p + "encoder.conv2", 2)).t()  # [T, S]
    T = x.shape[0]
    cos, sin = rope_tables(T)
    scale = hd ** -0.25
    for i in range(dc["n_audio_layer"]):
        bp = f"{p}encoder.blocks.{i}."
        a = ops.ln(x, bp + "attn_ln", 1e-6)
        q = ops.lin(a, bp + "attn.query").reshape(T, heads, hd)
        k = ops.lin(a, bp + "attn.key", bias=False).reshape(T, heads, hd)
        v = ops.lin(a, bp + "attn.value")  # [T, S]
        q = rotate(q, cos, sin) * scale
        k = rotate(k, cos, sin) * scale
        o = attention(q, k, v.reshape(T, heads, hd)).reshape(T, S)
        pad = (FSMN_KERNEL - 1) // 2
        mem = F.conv1d(F.pad(v.t()[None], (pad, FSMN_KERNEL - 1 - pad)), ops.W[bp + "attn.fsmn_block.weight"],
                       groups=S)[0].t()
        x = x + ops.lin(o, bp + "attn.out") + (v + mem)
        a = ops.ln(x, bp + "mlp_ln", 1e-5)
        x = x + ops.lin(F.gelu(ops.lin(a, bp + "mlp.0")), bp + "mlp.2")
    h = torch.tanh(ops.lin(x, p + "quantizer._codebook.project_down")) * FSQ_SCALE  # [T, 8]
    digits = torch.round(h) + 1  # half to even
    assert digits.min() >= 0 and digits.max() <= 2
    powers = torch.tensor([3 ** i for i in range(h.shape[1])], dtype=torch.int64)
    ids = (digits.long() * powers).sum(-1)
    margins = (h.abs() - 0.5).abs().min(-1).values
    return ids, margins


def discrete(ops, dc, samples, fb):
    if len(samples) > PIECE_SAMPLES:
        pieces = [samples[i:i + PIECE_SAMPLES] for i in range(0, len(samples), PIECE_SAMPLES)]
    else:
        pieces = [samples]
    ids, margins, counts = [], [], []
    for piece in pieces:
        i, m = discrete_piece(ops, dc, piece, fb)
        ids.append(i)
        margins.append(m)
        counts.append(int(i.numel()))
    return torch.cat(ids), torch.cat(margins), counts


# ---------------------------------------------------------------- main
def g7(v):
    return float(f"{float(v):.7g}")


def checked_rows(name, chunk_rows):
    total = sum(chunk_rows)
    if name in ("short", "odd"):
        return list(range(total))
    rows, base = set(range(0, total, 50)), 0
    for c in chunk_rows:
        rows.update(range(base, base + min(3, c)))
        rows.update(range(base + max(0, c - 3), base + c))
        base += c
    return sorted(rows)


def main(model_dir, out_path):
    t0 = time.time()
    W, sha, dtypes = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    ac, dc = cfg["audio_config"], cfg["discrete_audio_config"]
    llm_width = cfg["text_config"]["hidden_size"]
    print(f"weights {sha[:16]}..., tensor dtypes {dtypes}; d {ac['d_model']} layers {ac['encoder_layers']} "
          f"heads {ac['encoder_attention_heads']} ffn {ac['encoder_ffn_dim']}; S {dc['n_audio_state']} "
          f"heads {dc['n_audio_head']} layers {dc['n_audio_layer']}; llm {llm_width}")
    assert ac["num_mel_bins"] == 128 and dc["n_mels"] == 128 and ac["max_source_positions"] == 1500
    assert ac.get("activation_function", "gelu") == "gelu"
    ops = Ops(W)
    fb = whisper_mel_ref.slaney_filterbank()
    golden = {"generator": "tools/reference/audio_encoder_ref.py", "weights_sha256": sha, "config": cfg, "cases": []}
    for name, seconds, seed in CASES:
        tc = time.time()
        ints, x = make_signal(seconds, seed)
        with torch.no_grad():
            rows, chunk_rows = continuous(ops, ac, x, fb)
            ids, margins, piece_ids = discrete(ops, dc, x, fb)
        assert rows.shape == (sum(chunk_rows), llm_width)
        check = checked_rows(name, chunk_rows)
        case = {
            "name": name, "seconds": seconds, "seed": seed, "num_samples": len(ints),
            "first_samples": ints[:8], "sample_sum": sum(ints),
            "continuous": {
                "num_rows": int(rows.shape[0]), "width": llm_width, "chunk_rows": chunk_rows,
                "checked_rows": check,
                "rows": [[g7(v) for v in rows[r].tolist()] for r in check],
                "row_norms": [g7(v) for v in rows.double().norm(dim=-1).tolist()],
            },
            "discrete": {
                "ids": [int(v) for v in ids.tolist()], "piece_ids": piece_ids,
                "margins": [g7(v) for v in margins.tolist()],
            },
        }
        golden["cases"].append(case)
        near = int((margins < 1e-3).sum())
        print(f"{name}: {len(ints)} samples, Tc {rows.shape[0]} (chunks {chunk_rows}), Td {ids.numel()} "
              f"(pieces {piece_ids}), ids with margin < 1e-3: {near}, min margin {float(margins.min()):.3g}, "
              f"distinct ids {len(set(ids.tolist()))}, row norm mean {float(rows.norm(dim=-1).mean()):.4g} "
              f"[{time.time() - tc:.1f} s]")
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w") as f:
        json.dump(golden, f, separators=(",", ":"))
    print(f"wrote {out_path} ({os.path.getsize(out_path)} bytes) in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
