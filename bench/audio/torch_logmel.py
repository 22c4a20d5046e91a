#!/usr/bin/env python3
"""torchaudio's Whisper-style 128-bin log-mel of a 30 s clip, timed, for
bench/audio/run.sh: torch.stft (centre, reflect, periodic Hann 400, hop 160),
|X|^2 without the last frame, torchaudio's Slaney mel filterbank (the same as
librosa's), log10 clamp, max - 8, (x + 4) / 4; the same signal as
audio_bench's BM_LogMel30s. Usage: torch_logmel.py THREADS"""
import math
import sys
import time

import torch
import torchaudio

threads = int(sys.argv[1])
torch.set_num_threads(threads)
n = 30 * 16000
state = 42
noise = []
for _ in range(n):
    state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
    noise.append((state >> 40) / 16777216.0 - 0.5)
t = torch.arange(n, dtype=torch.float64) / 16000
x = (0.3 * torch.sin(2 * math.pi * 150 * t) * torch.sin(2 * math.pi * 700 * t) + 0.1 * torch.sin(2 * math.pi * 2400 * t)
     + 0.02 * torch.tensor(noise, dtype=torch.float64)).float()
window = torch.hann_window(400)
fb = torchaudio.functional.melscale_fbanks(201, 0.0, 8000.0, 128, 16000, norm="slaney", mel_scale="slaney").T


def log_mel(x):
    spec = torch.stft(x, 400, 160, window=window, return_complex=True)[..., :-1].abs() ** 2
    m = torch.clamp(fb @ spec, min=1e-10).log10()
    m = torch.maximum(m, m.max() - 8.0)
    return (m + 4.0) / 4.0


log_mel(x)
times = []
for _ in range(20):
    a = time.perf_counter()
    log_mel(x)
    times.append(time.perf_counter() - a)
print(f"torchaudio log-mel 30 s, {threads} thread(s): best {min(times) * 1e3:.2f} ms, median {sorted(times)[10] * 1e3:.2f} ms")
