#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1,6.12,7.2,debug pairs=sroce:sroce,sroce:rxe pairs.debug=sroce:sroce pairs.7.2=sroce:sroce timeout=300
# SPDX-License-Identifier: GPL-2.0
#
# RoCE on an 802.1Q VLAN the way RoCE NICs are used: the RDMA device stays
# on eth0 and ib_core gives it a GID for each address of eth0's VLAN
# devices. Both guests add VLAN 100 (10.0.100.N/24, fd00:100::N/64), and
# rping connects through rdma_cm to the peer's VLAN addresses, IPv4 and
# IPv6, every ping's data checked on both sides (check_pings). The
# connection manager answers from the GID whose VLAN the request came in on,
# so a UD receive must report that VLAN (IB_WC_WITH_VLAN): sroce's did not,
# and the server never answered. Packets must go out tagged: eth0.100's own
# counters carry the pings, and a capture on eth0 sees VLAN 100 RoCE frames.
# The VLAN maps priority 6 to PCP 5; ucmatose connects with ToS 16, whose
# priority is 6, and every frame a sroce guest sends for it must carry
# priority 5 (rdma_rxe's do not: it sets no skb priority).
# A device of its own on eth0.100 is refused with EOPNOTSUPP, as rdma_rxe
# refuses one: ib_core would give it no GID (sroce used to accept it, and
# it never connected).
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd rping ip tcpdump python3
vdev=$SROCE_NETDEV.100
me=${SROCE_LOCAL_IP##*.} peer=${SROCE_PEER_IP##*.}
count=30 size=4096
cap=$SROCE_OUT/vlan-$SROCE_ROLE.pcap capture=''

cleanup() {
	set +e
	[[ -z $capture ]] || kill "$capture" 2>/dev/null
	ip link del "$vdev" 2>/dev/null
}
trap cleanup EXIT

# priority 6 (ToS 0x10's, rt_tos2priority()) leaves tagged with PCP 5
ip link add link "$SROCE_NETDEV" name "$vdev" type vlan id 100 egress-qos-map 6:5
ip addr add "10.0.100.$me/24" dev "$vdev"
ip -6 addr add "fd00:100::$me/64" dev "$vdev" nodad
ip link set "$vdev" up
# the GIDs ib_core adds for the VLAN device's addresses, on eth0's device
gid_index "$SROCE_DEV" 4 "10.0.100.$me" >/dev/null
gid_index "$SROCE_DEV" 6 "fd00:100::$me" >/dev/null
tcpdump -i "$SROCE_NETDEV" -U -w "$cap" 'vlan 100 and udp port 4791' 2>/dev/null &
capture=$!
tx0=$(cat "/sys/class/net/$vdev/statistics/tx_packets")

# run FAMILY PORT: rping between the VLAN addresses, data checked
run() {
	local family=$1 port=$2 out rc=0 pid addr
	out=$SROCE_OUT/vlan-ipv$family-$SROCE_ROLE.txt
	if [[ $SROCE_ROLE == a ]]; then
		addr=10.0.100.$me
		[[ $family == 6 ]] && addr=fd00:100::$me
		with_timeout 120 rping -s -a "$addr" -p "$port" -C "$count" -S "$size" \
			-v -V >"$out" 2>"$out.err" &
		pid=$!
		announce_port "$port" rdma
		wait "$pid" || rc=$?
		check_pings "$out" "server ping data: " "$size" "$count" ||
			fail "VLAN IPv$family: the server saw wrong data"
	else
		addr=10.0.100.$peer
		[[ $family == 6 ]] && addr=fd00:100::$peer
		wait_peer_port "$port"
		with_timeout 120 rping -c -a "$addr" -p "$port" -C "$count" -S "$size" \
			-v -V >"$out" 2>"$out.err" || rc=$?
		check_pings "$out" "ping data: " "$size" "$count" ||
			fail "VLAN IPv$family: the client got wrong data back"
	fi
	rping_status "$rc" "$out.err" ||
		{ tail -c 2000 "$out.err"; fail "VLAN IPv$family: rping failed ($rc)"; }
	log "VLAN 100, IPv$family: $count pings of $size bytes, every byte checked"
}
run 4 18900
run 6 18901

# tos_run PORT: ucmatose over the VLAN with ToS 0x10, messages both ways;
# this guest's frames captured on eth0 meanwhile. rdma_cm gave the QPs
# the SL the VLAN's egress map gives that ToS's priority (5), and each
# sroce packet must carry it as its 802.1Q priority.
tos_run() {
	local port=$1 out=$SROCE_OUT/vlan-tos-$SROCE_ROLE.txt pcap=$SROCE_OUT/vlan-tos-$SROCE_ROLE.pcap
	local mac pid frames pcp5
	mac=$(cat "/sys/class/net/$SROCE_NETDEV/address")
	tcpdump -i "$SROCE_NETDEV" -U -w "$pcap" "ether src $mac and vlan 100 and udp port 4791" \
		2>"$pcap.log" &
	pid=$!
	wait_for 10 grep -q "listening on" "$pcap.log" || fail "tcpdump did not start"
	if [[ $SROCE_ROLE == a ]]; then
		with_timeout 120 ucmatose -b "10.0.100.$me" -p "$port" -t 16 -C 20 -S 2048 >"$out" 2>&1 &
		local server=$!
		announce_port "$port" rdma
		wait "$server" || { cat "$out"; fail "ToS 16: ucmatose server failed"; }
	else
		wait_peer_port "$port"
		with_timeout 120 ucmatose -s "10.0.100.$peer" -p "$port" -t 16 -C 20 -S 2048 >"$out" 2>&1 ||
			{ cat "$out"; fail "ToS 16: ucmatose client failed"; }
	fi
	barrier tos-done 120
	sleep 1
	kill -INT "$pid"
	wait "$pid" 2>/dev/null || true
	frames=$(tcpdump -e -r "$pcap" 2>/dev/null | wc -l)
	pcp5=$(tcpdump -e -r "$pcap" 2>/dev/null | grep -c "vlan 100, p 5," || true)
	log "ToS 16: $frames RoCE frames sent on VLAN 100, $pcp5 with priority 5"
	[[ $SROCE_DEV_TYPE == sroce ]] || return 0
	((frames >= 20)) || fail "ToS 16: this guest sent $frames RoCE frames on VLAN 100"
	((pcp5 == frames)) || fail "ToS 16: $((frames - pcp5)) of $frames frames not tagged with priority 5"
}
tos_run 18902

sent=$(($(cat "/sys/class/net/$vdev/statistics/tx_packets") - tx0))
((sent >= 2 * count)) || fail "eth0.100 sent $sent packets for $((2 * count)) pings"
sleep 1
kill "$capture"
wait "$capture" 2>/dev/null || true
capture=''
tagged=$(tcpdump -r "$cap" 2>/dev/null | wc -l)
((tagged >= 2 * count)) || fail "a capture on $SROCE_NETDEV saw $tagged RoCE frames tagged VLAN 100"
log "PASS: RoCE over VLAN 100 through $SROCE_DEV on $SROCE_NETDEV ($sent packets sent on $vdev, $tagged tagged frames captured)"

if [[ $SROCE_DEV_TYPE == sroce ]]; then
	err=$(rdma link add sroce-vlan type sroce netdev "$vdev" 2>&1) &&
		fail "rdma link add on $vdev was accepted"
	[[ $err == *"Operation not supported"* ]] || fail "rdma link add on $vdev: '$err'"
	[[ ! -e /sys/class/infiniband/sroce-vlan ]] || fail "a device sroce-vlan exists"
	log "PASS: a device on $vdev itself is refused: $err"
fi
