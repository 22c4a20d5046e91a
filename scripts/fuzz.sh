#!/usr/bin/env bash
# Builds the libFuzzer targets with clang into build-fuzz/ and runs each for
# SECONDS (default 30) over its committed seed corpus. A crash, a sanitizer
# report or a failed check fails the run. Usage: scripts/fuzz.sh [SECONDS]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
secs="${1:-30}"
CXX=clang++ cmake -S "$root" -B "$root/build-fuzz" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DOMNI_BUILD_TESTS=OFF -DOMNI_BUILD_BENCH=OFF -DOMNI_BUILD_FUZZ=ON >/dev/null
targets=(safetensors_fuzz msgpack_fuzz model_peek_fuzz prometheus_text_fuzz http_request_fuzz http_response_fuzz chat_fuzz
  image_fuzz media_parsers_fuzz vision_tokens_fuzz decode_request_fuzz multipart_fuzz images_request_fuzz audio_fuzz video_fuzz
  transcriptions_request_fuzz audio_decode_request_fuzz speech_api_request_fuzz speech_text_fuzz)
cmake --build "$root/build-fuzz" -j "${OMNI_JOBS:-2}" --target "${targets[@]}"
for t in "${targets[@]}"; do
  name="${t%_fuzz}"
  work="$(mktemp -d)"
  cp "$root/fuzz/corpus/$name/"* "$work/"
  dict=()
  [[ -f "$root/fuzz/$name.dict" ]] && dict=(-dict="$root/fuzz/$name.dict")
  echo "fuzz: $t for ${secs}s"
  if ! "$root/build-fuzz/fuzz/$t" -max_total_time="$secs" -max_len=4096 "${dict[@]}" \
      -artifact_prefix="$work/artifact-" "$work" >"$work/log" 2>&1; then
    # What failed and the input that did it, so the run's log is enough to
    # reproduce: save the base64 below to a file and run the target on it.
    grep -v '^#\|^  NEW_FUNC\|^INFO' "$work/log" | tail -n 40
    for a in "$work"/artifact-*; do
      [[ -f "$a" ]] || continue
      echo "fuzz: $t input $(basename "$a") ($(stat -c %s "$a") bytes), base64:"
      base64 -w 0 "$a"
      echo
    done
    exit 1
  fi
  tail -n 1 "$work/log"
  rm -rf "$work"
done
