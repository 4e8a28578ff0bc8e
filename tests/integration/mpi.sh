#!/bin/bash
# sroce-test: kernels=6.1 pairs=sroce:sroce timeout=600
# SPDX-License-Identifier: GPL-2.0
#
# Open MPI (Debian's openmpi-bin, pml ucx) running tests/verify/sroce-mpi.c
# with two ranks forced onto the device: UCX may use only its verbs
# transports on DEV:1 (no shared memory, no TCP), Open MPI only UCX for
# point-to-point and one-sided. The program checks every byte it moves
# (ping-pong of 1 B to 4 MiB, allreduce sums, put, get, fetch-and-add).
#   local: both ranks in guest a, over the device's loopback;
#   pair:  rank 0 in guest a, rank 1 in guest b. mpirun (in a) starts its
#          daemon in b through mpi-agent.sh, which hands the command to b
#          over the pair directory: this script runs it there (the guests
#          have no ssh).
# On top of the program's verdict, each guest's device must have sent at
# least the bytes its ranks say they sent, so none of it took another path.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd mpirun rdma
check=$SROCE_BUILD/sroce-mpi
[[ -x $check ]] || fail "$check is missing (make verify)"
dir=$SROCE_PAIR_DIR/mpi
mkdir -p "$dir"

tx_bytes() {
	rdma statistic show link "$SROCE_DEV/1" | tr -s ' ' '\n' |
		sed -n '/^tx_bytes$/{n;p}'
}

# mpi NAME HOSTS: the program on 2 ranks placed by HOSTS, output in
# $SROCE_OUT/NAME.txt, each rank's PASS line required.
mpi() {
	local name=$1 hosts=$2 out=$SROCE_OUT/$1.txt r
	with_timeout 300 mpirun --allow-run-as-root -np 2 -H "$hosts" \
		--mca plm_rsh_agent "$SROCE_TOP/tests/integration/mpi-agent.sh" \
		--mca oob_tcp_if_include "$SROCE_NETDEV" \
		--mca pml ucx --mca osc ucx --mca btl self \
		-x UCX_TLS=rc_verbs,ud_verbs -x "UCX_NET_DEVICES=$SROCE_DEV:1" \
		"$check" >"$out" 2>&1 || { cat "$out"; fail "$name: mpirun failed"; }
	cat "$out"
	for r in 0 1; do
		grep -qE "^mpi: rank $r: [0-9]+ checks, 0 failures, [0-9]+ bytes sent: PASS$" "$out" ||
			fail "$name: rank $r did not report PASS"
	done
}

# sent_by NAME RANKS: the bytes the ranks matching RANKS (a regex) sent.
sent_by() {
	sed -nE "s/^mpi: rank $2: .* ([0-9]+) bytes sent: PASS$/\\1/p" "$SROCE_OUT/$1.txt" |
		awk '{ s += $1 } END { print s + 0 }'
}

# expect_sent WHAT BEFORE SENT: this guest's device sent at least SENT
# bytes since its counter read BEFORE.
expect_sent() {
	local moved=$(($(tx_bytes) - $2))
	log "$1: the ranks here sent $3 bytes of checked data; $SROCE_DEV sent $moved bytes"
	((moved >= $3)) || fail "$1: $SROCE_DEV sent fewer bytes ($moved) than the ranks ($3)"
}

# serve: run the commands mpi-agent.sh hands over until a stops us.
serve() {
	local f id
	until [[ -e $dir/stop ]]; do
		for f in "$dir"/cmd.*; do
			[[ -e $f ]] || continue
			id=${f##*.}
			mv "$f" "$dir/run.$id" || fail "cannot take command $f"
			(
				bash -c "$(cat "$dir/run.$id")" </dev/null >"$SROCE_OUT/remote.$id.txt" 2>&1
				echo $? >"$dir/.status.$id"
				mv "$dir/.status.$id" "$dir/status.$id"
			) &
		done
		[[ -e $SROCE_PAIR_DIR/exit.$SROCE_PEER_ROLE ]] && fail "the peer ended without stopping us"
		sleep 0.2
	done
	wait
}

if [[ $SROCE_ROLE == a ]]; then
	before=$(tx_bytes)
	mpi local "$(hostname):2"
	expect_sent local "$before" "$(sent_by local '[01]')"

	before=$(tx_bytes)
	mpi pair "$(hostname):1,$SROCE_PEER_IP:1"
	: >"$dir/stop"
	expect_sent pair "$before" "$(sent_by pair 0)"
	tell_peer rank1-sent "$(sent_by pair 1)"
else
	before=$(tx_bytes)
	serve
	expect_sent pair "$before" "$(from_peer rank1-sent)"
fi
log "PASS: Open MPI over UCX on $SROCE_DEV, in one guest and across two, every byte checked"
