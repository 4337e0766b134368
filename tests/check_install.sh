#!/usr/bin/env bash
# cmake --install puts attn into PREFIX/bin and the shipped models into PREFIX/share/attn/models,
# and the installed attn loads its default model from there, not from the source tree.
#   check_install.sh BUILD_DIR
set -euo pipefail
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
[ -x "$prefix/bin/attn" ] || { echo "no $prefix/bin/attn"; exit 1; }
log=$("$prefix/bin/attn" generate -p "The jury" -n 1 --temp 0 -v 2>&1 >/dev/null)
expected="loaded $prefix/share/attn/models/tiny-gpt2-brown "
if ! grep -qF "$expected" <<<"$log"; then
  echo "the installed attn did not load its default model from $prefix/share/attn/models:"
  echo "$log"
  exit 1
fi
echo "installed under $prefix and loaded the default model from there"
