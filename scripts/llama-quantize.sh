#!/usr/bin/env bash
# Runs the llama-quantize shipped in ../shared/peers (a development tool: bench-peer-q4.sh, check-q4-kl.py).
#
#   scripts/llama-quantize.sh IN.gguf OUT.gguf TYPE
#
# That build loads its CPU backend at run time, but llama-quantize never asks for it to be loaded and crashes in
# ggml_backend_dev_backend_reg. A one-line preloaded library (built here into build/peer-cache/) calls
# ggml_backend_load_all() before main, as llama-bench and llama-cli do themselves.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(cd "$ROOT/../shared/peers/llama.cpp/bin" && pwd)
SHIM=$ROOT/build/peer-cache/libload-ggml-backends.so
if [ ! -f "$SHIM" ]; then
  mkdir -p "$(dirname "$SHIM")"
  printf '%s\n' 'void ggml_backend_load_all(void);' \
    '__attribute__((constructor)) static void load_backends(void) { ggml_backend_load_all(); }' |
    cc -shared -fPIC -x c - -o "$SHIM" -L"$BIN" -lggml -Wl,-rpath,"$BIN"
fi
LD_PRELOAD=$SHIM exec "$BIN/llama-quantize" "$@"
