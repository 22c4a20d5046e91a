#!/usr/bin/python3
"""Reference for media::DecodeAudio (src/media/audio.h): what OmniServe's
librosa.load(path, sr=16000, mono=True) gives, computed without our code.

For each fixture in tests/data/media/audio the bytes are decoded to float the
way librosa would (soundfile, i.e. libsndfile, for WAV/FLAC/Ogg/MP3; the
ffmpeg command line, librosa's audioread fallback, for M4A/WebM/MP4), the
channels averaged (np.mean, as librosa.to_mono), and the result resampled to
16 kHz by torchaudio's windowed-sinc resampler at librosa's old "kaiser_best"
settings (an independent implementation; librosa itself now calls soxr, which
is what the C++ code runs). The length is ceil(n * 16000 / rate), as
librosa.resample fixes it.

Written to tests/data/media/audio/reference.json: per fixture the source
rate, channels and frames, the output length, sum and sum of squares, and
probe samples at evenly spaced indices. audio_test.cc compares DecodeAudio
with these; the tolerances are set there, from the measured differences
printed by --measure (soxr HQ and the Kaiser sinc agree to about 1e-4 on
these band-limited signals; the decoders are the same libraries).

Usage:
  /usr/bin/python3 tools/reference/audio_resample_ref.py --make-fixtures  # rerun ffmpeg (changes the bytes)
  /usr/bin/python3 tools/reference/audio_resample_ref.py                  # rewrite reference.json
Needs python3-soundfile, python3-torchaudio, numpy and the ffmpeg binary.
"""
import argparse
import json
import math
import os
import subprocess
import sys

import numpy as np
import soundfile
import torch
import torchaudio

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIR = os.path.join(ROOT, "tests", "data", "media", "audio")
OUT_RATE = 16000
PROBES = 200

# Band-limited test signals (tones well inside the 16 kHz passband): a
# left/right pair that differ, so the downmix matters.
LEFT = "0.3*sin(2*PI*440*t)+0.2*sin(2*PI*1000*t)+0.1*sin(2*PI*3000*t)"
RIGHT = "0.3*sin(2*PI*660*t)+0.1*sin(2*PI*2500*t)"
FF = "ffmpeg -hide_banner -loglevel error -y -bitexact"


def tone(channels, rate, seconds):
    expr = LEFT if channels == 1 else f"{LEFT}|{RIGHT}"
    return f"-f lavfi -i 'aevalsrc={expr}:s={rate}:d={seconds}'"


VIDEO = "-f lavfi -i 'testsrc=size=32x32:rate=10:d=0.5'"

# name -> (ffmpeg arguments after the inputs, how librosa decodes it)
FIXTURES = {
    "mono_16k_s16.wav": (f"{tone(1, 16000, 0.5)} -c:a pcm_s16le", "soundfile"),
    "stereo_44k_s16.wav": (f"{tone(2, 44100, 0.25)} -c:a pcm_s16le", "soundfile"),
    "mono_48k_f32.wav": (f"{tone(1, 48000, 0.25)} -c:a pcm_f32le", "soundfile"),
    "stereo_44k.flac": (f"{tone(2, 44100, 0.25)} -c:a flac", "soundfile"),
    "stereo_44k_vorbis.ogg": (f"{tone(2, 44100, 0.5)} -c:a libvorbis -q:a 4", "soundfile"),
    "stereo_48k_opus.ogg": (f"{tone(2, 48000, 0.5)} -c:a libopus -b:a 64k", "soundfile"),
    "stereo_44k.mp3": (f"{tone(2, 44100, 0.5)} -c:a libmp3lame -b:a 128k", "soundfile"),
    "stereo_44k_aac.m4a": (f"{tone(2, 44100, 0.5)} -c:a aac -b:a 96k", "ffmpeg"),
    "stereo_22k.aac": (f"{tone(2, 22050, 0.5)} -c:a aac -b:a 64k -f adts", "ffmpeg"),
    "stereo_48k_opus.webm": (f"{tone(2, 48000, 0.5)} -c:a libopus -b:a 64k", "ffmpeg"),
    "video_aac.mp4": (f"{tone(2, 44100, 0.5)} {VIDEO} -map 1:v -map 0:a -c:v libx264 -pix_fmt yuv420p "
                      "-c:a aac -b:a 64k", "ffmpeg"),
}
# Inputs for the refusals, not decoded here.
BAD_FIXTURES = {
    "video_silent.mp4": f"{VIDEO} -c:v libx264 -pix_fmt yuv420p",
    "unsupported_wavpack.mkv": f"{tone(1, 44100, 0.05)} -c:a wavpack",
}


def make_fixtures():
    for name, (args, _) in FIXTURES.items():
        subprocess.run(f"{FF} {args} {name}", shell=True, check=True, cwd=DIR)
    for name, args in BAD_FIXTURES.items():
        subprocess.run(f"{FF} {args} {name}", shell=True, check=True, cwd=DIR)


def decode_ffmpeg(path):
    probe = json.loads(subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "a:0", "-show_streams", "-of", "json", path],
        check=True, capture_output=True).stdout)["streams"][0]
    rate, channels = int(probe["sample_rate"]), int(probe["channels"])
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-map", "0:a:0", "-f", "f32le", "-c:a", "pcm_f32le",
                          "-"], check=True, capture_output=True).stdout
    return np.frombuffer(raw, dtype="<f4").reshape(-1, channels), rate


def decode(path, how):
    if how == "soundfile":
        data, rate = soundfile.read(path, dtype="float32", always_2d=True)
        return data, rate
    return decode_ffmpeg(path)


def resample(mono, rate):
    if rate == OUT_RATE:
        return mono.astype(np.float64)
    x = torch.from_numpy(mono.astype(np.float64))
    # resampy's / librosa's "kaiser_best" filter.
    y = torchaudio.functional.resample(x, rate, OUT_RATE, lowpass_filter_width=64, rolloff=0.9475937167399596,
                                       resampling_method="kaiser_window", beta=14.769656459379492)
    want = math.ceil(len(mono) * OUT_RATE / rate)
    y = y.numpy()
    return np.pad(y, (0, max(0, want - len(y))))[:want]


def reference(name, how):
    data, rate = decode(os.path.join(DIR, name), how)
    mono = np.mean(data, axis=1, dtype=np.float32)  # librosa.to_mono
    out = resample(mono, rate)
    idx = np.unique(np.linspace(0, len(out) - 1, PROBES).round().astype(int))
    return {
        "file": name,
        "decoder": how,
        "source_rate": int(rate),
        "channels": int(data.shape[1]),
        "source_frames": int(data.shape[0]),
        "samples": int(len(out)),
        # Sequential double sums, the order the C++ test adds in.
        "sum": float(sum(float(v) for v in out)),
        "sum_sq": float(sum(float(v) * float(v) for v in out)),
        "probe_index": [int(i) for i in idx],
        # 9 digits: a float32 sample round-trips.
        "probe_value": [float("%.9g" % out[i]) for i in idx],
        "command": f"{FF} {FIXTURES[name][0]} {name}",
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--make-fixtures", action="store_true")
    args = ap.parse_args()
    if args.make_fixtures:
        make_fixtures()
    refs = [reference(name, how) for name, (_, how) in FIXTURES.items()]
    bad = [{"file": n, "command": f"{FF} {a} {n}"} for n, a in BAD_FIXTURES.items()]
    # One fixture a line: short enough to read, diffs stay local.
    with open(os.path.join(DIR, "reference.json"), "w") as f:
        f.write('{"out_rate": %d,\n "decode": [\n' % OUT_RATE)
        f.write(",\n".join("  " + json.dumps(r) for r in refs))
        f.write('\n ],\n "bad": [\n')
        f.write(",\n".join("  " + json.dumps(b) for b in bad))
        f.write("\n ]\n}\n")
    for r in refs:
        print(f"{r['file']}: {r['source_rate']} Hz x{r['channels']} {r['source_frames']} -> {r['samples']}",
              file=sys.stderr)


if __name__ == "__main__":
    main()
