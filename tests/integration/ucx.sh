#!/bin/bash
# sroce-test: kernels=6.1 pairs=sroce:sroce,sroce:rxe,rxe:sroce pairs.6.1=sroce:sroce timeout=900
# SPDX-License-Identifier: GPL-2.0
#
# UCX (Debian's ucx-utils) between the two guests, forced onto this device
# (UCX_NET_DEVICES=DEV:1): ucx_perftest's tag matching latency and
# bandwidth, put, get, atomic add, stream and active message bandwidth,
# over UCX's UD transport alone and over RC with UD beside it. Guest a
# serves, guest b drives. Each run must report its final row with exactly
# the iterations asked for, and neither side may print an error. Each
# guest samples its device's QP table while a run goes on: over
# rc_verbs,ud_verbs the tag, put and get runs must show an RC QP of
# ucx_perftest in RTS (RC carried the data), over ud_verbs none may.
#
# Until sroce reported the RoCE packet type in the sl of UD receive
# completions (as RoCE hardware does), UCX's UD transport dropped every
# packet it received (its destination GID check read IPv6 where the packet
# was IPv4) and no run got past its connection. rdma_rxe still reports sl 0,
# so UCX on an rxe guest runs with that check off; the sroce side keeps
# UCX's defaults. (UCX needs its UD transport beside RC: RC alone cannot
# carry its connection setup.) The rxe pairs run in make check-full only:
# sroce:rxe stalled once in four runs (ucp_put_bw over ud_verbs, UCX on
# the rxe guest timed out its UD endpoint after 93 of 200 iterations);
# the cause is not known yet.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd ucx_perftest ucx_info ss rdma
export UCX_NET_DEVICES=$SROCE_DEV:1
[[ $SROCE_DEV_TYPE != rxe ]] || export UCX_UD_VERBS_ETH_DGID_CHECK=n
iters=200
port=18800

# UCX must see the device and both of its verbs transports.
if [[ $SROCE_ROLE == a ]]; then
	ucx_info -d >"$SROCE_OUT/ucx-info.txt" 2>&1 || fail "ucx_info -d failed"
	for tl in rc_verbs ud_verbs; do
		grep -A1 "Transport: $tl" "$SROCE_OUT/ucx-info.txt" |
			grep -q "Device: $SROCE_DEV:1" || fail "ucx_info -d does not list $tl on $SROCE_DEV:1"
	done
	# rc_verbs offers the device's 64-bit atomics (UCX up to 1.13 only
	# when the device reports IBV_ATOMIC_HCA); else UCX emulates them.
	awk '/Transport: rc_verbs/ { rc = 1 } /Transport: / && !/rc_verbs/ { rc = 0 }
		rc && /atomic_fadd: .*64 bit/ { found = 1 } END { exit !found }' \
		"$SROCE_OUT/ucx-info.txt" || fail "ucx_info -d lists no 64-bit atomics on rc_verbs"
	log "ucx_info -d lists rc_verbs (with 64-bit device atomics) and ud_verbs on $SROCE_DEV:1"
fi

# rc_qps_start FILE: in the background, every 0.2 s, the number of RC QPs
# of ucx_perftest in RTS on this device, one line per sample, until
# rc_qps_stop FILE, which prints the most seen.
rc_qps_start() {
	(
		set +e
		while [[ -e $1.on ]]; do
			rdma resource show qp link "$SROCE_DEV/1" 2>/dev/null |
				grep -c "type RC .*state RTS .*comm ucx_perftest"
			sleep 0.2
		done
	) >"$1" &
	sampler=$!
}

rc_qps_stop() {
	rm -f "$1.on"
	wait "$sampler" || true
	sort -n "$1" | tail -n 1
}

# run TLS TEST SIZE: one ucx_perftest run and its checks. The lane is
# checked in the device's own QP table: none of ucx_perftest's QPs is RC
# over ud_verbs alone; over rc_verbs,ud_verbs the tests in rc_lane_tests
# must show one in RTS on either guest. ucp_add, stream_bw and ucp_am_bw
# showed none in some runs and RC QPs on both guests in others (a sample
# every 0.2 s, itself about as long under TCG): whether UCX put them on UD
# or their RC QPs lived between samples is not known yet, so their count
# is only logged.
rc_lane_tests="tag_lat tag_bw ucp_put_bw ucp_get"
run() {
	local tls=$1 test=$2 size=$3 name out rc
	name=ucx-${tls//,/+}-$test
	out=$SROCE_OUT/$name-$SROCE_ROLE.txt
	: >"$SROCE_OUT/$name.rcqps.on"
	rc_qps_start "$SROCE_OUT/$name.rcqps"
	UCX_TLS=$tls pair "$name" ucx_perftest -t "$test" -s "$size" -n "$iters" -- "$SROCE_PEER_IP"
	rc=$(rc_qps_stop "$SROCE_OUT/$name.rcqps")
	rc=${rc:-0}
	if grep -qi "error\|fatal\|failed" "$out"; then
		fail "$name: UCX reported an error"
	fi
	# a short run's QPs may live between two samples of one guest: what
	# either guest saw counts
	tell_peer "$name-rc" "$rc"
	rc=$((rc + $(from_peer "$name-rc")))
	if [[ $tls != *rc_verbs* ]]; then
		((rc == 0)) || fail "$name: RC QPs of ucx_perftest over UD alone"
	elif [[ " $rc_lane_tests " == *" $test "* ]]; then
		((rc > 0)) || fail "$name: neither guest saw an RC QP of ucx_perftest in RTS while it ran: RC did not carry it"
	else
		log "$name: RC QPs seen while it ran: $rc (not asserted, see above)"
	fi
	if [[ $SROCE_ROLE == b ]]; then
		grep -qE "^Final:[[:space:]]+${iters}[[:space:]]" "$out" ||
			fail "$name: no final row with $iters iterations"
	fi
}

for tls in ud_verbs rc_verbs,ud_verbs; do
	run "$tls" tag_lat 8
	run "$tls" tag_bw 65536
	run "$tls" ucp_put_bw 65536
	run "$tls" ucp_get 65536
	run "$tls" ucp_add 8
	run "$tls" stream_bw 65536
	run "$tls" ucp_am_bw 65536
	log "UCX over $tls: 7 tests, $iters iterations each"
done
log "PASS: ucx_perftest over ud_verbs and rc_verbs,ud_verbs"
