#!/usr/bin/env python3
"""Reference for the vision processors (goldens for models_test).

Written from the processors' definitions (Qwen2-VL's image processor as the
reference model serves it, TA-Tok's 384x384 SigLIP preprocessing), with PIL
and numpy, not from omniserve's C++:
  - smart_resize: multiples of 28, Python round() (half to even), scaled into
    [min_pixels, max_pixels];
  - PIL Image.resize(BICUBIC) on the 8-bit RGB image;
  - rescale as numpy does it (uint8 * (1/255) in float64, then float32),
    normalise (x - mean) / std in float32;
  - the frame repeated to temporal_patch_size 2 and the patches reshaped and
    transposed to (t, block row, block col, row in block, col in block) x
    (channel, frame, y, x).
TA-Tok: resize to 384x384 BICUBIC, x/255 (float32), (x - 0.5) / 0.5.

Each case's source image is written to tests/data/vision/ (JPEG or PNG) so the test
decodes the same pixels. Golden per case: resized size and grid, the
sha256 of the float32 bytes, their sum, and sampled values.

Usage: /usr/bin/python3 tools/reference/vision_processor_ref.py tests/data/vision
"""
import hashlib
import json
import math
import os
import sys

import numpy as np
from PIL import Image

out_dir = sys.argv[1]
MEAN = np.array([0.48145466, 0.4578275, 0.40821073], dtype=np.float32)
STD = np.array([0.26862954, 0.26130258, 0.27577711], dtype=np.float32)


def smart_resize(h, w, factor=28, min_pixels=3136, max_pixels=12845056):
    if max(h, w) / min(h, w) > 200:
        raise ValueError("aspect")
    hb = max(factor, round(h / factor) * factor)
    wb = max(factor, round(w / factor) * factor)
    if hb * wb > max_pixels:
        beta = math.sqrt((h * w) / max_pixels)
        hb = math.floor(h / beta / factor) * factor
        wb = math.floor(w / beta / factor) * factor
    elif hb * wb < min_pixels:
        beta = math.sqrt(min_pixels / (h * w))
        hb = math.ceil(h * beta / factor) * factor
        wb = math.ceil(w * beta / factor) * factor
    return hb, wb


def qwen_pixels(img, min_pixels, max_pixels):
    w, h = img.size
    rh, rw = smart_resize(h, w, 28, min_pixels, max_pixels)
    r = np.asarray(img.resize((rw, rh), Image.BICUBIC))  # [H, W, 3] uint8
    x = (r * (1 / 255)).astype(np.float32)
    x = (x - MEAN) / STD
    x = x.transpose(2, 0, 1)[None]  # [1, C, H, W]
    x = np.concatenate([x, x], 0)  # temporal patch 2
    gh, gw = rh // 14, rw // 14
    x = x.reshape(1, 2, 3, gh // 2, 2, 14, gw // 2, 2, 14)
    x = x.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return rh, rw, gh, gw, np.ascontiguousarray(x.reshape(gh * gw, 3 * 2 * 14 * 14), dtype=np.float32)


def tatok_pixels(img):
    r = np.asarray(img.resize((384, 384), Image.BICUBIC)).astype(np.float32) / np.float32(255)
    x = (r - np.float32(0.5)) / np.float32(0.5)
    return np.ascontiguousarray(x.transpose(2, 0, 1), dtype=np.float32)


def summary(a):
    flat = a.reshape(-1)
    idx = np.linspace(0, flat.size - 1, 97).astype(np.int64)
    return {
        "shape": list(a.shape),
        "sha256": hashlib.sha256(a.tobytes()).hexdigest(),
        "sum": float(flat.astype(np.float64).sum()),
        "sample_index": idx.tolist(),
        "sample_value": [float(v) for v in flat[idx]],
    }


def field(w, h, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    a = np.stack([128 + 90 * np.sin(x / 9.0 + y / 13.0), 255 * x / max(w - 1, 1), 255 * y / max(h - 1, 1)], -1)
    return Image.fromarray(np.clip(a + rng.normal(0, 4, (h, w, 3)), 0, 255).astype(np.uint8), "RGB")


cases = [
    ("square448.jpg", field(448, 448, 1), 3136, 12845056),
    ("wide.jpg", field(500, 123, 2), 3136, 12845056),
    ("tall.jpg", field(37, 301, 3), 3136, 12845056),
    ("tiny.png", field(10, 7, 4), 3136, 12845056),
    ("capped.jpg", field(640, 480, 5), 3136, 200704),  # max_pixels 256 * 28 * 28
]
golden = {"qwen2vl": [], "tatok": []}
for name, img, lo, hi in cases:
    img.save(os.path.join(out_dir, name), quality=90) if name.endswith(".jpg") else img.save(os.path.join(out_dir, name))
    img = Image.open(os.path.join(out_dir, name)).convert("RGB")  # the decoded pixels, as the test sees them
    rh, rw, gh, gw, pv = qwen_pixels(img, lo, hi)
    golden["qwen2vl"].append({"file": name, "min_pixels": lo, "max_pixels": hi, "resized_height": rh,
                              "resized_width": rw, "grid_h": gh, "grid_w": gw, "pixel_values": summary(pv)})
    golden["tatok"].append({"file": name, "pixel_values": summary(tatok_pixels(img))})
with open(os.path.join(out_dir, "processor_golden.json"), "w") as f:
    json.dump(golden, f, indent=1)
print("wrote", len(cases), "processor cases to", out_dir)
