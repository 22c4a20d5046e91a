#!/usr/bin/env python3
"""PyTorch's time for the same DiT forward as vision_decoder_bench's: the
`bench` vision decoder folder's transformer/ (Flux-style single-stream DiT,
tools/reference/vision_decoder_ref.py's architecture: img_in, time_in and
vector_in, per block adaLN modulation, linear1 -> q | k | v | mlp, per-head
RMSNorm and 3-axis RoPE on q and k, attention, tanh GELU, linear2, gated
residual; the final layer) over the latent of a 656x880 image (82 x 110 =
9020 tokens), in float32 and in bfloat16, best of REPS after a warm-up, on
THREADS threads. torch 1.13 has no fused attention (no SDPA): the attention
is softmax(q k^T / sqrt(d)) v one head and 1024 query rows at a time (all 24
heads at once would be 24 x 9020^2 scores, 7.8 GB in f32; blocks of rows
keep each score matrix at 37 MB instead of a whole head's 325 MB), the
scores in f32. REPS 0: one run, no warm-up. Prints one JSON
line.

Usage: /usr/bin/python3 bench/vision_decoder/torch_dit.py MODEL_DIR THREADS [REPS]
"""
import json
import math
import struct
import sys
import time

import torch
import torch.nn.functional as F

model_dir, threads = sys.argv[1], int(sys.argv[2])
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 2
torch.set_num_threads(threads)
cfg = json.load(open(f"{model_dir}/transformer/config.json"))
H, W_ = 880 // 8, 656 // 8
T = H * W_


def read_safetensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        base = 8 + n
        out = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            b, e = info["data_offsets"]
            f.seek(base + b)
            dt = {"BF16": torch.bfloat16, "F32": torch.float32}[info["dtype"]]
            out[name] = torch.frombuffer(bytearray(f.read(e - b)), dtype=dt).reshape(info["shape"])
    return out


raw = read_safetensors(f"{model_dir}/transformer/diffusion_pytorch_model.safetensors")
hidden, heads = cfg["hidden_size"], cfg["num_heads"]
dh = hidden // heads
mlp_hidden = int(hidden * cfg["mlp_ratio"])
blocks = cfg["depth_single_blocks"]
ROWS = 1024


def rope_tables():
    rows = torch.arange(H, dtype=torch.float64)[:, None].expand(H, W_).reshape(-1)
    cols = torch.arange(W_, dtype=torch.float64)[None, :].expand(H, W_).reshape(-1)
    pos = [torch.zeros(T, dtype=torch.float64), rows, cols]
    angles = []
    for p, d in zip(pos, cfg["axes_dim"]):
        omega = 1.0 / (cfg["theta"] ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
        angles.append(p[:, None] * omega[None])
    a = torch.cat(angles, -1)
    return torch.cos(a).float(), torch.sin(a).float()


cos, sin = rope_tables()
gen = torch.Generator().manual_seed(7)
tokens = torch.randn(T, cfg["in_channels"] + cfg["context_in_dim"], generator=gen)
pooled = torch.randn(cfg["vec_in_dim"], generator=gen)


def forward(W, dtype):
    def lin(x, name):
        return F.linear(x.to(dtype), W[name + ".weight"], W.get(name + ".bias"))

    def rms_rope(x, name):  # x [H, L, Dh] -> f32 norm and rotation, back to dtype
        x = x.float()
        x = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * W[name].float()
        x0, x1 = x[..., 0::2], x[..., 1::2]
        return torch.stack([cos * x0 - sin * x1, sin * x0 + cos * x1], -1).reshape(x.shape).to(dtype)

    half = 128
    freqs = torch.exp(-math.log(10000.0) * torch.arange(0, half, dtype=torch.float32) / half)
    args = torch.tensor([0.7 * 1000.0]) * freqs
    temb = torch.cat([torch.cos(args), torch.sin(args)])
    vec = lin(F.silu(lin(temb, "time_in.in_layer")), "time_in.out_layer")
    vec = vec + lin(F.silu(lin(pooled, "vector_in.in_layer")), "vector_in.out_layer")
    svec = F.silu(vec)
    x = lin(tokens, "img_in").float()  # the residual stream in f32
    for i in range(blocks):
        p = f"single_blocks.{i}."
        shift, scale, gate = lin(svec, p + "modulation.lin").float().chunk(3)
        xm = (1 + scale) * F.layer_norm(x, (hidden,), eps=1e-6) + shift
        qkv, mlp = lin(xm, p + "linear1").split([3 * hidden, mlp_hidden], -1)
        q, k, v = qkv.reshape(T, 3, heads, dh).permute(1, 2, 0, 3)  # each [H, L, Dh]
        q = rms_rope(q, p + "norm.query_norm.scale")
        k = rms_rope(k, p + "norm.key_norm.scale")
        v = v.contiguous()
        attn = torch.empty(T, heads, dh, dtype=dtype)
        for hd in range(heads):
            kt = k[hd].t()
            for r0 in range(0, T, ROWS):
                s = torch.softmax((q[hd, r0:r0 + ROWS] @ kt).float() * (1.0 / math.sqrt(dh)), -1).to(dtype)
                attn[r0:r0 + ROWS, hd] = s @ v[hd]
        out = lin(torch.cat([attn.reshape(T, hidden), F.gelu(mlp, approximate="tanh")], -1), p + "linear2")
        x = x + gate * out.float()
    shift, scale = lin(svec, "final_layer.adaLN_modulation.1").float().chunk(2)
    x = (1 + scale) * F.layer_norm(x, (hidden,), eps=1e-6) + shift
    return lin(x, "final_layer.linear").float()


result = {"tokens": T, "blocks": blocks, "threads": threads, "reps": reps, "torch": torch.__version__}
for name, dtype in [("bf16", torch.bfloat16), ("f32", torch.float32)]:
    W = {k: v.to(dtype) for k, v in raw.items()}
    with torch.inference_mode():
        if reps > 0:
            forward(W, dtype)
        best = math.inf
        for _ in range(max(reps, 1)):
            t = time.perf_counter()
            forward(W, dtype)
            best = min(best, time.perf_counter() - t)
    result[f"{name}_s"] = best
    del W
print(json.dumps(result))
