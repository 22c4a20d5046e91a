#!/usr/bin/env bash
# The audio encoder's and video decoding's numbers for docs/PERFORMANCE.md, one run:
#   bench/audio/run.sh [build-dir]
# 1. audio_bench: the log-mel of a 30 s clip (one thread), the `bench` audio
#    encoder (released widths, 4 + 2 layers) on 30 s: time per branch, real-time
#    factor and fraction of the bf16 GEMM rate; DecodeVideo on a 640x360 h264
#    clip of 20 s at 30 fps (made here with ffmpeg), and the ffmpeg CLI decoding
#    every frame of it.
# 2. torchaudio's log-mel of the same 30 s signal, 1 thread and every core
#    (bench/audio/torch_logmel.py).
# 3. The served audio encoder (`omniserve encoder --modality audio`, the
#    `bench` preset, 8 workers) on distinct 10 s WAVs sent as data: URLs at 1,
#    4 and 8 concurrent requests, unbatched and batched (--max-batch 8): clips/s.
# Starts and stops only the processes it launches (by PID).
set -euo pipefail
source "$(dirname "$0")/../common.sh"
build="${1:-build}"
use_workdir
threads="$(nproc)"

ffmpeg -loglevel error -f lavfi -i testsrc2=size=640x360:rate=30 -t 20 -c:v libx264 -pix_fmt yuv420p "$work/clip.mp4"
OMNI_BENCH_VIDEO="$work/clip.mp4" "$build/bench/audio/audio_bench" --benchmark_counters_tabular=true
# The peer for video decoding: the ffmpeg CLI decoding every frame of the same clip (no scaling).
for _ in 1 2 3; do
  ffmpeg -hide_banner -nostats -benchmark -i "$work/clip.mp4" -f null - 2>&1 | grep -o 'rtime=[0-9.]*s' | sed 's/^/ffmpeg decode of every frame (600): /'
done

/usr/bin/python3 "$(dirname "$0")/torch_logmel.py" 1
/usr/bin/python3 "$(dirname "$0")/torch_logmel.py" "$threads"

"$build/omniserve" make-demo-model --component ae --preset bench --out "$work/ae" >/dev/null
mkdir -p "$work/store"
for batch in 1 8; do
rm -rf "$work/store"/*
"$build/omniserve" encoder --modality audio --model "$work/ae" --store "file://$work/store" --port 0 --max-queue 64 \
  --workers 8 --max-batch "$batch" >"$work/encoder.log" 2>&1 &
pid=$!
port=""
for _ in $(seq 1 600); do
  port="$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$work/encoder.log" | tail -1 | sed 's/.*://' || true)"
  [[ -n "$port" ]] && curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
  sleep 0.1
done
/usr/bin/python3 - "$port" "$batch" <<'PY'
import base64, io, json, sys, threading, time, urllib.request, wave
import numpy as np
port, batch = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(int(batch))
def wav():
    b = io.BytesIO()
    with wave.open(b, "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000)
        w.writeframes((rng.standard_normal(160000) * 3000).astype(np.int16).tobytes())
    return "data:audio/wav;base64," + base64.b64encode(b.getvalue()).decode()
def post(url):
    body = json.dumps({"media": {"url": url}}).encode()
    answer = json.loads(urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/v1/encode", body), timeout=600).read())
    assert not answer["cached"] and answer["rows"] == 250, answer
for concurrency in (1, 4, 8):
    n = 2 * concurrency
    urls = [wav() for _ in range(n)]
    start = time.perf_counter()
    threads = [threading.Thread(target=lambda u=u: post(u)) for u in urls]
    for i in range(0, n, concurrency):
        group = threads[i:i + concurrency]
        for t in group: t.start()
        for t in group: t.join()
    took = time.perf_counter() - start
    print(f"served audio encoder, max-batch {batch}, concurrency {concurrency}: {n / took:.2f} clips/s "
          f"({n * 10 / took:.1f} s of audio per s)")
PY
kill "$pid"; wait "$pid" || true; pid=""
done
