#!/usr/bin/env python3
"""PyTorch's time for the unit BigVGAN vocoder on the same weights as
audio_decoder_bench (the `bench` preset folder that run.sh writes), for
bench/audio_decoder/run.sh: tools/reference/audio_decoder_ref.py's forward
(plain torch ops, f32) with the weight norm folded once, 250 units (10 s),
best of 2 after a warm-up. Usage: torch_vocoder.py MODEL_DIR THREADS"""
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools", "reference"))
import audio_decoder_ref as ref  # noqa: E402

model, threads = sys.argv[1], int(sys.argv[2])
torch.set_num_threads(threads)
W, _ = ref.read_safetensors(os.path.join(model, "model.safetensors"))
cfg = json.load(open(os.path.join(model, "config.json")))


class FoldedDecoder(ref.Decoder):
    """The reference's forward with every conv weight folded once, as a served model would."""

    def __init__(self, W, cfg):
        super().__init__(W, cfg)
        self.cache = {}

    def weight(self, p):
        if p not in self.cache:
            self.cache[p] = super().weight(p).contiguous()
        return self.cache[p]

    def check_filters(self, p):
        pass


dec = FoldedDecoder(W, cfg)
units = [(t * 2731 + 17) % cfg["num_units"] for t in range(250)]
with torch.inference_mode():
    dec.forward(units, 0)
    best = float("inf")
    for _ in range(2):
        t0 = time.perf_counter()
        wav, _ = dec.forward(units, 0)
        best = min(best, time.perf_counter() - t0)
assert wav.numel() == 250 * 960
print(f"PyTorch vocoder, 10 s, {threads} thread(s): {best * 1e3:.0f} ms, real-time factor {best / 10:.3f}")
