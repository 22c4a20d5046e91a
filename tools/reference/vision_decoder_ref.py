#!/usr/bin/env python3
"""Independent PyTorch reference for the Omni vision decoder (goldens for
models_test): OmniServe's VisionTokenToImagePipeline with diffusers 0.32.2
semantics, i.e. the token embedder condition, the Flux-style single-stream DiT
(`transformer`, and `transformer2` for autoguidance), the static-shift
FlowMatchEulerDiscrete sampler and the AutoencoderKL decoder. Written from the
architecture (spec/omni-model.md, "Vision decoder details"; Flux's single
stream block; diffusers' AutoencoderKL Decoder as documented), not from
omniserve's C++. All sizes come from the folder's config files.

Numerics as the runtime's:
  - weights are the bf16 values of the safetensors files (held as f32);
  - the INPUT of every Linear and Conv is rounded to bf16, the product
    accumulates in f32 (f32 tensors after rounding), bias added in f32;
  - norms (LayerNorm, per-head RMSNorm, GroupNorm), RoPE, attention (scores,
    softmax, weighted sum; q, k, v are NOT rounded), activations, residual
    adds, the scheduler, autoguidance and the condition (embedding gather,
    mean, bilinear resize) are f32; latents are f32 throughout;
  - RoPE: omega_k = 1 / theta^(2k/d), angles and cos/sin in float64 (as
    Flux's rope()), then cast to f32; adjacent pairs (x[2k], x[2k+1]) ->
    (cos x0 - sin x1, sin x0 + cos x1); the axes' frequency lists are
    concatenated axis 0, 1, 2 along the head dim; positions (0, row, col);
  - the DiT's timestep: t_int = int(float32(sigma * N)) (N =
    num_train_timesteps, the product in float32 as diffusers' timesteps =
    sigmas * N), sigma_dit = float32(t_int) / N in float32, and the
    sinusoidal embedding of 1000 * sigma_dit (float32; 128 frequencies
    exp(-ln(1e4) j / 128), cos first); the Euler update uses the exact sigma;
  - the DiT's output is token-major [h*w, 16]; it is transposed to CHW
    before autoguidance p1 + g (p1 - p2) and the Euler step
    x + (sigma_next - sigma) v;
  - VAE: z = latent / scaling_factor + shift_factor; GroupNorm eps 1e-6;
    mid attention single head of dim C with residual; nearest x2 upsampling;
    image post-processing clamp(-1, 1), (x + 1) / 2 * 255, uint8 by
    truncation, HWC.

Inputs: ids[i] = (i * 7919 + 13) % 65536 for 729 ids; latents and noise from
torch.Generator().manual_seed(s).randn (s = 1 dit, 2 step, 3 vae, 4 pipeline),
all stored in the JSON. Float arrays are flattened row-major with 9
significant digits (round-trips float32); scalar sigmas are the exact float32
values.

Usage:
  build/omniserve make-demo-model --component vd --out /tmp/vd && /usr/bin/python3 tools/reference/vision_decoder_ref.py /tmp/vd tests/data/vision_decoder/decoder_golden.json
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flow_match_ref import sigmas_for  # noqa: E402  (the scheduler's sigma schedule)

model_dir, out_path = sys.argv[1:3]
DTYPES = {"BF16": torch.bfloat16, "F32": torch.float32}
LATENT_H, LATENT_W = 6, 8


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


def load(component):
    cfg = json.load(open(os.path.join(model_dir, component, "config.json")))
    w, sha = read_safetensors(os.path.join(model_dir, component, "diffusion_pytorch_model.safetensors"))
    return cfg, w, sha


def bf16(x):
    return x.to(torch.bfloat16).float()


def lin(W, x, name):
    return bf16(x) @ W[name + ".weight"].t() + W[name + ".bias"]


def conv(W, x, name, pad):
    return F.conv2d(bf16(x)[None], W[name + ".weight"], W[name + ".bias"], padding=pad)[0]


# ---- condition (token embedder) ----
def condition(table, ids, h, w):
    e = table[torch.tensor(ids, dtype=torch.long)]                # [729, D] f32
    pooled = e.mean(0)                                            # [D]
    g = int(round(math.sqrt(e.shape[0])))
    assert g * g == e.shape[0]
    grid = e.reshape(g, g, -1).permute(2, 0, 1)[None]             # [1, D, 27, 27]
    spatial = F.interpolate(grid, size=(h, w), mode="bilinear", align_corners=False)[0]
    return pooled, spatial.permute(1, 2, 0).reshape(h * w, -1)    # token-major [h*w, D]


# ---- DiT ----
def timestep_embedding(sigma_dit, dim=256, max_period=10000.0, time_factor=1000.0):
    t = torch.tensor([sigma_dit], dtype=torch.float32) * time_factor
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(0, half, dtype=torch.float32) / half)
    args = t[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], -1)[0]   # [256]


def rope_tables(h, w, axes_dim, theta):
    rows = torch.arange(h, dtype=torch.float64)[:, None].expand(h, w).reshape(-1)
    cols = torch.arange(w, dtype=torch.float64)[None, :].expand(h, w).reshape(-1)
    pos = [torch.zeros(h * w, dtype=torch.float64), rows, cols]
    angles = []
    for p, d in zip(pos, axes_dim):
        omega = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
        angles.append(p[:, None] * omega[None])
    a = torch.cat(angles, -1)                                     # [L, head_dim / 2]
    return torch.cos(a).float(), torch.sin(a).float()


def apply_rope(x, cos, sin):
    # x [H, L, Dh]; cos, sin [L, Dh / 2]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack([cos * x0 - sin * x1, sin * x0 + cos * x1], -1).reshape(x.shape)


def rms_norm(x, scale, eps=1e-6):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * scale


def dit(cfg, W, tokens, y, sigma_dit, h, w):
    """tokens [h*w, in_channels + context_in_dim]; returns (out [h*w, in_channels], vec)."""
    hidden, heads = cfg["hidden_size"], cfg["num_heads"]
    dh = hidden // heads
    mlp_hidden = int(hidden * cfg["mlp_ratio"])
    assert sum(cfg["axes_dim"]) == dh and not cfg.get("use_patchify", False) and cfg.get("depth", 0) == 0
    L = tokens.shape[0]
    x = lin(W, tokens, "img_in")
    temb = timestep_embedding(sigma_dit)
    vec = lin(W, F.silu(lin(W, temb, "time_in.in_layer")), "time_in.out_layer")
    vec = vec + lin(W, F.silu(lin(W, y, "vector_in.in_layer")), "vector_in.out_layer")
    cos, sin = rope_tables(h, w, cfg["axes_dim"], cfg["theta"])
    svec = F.silu(vec)
    for i in range(cfg["depth_single_blocks"]):
        p = f"single_blocks.{i}."
        shift, scale, gate = lin(W, svec, p + "modulation.lin").chunk(3)
        xm = (1 + scale) * F.layer_norm(x, (hidden,), eps=1e-6) + shift
        qkv, mlp = lin(W, xm, p + "linear1").split([3 * hidden, mlp_hidden], -1)
        q, k, v = qkv.reshape(L, 3, heads, dh).permute(1, 2, 0, 3)   # each [H, L, Dh]
        q = apply_rope(rms_norm(q, W[p + "norm.query_norm.scale"]), cos, sin)
        k = apply_rope(rms_norm(k, W[p + "norm.key_norm.scale"]), cos, sin)
        s = torch.softmax((q @ k.transpose(1, 2)) * (1.0 / math.sqrt(dh)), -1)
        attn = (s @ v).permute(1, 0, 2).reshape(L, heads * dh)
        out = lin(W, torch.cat([attn, F.gelu(mlp, approximate="tanh")], -1), p + "linear2")
        x = x + gate * out
    shift, scale = lin(W, svec, "final_layer.adaLN_modulation.1").chunk(2)
    x = (1 + scale) * F.layer_norm(x, (hidden,), eps=1e-6) + shift
    return lin(W, x, "final_layer.linear"), vec


# ---- VAE decoder ----
def group_norm(W, x, name, groups):
    return F.group_norm(x[None], groups, W[name + ".weight"], W[name + ".bias"], eps=1e-6)[0]


def resnet(W, x, p, groups):
    hs = conv(W, F.silu(group_norm(W, x, p + "norm1", groups)), p + "conv1", 1)
    hs = conv(W, F.silu(group_norm(W, hs, p + "norm2", groups)), p + "conv2", 1)
    sc = conv(W, x, p + "conv_shortcut", 0) if (p + "conv_shortcut.weight") in W else x
    return sc + hs


def mid_attention(W, x, p, groups):
    c, hh, ww = x.shape
    t = group_norm(W, x, p + "group_norm", groups).reshape(c, hh * ww).t()   # [HW, C]
    q, k, v = (lin(W, t, p + n) for n in ("to_q", "to_k", "to_v"))
    a = torch.softmax((q @ k.t()) * (1.0 / math.sqrt(c)), -1) @ v
    o = lin(W, a, p + "to_out.0")
    return x + o.t().reshape(c, hh, ww)


def vae_decode(cfg, W, latent):
    groups, lpb = cfg["norm_num_groups"], cfg["layers_per_block"]
    boc = cfg["block_out_channels"]
    assert cfg.get("mid_block_add_attention", True) and not cfg.get("use_post_quant_conv", False)
    z = latent / cfg["scaling_factor"] + cfg["shift_factor"]
    x = conv(W, z, "decoder.conv_in", 1)
    x = resnet(W, x, "decoder.mid_block.resnets.0.", groups)
    x = mid_attention(W, x, "decoder.mid_block.attentions.0.", groups)
    x = resnet(W, x, "decoder.mid_block.resnets.1.", groups)
    for i in range(len(boc)):
        for j in range(lpb + 1):
            x = resnet(W, x, f"decoder.up_blocks.{i}.resnets.{j}.", groups)
        if i != len(boc) - 1:
            x = F.interpolate(x[None], scale_factor=2.0, mode="nearest")[0]
            x = conv(W, x, f"decoder.up_blocks.{i}.upsamplers.0.conv", 1)
    x = F.silu(group_norm(W, x, "decoder.conv_norm_out", groups))
    return conv(W, x, "decoder.conv_out", 1)                      # [3, 8h, 8w], before clamp


def to_rgb8(img):
    x = ((img.clamp(-1, 1) + 1) / 2).permute(1, 2, 0).numpy()
    return (x * 255).astype(np.uint8)                             # HWC, truncation


# ---- sampler pieces ----
def dit_sigma(sigma, n):
    """sigma: 0-dim float32 tensor. Returns (t_int, sigma_dit float32 value)."""
    t_int = int((sigma.to(torch.float32) * n).item())
    sigma_dit = (torch.tensor(t_int, dtype=torch.float32) / n).item()
    return t_int, sigma_dit


def guided_velocity(latent, sigma_dit, y, spatial, g):
    c, h, w = latent.shape
    tokens = torch.cat([latent.reshape(c, h * w).t(), spatial], -1)
    p1, vec1 = dit(tcfg, TW, tokens, y, sigma_dit, h, w)
    p2, _ = dit(t2cfg, T2W, tokens, y, sigma_dit, h, w)
    p1c, p2c = p1.t().reshape(c, h, w), p2.t().reshape(c, h, w)
    return p1c + g * (p1c - p2c), p1, p2, vec1


def randn(shape, seed):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float32)


def flat(t):
    return [float(f"{v:.9g}") for v in t.reshape(-1).tolist()]


def stats(name, t):
    t = torch.as_tensor(t).float()
    print(f"  {name:18s} shape {tuple(t.shape)} min {t.min():.5g} max {t.max():.5g} "
          f"mean {t.mean():.5g} std {t.std():.5g} nan {bool(torch.isnan(t).any())}")


tcfg, TW, tsha = load("transformer")
t2cfg, T2W, t2sha = load("transformer2")
vcfg, VW, vsha = load("vae")
ecfg, EW, esha = load("token_embedder")
scfg = json.load(open(os.path.join(model_dir, "scheduler", "scheduler_config.json")))
assert not scfg.get("use_dynamic_shifting", False)
N, SHIFT = scfg["num_train_timesteps"], scfg["shift"]
C = tcfg["in_channels"]
h, w = LATENT_H, LATENT_W
up = 2 ** (len(vcfg["block_out_channels"]) - 1)
assert vcfg["latent_channels"] == C and tcfg["context_in_dim"] == ecfg["embedding_dim"]

ids = [(i * 7919 + 13) % 65536 for i in range(ecfg["token_length"])]
pooled, spatial = condition(EW["vocab_embeddings"], ids, h, w)
print("condition:")
stats("pooled", pooled)
stats("spatial", spatial)

# One DiT evaluation of each transformer at sigma 0.8.
sigma = torch.tensor(0.8, dtype=torch.float32)
_, sigma_dit = dit_sigma(sigma, N)
dit_latent = randn((C, h, w), 1)
tokens = torch.cat([dit_latent.reshape(C, h * w).t(), spatial], -1)
out1, vec = dit(tcfg, TW, tokens, pooled, sigma_dit, h, w)
out2, _ = dit(t2cfg, T2W, tokens, pooled, sigma_dit, h, w)
print(f"dit: sigma {sigma.item()!r} sigma_dit {sigma_dit!r}")
stats("vec", vec)
stats("out1", out1)
stats("out2", out2)

# One Euler step with autoguidance.
sig25 = sigmas_for(N, SHIFT, 25)
s0, s1 = sig25[3], sig25[4]
g = 0.75
step_latent = randn((C, h, w), 2)
_, step_sigma_dit = dit_sigma(s0, N)
v, _, _, _ = guided_velocity(step_latent, step_sigma_dit, pooled, spatial, g)
x_next = step_latent + (s1 - s0) * v
print(f"step: sigma {s0.item()!r} -> {s1.item()!r} (dit {step_sigma_dit!r})")
stats("x_next", x_next)

# VAE decode of a random latent.
vae_latent = randn((C, h, w), 3)
image = vae_decode(vcfg, VW, vae_latent)
rgb8 = to_rgb8(image)
print("vae:")
stats("image", image)
stats("rgb8", torch.from_numpy(rgb8.astype(np.float32)))
print(f"  fraction clamped at +-1: {float(((image <= -1) | (image >= 1)).float().mean()):.4f}; "
      f"rgb8 distinct values {len(np.unique(rgb8))}")

# Full pipeline, 2 steps.
steps = 2
sigp = sigmas_for(N, SHIFT, steps)
noise = randn((C, h, w), 4)
x = noise.clone()
for i in range(steps):
    _, sd = dit_sigma(sigp[i], N)
    v, _, _, _ = guided_velocity(x, sd, pooled, spatial, g)
    x = x + (sigp[i + 1] - sigp[i]) * v
pipe_image = vae_decode(vcfg, VW, x)
pipe_rgb8 = to_rgb8(pipe_image)
print(f"pipeline: sigmas {[float(s) for s in sigp]}")
stats("final latent", x)
stats("image", pipe_image)
stats("rgb8", torch.from_numpy(pipe_rgb8.astype(np.float32)))

golden = {
    "about": ("Generated by: build/omniserve make-demo-model --component vd --out /tmp/vd && "
              "/usr/bin/python3 tools/reference/vision_decoder_ref.py /tmp/vd "
              "tests/data/vision_decoder/decoder_golden.json (torch " + torch.__version__ + "). "
              "Independent PyTorch reference of the vision decoder; see the script's docstring "
              "for the numerics. Arrays flattened row-major; DiT outputs token-major [h*w, 16]; "
              "latents and images CHW; rgb8 HWC."),
    "weights_sha256": {"transformer": tsha, "transformer2": t2sha, "vae": vsha, "token_embedder": esha},
    "latent_h": h, "latent_w": w,
    "ids": ids,
    "condition": {"pooled": flat(pooled), "spatial": flat(spatial)},
    "dit": {"latent": flat(dit_latent), "sigma": sigma.item(), "sigma_dit": sigma_dit,
            "vec": flat(vec), "out1": flat(out1), "out2": flat(out2)},
    "step": {"sigma": s0.item(), "sigma_next": s1.item(), "sigma_dit": step_sigma_dit, "guidance": g,
             "latent": flat(step_latent), "x_next": flat(x_next)},
    "vae": {"latent": flat(vae_latent), "image": flat(image), "rgb8": rgb8.reshape(-1).tolist()},
    "pipeline": {"steps": steps, "guidance": g, "sigmas": [s.item() for s in sigp],
                 "noise": flat(noise), "latent": flat(x), "rgb8": pipe_rgb8.reshape(-1).tolist()},
}
assert len(golden["vae"]["rgb8"]) == 3 * (up * h) * (up * w)
os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
with open(out_path, "w") as f:
    json.dump(golden, f)
print(f"wrote {out_path} ({os.path.getsize(out_path)} bytes)")
