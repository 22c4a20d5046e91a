#!/usr/bin/env bash
# CTest fixture for the S3 integration tests: starts one Swift + s3api server
# per ctest run (scripts/s3/swift-up.sh) and records its env line in ENV_FILE,
# or stops it again.
#   s3_fixture.sh up   REPO STATE_DIR ENV_FILE
#   s3_fixture.sh down REPO STATE_DIR ENV_FILE
set -euo pipefail
cmd=$1 repo=$2 dir=$3 env_file=$4
case $cmd in
  up)
    rm -f "$env_file"
    # A previous run that was killed may have left its server behind.
    [[ -d $dir ]] && "$repo/scripts/s3/swift-down.sh" "$dir" || true
    line=$("$repo/scripts/s3/swift-up.sh" "$dir")
    echo "$line" >"$env_file.tmp" && mv "$env_file.tmp" "$env_file"
    echo "$line"
    ;;
  down)
    rm -f "$env_file"
    "$repo/scripts/s3/swift-down.sh" "$dir"
    ;;
  *) echo "usage: $0 up|down REPO STATE_DIR ENV_FILE" >&2; exit 2 ;;
esac
