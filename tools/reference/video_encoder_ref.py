#!/usr/bin/env python3
"""Independent PyTorch reference for the Omni vision encoder's video path
(goldens for models_test's omni_vision_video_test): sampled frames -> the
continuous rows, written from the reference's definitions, not from
omniserve's C++:
  - OmniServe's Omni vision encoder (encoder/vision/track_b/app/model/
    __init__.py, _process_video) asks fetch_video (qwen_vision_process.py)
    for frames of at most max_pixels = 378*378; fetch_video resizes every
    frame to smart_resize(h, w, 28, VIDEO_MIN_PIXELS = 128*28*28,
    min(378*378, max(min(VIDEO_MAX_PIXELS = 768*28*28,
    VIDEO_TOTAL_PIXELS / nframes * 2), int(VIDEO_MIN_PIXELS * 1.05))))
    with torchvision.transforms.functional.resize (bicubic, antialias=True)
    on the uint8 TCHW tensor, which for a tensor is F.interpolate in float32,
    clamp(0, 255), round, uint8; then .float();
  - _process_video cuts the frames into chunks of 32 (max_batch) and runs
    each through transformers' Qwen2VLVideoProcessor (its smart_resize with
    the image bounds leaves these sizes alone; rescale and normalise fused:
    (x - mean * 255) / (std * 255) in float32; frames in temporal pairs;
    patches permuted (t, bh, bw, sh, sw) x (c, tp, y, x)) and through the
    Qwen2.5-VL ViT and mm_projector on its own, then concatenates the rows;
  - the ViT as transformers' Qwen2_5_VisionTransformerPretrainedModel:
    rotary (row, col) per frame pair (rot_pos_emb's .repeat(t, 1)), window
    index per frame pair (get_window_index), window blocks within a window,
    full-attention blocks within a frame pair (cu_seqlens =
    repeat_interleave(h * w, t)); attention computed segment by segment.
Numerics as vision_encoder_ref.py: bf16 weights, projection inputs rounded to
bf16, f32 accumulation; norms, rotary, attention, activations in f32.

The frames: clip10s_10fps's 20 sampled frames from its ref.png (the ffmpeg
CLI's, tests/data/media/video/README.md), and long70s_4fps's 128 sampled
frames (4 chunks of 32) extracted here with video_frames_ref.py's extract
(the same CLI conversion). Resampling alone is also checked downscaling, on
two images of tests/data/vision (PIL-decoded) resized as video frames.

Usage:
  build/omniserve make-demo-model --component ve --out /tmp/ve_video
  /usr/bin/python3 tools/reference/video_encoder_ref.py /tmp/ve_video tests/data/vision/video_golden.json
"""
import hashlib
import json
import math
import os
import struct
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import video_frames_ref  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VIDEO_DIR = os.path.join(ROOT, "tests", "data", "media", "video")
VISION_DIR = os.path.join(ROOT, "tests", "data", "vision")
model_dir, out_path = sys.argv[1:3]
DTYPES = {"BF16": torch.bfloat16, "F32": torch.float32}

VIDEO_MIN_PIXELS = 128 * 28 * 28
VIDEO_MAX_PIXELS = 768 * 28 * 28
VIDEO_TOTAL_PIXELS = int(float(128000 * 28 * 28 * 0.9))
REQUESTED_MAX_PIXELS = 378 * 378
CHUNK = 32


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
vc = json.load(open(os.path.join(model_dir, "config.json")))["vision_config"]
pre = json.load(open(os.path.join(model_dir, "preprocessor_config.json")))


def bf16(x):
    return x.to(torch.bfloat16).float()


def lin(x, name, bias=True):
    y = bf16(x) @ W[name + ".weight"].t()
    return y + W[name + ".bias"] if bias else y


def rms(x, name, eps=1e-6):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * W[name + ".weight"]


# ---- fetch_video's size and resize ----
def smart_resize(h, w, factor, min_pixels, max_pixels):
    if max(h, w) / min(h, w) > 200:
        raise ValueError("aspect ratio over 200")
    hb, wb = max(factor, round(h / factor) * factor), max(factor, round(w / factor) * factor)
    if hb * wb > max_pixels:
        beta = math.sqrt(h * w / max_pixels)
        hb, wb = math.floor(h / beta / factor) * factor, math.floor(w / beta / factor) * factor
    elif hb * wb < min_pixels:
        beta = math.sqrt(min_pixels / (h * w))
        hb, wb = math.ceil(h * beta / factor) * factor, math.ceil(w * beta / factor) * factor
    return hb, wb


def video_max_pixels(nframes):
    max_pixels = max(min(VIDEO_MAX_PIXELS, VIDEO_TOTAL_PIXELS / nframes * 2), int(VIDEO_MIN_PIXELS * 1.05))
    return min(REQUESTED_MAX_PIXELS, max_pixels)


def torchvision_resize_uint8(frames, rh, rw):
    """frames uint8 [T, H, W, 3] -> uint8 [T, 3, rh, rw] as torchvision's tensor resize."""
    x = torch.from_numpy(np.array(frames)).permute(0, 3, 1, 2).float()
    y = F.interpolate(x, size=[rh, rw], mode="bicubic", align_corners=False, antialias=True)
    return torch.round(y.clamp(0, 255)).to(torch.uint8)


# ---- Qwen2VLVideoProcessor on one chunk ----
def video_patches(chunk):
    """chunk float [T, 3, H, W] (uint8 values) -> pixel rows, (t, h, w)."""
    mean = torch.tensor(pre["image_mean"], dtype=torch.float32) * (1.0 / pre["rescale_factor"])
    std = torch.tensor(pre["image_std"], dtype=torch.float32) * (1.0 / pre["rescale_factor"])
    x = (chunk - mean[None, :, None, None]) / std[None, :, None, None]
    if x.shape[0] % 2:
        x = torch.cat([x, x[-1:]], 0)
    t, c, h, w = x.shape
    gt, gh, gw = t // 2, h // 14, w // 14
    x = x.reshape(gt, 2, c, gh // 2, 2, 14, gw // 2, 2, 14).permute(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return x.reshape(gt * gh * gw, c * 2 * 14 * 14), (gt, gh, gw)


# ---- Qwen2.5-VL ViT over one video's grid ----
def window_index(gt, gh, gw, merge=2, window=112, patch=14):
    vws = window // merge // patch
    lh, lw = gh // merge, gw // merge
    index = torch.arange(gt * lh * lw).reshape(gt, lh, lw)
    ph, pw = vws - lh % vws, vws - lw % vws
    nwh, nww = (lh + ph) // vws, (lw + pw) // vws
    padded = F.pad(index, (0, pw, 0, ph), "constant", -100)
    padded = padded.reshape(gt, nwh, vws, nww, vws).permute(0, 1, 3, 2, 4).reshape(gt, nwh * nww, vws, vws)
    seqlens = (padded != -100).sum([2, 3]).reshape(-1)
    flat = padded.reshape(-1)
    order = flat[flat != -100]
    cu = torch.cat([torch.zeros(1, dtype=torch.long), seqlens.cumsum(0) * merge * merge])
    return order, torch.unique_consecutive(cu)


def segment_attention(q, k, v, cu, scale):
    out = torch.empty_like(q)
    for a, b in zip(cu[:-1].tolist(), cu[1:].tolist()):
        s = torch.einsum("thd,shd->hts", q[a:b], k[a:b]) * scale
        out[a:b] = torch.einsum("hts,shd->thd", torch.softmax(s, -1), v[a:b])
    return out


def vit(pixels, gt, gh, gw):
    c, heads = vc["hidden_size"], vc["num_heads"]
    d = c // heads
    x = F.conv3d(bf16(pixels).reshape(-1, 3, 2, 14, 14), W["model.vision_model.patch_embed.proj.weight"],
                 stride=(2, 14, 14)).reshape(-1, c)
    n = x.shape[0]
    inv = 1.0 / (10000 ** (torch.arange(0, d // 2, 2, dtype=torch.float32) / (d // 2)))
    hpos = torch.arange(gh)[:, None].expand(gh, gw).reshape(gh // 2, 2, gw // 2, 2).permute(0, 2, 1, 3).flatten()
    wpos = torch.arange(gw)[None, :].expand(gh, gw).reshape(gh // 2, 2, gw // 2, 2).permute(0, 2, 1, 3).flatten()
    pos = torch.stack([hpos, wpos], -1).repeat(gt, 1)
    table = torch.outer(torch.arange(max(gh, gw), dtype=torch.float32), inv)
    angles = table[pos].flatten(1)  # [n, d/2]
    order, cu_win = window_index(gt, gh, gw)
    x = x.reshape(n // 4, 4, c)[order].reshape(n, c)
    angles = angles.reshape(n // 4, 4, -1)[order].reshape(n, -1)
    emb = torch.cat([angles, angles], -1)
    cos, sin = emb.cos()[:, None], emb.sin()[:, None]

    def rotate(t):
        half = t.shape[-1] // 2
        return t * cos + torch.cat([-t[..., half:], t[..., :half]], -1) * sin

    cu_full = torch.cat([torch.zeros(1, dtype=torch.long),
                         torch.full((gt,), gh * gw, dtype=torch.long).cumsum(0)])
    for i in range(vc["depth"]):
        p = f"model.vision_model.blocks.{i}."
        h = rms(x, p + "norm1")
        q, k, v = lin(h, p + "attn.qkv").reshape(n, 3, heads, d).unbind(1)
        cu = cu_full if i in vc["fullatt_block_indexes"] else cu_win
        o = segment_attention(rotate(q), rotate(k), v, cu, d ** -0.5).reshape(n, c)
        x = x + lin(o, p + "attn.proj")
        h = rms(x, p + "norm2")
        x = x + lin(F.silu(lin(h, p + "mlp.gate_proj")) * lin(h, p + "mlp.up_proj"), p + "mlp.down_proj")
    m = rms(x, "model.vision_model.merger.ln_q").reshape(n // 4, 4 * c)
    m = lin(F.gelu(lin(m, "model.vision_model.merger.mlp.0")), "model.vision_model.merger.mlp.2")
    m = m[torch.argsort(order)]
    return lin(m, "model.mm_projector")


def samples(flat, count):
    idx = torch.linspace(0, flat.numel() - 1, count, dtype=torch.float64).long()
    return idx.tolist(), [float(v) for v in flat[idx]]


def encode_video(name, frames):
    """frames uint8 [n, H, W, 3], the sampled frames -> a golden case."""
    n, h, w, _ = frames.shape
    rh, rw = smart_resize(h, w, 28, VIDEO_MIN_PIXELS, video_max_pixels(n))
    resized = torchvision_resize_uint8(frames, rh, rw)  # [n, 3, rh, rw]
    # The video processor's own smart_resize leaves the size as it is.
    assert smart_resize(rh, rw, 28, pre["min_pixels"], pre["max_pixels"]) == (rh, rw)
    video = resized.float()
    rows, grid_t = [], 0
    for start in range(0, n, CHUNK):
        pixels, (gt, gh, gw) = video_patches(video[start:start + CHUNK])
        with torch.no_grad():
            rows.append(vit(pixels, gt, gh, gw))
        grid_t += gt
    rows = torch.cat(rows, 0)
    flat_pixels = resized.permute(0, 2, 3, 1).reshape(-1)  # HWC per frame, as media::Image
    case = {"file": name, "frames": n, "height": h, "width": w, "resized_height": rh, "resized_width": rw,
            "grid": [grid_t, rh // 14, rw // 14], "chunks": (n + CHUNK - 1) // CHUNK,
            "resized_sha256": hashlib.sha256(flat_pixels.numpy().tobytes()).hexdigest(),
            "rows_shape": list(rows.shape), "rows_sum": float(rows.double().sum()),
            "rows_abs_max": float(rows.abs().max())}
    case["pixels_sample_index"], case["pixels_sample_value"] = samples(flat_pixels, 2049)
    case["pixels_sample_value"] = [int(v) for v in case["pixels_sample_value"]]
    case["rows_sample_index"], case["rows_sample_value"] = samples(rows.reshape(-1), 2049)
    if n <= CHUNK:  # every row's sum for the short clip, so a misplaced row shows
        case["row_sums"] = [float(v) for v in rows.double().sum(1)]
    return case


def stacked_frames(png, meta):
    strip = np.asarray(Image.open(png).convert("RGB"))
    return strip.reshape(meta["nframes"], meta["height"], meta["width"], 3)


golden = {"weights_sha256": weights_sha, "cases": [], "resize_cases": []}
meta = json.load(open(os.path.join(VIDEO_DIR, "clip10s_10fps.ref.json")))
golden["cases"].append(encode_video("clip10s_10fps.mp4",
                                    stacked_frames(os.path.join(VIDEO_DIR, "clip10s_10fps.ref.png"), meta)))
with tempfile.TemporaryDirectory() as tmp:
    prefix = os.path.join(tmp, "long")
    video_frames_ref.extract(os.path.join(VIDEO_DIR, "long70s_4fps.mkv"), prefix)
    meta = json.load(open(prefix + ".json"))
    golden["cases"].append(encode_video("long70s_4fps.mkv", stacked_frames(prefix + ".png", meta)))

# Downscaling (the antialiased filter widened by the scale), on images as
# frames of a 20-frame video.
for name in ["square448.jpg", "capped.jpg"]:
    img = np.asarray(Image.open(os.path.join(VISION_DIR, name)).convert("RGB"))
    h, w, _ = img.shape
    rh, rw = smart_resize(h, w, 28, VIDEO_MIN_PIXELS, video_max_pixels(20))
    flat = torchvision_resize_uint8(img[None], rh, rw)[0].permute(1, 2, 0).reshape(-1)
    case = {"file": name, "height": h, "width": w, "resized_height": rh, "resized_width": rw,
            "resized_sha256": hashlib.sha256(flat.numpy().tobytes()).hexdigest()}
    case["pixels_sample_index"], values = samples(flat, 4097)
    case["pixels_sample_value"] = [int(v) for v in values]
    golden["resize_cases"].append(case)

with open(out_path, "w") as f:
    json.dump(golden, f)
for c in golden["cases"]:
    print(c["file"], c["frames"], "frames ->", c["resized_width"], "x", c["resized_height"], "grid", c["grid"],
          "rows", c["rows_shape"], "chunks", c["chunks"])
for c in golden["resize_cases"]:
    print(c["file"], c["width"], "x", c["height"], "->", c["resized_width"], "x", c["resized_height"])
print("wrote", out_path)
