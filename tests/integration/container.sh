#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1,6.12,7.2 pairs=sroce:sroce,sroce:rxe pairs.6.1=sroce:sroce pairs.7.2=sroce:sroce timeout=400
# SPDX-License-Identifier: GPL-2.0
#
# RoCE from a container (issue 31, item 4): a network namespace on one
# guest (the container side: guest b, or the sroce guest of a pair with
# rxe) talks to the other guest's host side (sroce, or rxe in check-full's
# interop pair), three ways a container gets its network.
#
# 1. macvlan: the namespace has a macvlan of eth0 (ctr0, bridge mode,
#    10.0.103.N/24, fd00:103::N/64), and the RDMA device stays on eth0 in
#    the initial namespace, shared with every namespace, as a RoCE NIC
#    serves containers; ib_core gives it ctr0's GIDs. Checked: the device
#    holds them; the namespace has sroce's UDP sockets; a device of its
#    own on ctr0 is refused (two devices would hold the same GIDs). Then
#    rping and sroce-verify (IPv4 and IPv6, every byte checked) run, and
#    under sroce-verify's traffic the container's lower device, eth0, goes
#    down for 2 s and up again: the port must go DOWN and back to ACTIVE,
#    and the traffic must outlast it and pass, retransmissions (printed)
#    being its only cost. ctr0 must have received the packets, and deleting
#    it takes the namespace's sockets with it.
# 2. ipvlan (L2 mode, 10.0.104.N/24), served the same way: rping and
#    sroce-verify over IPv4.
# 3. routed veth: the namespace's end of a veth pair (10.0.106.N/24) has
#    a device of its own, and the guest routes between the veth and eth0
#    (the host side has a route to 10.0.106.0/24 through it): rping and
#    sroce-verify over IPv4 cross a router. The host side pings the
#    container first: a passive side whose neighbour table lacks the
#    gateway fails to create the QP in ib_core (rdma_create_qp: Invalid
#    argument), rdma_rxe as much as sroce.
#
# Before: sroce looked for routes and sockets in the device's namespace
# only, so rdma_cm's connection requests from a container's macvlan never
# left (tx_packets 0) and its packets were never received.
# (The debug kernel has no macvlan or ipvlan driver; device-lifecycle.sh
# races the namespace's sockets against device adds and deletes there.)
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd ip rdma rping ss nsenter
NS=sroce-ctr
me=${SROCE_LOCAL_IP##*.} peer=${SROCE_PEER_IP##*.}
eth0_ip=$SROCE_LOCAL_IP peer_eth0_ip=$SROCE_PEER_IP
if [[ $SROCE_DEV_TYPE == sroce && ($SROCE_ROLE == b || $SROCE_PEER_DEV_TYPE != sroce) ]]; then
	side=container
else
	side=host
fi
is_a() { [[ $SROCE_ROLE == a ]]; }

port_state() { cat "/sys/class/infiniband/$SROCE_DEV/ports/1/state"; }
port_is() { [[ $(port_state) == *"$1"* ]]; }
in_init_ns() { nsenter --net=/proc/1/ns/net "$@"; }
ns_sockets() { ip netns exec "$NS" ss -Hlun "sport = :4791" | wc -l; }
no_ns_sockets() { (($(ns_sockets) == 0)); }

# flap: under sroce-verify's traffic (pid $1), eth0 goes down and up.
flap() {
	local traffic=$1 running=0 t0 down_ms
	sleep 4
	t0=$(date +%s%N)
	in_init_ns ip link set "$SROCE_NETDEV" down
	wait_for 10 port_is DOWN || fail "eth0 down: port $(port_state), not DOWN"
	sleep 2
	in_init_ns ip link set "$SROCE_NETDEV" up
	wait_for 20 port_is ACTIVE || fail "eth0 up: port $(port_state), not ACTIVE"
	down_ms=$((($(date +%s%N) - t0) / 1000000))
	sleep 2
	kill -0 "$traffic" 2>/dev/null && running=1
	wait "$traffic" || fail "sroce-verify across eth0 down and up failed"
	((running == 1)) || fail "the traffic ended before eth0 was back: raise -n"
	log "PASS: eth0 down for $down_ms ms under traffic: port DOWN then ACTIVE, sroce-verify passed;" \
		"req_retransmits $(link_counter "$SROCE_DEV" req_retransmits)," \
		"req_timeouts $(link_counter "$SROCE_DEV" req_timeouts)"
	grep "longest wait" "$SROCE_OUT/macvlan-flap-ipv4-$SROCE_ROLE.txt" || true
}

# exchange KIND SUBNET: rping and sroce-verify between the two sides, the
# container side inside the namespace (this script again, SROCE_IN_CTR
# set). SUBNET is the container's; on the same link the host side has an
# address there too, on the routed one it reaches it through the peer.
exchange() {
	local kind=$1 subnet=$2 server traffic seed=$((0x5eed0000 + RANDOM))
	local port=$((18950 + (subnet - 103) * 10))
	# the pair's eth0 addresses are the host side's on the routed link
	local SROCE_LOCAL_IP=$eth0_ip SROCE_PEER_IP=$peer_eth0_ip
	local SROCE_LOCAL_IP6=fd00:$subnet::$me SROCE_PEER_IP6=fd00:$subnet::$peer
	export SROCE_LOCAL_IP SROCE_PEER_IP SROCE_LOCAL_IP6 SROCE_PEER_IP6
	[[ $kind != routed || $side == container ]] && SROCE_LOCAL_IP=10.0.$subnet.$me
	[[ $kind != routed || $side == host ]] && SROCE_PEER_IP=10.0.$subnet.$peer
	server=$SROCE_LOCAL_IP
	is_a || server=$SROCE_PEER_IP
	# ib_core resolves a QP's next-hop MAC from the neighbour table when
	# the passive side creates it, and fails (rdma_create_qp: Invalid
	# argument, with rxe as the server too) while the gateway is unknown
	if [[ $kind == routed && $side == host ]]; then
		ping -c 1 -W 5 "$SROCE_PEER_IP" >/dev/null || fail "routed: no IP path to $SROCE_PEER_IP"
	fi
	rping_pair "$kind-rping" "$server" "$port" 20 4096
	verify_pair "$kind-verify" 4 $((port + 1)) -q 2 -N
	log "PASS: $kind: rping and sroce-verify over IPv4 between the $side side and the other guest"
	[[ $kind == macvlan ]] || return 0

	verify_pair "$kind-verify" 6 $((port + 2)) -q 1 -N
	log "PASS: $kind: sroce-verify over IPv6"
	verify_pair "$kind-flap" 4 $((port + 3)) -q 2 -n 200 -S "$seed" -N -F &
	traffic=$!
	if [[ $side == container ]]; then
		flap "$traffic"
	else
		wait "$traffic" || fail "sroce-verify across the flap failed"
	fi
}

if [[ -n ${SROCE_IN_CTR:-} ]]; then
	# shellcheck disable=SC2086 # KIND SUBNET
	exchange $SROCE_IN_CTR
	exit 0
fi

cleanup() {
	local subnet
	ip netns delete "$NS" 2>/dev/null || true
	ip link del vh0 2>/dev/null || true
	for subnet in 103 104; do
		ip addr del "10.0.$subnet.$me/24" dev "$SROCE_NETDEV" 2>/dev/null || true
	done
	ip -6 addr del "fd00:103::$me/64" dev "$SROCE_NETDEV" 2>/dev/null || true
	ip route del 10.0.106.0/24 2>/dev/null || true
	# eth0 went down: IPv6 dropped its address
	ip link set "$SROCE_NETDEV" up
	ip -6 addr replace "$SROCE_LOCAL_IP6/64" dev "$SROCE_NETDEV" nodad
}
trap cleanup EXIT

# in_ctr KIND SUBNET: the container side's part of the exchange.
in_ctr() {
	SROCE_IN_CTR="$1 $2" ip netns exec "$NS" bash "$0"
}

# host_side: each exchange with an address on the container's subnet, or
# a route to it through the peer.
host_side() {
	ip addr add "10.0.103.$me/24" dev "$SROCE_NETDEV"
	ip -6 addr add "fd00:103::$me/64" dev "$SROCE_NETDEV" nodad
	ip addr add "10.0.104.$me/24" dev "$SROCE_NETDEV"
	ip route add 10.0.106.0/24 via "$SROCE_PEER_IP"
	local kind
	for kind in macvlan:103 ipvlan:104 routed:106; do
		barrier "${kind%:*}-ready" 120
		exchange "${kind%:*}" "${kind#*:}"
		barrier "${kind%:*}-done" 300
	done
}

# upper KIND SUBNET IP-LINK-ARGS...: ctr0, a KIND of eth0 in the
# namespace with this guest's address on SUBNET; eth0's device must hold
# its GIDs and the namespace have sockets.
upper() {
	local kind=$1 subnet=$2 gid sockets
	shift 2
	modprobe -q "$kind" 2>/dev/null || true
	ip link add link "$SROCE_NETDEV" name ctr0 type "$kind" "$@"
	ip link set ctr0 netns "$NS"
	ip -n "$NS" addr add "10.0.$subnet.$me/24" dev ctr0
	ip -n "$NS" link set ctr0 up
	gid=$(gid_index "$SROCE_DEV" 4 "10.0.$subnet.$me")
	sockets=$(ns_sockets)
	((sockets > 0)) || fail "$kind: namespace $NS has no UDP socket on port 4791"
	log "$kind: $SROCE_DEV on $SROCE_NETDEV holds the GID of ctr0 in namespace $NS (index $gid), which has $sockets RoCEv2 sockets"
}

# upper_done KIND SUBNET: ctr0 received the exchange; deleting it closes
# the namespace's sockets.
upper_done() {
	local rx
	rx=$(ip netns exec "$NS" cat /sys/class/net/ctr0/statistics/rx_packets)
	((rx >= 100)) || fail "$1: ctr0 received $rx packets for the whole exchange"
	ip -n "$NS" link del ctr0
	wait_for 5 no_ns_sockets || fail "$1: namespace $NS keeps RoCEv2 sockets after ctr0 left"
	log "PASS: $1: the traffic arrived on ctr0 ($rx packets); deleting it closed the namespace's sockets"
}

if [[ $side == host ]]; then
	host_side
	exit 0
fi

ip netns add "$NS"
ip -n "$NS" link set lo up

upper macvlan 103 mode bridge
ip -n "$NS" -6 addr add "fd00:103::$me/64" dev ctr0 nodad
gid_index "$SROCE_DEV" 6 "fd00:103::$me" >/dev/null
err=$(ip netns exec "$NS" rdma link add sroce-ctr type sroce netdev ctr0 2>&1) &&
	fail "a device of its own on ctr0 was accepted"
[[ $err == *"Operation not supported"* ]] || fail "rdma link add on ctr0: '$err'"
log "PASS: a device of its own on the macvlan is refused: $err"
barrier macvlan-ready 120
in_ctr macvlan 103
upper_done macvlan
barrier macvlan-done 300

upper ipvlan 104 mode l2
barrier ipvlan-ready 120
in_ctr ipvlan 104
upper_done ipvlan
barrier ipvlan-done 300

# routed: the namespace's own device on its veth end; this guest forwards.
# vc0 is made here and moved, keeping its interface index: made in the
# namespace it would be 2, like eth0 here, and rdma_cm takes a neighbour
# update of eth0's (its entry for the host side, refreshed as this guest
# forwards) for one of vc0's, the connections' gateway, and ends them with
# RDMA_CM_EVENT_UNREACHABLE (cma_netevent_callback() matches the index
# without the namespace; seen on 6.12 and 7.2).
ip link add vh0 type veth peer name vc0
ip link set vc0 netns "$NS"
ip addr add 10.0.106.254/24 dev vh0
ip link set vh0 mtu "$SROCE_MTU" up
ip -n "$NS" link set vc0 mtu "$SROCE_MTU" up
ip -n "$NS" addr add "10.0.106.$me/24" dev vc0
ip -n "$NS" route add default via 10.0.106.254
sysctl -qw net.ipv4.ip_forward=1
ip netns exec "$NS" rdma link add sroce-ctr type sroce netdev vc0 ||
	fail "rdma link add on the namespace's veth"
wait_for 10 grep -q ACTIVE /sys/class/infiniband/sroce-ctr/ports/1/state ||
	fail "sroce-ctr on vc0 is not ACTIVE"
barrier routed-ready 120
in_ctr routed 106
barrier routed-done 300
sysctl -qw net.ipv4.ip_forward=0
ip netns delete "$NS"
wait_for 10 test ! -e /sys/class/infiniband/sroce-ctr || fail "sroce-ctr outlived its namespace"
log "PASS: routed: the namespace deleted with its device"
