#!/usr/bin/env python3
"""PyTorch's time for the same ViT forward as vision_bench's BM_VitForward:
the `bench` vision encoder folder's Qwen2.5-VL ViT (patch embedding as
F.conv3d, rotary, window attention per window and full attention per frame as
transformers' eager attention (softmax(q k^T / sqrt(d)) v), SwiGLU, merger, projector), on a side x side
image's patch rows, in float32 and in bfloat16, best of 5 after a warm-up, on
the same number of threads. Prints one JSON line.

Usage: /usr/bin/python3 bench/vision/torch_vit.py MODEL_DIR SIDE THREADS
"""
import json
import math
import struct
import sys
import time

import torch
import torch.nn.functional as F

model_dir, side, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
cfg = json.load(open(f"{model_dir}/config.json"))["vision_config"]


def read_safetensors(path, prefixes):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        base = 8 + n
        out = {}
        for name, info in header.items():
            if name == "__metadata__" or not name.startswith(prefixes):
                continue
            b, e = info["data_offsets"]
            f.seek(base + b)
            out[name] = torch.frombuffer(bytearray(f.read(e - b)), dtype=torch.bfloat16).reshape(info["shape"])
    return out


raw = read_safetensors(f"{model_dir}/model.safetensors", ("model.vision_model.", "model.mm_projector."))
c, heads, depth = cfg["hidden_size"], cfg["num_heads"], cfg["depth"]
d = c // heads
gh = gw = round(side / 28) * 2  # smart resize of a square image below max_pixels
n = gh * gw
lh, lw = gh // 2, gw // 2


def window_order():
    vws = 4
    idx = torch.arange(lh * lw).reshape(lh, lw)
    order, sizes = [], []
    for wy in range(0, lh, vws):
        for wx in range(0, lw, vws):
            block = idx[wy:wy + vws, wx:wx + vws].reshape(-1)
            order.append(block)
            sizes.append(block.numel() * 4)
    return torch.cat(order), sizes


order, window_sizes = window_order()
inv = 1.0 / (10000 ** (torch.arange(0, d // 2, 2, dtype=torch.float32) / (d // 2)))
hpos = torch.arange(gh)[:, None].expand(gh, gw).reshape(lh, 2, lw, 2).permute(0, 2, 1, 3).flatten()
wpos = torch.arange(gw)[None, :].expand(gh, gw).reshape(lh, 2, lw, 2).permute(0, 2, 1, 3).flatten()
table = torch.outer(torch.arange(max(gh, gw), dtype=torch.float32), inv)
angles = torch.cat([table[hpos], table[wpos]], -1).reshape(n // 4, 4, -1)[order].reshape(n, -1)
emb = torch.cat([angles, angles], -1)
cos, sin = emb.cos()[:, None], emb.sin()[:, None]
pixels = torch.randn(n, 1176)


def forward(W, dtype):
    x = F.conv3d(pixels.to(dtype).reshape(-1, 3, 2, 14, 14), W["model.vision_model.patch_embed.proj.weight"],
                 stride=(2, 14, 14)).reshape(n, c)
    x = x.reshape(n // 4, 4, c)[order].reshape(n, c)

    def rms(t, name):
        t32 = t.float()
        return (t32 * torch.rsqrt(t32.pow(2).mean(-1, keepdim=True) + 1e-6)).to(dtype) * W[name]

    def rot(t):
        t32 = t.float()
        half = d // 2
        return (t32 * cos + torch.cat([-t32[..., half:], t32[..., :half]], -1) * sin).to(dtype)

    for i in range(depth):
        p = f"model.vision_model.blocks.{i}."
        h = rms(x, p + "norm1.weight")
        q, k, v = F.linear(h, W[p + "attn.qkv.weight"], W[p + "attn.qkv.bias"]).reshape(n, 3, heads, d).unbind(1)
        q, k = rot(q), rot(k)
        sizes = [n] if i in cfg["fullatt_block_indexes"] else window_sizes
        outs = []
        for qs, ks, vs in zip(q.split(sizes), k.split(sizes), v.split(sizes)):
            # transformers' eager attention (torch 1.13 has no SDPA): per window
            qh, kh, vh = qs.transpose(0, 1), ks.transpose(0, 1), vs.transpose(0, 1)
            w = torch.softmax((qh @ kh.transpose(1, 2)).float() * d ** -0.5, -1).to(dtype)
            outs.append((w @ vh).transpose(0, 1))
        o = torch.cat(outs).reshape(n, c)
        x = x + F.linear(o, W[p + "attn.proj.weight"], W[p + "attn.proj.bias"])
        h = rms(x, p + "norm2.weight")
        g = F.linear(h, W[p + "mlp.gate_proj.weight"], W[p + "mlp.gate_proj.bias"])
        u = F.linear(h, W[p + "mlp.up_proj.weight"], W[p + "mlp.up_proj.bias"])
        x = x + F.linear(F.silu(g) * u, W[p + "mlp.down_proj.weight"], W[p + "mlp.down_proj.bias"])
    m = rms(x, "model.vision_model.merger.ln_q.weight").reshape(n // 4, 4 * c)
    m = F.linear(F.gelu(F.linear(m, W["model.vision_model.merger.mlp.0.weight"], W["model.vision_model.merger.mlp.0.bias"])),
                 W["model.vision_model.merger.mlp.2.weight"], W["model.vision_model.merger.mlp.2.bias"])
    m = m[torch.argsort(order)]
    return F.linear(m, W["model.mm_projector.weight"], W["model.mm_projector.bias"])


result = {"side": side, "patches": n, "threads": threads, "torch": torch.__version__}
for name, dtype in [("f32", torch.float32), ("bf16", torch.bfloat16)]:
    W = {k: v.to(dtype) for k, v in raw.items()}
    with torch.inference_mode():
        forward(W, dtype)
        best = math.inf
        for _ in range(5):
            t = time.perf_counter()
            forward(W, dtype)
            best = min(best, time.perf_counter() - t)
    result[f"{name}_ms"] = best * 1e3
print(json.dumps(result))
