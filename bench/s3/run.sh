#!/usr/bin/env bash
# S3Store vs curl --aws-sigv4 on a local Swift + s3api: put+get of a 4 MB
# object, ROUNDS times each, interleaved. Builds nothing: pass the build dir.
#   bench/s3/run.sh [BUILD_DIR] [ROUNDS] [BYTES]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$repo/build}
rounds=${2:-20}
bytes=${3:-4194304}
bin=$build/bench/s3/s3_vs_curl
[[ -x $bin ]] || { echo "missing $bin; build target s3_vs_curl first" >&2; exit 1; }
line=$("$repo/scripts/s3/swift-up.sh")
eval "$line"
trap '"$repo/scripts/s3/swift-down.sh" "$SWIFT_DIR"' EXIT
"$bin" "$S3_ENDPOINT" "$S3_ACCESS_KEY" "$S3_SECRET_KEY" "$S3_REGION" "$rounds" "$bytes"
