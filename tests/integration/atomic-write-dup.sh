#!/bin/bash
# sroce-test: kernels=6.1 pairs=sroce:sroce timeout=300
# SPDX-License-Identifier: GPL-2.0
#
# Duplicate ATOMIC WRITEs must be answered, never executed again: the data
# rounds of tests/verify/sroce-flush (ATOMIC WRITEs interleaved with RDMA
# WRITEs to the same slots) over a link where netem on the client's egress
# delays with jitter (reordering) and duplicates requests. A late
# duplicate of an ATOMIC WRITE executed again would overwrite the RDMA
# WRITE that followed it; the client's READ back and the server's memory
# check catch that. The server's resp_duplicates counter must have moved,
# or the link did not test anything.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd tc
[[ $SROCE_DEV_TYPE == sroce ]] || fail "needs sroce on both guests"
check=$SROCE_BUILD/sroce-flush
[[ -x $check ]] || fail "$check is missing (make verify)"
port=18651 rounds=6
expect=1,0,0
[[ $SROCE_KERNEL == 6.12 ]] && expect=1,1,0
dups=/sys/class/infiniband/$SROCE_DEV/ports/1/hw_counters/resp_duplicates

out=$SROCE_OUT/dup-$SROCE_ROLE.txt
if [[ $SROCE_ROLE == a ]]; then
	before=$(cat "$dups")
	with_timeout 240 "$check" -s -b "$SROCE_LOCAL_IP" -p "$port" -e "$expect" \
		>"$out" 2>&1 &
	pid=$!
	announce_port "$port" rdma
	wait "$pid" || { cat "$out"; fail "sroce-flush server failed"; }
	cat "$out"
	grep -q "^server: .* 0 failed: PASS$" "$out" || fail "server did not report PASS"
	n=$(grep -c "^server: memory after data .*: as expected$" "$out")
	[[ $n -eq $rounds ]] || fail "server checked its memory after $n rounds, not $rounds"
	after=$(cat "$dups")
	log "resp_duplicates: $before -> $after"
	((after > before)) || fail "no duplicate request reached the responder"
else
	modprobe sch_netem 2>/dev/null || true
	# the harness's qdisc comes back however this ends
	trap 'tc qdisc replace dev "$SROCE_NETDEV" root pfifo_fast' EXIT
	tc qdisc replace dev "$SROCE_NETDEV" root netem delay 2ms 2ms duplicate 20% ||
		fail "cannot set up netem"
	wait_peer_port "$port"
	with_timeout 240 "$check" -c "$SROCE_PEER_IP" -p "$port" -e "$expect" -r "$rounds" -N \
		>"$out" 2>&1 || { cat "$out"; fail "sroce-flush client failed"; }
	cat "$out"
	grep -q "^client: .* 0 failed: PASS$" "$out" || fail "client did not report PASS"
	n=$(grep -c "^client: round .* read back exact$" "$out")
	[[ $n -eq $rounds ]] || fail "$n of $rounds rounds read back exact"
fi
rdma statistic show link "$SROCE_DEV/1" || fail "no port counters"
barrier finished 120
log "PASS"
