#!/usr/bin/env python3
"""Independent PyTorch reference for the Omni vision encoder (goldens for
models_test): Qwen2.5-VL's ViT with the mm_projector (continuous rows) and
TA-Tok over SigLIP (discrete ids), written from the architectures
(spec/omni-model.md; transformers' Qwen2.5-VL vision tower and SigLIP as
documented), not from omniserve's C++.

Numerics as the runtime's: weights are the bf16 values of the demo folder;
the input of every projection is rounded to bf16, products accumulate in
f32; norms, rotary, attention and activations are f32. The ViT's patch
embedding is computed as the Conv3d it is (F.conv3d), TA-Tok's as its Conv2d;
window attention as a dense block-diagonal mask from the window index built
exactly as Qwen2.5-VL's get_window_index does (padding with -100, windows of
4x4 merged tokens, unique_consecutive). SimVQ: ids = argmax over the codes of
cos(z, code) with the codes = l2norm(embedding_proj(embedding)) rounded to
bf16 once (omniserve's deterministic form; the reference model samples), and
the margin between the best two codes is stored so the test compares ids only
where the choice is clear.

The pixel inputs come from the processors (PIL resize, as in
vision_processor_ref.py), so the whole image -> rows / ids path is checked.

Usage:
  build/omniserve make-demo-model --component ve --out /tmp/ve
  /usr/bin/python3 tools/reference/vision_encoder_ref.py /tmp/ve tests/data/vision tests/data/vision/encoder_golden.json
"""
import hashlib
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

model_dir, image_dir, out_path = sys.argv[1:4]
DTYPES = {"BF16": torch.bfloat16, "F32": torch.float32}


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
        raw = bytearray(data[8 + n + b:8 + n + e])
        out[name] = torch.frombuffer(raw, dtype=DTYPES[info["dtype"]]).reshape(info["shape"]).float()
    return out, hashlib.sha256(data).hexdigest()


W, weights_sha = read_safetensors(os.path.join(model_dir, "model.safetensors"))
cfg = json.load(open(os.path.join(model_dir, "config.json")))
vc, tc = cfg["vision_config"], cfg["discrete_vision_config"]
pre = json.load(open(os.path.join(model_dir, "preprocessor_config.json")))


def bf16(x):
    return x.to(torch.bfloat16).float()


def lin(x, name, bias=True):
    y = bf16(x) @ W[name + ".weight"].t()
    return y + W[name + ".bias"] if bias else y


def rms(x, name, eps=1e-6):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * W[name + ".weight"]


def layer_norm(x, name, eps):
    return F.layer_norm(x, (x.shape[-1],), W[name + ".weight"], W[name + ".bias"], eps)


def attention(q, k, v, mask, scale):
    # q, k, v [T, H, D]; mask [T, T] bool (True: visible)
    s = torch.einsum("thd,shd->hts", q, k) * scale
    s = s.masked_fill(~mask[None], float("-inf"))
    return torch.einsum("hts,shd->thd", torch.softmax(s, -1), v)


# ---- processors (as vision_processor_ref.py) ----
MEAN = np.array(pre["image_mean"], dtype=np.float32)
STD = np.array(pre["image_std"], dtype=np.float32)


def smart_resize(h, w, factor=28, min_pixels=pre["min_pixels"], max_pixels=pre["max_pixels"]):
    hb, wb = max(factor, round(h / factor) * factor), max(factor, round(w / factor) * factor)
    if hb * wb > max_pixels:
        beta = math.sqrt(h * w / max_pixels)
        hb, wb = math.floor(h / beta / factor) * factor, math.floor(w / beta / factor) * factor
    elif hb * wb < min_pixels:
        beta = math.sqrt(min_pixels / (h * w))
        hb, wb = math.ceil(h * beta / factor) * factor, math.ceil(w * beta / factor) * factor
    return hb, wb


def qwen_pixels(img):
    rh, rw = smart_resize(img.size[1], img.size[0])
    r = np.asarray(img.resize((rw, rh), Image.BICUBIC))
    x = ((r * (1 / 255)).astype(np.float32) - MEAN) / STD
    x = np.concatenate([x.transpose(2, 0, 1)[None]] * 2, 0)
    gh, gw = rh // 14, rw // 14
    x = x.reshape(1, 2, 3, gh // 2, 2, 14, gw // 2, 2, 14).transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return torch.from_numpy(np.ascontiguousarray(x.reshape(gh * gw, 1176))), gh, gw


def tatok_pixels(img):
    r = np.asarray(img.resize((384, 384), Image.BICUBIC)).astype(np.float32) / np.float32(255)
    return torch.from_numpy(np.ascontiguousarray(((r - 0.5) / 0.5).transpose(2, 0, 1)))


# ---- Qwen2.5-VL ViT ----
def window_index(gh, gw, merge=2, window=112, patch=14):
    vws = window // merge // patch
    lh, lw = gh // merge, gw // merge
    index = torch.arange(lh * lw).reshape(1, lh, lw)
    ph, pw = vws - lh % vws, vws - lw % vws
    nwh, nww = (lh + ph) // vws, (lw + pw) // vws
    padded = F.pad(index, (0, pw, 0, ph), "constant", -100)
    padded = padded.reshape(1, nwh, vws, nww, vws).permute(0, 1, 3, 2, 4).reshape(1, nwh * nww, vws, vws)
    seqlens = (padded != -100).sum([2, 3]).reshape(-1)
    flat = padded.reshape(-1)
    order = flat[flat != -100]
    cu = torch.cat([torch.zeros(1, dtype=torch.long), seqlens.cumsum(0) * merge * merge])
    return order, torch.unique_consecutive(cu)


def vit(pixels, gh, gw):
    c, heads = vc["hidden_size"], vc["num_heads"]
    d = c // heads
    x = F.conv3d(bf16(pixels).reshape(-1, 3, 2, 14, 14), W["model.vision_model.patch_embed.proj.weight"],
                 stride=(2, 14, 14)).reshape(-1, c)
    n = x.shape[0]
    # 2-D rotary angles in the merge-block order of the rows
    inv = 1.0 / (10000 ** (torch.arange(0, d // 2, 2, dtype=torch.float32) / (d // 2)))
    hpos = torch.arange(gh)[:, None].expand(gh, gw).reshape(gh // 2, 2, gw // 2, 2).permute(0, 2, 1, 3).flatten()
    wpos = torch.arange(gw)[None, :].expand(gh, gw).reshape(gh // 2, 2, gw // 2, 2).permute(0, 2, 1, 3).flatten()
    table = torch.outer(torch.arange(max(gh, gw), dtype=torch.float32), inv)
    angles = torch.cat([table[hpos], table[wpos]], -1)  # [n, d/2]
    order, cu_win = window_index(gh, gw)
    x = x.reshape(n // 4, 4, c)[order].reshape(n, c)
    angles = angles.reshape(n // 4, 4, -1)[order].reshape(n, -1)
    emb = torch.cat([angles, angles], -1)
    cos, sin = emb.cos()[:, None], emb.sin()[:, None]

    def rotate(t):
        half = t.shape[-1] // 2
        return t * cos + torch.cat([-t[..., half:], t[..., :half]], -1) * sin

    seg_win = torch.zeros(n, dtype=torch.long)
    for i in range(len(cu_win) - 1):
        seg_win[cu_win[i]:cu_win[i + 1]] = i
    mask_win = seg_win[:, None] == seg_win[None, :]
    mask_full = torch.ones(n, n, dtype=torch.bool)
    for i in range(vc["depth"]):
        p = f"model.vision_model.blocks.{i}."
        h = rms(x, p + "norm1")
        q, k, v = lin(h, p + "attn.qkv").reshape(n, 3, heads, d).unbind(1)
        mask = mask_full if i in vc["fullatt_block_indexes"] else mask_win
        o = attention(rotate(q), rotate(k), v, mask, d ** -0.5).reshape(n, c)
        x = x + lin(o, p + "attn.proj")
        h = rms(x, p + "norm2")
        x = x + lin(F.silu(lin(h, p + "mlp.gate_proj")) * lin(h, p + "mlp.up_proj"), p + "mlp.down_proj")
    m = rms(x, "model.vision_model.merger.ln_q").reshape(n // 4, 4 * c)
    m = lin(F.gelu(lin(m, "model.vision_model.merger.mlp.0")), "model.vision_model.merger.mlp.2")
    m = m[torch.argsort(order)]
    return lin(m, "model.mm_projector")


# ---- TA-Tok ----
def tatok(img):
    h, heads = tc["hidden_size"], tc["num_attention_heads"]
    d = h // heads
    eps = tc["layer_norm_eps"]
    t = "model.discrete_vision_model."
    x = F.conv2d(bf16(img)[None], W[t + "encoder.embeddings.patch_embedding.weight"],
                 W[t + "encoder.embeddings.patch_embedding.bias"], stride=14)
    x = x.flatten(2)[0].t() + W[t + "encoder.embeddings.position_embedding.weight"]
    n = x.shape[0]
    layers = tc["num_hidden_layers"] + 1 + tc["select_layer"]  # hidden_states[select_layer]
    everyone = torch.ones(n, n, dtype=torch.bool)
    for i in range(layers):
        p = f"{t}encoder.encoder.layers.{i}."
        y = layer_norm(x, p + "layer_norm1", eps)
        q, k, v = (lin(y, p + f"self_attn.{s}_proj").reshape(n, heads, d) for s in "qkv")
        x = x + lin(attention(q, k, v, everyone, d ** -0.5).reshape(n, h), p + "self_attn.out_proj")
        y = layer_norm(x, p + "layer_norm2", eps)
        x = x + lin(F.gelu(lin(y, p + "mlp.fc1"), approximate="tanh"), p + "mlp.fc2")
    z = lin(torch.tanh(lin(x, t + "encode_task_layer.0")), t + "bottleneck.in_linear")
    codes = F.normalize(lin(W[t + "bottleneck.regularizer.embedding.weight"], t + "bottleneck.regularizer.embedding_proj"),
                        dim=-1)
    scores = bf16(F.normalize(z, dim=-1)) @ bf16(codes).t()
    top = scores.topk(2, dim=-1)
    return top.indices[:, 0], top.values[:, 0] - top.values[:, 1]


golden = {"weights_sha256": weights_sha, "cases": []}
for name, full in [("wide.jpg", True), ("tall.jpg", True), ("square448.jpg", False)]:
    img = Image.open(os.path.join(image_dir, name)).convert("RGB")
    pixels, gh, gw = qwen_pixels(img)
    with torch.no_grad():
        rows = vit(pixels, gh, gw)
        ids, margin = tatok(tatok_pixels(img))
    case = {"file": name, "grid_h": gh, "grid_w": gw, "rows_shape": list(rows.shape),
            "rows_sum": float(rows.double().sum()), "rows_abs_max": float(rows.abs().max()),
            "ids": ids.tolist(), "id_margin": [float(m) for m in margin]}
    flat = rows.reshape(-1)
    idx = torch.linspace(0, flat.numel() - 1, 257).long()
    case["rows_sample_index"] = idx.tolist()
    case["rows_sample_value"] = [float(v) for v in flat[idx]]
    if full:
        case["rows"] = [float(v) for v in flat]
    golden["cases"].append(case)
with open(out_path, "w") as f:
    json.dump(golden, f)
print("wrote", len(golden["cases"]), "cases to", out_path)
