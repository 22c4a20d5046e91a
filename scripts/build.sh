#!/usr/bin/env bash
# Configures and builds omniserve into build/ (Release with debug info, -j2).
# Usage: scripts/build.sh [extra cmake args...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
jobs="${OMNI_JOBS:-2}"
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE="${OMNI_BUILD_TYPE:-Release}" "$@"
cmake --build "$root/build" -j "$jobs"
