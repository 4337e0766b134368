#!/usr/bin/env bash
# Test setup: writes the full-size random GPT-2 and BERT models that the goldens in
# ../shared/golden were made on, a tiny SmolLM3 and tiny ALBERT classifiers with their float64
# references. Without ../shared or numpy it says so and the tests that need
# the models skip, except in CI (CI=true), where that is a failure; with both, any failure here
# is a real failure.
set -euo pipefail
out_dir=$1
# Skipping is fine on a developer's machine, never in CI, where everything is installed.
missing() {
  echo "make_random_models: $1"
  [ "${CI:-}" = "true" ] && exit 1
  exit 0
}
shared=${ATTN_SHARED_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/shared}
if [ ! -f "$shared/tools/make_random_model.py" ]; then
  missing "$shared/tools not found; full-size model tests will skip"
fi
python=""
for candidate in /usr/bin/python3 python3; do
  if command -v "$candidate" >/dev/null && "$candidate" -c 'import numpy' 2>/dev/null; then
    python=$candidate
    break
  fi
done
if [ -z "$python" ]; then
  missing "no python3 with numpy (apt-get install python3-numpy); full-size model tests will skip"
fi
make() {  # arch, tokenizer folder
  local dir="$out_dir/$1"
  [ -f "$dir/model.safetensors" ] && return 0
  rm -rf "$dir.tmp"
  "$python" "$shared/tools/make_random_model.py" "$1" "$dir.tmp" --seed 1 --tokenizer-dir "$shared/tokenizers/$2"
  mv "$dir.tmp" "$dir"
}
mkdir -p "$out_dir"
make gpt2 gpt2
make bert bert-base-uncased
# SmolLM3 has no golden from transformers: a tiny random one with a float64 reference.
# (Made again where an older reference lacks the float32 distance the test reads.)
if ! grep -qs float32_max_abs_dlogit "$out_dir/tiny-smollm3-random/reference.json"; then
  rm -rf "$out_dir/tiny-smollm3-random.tmp"
  "$python" "$(dirname "$0")/make_smollm3_reference.py" "$out_dir/tiny-smollm3-random.tmp" \
    --tokenizer-dir "$shared/models/tiny-llama-brown"
  mv "$out_dir/tiny-smollm3-random.tmp" "$out_dir/tiny-smollm3-random"
fi
# ALBERT's classifier heads: no shared model has one, so tiny-albert-random gets a seeded head,
# with a float64 reference (checked against transformers' hidden states of tiny-albert-random).
for kind in seqcls tokcls; do
  dir="$out_dir/tiny-albert-$kind-random"
  [ -f "$dir/reference.json" ] && continue
  rm -rf "$dir.tmp"
  "$python" "$(dirname "$0")/make_albert_classifier_reference.py" "$kind" "$dir.tmp" \
    --albert-dir "$shared/models/tiny-albert-random"
  mv "$dir.tmp" "$dir"
done
echo "make_random_models: ready in $out_dir"
