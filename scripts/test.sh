#!/usr/bin/env bash
# Installs dependencies if missing, builds, and runs the whole test suite. Tests that need
# ../shared (the goldens) skip with a message when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stage.sh
stage install scripts/install-deps.sh --test
stage build scripts/build.sh
stage npm scripts/install-test-npm.sh
stage tests bash -c 'cd build && ctest --output-on-failure -j"$(nproc)"'
