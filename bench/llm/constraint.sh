#!/usr/bin/env bash
# Structured output's cost (docs/PERFORMANCE.md, "Structured output"), one run:
#   bench/llm/constraint.sh [build-dir] [preset]
# Starts `omniserve llm` on a demo model of `preset` (default bench) with the
# full Omni vocabulary (65,536 vision and 6,561 audio codes, so every mask
# spans the real vocabulary size), then bench/llm/constraint.mjs compares
# decode tokens/s of constrained and free requests of the same length.
# Starts and stops only the server it launches (by PID).
set -euo pipefail
source "$(dirname "$0")/../common.sh"
build="${1:-build}"
preset="${2:-bench}"
use_workdir
"$build/omniserve" make-demo-model --component llm --preset "$preset" --out "$work/model" >/dev/null
"$build/omniserve" llm --model "$work/model" --served-model-name demo --port 0 --num-kv-blocks 2048 \
  >"$work/llm.log" 2>&1 &
pid=$!
wait_for_llm "$work/llm.log"
lscpu | awk -F: '/Model name/ {gsub(/^ +/, "", $2); print "cpu: " $2}'
node "$(dirname "$0")/constraint.mjs" "$base" demo
