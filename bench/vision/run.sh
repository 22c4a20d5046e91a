#!/usr/bin/env bash
# The vision encoder's numbers for docs/PERFORMANCE.md, one run:
#   bench/vision/run.sh [build-dir]
# 1. vision_bench: patch embedding (784 per-patch Conv3d vs one strided
#    Conv3d vs one GEMM), the `bench` ViT forward as a fraction of this
#    machine's bf16 GEMM rate, both branches on one image.
# 2. PyTorch (Debian's python3-torch; install libopenblas0-pthread so its f32
#    GEMM is not the reference BLAS) on the same weights and image sizes, f32
#    and bf16, same thread count: bench/vision/torch_vit.py.
# 3. The served encoder (`omniserve encoder`, 8 workers) unbatched
#    (--max-batch 1) and batched (--max-batch 8) on distinct 392x392 JPEGs
#    sent as data: URLs at 1, 4 and 8 concurrent requests: images/s and the
#    mean images per forward.
# Starts and stops only the processes it launches (by PID).
set -euo pipefail
source "$(dirname "$0")/../common.sh"
build="${1:-build}"
use_workdir
threads="$(nproc)"

"$build/bench/vision/vision_bench" --benchmark_counters_tabular=true

"$build/omniserve" make-demo-model --component ve --preset bench --out "$work/ve" >/dev/null
for side in 392 448; do /usr/bin/python3 "$(dirname "$0")/torch_vit.py" "$work/ve" "$side" "$threads"; done

mkdir -p "$work/store"
# The served encoder, unbatched (--max-batch 1) then batched (--max-batch 8),
# each with 8 workers (fetch, decode, store overlap; forwards one at a time).
for batch in 1 8; do
rm -rf "$work/store"/*
"$build/omniserve" encoder --model "$work/ve" --store "file://$work/store" --port 0 --max-queue 64 \
  --workers 8 --max-batch "$batch" >"$work/encoder.log" 2>&1 &
pid=$!
port=""
for _ in $(seq 1 600); do
  port="$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$work/encoder.log" | tail -1 | sed 's/.*://' || true)"
  [[ -n "$port" ]] && curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
  sleep 0.1
done
/usr/bin/python3 - "$port" "$batch" <<'PY'
import base64, io, json, sys, threading, time, urllib.request
import numpy as np
from PIL import Image
port, batch = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(int(batch))
def jpeg():
    b = io.BytesIO()
    Image.fromarray(rng.integers(0, 255, (392, 392, 3), dtype=np.uint8)).save(b, "JPEG", quality=90)
    return "data:image/jpeg;base64," + base64.b64encode(b.getvalue()).decode()
def post(url):
    body = json.dumps({"media": {"url": url}}).encode()
    r = urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/v1/encode", body), timeout=600)
    answer = json.loads(r.read())
    assert not answer["cached"], "every image must be new"
def batches():
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
    get = lambda name: float(next(l.split()[-1] for l in text.splitlines() if l.startswith(name + " ")))
    return get("omni_encoder_batch_size_sum"), get("omni_encoder_batch_size_count")
results = {}
for concurrency in (1, 4, 8):
    images = [jpeg() for _ in range(8 * 2)]
    lock, queue = threading.Lock(), list(images)
    def worker():
        while True:
            with lock:
                if not queue: return
                url = queue.pop()
            post(url)
    s0, c0 = batches()
    start = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads: t.start()
    for t in threads: t.join()
    results[concurrency] = len(images) / (time.perf_counter() - start)
    s1, c1 = batches()
    print(f"served encoder, --max-batch {batch}, {concurrency} concurrent: {results[concurrency]:.2f} images/s "
          f"({results[concurrency] / results[1]:.2f}x of 1), mean batch {(s1 - s0) / (c1 - c0):.2f}")
PY
kill "$pid"
wait "$pid" || true
pid=""
done
