#!/usr/bin/env bash
# The audio decoder's numbers for docs/PERFORMANCE.md, one run:
#   bench/audio_decoder/run.sh [build-dir]
# 1. audio_decoder_bench: the `bench` vocoder (1536 channels, six stages) on
#    10 s: time and real-time factor; 8 clips batched against one at a time.
#    The zero-shot speaker encoder (its bench companion, 512 wide) on a 5 s clip.
# 2. PyTorch on the same weights (torch_vocoder.py, torch_speaker.py, every core).
# 3. The served decoder (`omniserve decoder --modality audio`, `bench`
#    preset, 8 workers): 8 concurrent requests of 2 s each, --max-batch 8
#    against --max-batch 1.
# 4. Time to first audio through `omniserve up` (demo models): a streamed
#    spoken answer's first delta.audio.data against the whole answer, and
#    against the LLM alone producing the same spoken block (force_audio on
#    the gateway, no vocoding).
# Starts and stops only the processes it launches (by PID).
set -euo pipefail
source "$(dirname "$0")/../common.sh"
build="${1:-build}"
use_workdir

"$build/omniserve" make-demo-model --component ad --preset bench --out "$work/ad" >/dev/null
OMNI_BENCH_AD_DIR="$work/ad" "$build/bench/audio_decoder/audio_decoder_bench" --benchmark_counters_tabular=true
/usr/bin/python3 "$(dirname "$0")/torch_vocoder.py" "$work/ad" "$(nproc)"
/usr/bin/python3 "$(dirname "$0")/torch_speaker.py" "$work/ad/zeroshot" "$(nproc)"

mkdir -p "$work/store"
for batch in 1 8; do
  "$build/omniserve" decoder --modality audio --model "$work/ad" --store "file://$work/store" --port 0 \
    --workers 8 --max-batch "$batch" >"$work/decoder.log" 2>&1 &
  pid=$!
  port=""
  for _ in $(seq 1 600); do
    port="$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$work/decoder.log" | tail -1 | sed 's/.*://' || true)"
    [[ -n "$port" ]] && curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
    sleep 0.1
  done
  /usr/bin/python3 - "$port" "$batch" <<'PY'
import json, sys, threading, time, urllib.request
port, batch = sys.argv[1], sys.argv[2]
def post(i):
    units = [(t * 2731 + 17 + 97 * i) % 6561 for t in range(50)]
    body = json.dumps({"units": units, "format": "wav", "inline": True}).encode()
    answer = json.loads(urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/v1/decode", body), timeout=900).read())
    assert answer["samples"] == 50 * 960, answer
post(99)  # primitives built
for rounds in range(2):
    start = time.perf_counter()
    threads = [threading.Thread(target=post, args=(i,)) for i in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    took = time.perf_counter() - start
print(f"served vocoder, max-batch {batch}, 8 concurrent 2 s clips: {took:.2f} s, {8 / took:.2f} clips/s, "
      f"{16 / took:.2f} s of audio per s")
PY
  kill "$pid"; wait "$pid" || true; pid=""
done

"$build/omniserve" up --port 0 --data-dir "$work/up" >"$work/up.log" 2>&1 &
pid=$!
port=""
for _ in $(seq 1 3000); do
  port="$(grep -o 'is served by .* on http://127.0.0.1:[0-9]*' "$work/up.log" | head -1 | sed 's/.*://' || true)"
  [[ -n "$port" ]] && break
  sleep 0.1
done
gateway="$(grep -o 'gateway on http://127.0.0.1:[0-9]*' "$work/up.log" | head -1 | sed 's/.*on //')"
/usr/bin/python3 - "$port" "$gateway" <<'PY'
import json, sys, time, urllib.request
port, gateway = sys.argv[1], sys.argv[2]
messages = [{"role": "user", "content": "Tell me about the weather on the coast this week."}]
def ask(url, body, stream):
    req = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    start = time.perf_counter()
    first = None
    with urllib.request.urlopen(req, timeout=900) as r:
        if not stream:
            answer = json.loads(r.read())
            return time.perf_counter() - start, None, answer
        for line in r:
            if line.startswith(b"data: {") and b'"data"' in line and first is None:
                first = time.perf_counter() - start
    return time.perf_counter() - start, first, None
common = {"model": "omni-demo", "messages": messages, "max_tokens": 500, "temperature": 0,
          "chat_template_kwargs": {"skip_reasoning": True}}
speak = dict(common, modalities=["text", "audio"], audio={"voice": "alloy", "format": "wav"})
ask(f"http://127.0.0.1:{port}/v1/chat/completions", speak, False)  # warm: primitives, prefix cache
llm, _, raw = ask(f"{gateway}/v1/chat/completions", dict(common, force_audio=True), False)
units = raw["choices"][0]["message"]["content"].count("<|audio")
whole, _, _ = ask(f"http://127.0.0.1:{port}/v1/chat/completions", speak, False)
total, first, _ = ask(f"http://127.0.0.1:{port}/v1/chat/completions", dict(speak, stream=True), True)
print(f"spoken answer of {units} units ({units * 0.04:.2f} s): LLM alone {llm:.2f} s; whole answer {whole:.2f} s; "
      f"streamed: first audio at {first:.2f} s, end at {total:.2f} s")
PY
kill "$pid"; wait "$pid" || true; pid=""
