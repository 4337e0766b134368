#!/usr/bin/env bash
# Tokenizer speed, attn against Hugging Face's own Rust tokenizers library (its Node binding,
# npm tokenizers@0.23.2, installed into build/peer-cache/), side by side on this machine: the time
# to load a tokenizer.json, and to encode a file of texts (one per line) single-threaded.
#   scripts/bench-tokenizer.sh TOKENIZER_DIR TEXT_FILE [REPETITIONS]
# Run after scripts/build.sh. Both sides must give the same ids: the script checks that first.
# ATTN=path/to/attn times another build (an older commit's, say) in place of build/attn.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1 text=$2 repetitions=${3:-3} attn_binary=${ATTN:-build/attn}
peer=build/peer-cache/tokenizers-node
if [ ! -d "$peer/node_modules/tokenizers" ]; then
  mkdir -p "$peer"
  (cd "$peer" && npm install --silent --no-audit --no-fund tokenizers@0.23.2 >/dev/null)
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/bench.js" <<'JS'
const { Tokenizer } = require(process.argv[2]);
const fs = require("fs");
const [dir, textFile, out] = process.argv.slice(3);
let start = process.hrtime.bigint();
const tokenizer = Tokenizer.fromFile(dir + "/tokenizer.json");
const loadMs = Number(process.hrtime.bigint() - start) / 1e6;
const lines = fs.readFileSync(textFile, "utf8").split("\n");
if (lines[lines.length - 1] === "") lines.pop();
start = process.hrtime.bigint();
tokenizer.encodeBatch(lines, { addSpecialTokens: true }).then((encodings) => {
  const encodeMs = Number(process.hrtime.bigint() - start) / 1e6;
  if (out) fs.writeFileSync(out, encodings.map((e) => JSON.stringify(e.getIds())).join("\n") + "\n");
  console.log(JSON.stringify({ load_ms: loadMs, encode_ms: encodeMs }));
});
JS
node_module=$PWD/$peer/node_modules/tokenizers
# Same ids first: attn's --json lines against the library's.
TOKENIZERS_PARALLELISM=false node "$work/bench.js" "$node_module" "$dir" "$text" "$work/hf.ids" >/dev/null
"$attn_binary" tokenize -m "$dir" --file "$text" --json -q | sed 's/^{"ids":\(\[[^]]*\]\).*/\1/' \
  | tr -d ' ' >"$work/attn.ids"
if ! cmp -s "$work/hf.ids" "$work/attn.ids"; then
  echo "attn and the tokenizers library give different ids on $text; not timing" >&2
  exit 1
fi
bytes=$(stat -c %s "$text")
echo "| run | tokenizers 0.23.2 load ms | encode ms | attn load ms | encode ms |"
echo "|---|---|---|---|---|"
for run in $(seq "$repetitions"); do
  hf=$(TOKENIZERS_PARALLELISM=false node "$work/bench.js" "$node_module" "$dir" "$text" "")
  # attn tokenize -v's timings line on stderr: "load X ms | encode N texts, T tokens, Y ms".
  attn=$("$attn_binary" tokenize -m "$dir" --file "$text" -v 2>&1 >/dev/null | grep -o 'load.*')
  echo "| $run | $(echo "$hf" | sed 's/.*"load_ms":\([0-9.]*\).*/\1/') | $(echo "$hf" | sed 's/.*"encode_ms":\([0-9.]*\).*/\1/') | $(echo "$attn" | sed 's/load \([0-9.]*\) ms.*/\1/') | $(echo "$attn" | sed 's/.*tokens, \([0-9.]*\) ms/\1/') |"
done
echo "($bytes bytes of text, single-threaded)"
