#!/usr/bin/env bash
# Runs a test executable with attn's kernels pinned to one instruction set (ATTN_KERNELS,
# src/kernels/cpu_features.h), so that the model goldens run on every kernel set this CPU has,
# not only on the widest one that attn would pick.
#   tests/run_on_isa.sh scalar|avx2|avx512 EXECUTABLE [ARGS...]
# Where the CPU lacks the set, it says so on one line and exits 77, which ctest reports as a
# skipped test ("Skipped") in its summary.
set -euo pipefail
isa=$1
shift
required=()
case "$isa" in
  scalar) ;;
  avx2) required=(avx2 fma) ;;
  avx512) required=(avx2 fma avx512f avx512bw avx512dq avx512vl avx512_vnni) ;;
  *) echo "run_on_isa.sh: unknown instruction set '$isa' (scalar, avx2, avx512)" >&2; exit 2 ;;
esac
flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
for flag in "${required[@]}"; do
  if [[ "$flags" != *" $flag "* ]]; then
    echo "NOT RUN: this CPU has no $flag, so the $isa kernels were not tested on the model goldens"
    exit 77
  fi
done
ATTN_KERNELS=$isa exec "$@"
