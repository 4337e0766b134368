#!/usr/bin/env bash
# Installs what the attn serve tests run as real clients from npm, once, into build/npm: the
# official openai client (tests/data/openai_client.cjs). Needs node and npm, which the machines
# have (Debian's npm package would conflict with their nodejs): without them it says so, and the
# tests that need the client skip saying so, or fail under CI=true.
#   scripts/install-test-npm.sh
set -euo pipefail
cd "$(dirname "$0")/.."
readonly OPENAI_VERSION=5.23.2  # the newest 5.x: 6 and later want node 22, the machines have 20
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  echo "install-test-npm.sh: no node/npm here; the openai client tests will skip" >&2
  exit 0
fi
dir=build/npm
[ -f "$dir/node_modules/openai/package.json" ] &&
  grep -q "\"version\": \"$OPENAI_VERSION\"" "$dir/node_modules/openai/package.json" && exit 0
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || npm init -y >/dev/null
npm install --ignore-scripts --no-audit --no-fund "openai@$OPENAI_VERSION" >/dev/null
echo "install-test-npm.sh: openai $OPENAI_VERSION in $dir"
