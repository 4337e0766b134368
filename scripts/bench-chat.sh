#!/usr/bin/env bash
# The time to the first reply token of attn chat, turn by turn, with the KV cache carried from
# one turn to the next and without it (--no-cache-reuse: every turn computes its whole prompt),
# run side by side. Each user message is about 60 tokens and each reply 48, so that the prompt
# of turn 8 is about 900 tokens.
#   scripts/bench-chat.sh MODEL_DIR [TEMPLATE] [THREADS]
# TEMPLATE: a chat template file, for a folder without one (default tests/data/chatml.jinja).
# Prints a markdown table: turn, prompt tokens, tokens taken from the cache, first-token ms.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: scripts/bench-chat.sh MODEL_DIR [TEMPLATE] [THREADS]}
template=${2:-tests/data/chatml.jinja}
threads=${3:-0}
attn=build/attn

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sentence="the committee said that the city would need more money for the schools next year, and \
the mayor answered that every department had already been asked to cut what it spends"
for turn in 1 2 3 4 5 6 7 8; do echo "turn $turn: $sentence, and then $sentence?"; done \
  >"$work/turns.txt"

run() {  # $1: extra option or empty; $2: the messages; the log has a "prompt ..." line per turn
  "$attn" chat -m "$model" --chat-template-file "$template" -i -v -t "$threads" --temp 0 -n 48 \
    ${1:+"$1"} <"${2:-$work/turns.txt}" 2>"$work/log" >/dev/null
  sed -n 's/.*prompt \([0-9]*\) tokens (\([0-9]*\) from the cache).*first token after \([0-9.]*\) ms.*/\1 \2 \3/p' \
    "$work/log"
}
# One untimed turn first: the first run of a model pays for reading its pages from the disk.
head -1 "$work/turns.txt" >"$work/warm-up.txt"
run "" "$work/warm-up.txt" >/dev/null
run "" >"$work/reuse"
run --no-cache-reuse >"$work/whole"

echo "| turn | prompt tokens | from the cache | first token, cache reused (ms) | first token, whole prompt (ms) | ratio |"
echo "|---|---|---|---|---|---|"
paste -d' ' "$work/reuse" "$work/whole" | awk '{
  printf "| %d | %d | %d | %.1f | %.1f | %.1fx |\n", NR, $1, $2, $3, $6, $6 / $3 }'
