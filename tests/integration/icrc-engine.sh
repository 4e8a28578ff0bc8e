#!/bin/bash
# sroce-test: kernels=6.1,6.12,7.2,debug pairs=none pairs.7.2=sroce:sroce timeout=60
# SPDX-License-Identifier: GPL-2.0
#
# Which CRC-32 code computes the ICRC (module parameter icrc_engine): the
# fastest this kernel has. From 6.14 crc32_le() is the architecture's own;
# before, it is the generic table code and the crypto API's "crc32" is
# asked instead: crc32-pclmul where the CPU has PCLMULQDQ and the kernel
# the module, else crc32-generic, never crc32_le() while a "crc32" exists.
# The ICRC's correctness is every data test's (and KUnit's icrc_engine).
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

param=/sys/module/sroce/parameters/icrc_engine
[[ -r $param ]] || fail "the module has no icrc_engine parameter"
engine=$(cat "$param")
IFS=.- read -r major minor _ <<<"$(uname -r)"
cpu_pclmul=no
grep -qw pclmulqdq /proc/cpuinfo && cpu_pclmul=yes
has_module() { modinfo "$1" >/dev/null 2>&1 || grep -q "^driver *: $1\$" /proc/crypto; }

if ((major * 100 + minor >= 614)); then
	want=crc32_le
elif [[ $cpu_pclmul == yes ]] && has_module crc32-pclmul; then
	want=crc32-pclmul
elif has_module crc32-generic || has_module crc32_generic; then
	want=crc32-generic
else
	want=crc32_le
fi
log "kernel $major.$minor, CPU PCLMULQDQ: $cpu_pclmul, ICRC engine: $engine"
[[ $engine == "$want" ]] || fail "ICRC engine $engine, want $want"
log "PASS: the ICRC is computed by $engine"
