#!/usr/bin/env bash
# Checks the per-ISA-level kernel objects (src/backend/cpu/isa) define no
# global or weak symbol except their table function (omni::cpu::isa::Table*).
# An inline or template function compiled for AVX-512 and emitted as a weak
# symbol could be the copy the linker keeps for the whole binary, which
# would then die with SIGILL on a CPU without AVX-512.
# Usage: scripts/check_isa_objects.sh OBJECT...
set -euo pipefail
[ "$#" -gt 0 ] || { echo "usage: $0 OBJECT..." >&2; exit 2; }
bad=0
for obj in "$@"; do
  # Defined symbols that are not local (lower-case types t/d/b/r are local).
  exported=$(nm --defined-only -C "$obj" | awk '$2 ~ /^[A-Z]$/ || $2 ~ /^[uvVwW]$/ {$1=""; print}')
  # DW.ref.__gxx_personality_v0 is the exception personality's address
  # (data, the same in every object), not code.
  others=$(printf '%s\n' "$exported" | grep -v -E '^ T omni::cpu::isa::Table[A-Za-z0-9]+\(bool\)$' |
    grep -v -E '^ V DW\.ref\.__gxx_personality_v0$' | grep -v '^$' || true)
  tables=$(printf '%s\n' "$exported" | grep -c -E '^ T omni::cpu::isa::Table' || true)
  if [ -n "$others" ]; then
    echo "$obj: symbols other than its table function:" >&2
    printf '%s\n' "$others" >&2
    bad=1
  fi
  if [ "$tables" != 1 ]; then
    echo "$obj: expected one table function, found $tables" >&2
    bad=1
  fi
done
[ "$bad" = 0 ] && echo "checked $# objects: each exports only its table function"
exit "$bad"
