#!/usr/bin/env bash
# attn --dtype q4 against llama.cpp's q4_0 on the random GPT-2 124M of ../shared/tools/bench-peer.sh,
# side by side on this machine (a development benchmark: never run by the tests).
#
#   scripts/build.sh && ../shared/tools/bench-peer.sh 1 && scripts/bench-peer-q4.sh [threads]
#
# bench-peer.sh makes the model and its f32 GGUF in build/peer-cache/; this script quantizes that GGUF with
# the shipped llama-quantize (scripts/llama-quantize.sh; its q4_0 recipe: the linear layers in q4_0, the tied token embedding, which is
# also the output head, in q6_K), then runs `attn bench --dtype q4` and llama-bench interleaved, ROUNDS
# (default 3) rounds of REPS (default 5) repetitions, a 128-token prompt then 128 decoded tokens, and prints
# the medians over rounds and the median ratio attn / llama.cpp of the interleaved pairs (> 1: attn faster).
set -euo pipefail

THREADS=${1:-1,2}
ROUNDS=${ROUNDS:-3}
REPS=${REPS:-5}
PEER=../shared/peers/llama.cpp/bin
CACHE=build/peer-cache
HF=$CACHE/gpt2-random
Q4=$CACHE/gpt2-random-q4_0.gguf

if [ ! -x build/attn ] || [ ! -f "$CACHE/gpt2-random-f32.gguf" ]; then
  echo "bench-peer-q4.sh: run it from the repository root after scripts/build.sh and" \
    "../shared/tools/bench-peer.sh (which makes $CACHE/gpt2-random-f32.gguf)" >&2
  exit 2
fi
if [ ! -f "$Q4" ]; then
  scripts/llama-quantize.sh "$CACHE/gpt2-random-f32.gguf" "$Q4.tmp" q4_0 >"$CACHE/quantize-q4_0.log" 2>&1 ||
    { tail -20 "$CACHE/quantize-q4_0.log" >&2; exit 1; }
  mv "$Q4.tmp" "$Q4"
fi

results=$(mktemp)
trap 'rm -f "$results"' EXIT
for round in $(seq "$ROUNDS"); do
  for t in ${THREADS//,/ }; do
    attn=$(build/attn bench -m "$HF" --dtype q4 -p 128 -n 128 -t "$t" -r "$REPS" --json -q | tail -1)
    llama=$("$PEER/llama-bench" -m "$Q4" -p 128 -n 128 -t "$t" -r "$REPS" -o json 2>/dev/null)
    echo "{\"round\": $round, \"threads\": $t, \"attn\": $attn, \"llama\": $llama}" | tr -d '\n' >>"$results"
    echo >>"$results"
    echo "round $round, $t threads: done" >&2
  done
done

/usr/bin/python3 - "$results" <<'EOF'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
print("| threads | attn q4 prompt | llama.cpp q4_0 prompt | ratio | attn q4 decode | llama.cpp q4_0 decode | ratio |")
print("|---|---|---|---|---|---|---|")
for t in sorted({r["threads"] for r in runs}):
    cells = []
    for phase, attn_key in (("prompt", "prompt_tokens_per_s"), ("decode", "decode_tokens_per_s")):
        pairs = []
        for r in (r for r in runs if r["threads"] == t):
            llama = next(statistics.median(e["samples_ts"]) for e in r["llama"]
                         if (e["n_gen"] == 0) == (phase == "prompt"))
            pairs.append((r["attn"][attn_key], llama))
        cells += [f"{statistics.median(a for a, _ in pairs):.1f}",
                  f"{statistics.median(l for _, l in pairs):.1f}",
                  f"{statistics.median(a / l for a, l in pairs):.2f}"]
    print(f"| {t} | " + " | ".join(cells) + " |")
EOF
