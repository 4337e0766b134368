#!/usr/bin/env bash
# The second half of CI: builds attn, its tests and its fuzzers with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer (any finding is fatal) in build-sanitize/, runs the whole test
# suite under them (but the full-size model tests), then every fuzzer for FUZZ_SECONDS (default
# 15) on its seed corpus: a smoke run (scripts/fuzz.sh --total fuzzes in depth).
#   scripts/test-sanitize.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stage.sh
stage install scripts/install-deps.sh --test
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
CC=clang CXX=clang++ cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Release -DATTN_SANITIZE=ON \
  -DATTN_FUZZ=ON >/dev/null
stage sanitizer-build cmake --build build-sanitize -j"$(nproc)"
# The whole suite but the full-size model tests, as shards of each test executable
# (tests/CMakeLists.txt says why).
stage sanitizer-tests bash -c 'cd build-sanitize && ctest --output-on-failure -j"$(nproc)"'
stage fuzzers scripts/fuzz.sh "${FUZZ_SECONDS:-15}" build-sanitize
