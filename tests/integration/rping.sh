#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1,6.12,7.2,debug pairs=sroce:sroce,sroce:rxe,rxe:sroce pairs.6.1=sroce:sroce pairs.debug=sroce:sroce pairs.7.2=sroce:sroce full-pairs.6.1=sroce:sroce,sroce:rxe,rxe:sroce,sroce:sroce+e1000e,rxe:sroce+e1000e,sroce:sroce+vmxnet3,sroce:rxe+vmxnet3 timeout=900 full-distros=trixie:6.12,sid:7.2
# SPDX-License-Identifier: GPL-2.0
# rping over rdma_cm, guest a serving and guest b connecting, over IPv4 and
# IPv6, with several ping sizes. Each ping is a SEND of the client's buffer
# advertisement, an RDMA READ of the client's buffer by the server, an RDMA
# WRITE back into it and SENDs to synchronise; the client (-V) compares the
# buffer it gets back with what it sent. On top of that this script checks
# every "ping data" line that both sides print (-v) against the text rping
# generates for that ping, so a corrupted byte anywhere on the way fails.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd rping rdma ss python3
count=100
sizes=(32 1000 4096 5000 20000)
if [[ $SROCE_KERNEL == debug ]]; then
	count=30
	sizes=(32 4097 20000)
fi

# run FAMILY PORT SIZE
run() {
	local family=$1 port=$2 size=$3 out pid addr rc
	# stdout (the ping data lines) apart from stderr: interleaved buffered
	# writes of the two would cut lines
	out=$SROCE_OUT/rping-ipv$family-$size-$SROCE_ROLE.txt
	if [[ $SROCE_ROLE == a ]]; then
		addr=$SROCE_LOCAL_IP
		[[ $family == 6 ]] && addr=$SROCE_LOCAL_IP6
		with_timeout 240 rping -s -a "$addr" -p "$port" -C "$count" \
			-S "$size" -v -V >"$out" 2>"$out.err" &
		pid=$!
		announce_port "$port" rdma
		rc=0
		wait "$pid" || rc=$?
		rping_status "$rc" "$out.err" || { tail -c 2000 "$out.err"; fail "IPv$family size $size: rping server failed ($rc)"; }
		check_pings "$out" "server ping data: " "$size" "$count" ||
			fail "IPv$family size $size: server saw wrong data"
	else
		addr=$SROCE_PEER_IP
		[[ $family == 6 ]] && addr=$SROCE_PEER_IP6
		wait_peer_port "$port"
		rc=0
		with_timeout 240 rping -c -a "$addr" -p "$port" -C "$count" \
			-S "$size" -v -V >"$out" 2>"$out.err" || rc=$?
		rping_status "$rc" "$out.err" ||
			{ tail -c 2000 "$out.err"; fail "IPv$family size $size: rping client failed ($rc)"; }
		check_pings "$out" "ping data: " "$size" "$count" ||
			fail "IPv$family size $size: client got wrong data back"
	fi
	# stderr carries rping's event log; any error or mismatch there fails
	! grep -qi "mismatch\|error\|fail" "$out.err" ||
		{ grep -i "mismatch\|error\|fail" "$out.err" | head -5; fail "IPv$family size $size: errors reported"; }
	log "IPv$family: $count pings of $size bytes, every byte checked ($SROCE_DEV_TYPE side)"
}

port=18700
for family in 4 6; do
	for size in "${sizes[@]}"; do
		run "$family" "$port" "$size"
		barrier "rping-$port" 300
		port=$((port + 1))
	done
done
log "PASS"
