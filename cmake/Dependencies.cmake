# Every dependency comes from a Debian package installed by scripts/setup.sh.
# Nothing is downloaded at configure or build time.
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED)
# Boost 1.81 (libboost1.81-dev): Beast and Asio are header-only.
find_package(Boost 1.81 REQUIRED CONFIG COMPONENTS headers)
find_package(OpenSSL REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(CLI11 REQUIRED)
find_package(dnnl REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
# Image codecs for src/media (and its fuzz targets).
pkg_check_modules(LIBPNG REQUIRED IMPORTED_TARGET libpng)
pkg_check_modules(LIBJPEG REQUIRED IMPORTED_TARGET libjpeg)
pkg_check_modules(LIBWEBP REQUIRED IMPORTED_TARGET libwebp libwebpdemux)
# FFTs (single precision) for the audio encoder's log-mel spectrogram.
pkg_check_modules(FFTW3F REQUIRED IMPORTED_TARGET fftw3f)
find_package(GIF 5 REQUIRED)
# Audio and video for src/media: libsndfile (wav/flac/ogg/mp3), FFmpeg's
# libraries (other audio codecs, video demuxing and decoding, frame scaling)
# and libsoxr (resampling to the encoders' rate).
pkg_check_modules(SNDFILE REQUIRED IMPORTED_TARGET sndfile)
pkg_check_modules(SOXR REQUIRED IMPORTED_TARGET soxr)
pkg_check_modules(LIBAV REQUIRED IMPORTED_TARGET libavformat libavcodec libavutil libswscale)
if(OMNI_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(OMNI_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
pkg_check_modules(ZMQ REQUIRED IMPORTED_TARGET libzmq)
# Collectives for sequence parallelism (src/parallel): Gloo over TCP (libgloo-dev).
find_package(Gloo REQUIRED CONFIG)
# The omniserve binary's allocator: glibc malloc's arena locking and
# consolidation were 15% of the gateway proxy's CPU (docs/PERFORMANCE.md).
pkg_check_modules(TCMALLOC REQUIRED IMPORTED_TARGET libtcmalloc_minimal)
