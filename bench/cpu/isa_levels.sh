#!/usr/bin/env bash
# The `bench` model served at each CPU kernel level, for docs/PERFORMANCE.md:
#   bench/cpu/isa_levels.sh [build-dir] [other-build-dir]    (ISA_LEVELS="..." for a subset)
# For every level this CPU has (OMNI_CPU_ISA=amx|avx512bf16|avx512|avx2|
# generic), starts `omniserve llm` on the `bench` demo model and measures with
# `omniserve bench`: decode tokens/s at batch 1 and at 16 streams, and
# prefill tokens/s (about 1030 prompt tokens). Ratios are to the best level.
# Batch-1 decode is also divided by the bandwidth bound (streaming read of
# the best level, read right before and after that run; the better one).
# With other-build-dir (e.g. a -march=native build of an earlier commit),
# its binary is measured too, alternating with this build's best level twice
# (A B A B), and the better of each pair's two readings is compared.
# Starts and stops only the processes it launches (by PID).
set -euo pipefail
source "$(dirname "$0")/../common.sh"
build="${1:-build}"
other="${2:-}"
use_workdir

"$build/omniserve" make-demo-model --component llm --preset bench --out "$work/model" >/dev/null
best="$("$build/omniserve" version | sed -n 's/^cpu kernels: .*(best \([a-z0-9]*\).*/\1/p')"
levels=()
for l in amx avx512bf16 avx512 avx2 generic; do
  [[ "$l" == "$best" || ${#levels[@]} -gt 0 ]] && levels+=("$l")
done
# ISA_LEVELS="avx512bf16 avx2" measures only those (the best is always in).
if [[ -n "${ISA_LEVELS:-}" ]]; then
  read -r -a levels <<<"$best ${ISA_LEVELS//$best/}"
fi
echo "best level on this CPU: $best; measuring: ${levels[*]}${other:+ and $other}" >&2

measure() {  # measure NAME BINARY LEVEL
  local name="$1" bin="$2" level="$3"
  OMNI_CPU_ISA="$level" "$bin" llm --model "$work/model" --served-model-name bench --port 0 \
    >"$work/$name.log" 2>&1 &
  pid=$!
  wait_for_llm "$work/$name.log"
  local b=("$build/omniserve" bench --base-url "$base" --model bench --workload synthetic)
  stream_read "$build" "$work/$name.stream_before.json"
  "${b[@]}" --json "$work/$name.decode1.json" --concurrency 1 --num-requests 3 --input-len 16 --output-len 96 >/dev/null
  stream_read "$build" "$work/$name.stream_after.json"
  "${b[@]}" --json "$work/$name.decode16.json" --concurrency 16 --num-requests 16 --input-len 16 --output-len 64 \
    --seed 9 >/dev/null
  "${b[@]}" --json "$work/$name.prefill.json" --concurrency 1 --num-requests 2 --input-len 300 --output-len 1 \
    --seed 7 >/dev/null
  kill "$pid"
  wait "$pid" || true
  pid=""
  echo "$name: $(grep -o 'cpu kernels: [^"]*' "$work/$name.log" | head -1)" >&2
}

names=()
if [[ -n "$other" ]]; then
  for round in 1 2; do
    measure "other_$round" "$other/omniserve" ""
    measure "best_$round" "$build/omniserve" "$best"
  done
fi
for l in "${levels[@]}"; do
  [[ -n "$other" && "$l" == "$best" ]] && continue
  measure "$l" "$build/omniserve" "$l"
done

/usr/bin/python3 - "$work" "$best" "${other:-}" "${levels[@]}" <<'PY'
import json, os, sys
work, best, other, levels = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
model_bytes = os.path.getsize(f"{work}/model/model.safetensors")

def load(name):
    r = {k: json.load(open(f"{work}/{name}.{k}.json"))["results"] for k in ("decode1", "decode16", "prefill")}
    stream = max(json.load(open(f"{work}/{name}.stream_{w}.json"))["benchmarks"][0]["stream_GBps"]
                 for w in ("before", "after"))
    return {
        "decode1": 1000.0 / r["decode1"]["tpot_ms"]["p50"],
        "decode16": r["decode16"]["output_tokens_per_s"],
        "prefill": r["prefill"]["mean_prompt_tokens"] / (r["prefill"]["ttft_ms"]["p50"] / 1000.0),
        "bound": stream * 1e9 / model_bytes,
        "stream": stream,
    }

def better(a, b):
    return {k: max(a[k], b[k]) for k in a}

rows = {}
if other:
    rows["other"] = better(load("other_1"), load("other_2"))
    rows[best] = better(load("best_1"), load("best_2"))
for l in levels:
    if l not in rows:
        rows[l] = load(l)
top = rows[best]
print(f"model {model_bytes / 2**20:.0f} MiB bf16; ratios to the best level ({best})")
print(f"{'level':12} {'decode b1 tok/s':>16} {'of bound':>9} {'decode 16 tok/s':>16} {'prefill tok/s':>14}   ratios b1 / b16 / prefill")
for name in ([best] + [l for l in levels if l != best]):
    r = rows[name]
    print(f"{name:12} {r['decode1']:16.1f} {r['decode1'] / r['bound']:9.2f} {r['decode16']:16.1f} {r['prefill']:14.0f}"
          f"   {r['decode1'] / top['decode1']:.2f} / {r['decode16'] / top['decode16']:.2f} / {r['prefill'] / top['prefill']:.2f}")
if other:
    o = rows["other"]
    print(f"\n{other}: decode b1 {o['decode1']:.1f}, decode 16 {o['decode16']:.1f}, prefill {o['prefill']:.0f} tok/s"
          f" (better of two runs each, alternating with {best})")
    print(f"this build's {best} / that build: decode b1 {top['decode1'] / o['decode1']:.3f},"
          f" decode 16 {top['decode16'] / o['decode16']:.3f}, prefill {top['prefill'] / o['prefill']:.3f}")
PY
