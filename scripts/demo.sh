#!/usr/bin/env bash
# Installs dependencies if missing, builds, and generates text with the GPT-2 model the repo
# ships (models/tiny-gpt2-brown), streaming it as it comes.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh --attn-only
build/attn generate -p "The jury said that the city" -n 48 --temp 0.8 --top-k 40 --seed 1
