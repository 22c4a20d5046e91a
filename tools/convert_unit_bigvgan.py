#!/usr/bin/env python3
"""Rewrites OmniServe's unit BigVGAN checkpoint (a torch pickle holding
{"generator": state_dict}, or a bare state dict) as the model.safetensors
omniserve's audio decoder loads, under the same tensor names (weight-norm
parametrizations, BatchNorm statistics and the anti-aliasing filter buffers
included). Works for the speaker-table and the zero-shot checkpoint alike.

Usage:
  /usr/bin/python3 tools/convert_unit_bigvgan.py --checkpoint g_00500000.pt --out DIR
      [--copy-from MODEL_DIR]   # also copies config.json, spk_list.txt, speaker_config.json

Needs python3-torch only (the safetensors file is written here: an 8-byte
little-endian header length, the JSON header, then the raw little-endian data).
"""
import argparse
import json
import os
import shutil
import struct
import sys

import torch

DTYPES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16", torch.int64: "I64",
          torch.int32: "I32", torch.uint8: "U8", torch.bool: "BOOL"}


def state_dict(obj):
    if isinstance(obj, dict) and "generator" in obj:
        obj = obj["generator"]
    if hasattr(obj, "state_dict"):
        obj = obj.state_dict()
    if not isinstance(obj, dict) or not all(torch.is_tensor(v) for v in obj.values()):
        sys.exit("not a state dict (nor {'generator': state_dict})")
    return obj


def write_safetensors(tensors, path):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        if t.dtype not in DTYPES:
            sys.exit(f"{name}: dtype {t.dtype} has no safetensors name here")
        data = t.view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--copy-from", default="")
    args = ap.parse_args()
    tensors = state_dict(torch.load(args.checkpoint, map_location="cpu"))
    os.makedirs(args.out, exist_ok=True)
    write_safetensors(tensors, os.path.join(args.out, "model.safetensors"))
    for name in ("config.json", "spk_list.txt", "speaker_config.json"):
        src = os.path.join(args.copy_from, name) if args.copy_from else ""
        if src and os.path.exists(src):
            shutil.copyfile(src, os.path.join(args.out, name))
    kind = "zero-shot (ECAPA-TDNN)" if "spk_emb.layer1.conv.weight" in tensors else "speaker table"
    print(f"wrote {args.out}/model.safetensors: {len(tensors)} tensors, {kind}")


if __name__ == "__main__":
    main()
