#!/bin/bash
# sroce-test: kernels=6.1 pairs=rxe:rxe timeout=240 full-only
# SPDX-License-Identifier: GPL-2.0
# Proves the guest harness end to end with stock rdma_rxe on both guests:
# two guests on the unix-socket link, RoCEv2 GIDs for both address families,
# lib.sh's port hand-over, and RC traffic whose payload is checked
# (ibv_rc_pingpong -c) over the IPv4 and the IPv6 GID, then an rdma_cm
# connection (rping -V verifies every ping's data).
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd ibv_rc_pingpong rping rdma ss
iters=200
size=4096
[[ $SROCE_KERNEL == debug ]] && iters=50

[[ $(netdev_of_dev "$SROCE_DEV") == "$SROCE_NETDEV" ]] ||
	fail "$SROCE_DEV is not on $SROCE_NETDEV"
[[ $(dev_of_netdev "$SROCE_NETDEV") == "$SROCE_DEV" ]] ||
	fail "dev_of_netdev $SROCE_NETDEV did not find $SROCE_DEV"

# pingpong FAMILY PORT: one RC ping-pong run over this guest's GID of FAMILY.
pingpong() {
	local family=$1 port=$2 idx out pid
	idx=$(gid_index "$SROCE_DEV" "$family")
	log "IPv$family: $SROCE_DEV RoCE v2 GID index $idx ($(cat "/sys/class/infiniband/$SROCE_DEV/ports/1/gids/$idx"))"
	out=$SROCE_OUT/pingpong-ipv$family.txt
	local -a cmd=(ibv_rc_pingpong -d "$SROCE_DEV" -g "$idx" -p "$port" -n "$iters" -s "$size" -c)
	if [[ $SROCE_ROLE == a ]]; then
		with_timeout 120 "${cmd[@]}" >"$out" 2>&1 &
		pid=$!
		announce_port "$port"
		wait "$pid" || { cat "$out"; fail "ibv_rc_pingpong server (IPv$family) failed"; }
	else
		wait_peer_port "$port"
		# The TCP side channel that exchanges QP numbers and GIDs runs over
		# IPv4 (the server listens there); -g picks the RoCE address family.
		with_timeout 120 "${cmd[@]}" "$SROCE_PEER_IP" >"$out" 2>&1 ||
			{ cat "$out"; fail "ibv_rc_pingpong client (IPv$family) failed"; }
	fi
	cat "$out"
	# -c makes both sides compare every received buffer with the pattern the
	# other side wrote; a mismatch is reported and fails the run.
	grep -q "^$iters iters in" "$out" || fail "IPv$family: no '$iters iters' summary"
	! grep -qi "buffer.*mismatch\|Failed status\|error" "$out" ||
		fail "IPv$family: errors in ibv_rc_pingpong output"
	log "IPv$family: $iters RC round trips of $size bytes, data checked"
}

pingpong 4 18515
barrier ipv4-done
pingpong 6 18516
barrier ipv6-done

# rdma_cm: rping -V verifies the data of every ping.
count=20
out=$SROCE_OUT/rping.txt
if [[ $SROCE_ROLE == a ]]; then
	with_timeout 120 rping -s -a "$SROCE_LOCAL_IP" -p 18517 -C "$count" -V -v >"$out" 2>&1 &
	pid=$!
	announce_port 18517 rdma
	wait "$pid" || { cat "$out"; fail "rping server failed"; }
else
	wait_peer_port 18517
	with_timeout 120 rping -c -a "$SROCE_PEER_IP" -p 18517 -C "$count" -V -v >"$out" 2>&1 ||
		{ cat "$out"; fail "rping client failed"; }
fi
# The client prints "ping data: ...", the server "server ping data: ...".
pings=$(grep -cE "^(server )?ping data: rdma-ping-" "$out" || true)
[[ $pings -eq $count ]] || { cat "$out"; fail "rping: $pings pings seen, $count expected"; }
log "rping over rdma_cm: $pings pings verified"
barrier finished
log "PASS"
