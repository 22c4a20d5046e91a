#!/usr/bin/env bash
# Runs the build on emulated CPUs older than the machine's (qemu-user): a
# Haswell (AVX2 + FMA, no AVX-512) must choose the avx2 kernels and a
# Nehalem (x86-64-v2 only) the generic ones; on each the kernel, linear
# and attention tests must pass, and `omniserve generate` on the demo model
# must give the same tokens as this machine gives at that level. An instruction the emulated CPU lacks
# anywhere on those paths (the baseline built for a newer CPU, a per-level
# function leaking into the rest) stops the run with SIGILL.
# Usage: scripts/check_portable.sh BUILD_DIR
set -euo pipefail
build="${1:?usage: $0 BUILD_DIR}"
command -v qemu-x86_64 >/dev/null || { echo "qemu-x86_64 not found (scripts/setup.sh installs qemu-user)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$build/omniserve" make-demo-model --component llm --out "$work/model" >/dev/null
gen=(generate --model "$work/model" --prompt "portable kernels" --max-tokens 8)
tests='CpuIsaTest.*:CpuKernelsTest.*:LinearTest.*:AttentionTest.*:NormTest.*:ElementwiseTest.*'
for pair in Haswell-v4:avx2 Nehalem-v2:generic; do
  cpu="${pair%%:*}" want="${pair##*:}"
  # TCG warns about CPU flags it does not emulate (TSX, invpcid): not ours.
  version="$(qemu-x86_64 -cpu "$cpu" "$build/omniserve" version 2>/dev/null)"
  line="$(printf '%s\n' "$version" | grep '^cpu kernels:' || true)"
  case "$line" in
    "cpu kernels: $want (best $want"*) echo "$cpu: $line" ;;
    *) echo "$cpu: expected the $want kernels, got: ${line:-no cpu kernels line}" >&2; printf '%s\n' "$version" >&2; exit 1 ;;
  esac
  if ! out="$(qemu-x86_64 -cpu "$cpu" "$build/src/ops/ops_test" --gtest_filter="$tests" 2>&1)"; then
    printf '%s\n' "$out" | tail -40 >&2
    echo "$cpu: ops_test failed" >&2
    exit 1
  fi
  printf '%s\n' "$out" | grep -E '^\[  PASSED  \]' | sed "s/^/$cpu: ops_test /"
  emulated="$(qemu-x86_64 -cpu "$cpu" "$build/omniserve" "${gen[@]}" 2>/dev/null)"
  here="$(OMNI_CPU_ISA="$want" "$build/omniserve" "${gen[@]}" 2>/dev/null)"
  if [[ -z "$emulated" || "$emulated" != "$here" ]]; then
    echo "$cpu: generate gave '$emulated', this machine at $want '$here'" >&2
    exit 1
  fi
  echo "$cpu: generate matches this machine at $want: $emulated"
done
