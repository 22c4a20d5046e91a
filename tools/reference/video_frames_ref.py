#!/usr/bin/env python3
"""Reference video frame sampling (goldens for video_test).

Written from the reference's definitions, not from omniserve's C++:
  - OmniServe's Omni vision encoder (encoder/vision/track_b/app/model/
    qwen_vision_process.py) reads the video bytes with decord:
    total_frames = len(VideoReader) (the video stream's packets),
    video_fps = get_avg_fps() (the stream's avg_frame_rate);
  - smart_nframes with FPS 2.0, FPS_MIN_FRAMES 4, FPS_MAX_FRAMES 128,
    FRAME_FACTOR 2 (floor_by_factor of the clamped count);
  - idx = torch.linspace(0, total_frames - 1, nframes).round(): float32,
    ATen's kernel (first half start + step * i, second half
    end - step * (steps - 1 - i)), round half to even; emulated here in
    numpy float32.
The frames themselves come from the ffmpeg CLI (its decoder, its autorotate
and its conversion to rgb24 with the swscale flags given), all of them, picked
by frame number (decoding order), and are written as one PNG: the sampled frames stacked top to bottom.
total_frames and the frame rate come from ffprobe (-count_packets).

Usage (with Debian's python3-numpy and python3-pil):
  /usr/bin/python3 tools/reference/video_frames_ref.py extract VIDEO OUT_PREFIX [SWS_FLAGS [cli|numpy]]
      writes OUT_PREFIX.json (total_frames, fps, nframes, indices, timestamps,
      width, height) and OUT_PREFIX.png (the frames); the last argument says
      who applies a display rotation (the CLI's autorotate, or numpy)
  /usr/bin/python3 tools/reference/video_frames_ref.py indices TOTAL FPS
  /usr/bin/python3 tools/reference/video_frames_ref.py rotate-tkhd IN.mp4 OUT.mp4
      sets the first track's tkhd matrix to a 90-degree clockwise display
      rotation (FFmpeg 5.1's CLI has no -display_rotation)
"""
import json
import math
import struct
import subprocess
import sys

import numpy as np
from PIL import Image

FPS, FPS_MIN_FRAMES, FPS_MAX_FRAMES, FRAME_FACTOR = 2.0, 4, 128, 2
# omniserve's conversion (video.cc); the CLI's default, "bicubic", is the
# path decord's filter graph takes (chroma repeated, not interpolated).
SWS_FLAGS = "bicubic+accurate_rnd+bitexact"


def smart_nframes(total_frames, video_fps):
    min_frames = math.ceil(FPS_MIN_FRAMES / FRAME_FACTOR) * FRAME_FACTOR
    max_frames = math.floor(min(FPS_MAX_FRAMES, total_frames) / FRAME_FACTOR) * FRAME_FACTOR
    nframes = total_frames / video_fps * FPS
    nframes = min(min(max(nframes, min_frames), max_frames), total_frames)
    nframes = math.floor(nframes / FRAME_FACTOR) * FRAME_FACTOR
    if not (FRAME_FACTOR <= nframes <= total_frames):
        raise ValueError(f"nframes {nframes} out of [2, {total_frames}]")
    return nframes


def torch_linspace_round(start, end, steps):
    start, end = np.float32(start), np.float32(end)
    step = np.float32((end - start) / np.float32(steps - 1))
    halfway = steps // 2
    out = []
    for i in range(steps):
        v = start + step * np.float32(i) if i < halfway else end - step * np.float32(steps - i - 1)
        out.append(int(np.round(np.float32(v))))  # numpy rounds half to even, as torch.round
    return out


def probe(video):
    cmd = ["ffprobe", "-v", "error", "-count_packets", "-select_streams", "v:0", "-show_entries",
           "stream=nb_read_packets,avg_frame_rate,width,height,start_time", "-of", "json", video]
    s = json.loads(subprocess.check_output(cmd))["streams"][0]
    num, den = (int(x) for x in s["avg_frame_rate"].split("/"))
    return int(s["nb_read_packets"]), num / den, float(s.get("start_time", 0) or 0)


def frame_times(video):
    cmd = ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
           "frame=best_effort_timestamp_time", "-of", "json", video]
    return [float(f["best_effort_timestamp_time"]) for f in json.loads(subprocess.check_output(cmd))["frames"]]


def display_rotation(video):
    """Clockwise degrees, as decord reads them: -(the display matrix's angle)."""
    out = subprocess.check_output(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                                   "stream_side_data=rotation", "-of", "csv=p=0", video]).decode().split()
    return int(-float(out[0])) % 360 if out else 0


def extract(video, prefix, sws_flags=SWS_FLAGS, rotate="cli"):
    total, fps, start = probe(video)
    n = smart_nframes(total, fps)
    idx = torch_linspace_round(0, total - 1, n)
    # Every frame, in the CLI's decoding order (frame number n), as rgb24.
    # rotate == "cli": the CLI's autorotate turns the YUV frames before
    # converting them; "numpy": converted unrotated, then np.rot90 clockwise
    # by the display matrix as decord's transpose filters turn them.
    pre = ["-noautorotate"] if rotate == "numpy" else []
    cmd = ["ffmpeg", "-v", "error"] + pre + ["-i", video, "-sws_flags", sws_flags, "-fps_mode", "passthrough",
                                             "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]
    raw = subprocess.check_output(cmd)
    # The frame size, from a PPM of the first frame.
    ppm = subprocess.check_output(["ffmpeg", "-v", "error"] + pre + ["-i", video, "-frames:v", "1", "-f",
                                                                     "image2pipe", "-c:v", "ppm", "-"])
    w, h = (int(x) for x in ppm.split(b"\n")[1].split())
    frame_bytes = w * h * 3
    if len(raw) % frame_bytes != 0 or len(raw) // frame_bytes < max(idx) + 1:
        raise RuntimeError(f"got {len(raw)} bytes, not frames of {w}x{h} up to {max(idx)}")
    by_index = {i: raw[i * frame_bytes:(i + 1) * frame_bytes] for i in idx}
    degrees = display_rotation(video) if rotate == "numpy" else 0
    if degrees:
        for i in idx:
            frame = np.frombuffer(by_index[i], np.uint8).reshape(h, w, 3)
            by_index[i] = np.ascontiguousarray(np.rot90(frame, k=-(degrees // 90))).tobytes()
        if degrees in (90, 270):
            w, h = h, w
    strip = b"".join(by_index[i] for i in idx)
    Image.frombytes("RGB", (w, h * n), strip).save(prefix + ".png", optimize=True)
    times = frame_times(video)
    meta = {"total_frames": total, "fps": fps, "nframes": n, "indices": idx,
            "timestamps": [round(times[i] - start, 6) for i in idx], "width": w, "height": h,
            "sws_flags": sws_flags, "rotate": rotate}
    with open(prefix + ".json", "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")


def rotate_tkhd(src, dst):
    data = bytearray(open(src, "rb").read())
    at = data.find(b"tkhd")
    version = data[at + 4]
    # tkhd: version/flags, times and ids (v0: 4-byte fields), reserved, layer,
    # group, volume, reserved, then the 3x3 matrix a b u c d v x y w.
    matrix_at = at + 4 + 4 + (20 if version == 0 else 32) + 8 + 8
    width_at = matrix_at + 36
    height = struct.unpack(">I", data[width_at + 4:width_at + 8])[0] >> 16
    # x' = a x + c y + tx: a=0 b=1 c=-1 d=0 turns the picture 90 degrees clockwise.
    data[matrix_at:matrix_at + 36] = struct.pack(">9i", 0, 1 << 16, 0, -(1 << 16), 0, 0, height << 16, 0, 1 << 30)
    open(dst, "wb").write(bytes(data))


if __name__ == "__main__":
    if sys.argv[1] == "extract":
        extract(*sys.argv[2:])
    elif sys.argv[1] == "indices":
        total, fps = int(sys.argv[2]), float(sys.argv[3])
        n = smart_nframes(total, fps)
        print(n, torch_linspace_round(0, total - 1, n))
    elif sys.argv[1] == "rotate-tkhd":
        rotate_tkhd(sys.argv[2], sys.argv[3])
