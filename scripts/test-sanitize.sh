#!/usr/bin/env bash
# The second half of CI: builds attn, its tests and its fuzzers with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer (any finding is fatal) in build-sanitize/, runs the whole test
# suite under them, then every fuzzer for FUZZ_SECONDS (default 60) on its seed corpus.
#   scripts/test-sanitize.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
CC=clang CXX=clang++ cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Release -DATTN_SANITIZE=ON \
  -DATTN_FUZZ=ON >/dev/null
cmake --build build-sanitize -j"$(nproc)"
(cd build-sanitize && ctest --output-on-failure -j"$(nproc)")
scripts/fuzz.sh "${FUZZ_SECONDS:-60}" build-sanitize
