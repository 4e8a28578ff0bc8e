#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1,6.12,7.2 pairs=sroce:sroce,sroce:rxe pairs.6.1=sroce:sroce pairs.7.2=sroce:sroce timeout=400
# SPDX-License-Identifier: GPL-2.0
#
# RoCE from a container (issue 31, item 4), the way a host with a RoCE NIC
# serves one: the container's network namespace has a macvlan of eth0
# (ctr0, bridge mode, 10.0.103.N/24 and fd00:103::N/64), and the RDMA
# device stays on eth0 in the initial namespace, shared with every
# namespace; ib_core gives it ctr0's GIDs. The container talks to the
# other guest's host side, whose address on that subnet is on eth0 (sroce,
# or rxe in check-full's interop pair). The container side is guest b, or
# the sroce guest of a pair with rxe.
#
# Checked, in the container: the device on eth0 holds ctr0's GIDs; the
# namespace has sroce's UDP sockets (packets to ctr0 are received there);
# a device of its own on ctr0 is refused (two devices would hold the same
# GIDs). Then rping and sroce-verify (IPv4 and IPv6, every byte checked)
# run between the container and the host side, and ctr0 must have received
# the packets. Under sroce-verify's traffic the container's lower device,
# eth0, goes down for 2 s and up again: the port must go DOWN and back to
# ACTIVE, and the traffic must outlast it and pass, retransmissions
# (printed) being its only cost. Last, deleting ctr0 takes the namespace's
# sockets with it, and the namespace is deleted.
#
# Before: sroce looked for routes and sockets in the device's namespace
# only, so rdma_cm's connection requests from the container never left
# (tx_packets 0) and its packets were never received.
# (The debug kernel has no macvlan driver; device-lifecycle.sh races the
# namespace's sockets against device adds and deletes with a VLAN there.)
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd ip rdma rping ss nsenter
NS=sroce-ctr
UPPER=ctr0
SUBNET=103
port=18950
me=${SROCE_LOCAL_IP##*.} peer=${SROCE_PEER_IP##*.}
ctr_ip=10.0.$SUBNET.$me ctr_ip6=fd00:$SUBNET::$me
if [[ $SROCE_DEV_TYPE == sroce && ($SROCE_ROLE == b || $SROCE_PEER_DEV_TYPE != sroce) ]]; then
	side=container
else
	side=host
fi

port_state() { cat "/sys/class/infiniband/$SROCE_DEV/ports/1/state"; }
port_is() { [[ $(port_state) == *"$1"* ]]; }
in_init_ns() { nsenter --net=/proc/1/ns/net "$@"; }
ns_sockets() { ip netns exec "$NS" ss -Hlun "sport = :4791" | wc -l; }

# The exchange, run by the container side inside the namespace (this
# script again, with SROCE_IN_CTR set) and by the host side directly.
exchange() {
	local traffic running=0 t0 down_ms seed=$((0x5eed0000 + RANDOM))
	export SROCE_LOCAL_IP=$ctr_ip SROCE_PEER_IP=10.0.$SUBNET.$peer
	export SROCE_LOCAL_IP6=$ctr_ip6 SROCE_PEER_IP6=fd00:$SUBNET::$peer
	rping_pair ctr-rping "10.0.$SUBNET.$(guest_a_host)" "$port" 20 4096
	verify_pair ctr-verify 4 $((port + 1)) -q 2 -N
	verify_pair ctr-verify 6 $((port + 2)) -q 1 -N
	log "PASS: rping and sroce-verify (IPv4, IPv6) between the $side side and the other guest"

	verify_pair ctr-flap 4 $((port + 3)) -q 2 -n 200 -S "$seed" -N -F &
	traffic=$!
	[[ $side == container ]] || { wait "$traffic" || fail "sroce-verify across the flap failed"; return; }
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
	grep "longest wait" "$SROCE_OUT/ctr-flap-ipv4-$SROCE_ROLE.txt" || true
}

if [[ -n ${SROCE_IN_CTR:-} ]]; then
	exchange
	exit 0
fi

cleanup() {
	ip netns delete "$NS" 2>/dev/null || true
	ip addr del "$ctr_ip/24" dev "$SROCE_NETDEV" 2>/dev/null || true
	ip -6 addr del "$ctr_ip6/64" dev "$SROCE_NETDEV" 2>/dev/null || true
	# eth0 went down: IPv6 dropped its address
	ip link set "$SROCE_NETDEV" up
	ip -6 addr replace "$SROCE_LOCAL_IP6/64" dev "$SROCE_NETDEV" nodad
}
trap cleanup EXIT

if [[ $side == host ]]; then
	ip addr add "$ctr_ip/24" dev "$SROCE_NETDEV"
	ip -6 addr add "$ctr_ip6/64" dev "$SROCE_NETDEV" nodad
	barrier ctr-ready 120
	exchange
	barrier ctr-done 300
	exit 0
fi

modprobe -q macvlan 2>/dev/null || true
ip netns add "$NS"
ip link add link "$SROCE_NETDEV" name "$UPPER" type macvlan mode bridge
ip link set "$UPPER" netns "$NS"
ip -n "$NS" link set lo up
ip -n "$NS" addr add "$ctr_ip/24" dev "$UPPER"
ip -n "$NS" -6 addr add "$ctr_ip6/64" dev "$UPPER" nodad
ip -n "$NS" link set "$UPPER" up
gid4=$(gid_index "$SROCE_DEV" 4 "$ctr_ip")
gid6=$(gid_index "$SROCE_DEV" 6 "$ctr_ip6")
log "$SROCE_DEV on $SROCE_NETDEV holds $UPPER's GIDs (index $gid4 and $gid6), $UPPER being in namespace $NS"
sockets=$(ns_sockets)
((sockets > 0)) || fail "namespace $NS has no UDP socket on port 4791"
log "namespace $NS has $sockets RoCEv2 sockets"
err=$(ip netns exec "$NS" rdma link add sroce-ctr type sroce netdev "$UPPER" 2>&1) &&
	fail "a device of its own on $UPPER was accepted"
[[ $err == *"Operation not supported"* ]] || fail "rdma link add on $UPPER: '$err'"
log "PASS: a device of its own on $UPPER is refused: $err"

rx0=$(ip netns exec "$NS" cat "/sys/class/net/$UPPER/statistics/rx_packets")
barrier ctr-ready 120
status=0
SROCE_IN_CTR=1 ip netns exec "$NS" bash "$0" "$@" || status=$?
((status == 0)) || exit "$status"
rx=$(($(ip netns exec "$NS" cat "/sys/class/net/$UPPER/statistics/rx_packets") - rx0))
((rx >= 100)) || fail "$UPPER received $rx packets for the whole exchange"
log "PASS: the container's traffic arrived on $UPPER ($rx packets)"
barrier ctr-done 300

ip -n "$NS" link del "$UPPER"
no_ns_sockets() { (($(ns_sockets) == 0)); }
wait_for 5 no_ns_sockets ||
	fail "namespace $NS keeps RoCEv2 sockets after $UPPER left"
ip netns delete "$NS"
log "PASS: $UPPER deleted: its namespace's sockets went with it"
