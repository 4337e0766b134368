#!/usr/bin/env bash
# Configures and builds attn (Release) in build/: everything, the tests included, or with
# `--attn-only` the attn executable alone (scripts/demo.sh: without the tests, GoogleTest need not
# be installed, and the first words come minutes sooner).
#   scripts/build.sh [--attn-only]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--attn-only" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
  cmake --build build -j"$(nproc)" --target attn
else
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON >/dev/null
  cmake --build build -j"$(nproc)"
fi
