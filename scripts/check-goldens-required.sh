#!/usr/bin/env bash
# The golden harness's mutation check (issue 44): runs the test suite under CI=true twice against
# a copy of ../shared whose goldens are (1) all empty and (2) all missing. The first run logs which
# tests open or look up a golden file (scripts/golden_open_log.c, preloaded); each of them must
# fail in both runs. The script lists those that passed or skipped instead, and exits 1 if there
# are any.
# Run after scripts/build.sh; takes a run of the suite and one of the tests that read goldens.
#   scripts/check-goldens-required.sh [SHARED_DIR]      (default ../shared)
set -euo pipefail
export LC_ALL=C  # one collation for sort, join and comm
cd "$(dirname "$0")/.."
shared=$(realpath "${1:-../shared}")
[ -d "$shared/golden" ] || { echo "check-goldens-required.sh: no golden/ in $shared" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O1 -shared -fPIC -o "$work/golden_open_log.so" scripts/golden_open_log.c -ldl

# ctest's name of each test, by its --gtest_filter (the name the open log knows).
ctest --test-dir build --show-only=json-v1 >"$work/tests.json"
/usr/bin/python3 - "$work/tests.json" >"$work/names.tsv" <<'PY'
import json, sys
for number, test in enumerate(json.load(open(sys.argv[1]))["tests"], start=1):
    for arg in test.get("command", []):
        if arg.startswith("--gtest_filter="):
            print(arg[len("--gtest_filter="):] + "\t" + test["name"] + "\t" + str(number))
PY

mutate() {  # mutate DIR empty|missing: a copy of ../shared, its models linked, its goldens mutated
  local dir=$1 how=$2
  mkdir -p "$dir/golden"
  for entry in "$shared"/*; do
    [ "$(basename "$entry")" = golden ] || ln -s "$entry" "$dir/$(basename "$entry")"
  done
  if [ "$how" = empty ]; then
    (cd "$shared/golden" && find . -type d) | (cd "$dir/golden" && xargs mkdir -p)
    (cd "$shared/golden" && find . -type f) | (cd "$dir/golden" && xargs touch)
  fi
}

status=0
for how in empty missing; do
  mutate "$work/shared-$how" "$how"
  # The first run is the whole suite; the second, only the tests that the first saw open a golden.
  selection=()
  if [ "$how" = missing ]; then selection=(-I "0,0,0,$(paste -sd, "$work/reader-numbers")"); fi
  echo "--- goldens $how: running the suite under CI=true"
  GOLDEN_OPEN_LOG="$work/opened" LD_PRELOAD="$work/golden_open_log.so" CI=true \
    ATTN_SHARED_DIR="$work/shared-$how" ctest --test-dir build -j"$(nproc)" "${selection[@]}" \
    >"$work/ctest-$how" 2>&1 || true
  grep -E "^ *[0-9]+/[0-9]+ Test +#[0-9]+: " "$work/ctest-$how" | grep -v "Failed\|\*\*\*" |
    sed -E 's/^.*Test +#[0-9]+: ([^ ]+) .*$/\1/' | sort -u >"$work/not-failed-$how"
  if [ "$how" = empty ]; then  # the tests that open a golden, by ctest's names
    cut -f1 "$work/opened" | sort -u >"$work/filters"
    join -t $'\t' <(sort -t $'\t' -k1,1 "$work/names.tsv") "$work/filters" >"$work/joined"
    cut -f2 "$work/joined" | sort -u >"$work/readers"
    cut -f3 "$work/joined" | sort -un >"$work/reader-numbers"
  fi
  comm -12 "$work/readers" "$work/not-failed-$how" >"$work/passed-$how"
  echo "goldens $how: of the $(wc -l <"$work/readers") tests that open a golden," \
    "$(wc -l <"$work/passed-$how") of them did not fail"
  if [ -s "$work/passed-$how" ]; then
    status=1
    sed 's/^/  did not fail: /' "$work/passed-$how"
  fi
  grep -E "tests passed|tests failed" "$work/ctest-$how" || true
done
exit "$status"
