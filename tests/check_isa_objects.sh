#!/usr/bin/env bash
# A function that several translation units define (an inline function or a template of the
# standard library, a weak symbol) is kept once by the linker, from whichever object comes first.
# If the copy kept came from weight_kernels_avx512.cpp or gemm_bf16_avx512.cpp, compiled with
# AVX-512 enabled, code that runs on any CPU would call AVX-512 instructions, and an AVX2 machine
# would stop on the first. So an AVX-512 object may define weak functions only if they use no
# vector register at all.
#   check_isa_objects.sh OBJECT
set -euo pipefail
object=$1
[ -f "$object" ] || { echo "check_isa_objects: no object file $object" >&2; exit 2; }
status=0
while read -r symbol; do
  code=$(objdump -d --no-show-raw-insn --disassemble="$symbol" "$object")
  if grep -qE '%[xyz]mm|%k[0-7]' <<<"$code"; then
    echo "check_isa_objects: $object defines the shared (weak) function $(c++filt "$symbol"), with vector instructions: another object's copy of it must not be replaced by this one" >&2
    status=1
  fi
done < <(nm --defined-only "$object" | awk '$2 == "W" || $2 == "V" || $2 == "u" { print $3 }')
[ $status -eq 0 ] && echo "check_isa_objects: $object shares no vector code"
exit $status
