#!/usr/bin/env bash
# attn serve's throughput against attn's own commands, side by side in one run (README, "Serve"):
#  - GPT-2 124M (random weights), greedy 64-token completions: generated tokens/s of 1 client and
#    of 8 concurrent clients (--parallel 8), and the time to the first streamed token of a
#    128-token prompt against attn generate's prompt pass.
#  - Embeddings (tiny-sbert-brown and the random BERT-base), 8 concurrent clients sending one text
#    a request, and 32: sentences/s against attn embed -f over the same texts in one process.
#  - With LLAMA_SERVER=path/to/llama-server: its completions on the same model as a GGUF
#    (build/peer-cache/gpt2-random-f32.gguf, made by ../shared/tools/bench-peer.sh).
#   scripts/bench-serve.sh [THREADS]     (default 2; env ROUNDS, default 2)
# Needs build/attn, node (20: its fetch), ../shared and the random models of the test suite
# (tests/make_random_models.sh build/random-models). Prints markdown tables.
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-2}
rounds=${ROUNDS:-2}
attn=build/attn
client="node scripts/bench-serve-client.mjs"
models=build/random-models
for need in "$attn" ../shared/golden/inputs.json "$models/gpt2/config.json" "$models/bert/config.json"; do
  [ -e "$need" ] || { echo "bench-serve.sh: no $need (see the header of this script)" >&2; exit 2; }
done
command -v node >/dev/null || { echo "bench-serve.sh: no node" >&2; exit 2; }

work=$(mktemp -d)
server_pid=
stop_server() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null || true; fi
  server_pid=
}
trap 'stop_server; rm -rf "$work"' EXIT

/usr/bin/python3 - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
inputs = json.load(open("../shared/golden/inputs.json"))
one_line = lambda texts: "".join(t.replace("\n", " ") + "\n" for t in texts if t.strip())
open(f"{work}/prompts.txt", "w").write(one_line(inputs["prompts"]))
open(f"{work}/texts.txt", "w").write(one_line(inputs["texts"]))
EOF

# Starts a server on a free port ($@: its command, with PORT where the port goes); sets $url.
start_server() {
  local port
  port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "${@//PORT/$port}" >"$work/server.log" 2>&1 &
  server_pid=$!
  url=http://127.0.0.1:$port
  for _ in $(seq 600); do
    curl -sf "$url/health" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "bench-serve.sh: the server did not start:" >&2
  cat "$work/server.log" >&2
  exit 1
}
field() { /usr/bin/python3 -c "import json,sys; print(json.loads(sys.stdin.read())['$1'])"; }

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) vCPUs;" \
  "AVX-512: $(grep -qw avx512f /proc/cpuinfo && echo yes || echo no); threads $threads;" \
  "attn $(git rev-parse --short HEAD)"
echo

# --- Completions ---------------------------------------------------------------------------
# A prompt of 128 tokens: the first 128 of the texts joined, decoded (tokenized again, the count
# is printed with the table).
prompt_tokens=$(/usr/bin/python3 - "$work" "$attn" "$models/gpt2" <<'EOF'
import json, subprocess, sys
work, attn, model = sys.argv[1:]
text = " ".join(open(f"{work}/texts.txt").read().split("\n"))[:4000]
run = lambda *args: json.loads(subprocess.run([attn, "tokenize", "-m", model, "--json", *args],
                                              capture_output=True, text=True, check=True).stdout)
ids = run("--", text)["ids"][:128]
prompt = run("--decode", " ".join(map(str, ids)))["text"]
open(f"{work}/prompt-128.txt", "w").write(prompt)
print(len(run("--", prompt)["ids"]))
EOF
)

completions() {  # $1: label
  local one eight
  for round in $(seq "$rounds"); do
    one=$($client completions "$url" 1 8 64 "$work/prompts.txt" | field tokens_per_s)
    eight=$($client completions "$url" 8 32 64 "$work/prompts.txt" | field tokens_per_s)
    printf '| %s | %d | %.1f | %.1f | %.2fx |\n' "$1" "$round" "$one" "$eight" \
      "$(echo "$eight / $one" | bc -l)"
  done
}
echo "GPT-2 124M (random), greedy 64-token completions, tokens/s generated"
echo
echo "| server | round | 1 client | 8 clients | ratio |"
echo "|---|---|---|---|---|"
start_server "$attn" serve -m "$models/gpt2" -t "$threads" --parallel 8 --port PORT -q
completions "attn serve --parallel 8"
# Time to the first token of a 128-token prompt, and attn generate's prompt pass, alternately.
ttft=()
prompt=()
for round in $(seq "$rounds"); do
  ttft+=("$($client first-token "$url" 5 "$work/prompt-128.txt" | field median_ms)")
  for _ in 1 2 3; do
    "$attn" generate -m "$models/gpt2" -t "$threads" --temp 0 -n 1 -v -f "$work/prompt-128.txt" \
      2>&1 >/dev/null | sed -n 's/.*prompt \([0-9]*\) tokens, \([0-9.]*\) tokens\/s.*/\1 \2/p'
  done | awk '{ print 1000 * $1 / $2 }' | sort -n | sed -n 2p >"$work/prompt-ms"
  prompt+=("$(cat "$work/prompt-ms")")
done
stop_server
if [ -n "${LLAMA_SERVER:-}" ]; then
  gguf=build/peer-cache/gpt2-random-f32.gguf
  if [ -f "$gguf" ]; then
    start_server "$LLAMA_SERVER" -m "$gguf" -t "$threads" -np 8 -c 8192 --port PORT
    completions "llama-server -np 8 (f32 GGUF)"
    stop_server
  else
    echo "| llama-server | no $gguf: run ../shared/tools/bench-peer.sh once | | | |"
  fi
fi
echo
echo "Time to the first token, a $prompt_tokens-token prompt (median of 5 streamed requests; attn" \
  "generate: the median of 3 prompt passes)"
echo
echo "| round | attn serve, first token (ms) | attn generate, prompt pass (ms) | ratio |"
echo "|---|---|---|---|"
for i in "${!ttft[@]}"; do
  printf '| %d | %.1f | %.1f | %.2f |\n' $((i + 1)) "${ttft[$i]}" "${prompt[$i]}" \
    "$(echo "${ttft[$i]} / ${prompt[$i]}" | bc -l)"
done

# --- Embeddings ----------------------------------------------------------------------------
echo
echo "Embeddings of $(wc -l <"$work/texts.txt") texts: sentences/s"
echo
echo "| model | round | attn embed -f | texts a request | attn serve, 8 clients | ratio |"
echo "|---|---|---|---|---|---|"
for model in ../shared/models/tiny-sbert-brown "$models/bert"; do
  start_server "$attn" serve -m "$model" -t "$threads" --port PORT -q
  for round in $(seq "$rounds"); do
    # attn embed's own time, its load excluded: the time of -f less that of one text.
    start=$(date +%s.%N)
    "$attn" embed -m "$model" -t "$threads" -q -f "$work/texts.txt" >/dev/null
    whole=$(echo "$(date +%s.%N) - $start" | bc -l)
    start=$(date +%s.%N)
    "$attn" embed -m "$model" -t "$threads" -q "The jury." >/dev/null
    load=$(echo "$(date +%s.%N) - $start" | bc -l)
    cli=$(echo "$(wc -l <"$work/texts.txt") / ($whole - $load)" | bc -l)
    for per_request in 1 32; do
      served=$($client embed "$url" 8 "$work/texts.txt" $per_request | field sentences_per_s)
      printf '| %s | %d | %.1f | %d | %.1f | %.2f |\n' "$(basename "$model")" "$round" "$cli" \
        $per_request "$served" "$(echo "$served / $cli" | bc -l)"
    done
  done
  stop_server
done
