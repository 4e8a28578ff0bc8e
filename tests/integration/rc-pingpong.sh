#!/bin/bash
# sroce-test: kernels=6.1 pairs=sroce:sroce,sroce:rxe,rxe:sroce pairs.6.1=sroce:sroce,sroce:rxe mtu=9000 timeout=900
# SPDX-License-Identifier: GPL-2.0
#
# RC data path through libibverbs' own example, ibv_rc_pingpong, between
# the two guests: guest a serves, guest b connects. Every run uses -c, so
# both sides check every received buffer against the pattern the other
# side wrote. Covered: message sizes from 1 byte to 1 MiB (one packet to
# 1024 packets per message), path MTU 1024 and 4096 (the guests' NIC MTU is
# 9000), completion events (-e: ibv_req_notify_cq and a completion channel
# instead of busy polling), and the IPv6 RoCEv2 GID.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd ibv_rc_pingpong ss

# Iterations are bounded: TCG guests move tens of MB/s.
scale=1
[[ $SROCE_KERNEL == debug ]] && scale=4

port=18600
runs=0

# pingpong NAME FAMILY MTU SIZE ITERS [EXTRA-ARGS...]
pingpong() {
	local name=$1 family=$2 mtu=$3 size=$4 iters=$5 idx out pid
	shift 5
	iters=$(((iters + scale - 1) / scale))
	port=$((port + 1))
	idx=$(gid_index "$SROCE_DEV" "$family")
	out=$SROCE_OUT/pingpong-$name.txt
	local -a cmd=(ibv_rc_pingpong -d "$SROCE_DEV" -g "$idx" -p "$port"
		      -m "$mtu" -s "$size" -n "$iters" -c "$@")
	log "$name: IPv$family GID $idx, path MTU $mtu, $iters x $size bytes ${*:-}"
	if [[ $SROCE_ROLE == a ]]; then
		with_timeout 240 "${cmd[@]}" >"$out" 2>&1 &
		pid=$!
		announce_port "$port" tcp 180
		wait "$pid" || { cat "$out"; fail "$name: ibv_rc_pingpong server failed"; }
	else
		wait_peer_port "$port" 180
		with_timeout 240 "${cmd[@]}" "$SROCE_PEER_IP" >"$out" 2>&1 ||
			{ cat "$out"; fail "$name: ibv_rc_pingpong client failed"; }
	fi
	cat "$out"
	grep -q "^$iters iters in" "$out" || fail "$name: no '$iters iters' summary"
	# -c: the client sets the first byte of every page to 0 in a buffer
	# both sides filled with 0x7b; each side checks every page it
	# receives and prints "invalid data in page N" otherwise.
	! grep -qi "invalid\|mismatch\|Failed status\|error\|couldn't" "$out" ||
		fail "$name: errors in ibv_rc_pingpong output"
	runs=$((runs + 1))
	barrier "$name"
}

pingpong byte 4 1024 1 400
pingpong page 4 1024 4096 200
pingpong 64k 4 1024 65536 40
pingpong 1m 4 1024 1048576 8
pingpong page-mtu4k 4 4096 4096 200
pingpong odd-mtu4k 4 4096 12345 100
pingpong 1m-mtu4k 4 4096 1048576 8
pingpong events 4 1024 4096 200 -e
pingpong ipv6 6 1024 5000 100

log "PASS: $runs ibv_rc_pingpong runs, every buffer checked on both sides"
