#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1,6.12,debug pairs=sroce:sroce,sroce:rxe pairs.6.1=sroce:sroce timeout=600
# SPDX-License-Identifier: GPL-2.0
#
# RDMA traffic between two guests from inside a network namespace. Every
# sroce guest moves eth0 into a new namespace (which removes the device the
# harness made on it), configures the same addresses there, creates a new
# sroce device on it from inside the namespace and runs the whole exchange
# in the namespace: ibv_rc_pingpong -c over the IPv4 and IPv6 GIDs, rping
# -v -V through rdma_cm (whose address resolution is per namespace) and
# UD with tests/verify/sroce-ud. Checked besides the data: the device's UDP socket on
# port 4791 lives in the namespace and not in the initial one, and the
# device's packet counters account for the traffic. An rxe peer stays in
# its initial namespace (rdma_rxe's sockets are in init_net only): what
# sroce does in a namespace must look the same on the wire.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd ip rdma ss ibv_rc_pingpong rping python3
udcheck=$SROCE_BUILD/sroce-ud
[[ -x $udcheck ]] || fail "$udcheck is missing (make verify)"

NS=sroce-netns
NS_DEV=sroce7

counter() {
	link_counter "$SROCE_DEV" "$1"
}

# The sroce guest runs this script again inside the namespace.
if [[ $SROCE_DEV_TYPE == sroce && -z ${SROCE_IN_NETNS:-} ]]; then
	trap 'netns_leave "$NS" || { echo "FAIL: could not leave namespace $NS" >&2; exit 1; }' EXIT
	netns_enter "$NS" "$NS_DEV"
	status=0
	SROCE_DEV=$NS_DEV SROCE_IN_NETNS=1 ip netns exec "$NS" bash "$0" "$@" || status=$?
	exit "$status"
fi
where=initial
[[ -n ${SROCE_IN_NETNS:-} ]] && where=$NS
barrier netns-ready 180
log "running on $SROCE_DEV ($SROCE_DEV_TYPE) in the $where namespace"

if [[ $SROCE_DEV_TYPE == sroce ]]; then
	rx0=$(counter rx_packets)
	tx0=$(counter tx_packets)
fi
port=18900

# pingpong NAME TOOL SUCCESS-REGEX ARGS...: a server (guest a) and client
# (guest b) run of a libibverbs example with -c (both sides check data),
# through lib.sh's pair.
pingpong() {
	local name=$1 tool=$2 want=$3 out
	shift 3
	pair "$name" "$tool" -d "$SROCE_DEV" -c "$@" -- "$SROCE_PEER_IP"
	out=$SROCE_OUT/$name-$SROCE_ROLE.txt
	grep -qE "$want" "$out" || fail "$name: no '$want' in the output"
	! grep -qi "invalid\|mismatch\|Failed status\|error\|couldn't" "$out" ||
		fail "$name: errors in the output"
}

# rping_run FAMILY: 20 pings of 4000 bytes through rdma_cm; every ping's data
# is checked on both sides (see check_pings in lib.sh).
rping_run() {
	local family=$1 out pid addr rc=0 prefix
	port=$((port + 1))
	out=$SROCE_OUT/rping-ipv$family-$SROCE_ROLE.txt
	if [[ $SROCE_ROLE == a ]]; then
		addr=$SROCE_LOCAL_IP
		[[ $family == 6 ]] && addr=$SROCE_LOCAL_IP6
		prefix="server ping data: "
		with_timeout 200 rping -s -a "$addr" -p "$port" -C 20 -S 4000 -v -V \
			>"$out" 2>"$out.err" &
		pid=$!
		announce_port "$port" rdma 120
		wait "$pid" || rc=$?
	else
		addr=$SROCE_PEER_IP
		[[ $family == 6 ]] && addr=$SROCE_PEER_IP6
		prefix="ping data: "
		wait_peer_port "$port" 180
		with_timeout 200 rping -c -a "$addr" -p "$port" -C 20 -S 4000 -v -V \
			>"$out" 2>"$out.err" || rc=$?
	fi
	rping_status "$rc" "$out.err" || { tail -c 2000 "$out.err"; fail "rping IPv$family failed ($rc)"; }
	! grep -qi "mismatch\|error\|fail" "$out.err" || { cat "$out.err"; fail "rping IPv$family reported errors"; }
	check_pings "$out" "$prefix" 4000 20 || fail "rping IPv$family: wrong ping data"
	log "rping IPv$family: 20 pings of 4000 bytes through rdma_cm, verified"
	barrier "rping-$family" 240
}

# ud_check FAMILY: tests/verify/sroce-ud both ways: 200 messages whose
# payload, immediate, source QP and GRH are checked, and 3 sent with a
# wrong Q_Key that must be dropped.
ud_check() {
	local family=$1 who
	who=$([[ $SROCE_ROLE == a ]] && echo server || echo client)
	pair "ud-ipv$family" "$udcheck" -d "$SROCE_DEV" -g "$(gid_index "$SROCE_DEV" "$family")" \
		-n 200 -w 3 -- "$SROCE_PEER_IP"
	grep -Eq "^$who: received [0-9]+ of 200 UD messages .* 3 wrong-Q_Key messages dropped, 0 mismatches: PASS$" \
		"$SROCE_OUT/ud-ipv$family-$SROCE_ROLE.txt" ||
		fail "UD IPv$family: no PASS line for the $who"
}

idx4=$(gid_index "$SROCE_DEV" 4)
idx6=$(gid_index "$SROCE_DEV" 6)
pingpong rc-ipv4 ibv_rc_pingpong "^200 iters in" -g "$idx4" -s 8192 -n 200
pingpong rc-ipv6 ibv_rc_pingpong "^200 iters in" -g "$idx6" -s 100000 -n 200 -m 1024
rping_run 4
rping_run 6
ud_check 4
ud_check 6

if [[ $SROCE_DEV_TYPE == sroce ]]; then
	rx=$(($(counter rx_packets) - rx0))
	tx=$(($(counter tx_packets) - tx0))
	# Data packets alone, each way: 200 x 8 KiB at ibv_rc_pingpong's
	# default path MTU 1024 (8 packets), 200 x 100000 B at MTU 1024 (98),
	# 2 x 200 UD messages; ACKs, rping and CM traffic come on top.
	min=$((200 * 8 + 200 * 98 + 2 * 200))
	((rx >= min && tx >= min)) ||
		fail "$SROCE_DEV counted rx $rx / tx $tx packets, fewer than the $min data packets the exchange needs"
	log "$SROCE_DEV counted $rx packets received and $tx sent"
fi
log "PASS"
