#!/usr/bin/env bash
# Sentences per second of attn classify, the inputs packed into batches (the default
# --batch-tokens) against one at a time (--batch-tokens 1: every input runs alone), side by side,
# at each thread count. The inputs are the first LINES sentences of ../shared/data's UD English
# EWT dev set, as pairs (sentence i, sentence i + 1) with an NLI model, else alone.
#   scripts/bench-classify.sh MODEL_DIR [LINES] [THREADS] [REPETITIONS]
# MODEL_DIR: a sequence classifier, e.g. from scripts/make_random_model.py bert-cls DIR --seed 1
# (BERT-base shape, NLI head). THREADS: a comma list (default 1,2). Each cell is the best of
# REPETITIONS runs (default 3), the runs of one thread count interleaved; the time is attn's
# wall-clock time less the model's load, which attn -v reports.
# Prints a markdown table: threads, inputs, tokens, packed and alone sentences/s, speed-up.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: scripts/bench-classify.sh MODEL_DIR [LINES] [THREADS] [REPETITIONS]}
lines=${2:-200}
threads=${3:-1,2}
repetitions=${4:-3}
attn=build/attn
data=${ATTN_SHARED_DIR:-../shared}/data/ud-ewt-dev-300.conllu

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# awk, not head, reads to the end: with pipefail, a writer stopped by SIGPIPE would fail the script.
sed -n 's/^# text = //p' "$data" | awk -v n="$((lines + 1))" 'NR <= n' >"$work/sentences"
pairs=0
if grep -qi '"entail' "$model/config.json"; then
  # premise<TAB>hypothesis: each sentence with the next.
  paste "$work/sentences" <(tail -n +2 "$work/sentences") | awk -v n="$lines" 'NR <= n' >"$work/inputs"
  pairs=1
else
  awk -v n="$lines" 'NR <= n' "$work/sentences" >"$work/inputs"
fi
inputs=$(wc -l <"$work/inputs")
# tokenize reads a pair's line as one text: one separator token fewer than the pair has.
tokens=$("$attn" tokenize -m "$model" -f "$work/inputs" --json 2>/dev/null |
  grep -o '"ids":\[[^]]*\]' | tr -cd ',\n' |
  awk -v extra="$pairs" '{ n += length($0) + 1 + extra } END { print n }')

seconds() {  # $1: threads, then options; prints the run's seconds less the load
  local start end
  start=$(date +%s.%N)
  "$attn" classify -m "$model" -f "$work/inputs" -t "$@" -v >/dev/null 2>"$work/log"
  end=$(date +%s.%N)
  local load_ms
  load_ms=$(sed -n 's/.*loaded .* in \([0-9.]*\) ms.*/\1/p' "$work/log" | awk 'NR == 1')
  echo "$start $end ${load_ms:-0}" | awk '{ printf "%.3f\n", $2 - $1 - $3 / 1000 }'
}

echo "model: $model; $inputs inputs ($tokens tokens with the special tokens)"
echo
echo "| threads | packed (default --batch-tokens), sentences/s | one at a time (--batch-tokens 1), sentences/s | speed-up |"
echo "|---|---|---|---|"
# One untimed run first: the first run pays for reading the weights from the disk.
seconds 1 >/dev/null
for t in ${threads//,/ }; do
  packed=""
  alone=""
  for _ in $(seq "$repetitions"); do
    packed="$packed $(seconds "$t")"
    alone="$alone $(seconds "$t" --batch-tokens 1)"
  done
  echo "$t $inputs $packed / $alone" | awk '{
    best_p = 1e9; best_a = 1e9; side = 0
    for (i = 3; i <= NF; ++i) {
      if ($i == "/") { side = 1; continue }
      if (side == 0 && $i < best_p) best_p = $i
      if (side == 1 && $i < best_a) best_a = $i
    }
    printf "| %d | %.1f | %.1f | %.2fx |\n", $1, $2 / best_p, $2 / best_a, best_a / best_p }'
done
