#!/usr/bin/env python3
"""PyTorch's time for the zero-shot speaker encoder on the same weights as
audio_decoder_bench (the `bench` preset's zeroshot/ folder that run.sh
writes), for bench/audio_decoder/run.sh: tools/reference/speaker_encoder_ref.py's
log-mel (torch.stft) and ECAPA-TDNN (plain torch ops, f32) on a 5 s clip,
best of 3 after a warm-up. The high-pass and loudness step (scipy's C
sosfilt in OmniServe; a Python loop in the reference) is left out of the
time. Usage: torch_speaker.py MODEL_DIR THREADS"""
import json
import math
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools", "reference"))
import audio_decoder_ref as adr  # noqa: E402
import speaker_encoder_ref as ref  # noqa: E402

model, threads = sys.argv[1], int(sys.argv[2])
torch.set_num_threads(threads)
W, _ = adr.read_safetensors(os.path.join(model, "model.safetensors"))
cfg = json.load(open(os.path.join(model, "config.json")))
fb, _ = ref.mel_fbank(cfg)
enc = ref.SpeakerEncoder(W, cfg)
n = 5 * cfg["sampling_rate"]
t = np.arange(n) / cfg["sampling_rate"]
clip = (0.3 * np.sin(2 * math.pi * 180 * t) * (0.6 + 0.4 * np.sin(2 * math.pi * 3 * t))).astype(np.float32)
with torch.inference_mode():
    enc.forward(ref.log_mel(clip, cfg, fb))
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        emb, _ = enc.forward(ref.log_mel(clip, cfg, fb))
        best = min(best, time.perf_counter() - t0)
print(f"PyTorch speaker encoder (log-mel + ECAPA-TDNN, {emb.numel()}-d), 5 s clip, {threads} thread(s): "
      f"{best * 1e3:.1f} ms")
