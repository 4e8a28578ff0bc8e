#!/bin/bash
# sroce-test: kernels=6.1,6.12 pairs=none timeout=600
# SPDX-License-Identifier: GPL-2.0
#
# Open MPI (Debian's openmpi-bin, pml ucx) running tests/verify/sroce-mpi.c
# with two ranks in this guest, forced onto the device: UCX may use only
# its verbs transports on DEV:1 (no shared memory, no TCP), and Open MPI
# only UCX for point-to-point and one-sided. The program checks every
# byte it moves (ping-pong of 1 B to 4 MiB, allreduce sums, put, get,
# fetch-and-add); on top of its verdict, the device must have sent at
# least every byte the ranks say they sent, so none of it took another
# path.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_cmd mpirun rdma
check=$SROCE_BUILD/sroce-mpi
[[ -x $check ]] || fail "$check is missing (make verify)"
out=$SROCE_OUT/mpi.txt

tx_bytes() {
	rdma statistic show link "$SROCE_DEV/1" | tr -s ' ' '\n' |
		sed -n '/^tx_bytes$/{n;p}'
}

before=$(tx_bytes)
[[ -n $before ]] || fail "no tx_bytes counter on $SROCE_DEV"
with_timeout 480 mpirun --allow-run-as-root --oversubscribe -np 2 \
	--mca pml ucx --mca osc ucx --mca btl self \
	-x UCX_TLS=rc_verbs,ud_verbs -x "UCX_NET_DEVICES=$SROCE_DEV:1" \
	"$check" >"$out" 2>&1 || { cat "$out"; fail "mpirun failed"; }
after=$(tx_bytes)
cat "$out"
for r in 0 1; do
	grep -qE "^mpi: rank $r: [0-9]+ checks, 0 failures, [0-9]+ bytes sent: PASS$" "$out" ||
		fail "rank $r did not report PASS"
done
sent=$(sed -nE 's/^mpi: rank [01]: .* ([0-9]+) bytes sent: PASS$/\1/p' "$out" |
	awk '{ s += $1 } END { print s }')
moved=$((after - before))
log "the ranks sent $sent bytes of checked data; $SROCE_DEV sent $moved bytes"
((moved >= sent)) || fail "$SROCE_DEV sent fewer bytes ($moved) than the ranks ($sent)"
log "PASS: Open MPI over UCX on $SROCE_DEV, every byte checked"
