#!/bin/bash
# sroce-test: kernels=6.1 pairs=sroce:sroce,sroce:rxe,rxe:sroce pairs.6.1=sroce:sroce timeout=900
# SPDX-License-Identifier: GPL-2.0
#
# UCX (Debian's ucx-utils) between the two guests, forced onto this device
# (UCX_NET_DEVICES=DEV:1): ucx_perftest's tag matching latency and
# bandwidth, put, get, atomic add, stream and active message bandwidth,
# over UCX's UD transport alone and over RC with UD beside it. Guest a
# serves, guest b drives. Each run must report its final row with exactly
# the iterations asked for, and neither side may print an error.
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
require_cmd ucx_perftest ucx_info ss
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

# run TLS TEST SIZE: one ucx_perftest run and its checks.
run() {
	local tls=$1 test=$2 size=$3 name out
	name=ucx-${tls//,/+}-$test
	out=$SROCE_OUT/$name-$SROCE_ROLE.txt
	UCX_TLS=$tls pair "$name" ucx_perftest -t "$test" -s "$size" -n "$iters" -- "$SROCE_PEER_IP"
	if grep -qi "error\|fatal\|failed" "$out"; then
		fail "$name: UCX reported an error"
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
