#!/usr/bin/env python3
"""Reference for the Whisper log-mel spectrogram (goldens for whisper_mel_test).

Written from the definition of the Whisper / Qwen2-Audio feature extractor
(128 bins), with torch in float64, not from omniserve's C++:
  - 16 kHz mono samples; STFT with n_fft 400, hop 160, a periodic Hann window
    of 400, center=True with reflect padding of 200 on both sides;
  - power |X|^2 of the 201 bins; the last frame dropped (frames = len // 160);
  - 128 Slaney-scale mel filters with Slaney area normalisation over
    0..8000 Hz (librosa.filters.mel(sr=16000, n_fft=400, n_mels=128)), built
    here from the formulas and checked against torchaudio's melscale_fbanks;
  - log10(max(mel, 1e-10)), clamped below at (max - 8), then (x + 4) / 4.
The 30 s chunking follows OmniServe's audio encoder
(encoder/audio/track_b/app/model/__init__.py, Model._process_audio): the
samples are cut into 480000-sample pieces and each is zero-padded to 480000
before the STFT (WhisperFeatureExtractor, padding="max_length"), so every chunk
is [128, 3000] with its own max; its valid frames (the attention mask) are
ceil(piece / 160).

Usage: /usr/bin/python3 tools/reference/whisper_mel_ref.py tests/data/audio_encoder
"""
import base64
import json
import math
import os
import sys

import numpy as np
import torch
import torchaudio

SAMPLE_RATE = 16000
N_FFT = 400
HOP = 160
N_MELS = 128
F_MAX = 8000.0
CHUNK_SAMPLES = 30 * SAMPLE_RATE

# Slaney's mel scale (Auditory Toolbox): linear below 1 kHz, logarithmic above.
F_SP = 200.0 / 3.0
MIN_LOG_HZ = 1000.0
MIN_LOG_MEL = MIN_LOG_HZ / F_SP
LOGSTEP = math.log(6.4) / 27.0


def hz_to_mel(f):
    return f / F_SP if f < MIN_LOG_HZ else MIN_LOG_MEL + math.log(f / MIN_LOG_HZ) / LOGSTEP


def mel_to_hz(m):
    return F_SP * m if m < MIN_LOG_MEL else MIN_LOG_HZ * math.exp(LOGSTEP * (m - MIN_LOG_MEL))


def slaney_filterbank():
    """[201, 128] float64: triangles between mel-spaced edges, each scaled by
    2 / (its width in Hz) so that its area is the same in Hz."""
    n_freqs = N_FFT // 2 + 1
    fft_hz = np.arange(n_freqs, dtype=np.float64) * SAMPLE_RATE / N_FFT
    m_lo, m_hi = hz_to_mel(0.0), hz_to_mel(F_MAX)
    edges = np.array([mel_to_hz(m_lo + (m_hi - m_lo) * i / (N_MELS + 1)) for i in range(N_MELS + 2)])
    fb = np.zeros((n_freqs, N_MELS), dtype=np.float64)
    for m in range(N_MELS):
        left, center, right = edges[m], edges[m + 1], edges[m + 2]
        rising = (fft_hz - left) / (center - left)
        falling = (right - fft_hz) / (right - center)
        fb[:, m] = np.maximum(0.0, np.minimum(rising, falling)) * 2.0 / (right - left)
    return fb


def check_against_torchaudio(fb):
    def torchaudio_bank():
        return torchaudio.functional.melscale_fbanks(n_freqs=N_FFT // 2 + 1, f_min=0.0, f_max=F_MAX, n_mels=N_MELS,
                                                     sample_rate=SAMPLE_RATE, norm="slaney", mel_scale="slaney")
    # As torchaudio ships it (float32 edges): a few float32 ulps of the
    # largest weight (~0.04).
    diff32 = np.abs(torchaudio_bank().double().numpy() - fb).max()
    assert diff32 < 1e-5 * np.abs(fb).max(), f"filterbank differs from torchaudio's (float32) by {diff32}"
    # With float64 as torch's default dtype the same formulas must agree to
    # rounding: this is what shows the definitions are the same.
    saved = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        diff64 = np.abs(torchaudio_bank().numpy() - fb).max()
    finally:
        torch.set_default_dtype(saved)
    assert diff64 < 1e-12, f"filterbank differs from torchaudio's (float64) by {diff64}"
    print(f"filterbank vs torchaudio.functional.melscale_fbanks: max abs diff {diff32:.3g} (float32), "
          f"{diff64:.3g} (float64); max weight {np.abs(fb).max():.4g}")


def check_mel_against_torchaudio(samples_f32, fb):
    """The power mel spectrogram (before the log) against torchaudio's
    MelSpectrogram with the same settings, minus its last frame."""
    x = torch.from_numpy(samples_f32.astype(np.float64))
    saved = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        ta = torchaudio.transforms.MelSpectrogram(
            sample_rate=SAMPLE_RATE, n_fft=N_FFT, hop_length=HOP, f_min=0.0, f_max=F_MAX, n_mels=N_MELS,
            window_fn=torch.hann_window, power=2.0, center=True, pad_mode="reflect", norm="slaney",
            mel_scale="slaney")(x)[:, :-1].numpy()
    finally:
        torch.set_default_dtype(saved)
    window = torch.hann_window(N_FFT, periodic=True, dtype=torch.float64)
    spec = torch.stft(x, N_FFT, HOP, window=window, center=True, pad_mode="reflect", return_complex=True)
    ours = (torch.from_numpy(fb).T @ (spec[:, :-1].abs() ** 2)).numpy()
    rel = np.abs(ours - ta).max() / np.abs(ta).max()
    assert ours.shape == ta.shape and rel < 1e-12, f"mel power differs from torchaudio's: {ours.shape} {rel}"
    print(f"mel power vs torchaudio.transforms.MelSpectrogram: max diff {rel:.3g} of the max")


def log_mel(samples_f32, fb):
    """[128, len // 160] float64 from float32 samples."""
    x = torch.from_numpy(samples_f32.astype(np.float64))
    window = torch.hann_window(N_FFT, periodic=True, dtype=torch.float64)
    spec = torch.stft(x, N_FFT, HOP, window=window, center=True, pad_mode="reflect", return_complex=True)
    power = spec[:, :-1].abs() ** 2  # [201, frames]
    mel = torch.from_numpy(fb).T @ power  # [128, frames]
    log = torch.clamp(mel, min=1e-10).log10()
    log = torch.maximum(log, log.max() - 8.0)
    return ((log + 4.0) / 4.0).numpy()


def log_mel_chunks(samples_f32, fb):
    """OmniServe's 30 s chunks: [(mel [128, 3000], valid_frames)]."""
    out = []
    for start in range(0, len(samples_f32), CHUNK_SAMPLES):
        piece = samples_f32[start:start + CHUNK_SAMPLES]
        padded = np.zeros(CHUNK_SAMPLES, dtype=np.float32)
        padded[:len(piece)] = piece
        out.append((log_mel(padded, fb), -(-len(piece) // HOP)))
    return out


def sine_mix_1s():
    t = np.arange(SAMPLE_RATE, dtype=np.float64) / SAMPLE_RATE
    noise = np.random.default_rng(19).standard_normal(len(t))
    x = 0.5 * np.sin(2 * np.pi * 440 * t) + 0.3 * np.sin(2 * np.pi * 1000 * t) + 0.01 * noise
    return x.astype(np.float32)


def chirp_3s():
    # A linear sweep from 100 Hz to 7900 Hz: every mel bin sees energy once.
    n = 3 * SAMPLE_RATE
    t = np.arange(n, dtype=np.float64) / SAMPLE_RATE
    f0, f1, dur = 100.0, 7900.0, 3.0
    phase = 2 * np.pi * (f0 * t + (f1 - f0) * t * t / (2 * dur))
    return (0.8 * np.sin(phase)).astype(np.float32)


def lcg_noise(num_samples, loud_samples):
    """Integer-exact noise both languages regenerate bit for bit: a 31-bit LCG
    (state = state * 1103515245 + 12345 mod 2^31, seed 19), its top 24 bits
    mapped to (v - 2^23) / 2^23, times 0.5 for the first `loud_samples` and
    0.0625 after (powers of two: every sample is exact in float32)."""
    out = np.empty(num_samples, dtype=np.float32)
    state = 19
    for i in range(num_samples):
        state = (state * 1103515245 + 12345) % (1 << 31)
        v = ((state >> 7) - (1 << 23)) / float(1 << 23)
        out[i] = v * (0.5 if i < loud_samples else 0.0625)
    return out


def summary(mel, stride):
    """Enough of an output to catch errors without storing all of it."""
    flat = mel.reshape(-1)
    r = lambda a: [float(f"{v:.7g}") for v in a]
    return {
        "shape": list(mel.shape),
        "stride": stride,
        "strided": r(flat[::stride]),  # flat (row-major [128, frames]) index k * stride
        "bin_min": r(mel.min(axis=1)),
        "bin_max": r(mel.max(axis=1)),
        "bin_mean": r(mel.mean(axis=1)),
        "head_frames": r(mel[:, :2].T.reshape(-1)),  # frames 0 and 1, [2, 128]
        "tail_frames": r(mel[:, -2:].T.reshape(-1)),  # the last two frames, [2, 128]
    }


def samples_b64(x):
    return base64.b64encode(x.astype("<f4").tobytes()).decode("ascii")


def main(out_dir):
    fb = slaney_filterbank()
    check_against_torchaudio(fb)

    sine = sine_mix_1s()
    chirp = chirp_3s()
    check_mel_against_torchaudio(chirp, fb)
    noise_len, noise_loud = 32 * SAMPLE_RATE + SAMPLE_RATE // 2 + 37, 20 * SAMPLE_RATE
    noise = lcg_noise(noise_len, noise_loud)

    golden = {
        "definition": "Whisper log-mel, 128 bins, n_fft 400, hop 160; tools/reference/whisper_mel_ref.py",
        "filterbank": {
            # A few weights of the [201, 128] bank, as (freq bin, mel bin, weight).
            "samples": [[k, m, float(f"{fb[k, m]:.9g}")] for k, m in
                        ((1, 0), (2, 1), (3, 1), (10, 7), (25, 20), (50, 45), (100, 80), (150, 105), (199, 127),
                         (200, 127))],
            "col_sums": [float(f"{v:.9g}") for v in fb.sum(axis=0)],
        },
        "cases": [],
    }
    sine_mel = log_mel(sine, fb)
    golden["cases"].append({
        "name": "sine_mix_1s",
        "samples_f32le_b64": samples_b64(sine),
        "whole": {**summary(sine_mel, 1)},
    })
    golden["cases"].append({
        "name": "chirp_3s",
        "samples_f32le_b64": samples_b64(chirp),
        "whole": summary(log_mel(chirp, fb), 7),
    })
    chunks = log_mel_chunks(noise, fb)
    golden["cases"].append({
        "name": "lcg_noise_32_5s",
        "lcg_noise": {"num_samples": noise_len, "loud_samples": noise_loud},
        "whole": summary(log_mel(noise, fb), 37),
        "chunks": [{**summary(m, 37), "valid_frames": v} for m, v in chunks],
    })

    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "whisper_mel_golden.json")
    with open(path, "w") as f:
        json.dump(golden, f, separators=(",", ":"))
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/audio_encoder")
