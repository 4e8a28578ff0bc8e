#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1,6.12,7.2,debug pairs=sroce:sroce timeout=300
# SPDX-License-Identifier: GPL-2.0
#
# RoCE through eth0's macvlan and ipvlan devices, the way RoCE NICs serve
# them: the RDMA device stays on eth0, and ib_core gives it the GIDs of
# every upper device of eth0. Each guest adds macvlan0 (bridge mode,
# 10.0.101.N/24 and fd00:101::N/64), then, the macvlan gone (both take
# eth0's receive handler), ipvlan0 (L2 mode, 10.0.102.N/24 and
# fd00:102::N/64). Over each, rping and sroce-verify (its data
# connections; verify.sh has the negative cases) connect through rdma_cm
# to guest a's addresses, every byte checked on both sides, and the upper
# device's own counters must carry the packets. Packets to those addresses arrive on the upper
# device; sroce looked for a device on it, or on a VLAN's real device,
# found none and dropped them: rdma_cm never connected.
# A device of its own on such an upper device, beside eth0's, or on eth0
# beside one on a macvlan, is refused with EOPNOTSUPP: both would hold the
# same GIDs, and rdma_cm put connections on one while their packets
# arrived at the other (they connected, then failed at the first RDMA
# exchange). Two adds racing on eth0 and a macvlan create one device.
# (The debug kernel has neither driver.)
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd rping ip rdma
me=${SROCE_LOCAL_IP##*.} peer=${SROCE_PEER_IP##*.}
upper=''

# eth0 would answer ARP for the macvlan's address too (Linux answers for
# any of its addresses on any interface), so the peer's entry flips
# between two MACs, and rdma_cm ends a connection whose neighbour changed
# MAC (RDMA_CM_EVENT_UNREACHABLE at sroce-verify's disconnect, now and
# then). arp_ignore=1 answers only on the interface that has the address,
# which netdevs.md tells users of macvlan to set.
arp_ignore=$(sysctl -n net.ipv4.conf.all.arp_ignore)
sysctl -qw net.ipv4.conf.all.arp_ignore=1

cleanup() {
	[[ -z $upper ]] || ip link del "$upper" 2>/dev/null || true
	sysctl -qw "net.ipv4.conf.all.arp_ignore=$arp_ignore"
}
trap cleanup EXIT

# upper_up NAME SUBNET KIND ARGS...: NAME, an ip-link KIND device on eth0
# (ARGS: its options), with this guest's address 10.0.SUBNET.N/24 (and
# fd00:SUBNET::N/64), whose GIDs must appear on eth0's device.
upper_up() {
	local name=$1 subnet=$2 kind=$3
	shift 3
	modprobe -q "$kind" 2>/dev/null || true
	ip link add link "$SROCE_NETDEV" name "$name" type "$kind" "$@"
	upper=$name
	ip addr add "10.0.$subnet.$me/24" dev "$name"
	ip -6 addr add "fd00:$subnet::$me/64" dev "$name" nodad
	ip link set "$name" up
	gid_index "$SROCE_DEV" 4 "10.0.$subnet.$me" >/dev/null
	gid_index "$SROCE_DEV" 6 "fd00:$subnet::$me" >/dev/null
}

# refused DEV NETDEV: rdma link add of DEV on NETDEV must fail with
# EOPNOTSUPP, creating nothing: another device of the stack has its GIDs.
refused() {
	local err
	err=$(rdma link add "$1" type sroce netdev "$2" 2>&1) &&
		fail "rdma link add $1 on $2 was accepted"
	[[ $err == *"Operation not supported"* ]] || fail "rdma link add $1 on $2: '$err'"
	[[ ! -e /sys/class/infiniband/$1 ]] || fail "a device $1 exists"
	dmesg | grep -q "$2 is stacked with .*, whose RDMA device .* has its GIDs" ||
		fail "the kernel log does not say why $2 was refused"
	log "PASS: a device on $2 is refused, another of its stack having its GIDs: $err"
}

# through NAME SUBNET PORT: rping and sroce-verify (IPv4 and IPv6) to
# guest a's addresses on NAME, which must have sent the packets.
through() {
	local name=$1 subnet=$2 port=$3 tx0 sent
	tx0=$(cat "/sys/class/net/$name/statistics/tx_packets")
	rping_pair "$name-rping" "10.0.$subnet.$(guest_a_host)" "$port" 20 4096
	(
		SROCE_LOCAL_IP=10.0.$subnet.$me SROCE_PEER_IP=10.0.$subnet.$peer
		SROCE_LOCAL_IP6=fd00:$subnet::$me SROCE_PEER_IP6=fd00:$subnet::$peer
		verify_pair "$name-verify" 4 $((port + 1)) -q 2 -N
		verify_pair "$name-verify" 6 $((port + 2)) -q 1 -N
	)
	sent=$(($(cat "/sys/class/net/$name/statistics/tx_packets") - tx0))
	((sent >= 40)) || fail "$name sent $sent packets for rping and sroce-verify"
	log "PASS: RoCE through $name on $SROCE_NETDEV by $SROCE_DEV: rping and sroce-verify, IPv4 and IPv6 ($sent packets sent on $name)"
	barrier "$name-done" 120
	ip link del "$name"
	upper=''
}

upper_up macvlan0 101 macvlan mode bridge
refused sroce-mv macvlan0
through macvlan0 101 18930
upper_up ipvlan0 102 ipvlan mode l2
refused sroce-ipv ipvlan0
through ipvlan0 102 18940

# The other way round: with a device on a macvlan, none on eth0 below it.
rdma link delete "$SROCE_DEV"
ip link add link "$SROCE_NETDEV" name macvlan1 type macvlan mode bridge
upper=macvlan1
rdma link add sroce-mv type sroce netdev macvlan1
refused "$SROCE_DEV" "$SROCE_NETDEV"
rdma link delete sroce-mv

# Both at once, 20 times: the check and the claim are one step under the
# device list's lock, so exactly one of the two racing adds may win.
for round in $(seq 20); do
	rdma link add "$SROCE_DEV" type sroce netdev "$SROCE_NETDEV" 2>/dev/null &
	rdma link add sroce-mv type sroce netdev macvlan1 2>/dev/null &
	wait
	won=0
	for d in "$SROCE_DEV" sroce-mv; do
		[[ -e /sys/class/infiniband/$d ]] && won=$((won + 1)) && rdma link delete "$d"
	done
	((won == 1)) || fail "round $round of racing adds on eth0 and macvlan1: $won devices created"
done
log "PASS: 20 rounds of racing adds on eth0 and macvlan1, one device each"
rdma link add "$SROCE_DEV" type sroce netdev "$SROCE_NETDEV"
wait_for 30 grep -qx "4: ACTIVE" "/sys/class/infiniband/$SROCE_DEV/ports/1/state" ||
	fail "$SROCE_DEV not ACTIVE after re-creation"
