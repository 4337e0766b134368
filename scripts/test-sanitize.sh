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
# Not the tests on the full-size random GPT-2 and BERT (names with "FullSize"): under the
# sanitizers they run the code of the tiny-model tests on 100 times the arithmetic, minutes of
# CI that check nothing new (the GEMM's blocks and edge tiles are Gemm.EveryMicroKernel's
# shapes). scripts/test.sh runs them. Nor the model goldens pinned to each instruction set
# (ModelGoldensOn.*): they check the numbers of each kernel set, which the sanitizers do not
# change, and the tests above already run the widest set's code under them.
stage sanitizer-tests bash -c \
  'cd build-sanitize && ctest --output-on-failure -j"$(nproc)" -E "FullSize|ModelGoldensOn"'
stage fuzzers scripts/fuzz.sh "${FUZZ_SECONDS:-15}" build-sanitize
