#!/bin/bash
# sroce-test: kernels=6.1 pairs=sroce:sroce,sroce:rxe,rxe:sroce pairs.6.1=sroce:sroce full-pairs.6.1=sroce:sroce,sroce:rxe,rxe:sroce,sroce:sroce+e1000e,rxe:sroce+e1000e,sroce:sroce+vmxnet3,sroce:rxe+vmxnet3 timeout=600
# SPDX-License-Identifier: GPL-2.0
#
# UD multicast between the two guests, guest a sending, guest b receiving.
#
# tests/verify/sroce-mcast, over an IPv4 (IPv4-mapped MGID) and an IPv6
# group: b attaches two UD QPs with the sender's Q_Key and one with another
# Q_Key; each of the two gets every message with the right payload, src_qp,
# immediate data and GRH destination, the third nothing; after a detach a
# QP gets nothing more; after the last detach nothing arrives. On an sroce
# receiver also: the verbs' errors (EINVAL, ENOMEM at the advertised
# limits, over IPv4), the host's IGMP/MLD membership on eth0 exactly while
# QPs are attached, and rx_mcast_packets, rx_mcast_deliveries,
# rx_drop_qkey and rx_drop_no_qp moving by exactly what each phase implies.
# Never a corrupted or duplicated datagram; on sroce:sroce every lost one
# accounted for, exactly, by the sender's tx_errors and the receiver's
# receive drop counters (the checker's rule); with rdma_rxe on one side,
# which has no such counters, up to 2% per phase may be lost.
#
# Then mckey (rdma_cm multicast, librdmacm-utils) over IPv4: b joins and
# waits for 100 messages, a joins and sends them. mckey checks no payload
# and waits forever for a lost message: on sroce:sroce a sends exactly 100
# and b's rx_mcast_deliveries must move by exactly 100; with rxe on one
# side a sends 104 (up to 4 may be lost, uncounted) and an sroce receiver's
# rx_mcast_deliveries must move by 100 to 104. mckey over IPv6 is not run:
# rdma_cm refuses IPv6 RoCEv2 groups (cma_iboe_join_multicast returns
# -ENOTSUPP for them), whatever the device.
#
# An rxe receiver only adds the group's MAC address to the netdev (no IGMP
# or MLD join), so the IP stack drops the packets unless someone joined the
# IP group: with raw verbs the checker joins it with a socket first (-j),
# as rdma_cm does by itself for IPv4.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd mckey rdma ss
mcheck=$SROCE_BUILD/sroce-mcast
[[ -x $mcheck ]] || fail "$mcheck is missing (make verify)"

msgs=200 mck=100
if [[ $SROCE_KERNEL == debug ]]; then
	msgs=64 mck=30
fi
port=18780
# 6.12's virtio-net programs the NIC's multicast filter from a work item,
# after the join that an attach makes has returned, so QEMU dropped the
# first datagrams to a new group before any guest counter saw them (8 of
# 200 in one 6.12 run). The NIC's filter is not what this test checks (the
# host's IGMP/MLD membership and sroce's own group matching are): let the
# NIC pass every group, and put it back at the end.
ip link set "$SROCE_NETDEV" allmulticast on
trap 'ip link set "$SROCE_NETDEV" allmulticast off; dump_counters' EXIT

# hw_counter NAME: an sroce port counter; empty for rxe, which has none of
# these (on sroce a missing counter fails the script).
hw_counter() {
	[[ $SROCE_DEV_TYPE == sroce ]] || return 0
	link_counter "$SROCE_DEV" "$1"
}

tell_peer mcast-dev-type "$SROCE_DEV_TYPE"
peer_type=$(from_peer mcast-dev-type)
if [[ $SROCE_DEV_TYPE == sroce && $peer_type == sroce ]]; then
	loss="each accounted for by counters"
	mck_extra=0
else
	# rdma_rxe counts none of the drops sroce counts: a loss cannot be
	# accounted for, and mckey's receiver waits forever for a lost one
	loss="2% allowed, not counted"
	mck_extra=4
fi
log "devices: $SROCE_DEV_TYPE here, $peer_type on the peer: losses $loss"

# ---- the checker: b receives (TCP server), a sends ----
for family in 4 6; do
	port=$((port + 1))
	idx=$(gid_index "$SROCE_DEV" "$family")
	if [[ $family == 4 ]]; then group=239.1.2.3; else group=ff0e::5ce:1; fi
	name=check-ipv$family
	out=$SROCE_OUT/$name-$SROCE_ROLE.txt
	if [[ $SROCE_ROLE == b ]]; then
		opts=()
		[[ $SROCE_DEV == rxe* ]] && opts+=(-j)
		[[ $SROCE_DEV == sroce* && $family == 4 ]] && opts+=(-L)
		log "$name: $mcheck -d $SROCE_DEV -g $idx -m $group -p $port -n $msgs ${opts[*]}"
		with_timeout 200 "$mcheck" -d "$SROCE_DEV" -g "$idx" -m "$group" \
			-p "$port" -n "$msgs" "${opts[@]}" >"$out" 2>&1 &
		pid=$!
		announce_port "$port" tcp 60
		wait "$pid" || { cat "$out"; fail "$name: receiver failed"; }
		cat "$out"
		# membership: in /proc/net/igmp*, absent without CONFIG_IP_MULTICAST
		counted=checked member=checked
		proc=/proc/net/igmp
		[[ $family == 4 ]] || proc=/proc/net/igmp6
		[[ $SROCE_DEV == sroce* ]] || counted="not available"
		[[ $SROCE_DEV == sroce* && -e $proc ]] || member="not checked"
		grep -Eq "^receiver: IPv$family group, 2 x $msgs messages, [0-9]+ lost \($loss\), counters $counted, membership $member, 0 mismatches: PASS$" "$out" ||
			fail "$name: no PASS line from the receiver"
	else
		wait_peer_port "$port" 120
		log "$name: $mcheck -d $SROCE_DEV -g $idx -m $group -p $port -n $msgs $SROCE_PEER_IP"
		with_timeout 200 "$mcheck" -d "$SROCE_DEV" -g "$idx" -m "$group" \
			-p "$port" -n "$msgs" "$SROCE_PEER_IP" >"$out" 2>&1 ||
			{ cat "$out"; fail "$name: sender failed"; }
		cat "$out"
		txc=$([[ $SROCE_DEV_TYPE == sroce ]] && echo reported || echo "not available")
		grep -Eq "^sender: $((2 * msgs + 20)) messages to the IPv$family group, tx_errors $txc, 0 errors: PASS$" "$out" ||
			fail "$name: no PASS line from the sender"
	fi
	barrier "$name"
done

# ---- mckey over IPv4 ----
group=239.1.2.100
out=$SROCE_OUT/mckey-$SROCE_ROLE.txt
if [[ $SROCE_ROLE == b ]]; then
	before=$(hw_counter rx_mcast_deliveries)
	log "mckey: receiving $mck messages from $group"
	with_timeout 120 stdbuf -oL mckey -m "$group" -b "$SROCE_LOCAL_IP" -C "$mck" >"$out" 2>&1 &
	pid=$!
	wait_for 30 grep -q "^mckey: joined dgid" "$out" ||
		{ cat "$out"; fail "mckey: the receiver did not join"; }
	barrier mckey-joined
	wait "$pid" || { cat "$out"; fail "mckey: the receiver failed (or lost a message)"; }
	cat "$out"
	{ grep -q "^data transfers complete" "$out" && grep -q "^return status 0" "$out"; } ||
		fail "mckey: the receiver did not complete"
	if [[ -n $before ]]; then
		d=$(($(hw_counter rx_mcast_deliveries) - before))
		((d >= mck && d <= mck + mck_extra)) ||
			fail "mckey: rx_mcast_deliveries moved by $d, expected $mck..$((mck + mck_extra))"
		log "mckey: rx_mcast_deliveries +$d for $mck messages received"
	fi
else
	barrier mckey-joined
	before=$(hw_counter rx_mcast_packets)
	log "mckey: sending $((mck + mck_extra)) messages to $group"
	with_timeout 120 stdbuf -oL mckey -m "$group" -b "$SROCE_LOCAL_IP" -s -C "$((mck + mck_extra))" >"$out" 2>&1 ||
		{ cat "$out"; fail "mckey: the sender failed"; }
	cat "$out"
	{ grep -q "^data transfers complete" "$out" && grep -q "^return status 0" "$out"; } ||
		fail "mckey: the sender did not complete"
	# librdmacm attached the sender's QP too: its own messages loop back
	# through the IP stack (no receive posted: dropped), as on rxe
	[[ -n $before ]] &&
		log "mckey: sender's rx_mcast_packets +$(($(hw_counter rx_mcast_packets) - before)) (IP multicast loopback)"
fi
barrier mckey

log "PASS: UD multicast checks over IPv4 and IPv6 groups, mckey over IPv4"
