#!/usr/bin/env bash
# Installs every Debian and npm package omniserve needs to build, test and run.
# Idempotent: a second run finds everything installed and changes nothing.
# Run as root on Debian 12. Nothing else is ever downloaded by the build.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
  # HTTP on Beast/Asio. Boost 1.81 has Beast fixes for C++20 coroutines that
  # 1.74 lacks; its dev package conflicts with the default 1.74 one, which
  # apt removes when present (see README, "Boost").
  libboost1.81-dev
  # tensors and ops. oneDNN's CMake config looks for OpenCL (its GPU
  # runtime), which libdnnl-dev only recommends: without the headers and
  # loader, find_package(dnnl) fails on a fresh machine.
  libdnnl-dev ocl-icd-opencl-dev opencl-c-headers
  # core: JSON, YAML, logging, CLI, hashing, crypto
  nlohmann-json3-dev libyaml-cpp-dev libspdlog-dev libfmt-dev libcli11-dev libxxhash-dev libssl-dev ca-certificates
  # tokenizers: GPT-style pre-tokenizer regexes need Unicode classes and lookahead
  libpcre2-dev
  # KV-cache events in vLLM's wire format: ZeroMQ PUB. (msgpack is our own
  # small codec in src/net/msgpack.*: Debian's libmsgpack-dev and
  # libmsgpack-cxx-dev depend on Boost 1.74, which conflicts with 1.81.)
  cppzmq-dev libzmq3-dev
  # media: image codecs (libjpeg-turbo, libpng, libwebp with its demuxer, giflib)
  libjpeg62-turbo-dev libpng-dev libwebp-dev libgif-dev
  # media: FFTs for the audio encoder's log-mel spectrogram (FFTW3, single precision)
  libfftw3-dev
  # media: audio decoding (libsndfile for wav/flac/ogg/mp3; FFmpeg's libraries for
  # everything else and for video), resampling to 16 kHz (libsoxr), video frames
  # scaled to RGB (libswscale)
  libsndfile1-dev libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libsoxr-dev
  # collectives for the vision decoder's sequence parallelism (--sp): Gloo over TCP
  libgloo-dev
  # tcmalloc, the omniserve binary's allocator
  libgoogle-perftools-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev wrk curl nginx-light
  # the portability test runs the binary on emulated older CPUs (Haswell:
  # AVX2 without AVX-512; Nehalem: x86-64-v2 only)
  qemu-user
  # a real S3 server for the object-store tests: OpenStack Swift with s3api
  # (scripts/s3/swift-up.sh starts it on 127.0.0.1; tempauth needs memcached)
  swift swift-proxy swift-object swift-container swift-account python3-swift memcached
  # reference scripts (goldens are committed; tests do not need these)
  python3 python3-numpy python3-pil
  # test fixtures (audio and video files are made with ffmpeg at test time)
  ffmpeg
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # -y also accepts removing libboost1.74-dev (and packages built on it) when
  # libboost1.81-dev replaces it.
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi

# npm packages (real peers and reference generators) are pinned in
# package.json / package-lock.json and installed into node_modules/.
root="$(cd "$(dirname "$0")/.." && pwd)"
if [[ -f "$root/package-lock.json" ]]; then
  if ! command -v npm >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm
  fi
  (cd "$root" && npm ci --no-audit --no-fund --loglevel=error)
fi
