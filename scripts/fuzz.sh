#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz (clang, AddressSanitizer, UndefinedBehaviorSanitizer)
# and runs each with its dictionary (tests/fuzz/NAME.dict), as many at a time as there are cores.
# Prints, per harness, the executions, the coverage at the end (libFuzzer's cov and ft) and the
# findings, whose reproducers are kept in BUILD_DIR/fuzz-findings/NAME/. Exits 1 if any harness
# found anything.
#   scripts/fuzz.sh [SECONDS] [BUILD_DIR]          each harness SECONDS (default 60) on a copy of
#                                                  its seed corpus (CI's smoke run)
#   scripts/fuzz.sh --total SECONDS [BUILD_DIR]    fuzzing in depth: SECONDS for the whole run;
#                                                  each harness stops at FUZZ_RUNS executions
#                                                  (default 1,000,000) or at its share of the time
#                                                  left when it starts, whichever comes first, on
#                                                  its corpus kept in BUILD_DIR/fuzz-corpus/NAME
#                                                  (seeded from tests/fuzz/corpus/NAME, and growing
#                                                  from run to run)
# BUILD_DIR defaults to build-fuzz. Reproduce a finding: BUILD_DIR/tests/fuzz/NAME
# BUILD_DIR/fuzz-findings/NAME/crash-...; add it to tests/fuzz/corpus/NAME once fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
total=0
if [ "${1:-}" = --total ]; then
  total=1
  shift
fi
seconds=${1:-60}
build=${2:-build-fuzz}
case $seconds in '' | *[!0-9]*)
  echo "fuzz.sh: SECONDS must be a whole number, got '$seconds'" >&2
  exit 2
  ;;
esac

CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DATTN_SANITIZE=ON \
  -DATTN_FUZZ=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target fuzzers

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One harness: its log and findings in $work/NAME/; its corpus a copy of the seeds (the
# repository's stay as they are) or, with --total, the kept one.
run_harness() {
  local name=$1 seconds=$2 dir=$work/$1
  local corpus=$dir/corpus runs=()
  mkdir -p "$dir/findings"
  if [ "$total" = 1 ]; then
    corpus=$build/fuzz-corpus/$name
    runs=(-runs="$FUZZ_RUNS")
  fi
  mkdir -p "$corpus"
  cp -n tests/fuzz/corpus/"$name"/* "$corpus/"
  # Inputs up to twice the largest seed (real files are small; a bigger input only repeats).
  local largest
  largest=$(find tests/fuzz/corpus/"$name" -type f -printf '%s\n' | sort -n | tail -1)
  local max_len=$((largest * 2 > 4096 ? largest * 2 : 4096))
  local status=0
  "$build/tests/fuzz/$name" -max_total_time="$seconds" "${runs[@]}" -max_len="$max_len" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -dict="tests/fuzz/$name.dict" \
    -artifact_prefix="$dir/findings/" "$corpus" >"$dir/log" 2>&1 || status=$?
  echo "$status" >"$dir/status"
}

harnesses=()
for corpus in tests/fuzz/corpus/*/; do harnesses+=("$(basename "$corpus")"); done
parallel=$(nproc)
FUZZ_RUNS=${FUZZ_RUNS:-1000000}
deadline=$((SECONDS + seconds))
if [ "$total" = 1 ]; then
  echo "fuzz.sh: ${#harnesses[@]} harnesses, $parallel at a time, up to $FUZZ_RUNS executions" \
    "each, $seconds s in all" >&2
fi
left=${#harnesses[@]}
for name in "${harnesses[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
  share=$seconds
  if [ "$total" = 1 ]; then
    # The time left, shared among the harnesses not yet started and those running (each of
    # which holds a core): a harness that reaches FUZZ_RUNS early leaves its time to the rest.
    share=$(((deadline - SECONDS) * parallel / (left + parallel - 1)))
    [ "$share" -ge 1 ] || share=1
  fi
  run_harness "$name" "$share" &
  left=$((left - 1))
done
wait

failed=0
clean_harnesses=0
printf '%-32s %12s %8s %8s %9s %8s\n' harness executions cov ft findings seconds
for name in "${harnesses[@]}"; do
  dir=$work/$name
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  # -a: a harness's log may quote an input's raw bytes, and grep would then call it binary.
  coverage=$(grep -ao 'cov: [0-9]* ft: [0-9]*' "$dir/log" | tail -1 || true)
  findings=$(find "$dir/findings" -type f | wc -l)
  status=$(cat "$dir/status")
  # A harness that ended with an error and no reproducer (it crashed at start-up) counts too.
  if [ "$findings" -eq 0 ] && [ "$status" -ne 0 ]; then findings=1; fi
  elapsed=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$dir/log" | tail -1)
  printf '%-32s %12s %8s %8s %9s %8s\n' "$name" "${executions:-?}" \
    "$(awk '{print $2}' <<<"$coverage")" "$(awk '{print $4}' <<<"$coverage")" "$findings" \
    "${elapsed:-?}"
  if [ "$findings" -eq 0 ]; then clean_harnesses=$((clean_harnesses + 1)); fi
  if [ "$findings" -ne 0 ]; then
    failed=1
    mkdir -p "$build/fuzz-findings/$name"
    cp "$dir"/findings/* "$build/fuzz-findings/$name/" 2>/dev/null || true
    cp "$dir/log" "$build/fuzz-findings/$name/log"
    echo "--- $name (exit status $status; reproducers and log in $build/fuzz-findings/$name/):"
    grep -a -m1 -A12 -E '^==[0-9]+==ERROR|runtime error|invariant broken|deadly signal' "$dir/log" || tail -20 "$dir/log"
  fi
done
echo "fuzz: $clean_harnesses passed, $((${#harnesses[@]} - clean_harnesses)) failed"
exit "$failed"
