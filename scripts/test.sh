#!/usr/bin/env bash
# Sets everything up, builds from scratch and runs every test.
# This is the README's test command and what CI (.ci/run) calls.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
rm -rf "$root/build" "$root/build-fuzz"
"$root/scripts/build.sh"
(cd "$root/build" && ctest --output-on-failure -j "${OMNI_JOBS:-2}")
# Parsers of untrusted input: a short libFuzzer run per target (clang build).
"$root/scripts/fuzz.sh" "${OMNI_FUZZ_SECONDS:-30}"
