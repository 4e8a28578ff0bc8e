#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1,6.12 pairs=sroce:sroce links=2 devices=none timeout=600
# SPDX-License-Identifier: GPL-2.0
#
# RoCE on an active-backup bond (issue 31, item 3). The guests are joined
# by two links; each enslaves eth0 and eth1 to bond0 (miimon 50 ms), moves
# its addresses there and adds its RDMA device on bond0, the way rdma_rxe
# is put on a bond. Guest b drives tests/verify/sroce-verify over RC to
# guest a: WRITEs and READs posted together, SENDs and atomics, every byte
# and every returned value checked, every WR completed once. Under that
# traffic the link fails twice: both guests take the active slave down at
# a barrier (a cable cut seen at both ends; the bond fails over to the
# other link), bring it back as the backup, then do the same to the other
# link, so the traffic ends on eth0 again. The run fails unless each
# failover moved the active slave, the other link then carried the RoCE
# traffic, the traffic was still running after the second failover, the
# port stayed ACTIVE with its GID throughout, and sroce-verify passed.
# The client's longest wait for one completion is the time the failover
# cost (printed, with the retransmission counters); the recovery is
# measured, not asserted. Then the port state follows the bond: both
# slaves down (the bond loses its carrier) turns the port DOWN, one slave
# up turns it ACTIVE again with the same GID. Last, the bond is made
# again in balance-xor mode with layer3+4 hashing (802.3ad's transmit hash
# too): over 4 RC QPs from b, every byte checked, a capture of both
# slaves' egress must show each UDP source port, so each QP's flow, on
# one slave only (its packets stay in order).
#
# On a failover ib_core deletes the bond's GIDs and adds them back (at
# another index: QPs still hold the old entry). Connections made before
# keep their data path, but rdma_cm can send them no CM message any more
# (rdma_create_ah() refuses the held entry): no DREQ leaves, and neither
# side sees the disconnect. sroce-verify -F ends the connections on the
# delivered result instead and prints the disconnect it saw or did not.
# rdma_rxe on both guests does worse (6.1, measured): its QPs fail at the
# first failover ("local QP operation error"), so no rxe pair runs here.
# (The debug kernel has no bonding driver.)
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd ip rdma
((SROCE_LINKS >= 2)) || fail "needs two links (links=2 in the header)"
bond=bond0
port=18700
port_dir=/sys/class/infiniband/$SROCE_DEV/ports/1

# Put eth0 back as the harness set it up, whatever state the test ended in.
cleanup() {
	local status=$?
	if ((status != 0)); then
		dump_counters
		ip -s link show dev eth1 || true
		rdma resource show qp 2>&1 | grep -v " QP1 \| GSI " || true
		ping -c 2 -W 1 "$SROCE_PEER_IP" || true
	fi
	rdma link delete "$SROCE_DEV" 2>/dev/null || true
	ip link del "$bond" 2>/dev/null || true
	ip link set eth1 down 2>/dev/null || true
	ip link set "$SROCE_NETDEV" up
	ip addr replace "$SROCE_LOCAL_IP/24" dev "$SROCE_NETDEV"
	ip -6 addr replace "$SROCE_LOCAL_IP6/64" dev "$SROCE_NETDEV" nodad
}
trap cleanup EXIT

port_state() {
	local st=
	read -r st 2>/dev/null <"$port_dir/state" || true
	echo "$st"
}

port_is() { [[ $(port_state) == *"$1"* ]]; }

active_slave() { cat "/sys/class/net/$bond/bonding/active_slave"; }

is_active() { [[ $(active_slave) == "$1" ]]; }

tx_packets() { cat "/sys/class/net/$1/statistics/tx_packets"; }

# bond_up MODE [OPTIONS...]: bond0 (ip-link bond MODE and OPTIONS) over
# eth0 and eth1 with this guest's addresses, and the RDMA device on it,
# ACTIVE with the RoCE v2 GID of the IPv4 address.
bond_up() {
	local mode=$1
	shift
	modprobe bonding max_bonds=0 || fail "no bonding driver"
	ip addr flush dev "$SROCE_NETDEV"
	ip link set "$SROCE_NETDEV" down
	ip link set eth1 down
	ip link add "$bond" type bond mode "$mode" miimon 50 "$@"
	ip link set "$SROCE_NETDEV" master "$bond"
	ip link set eth1 master "$bond"
	ip link set "$bond" mtu "$SROCE_MTU"
	ip link set "$bond" up
	ip addr add "$SROCE_LOCAL_IP/24" dev "$bond"
	ip -6 addr add "$SROCE_LOCAL_IP6/64" dev "$bond" nodad
	rdma link add "$SROCE_DEV" type "$SROCE_DEV_TYPE" netdev "$bond" ||
		fail "rdma link add $SROCE_DEV type $SROCE_DEV_TYPE netdev $bond failed"
	wait_for 30 port_is ACTIVE || fail "$SROCE_DEV on $bond: port $(port_state), not ACTIVE"
	gid=$(gid_index "$SROCE_DEV" 4)
	[[ $mode != active-backup ]] || is_active "$SROCE_NETDEV" ||
		fail "$bond's active slave is $(active_slave), not $SROCE_NETDEV"
	log "$SROCE_DEV on $bond ($mode; slaves $SROCE_NETDEV, eth1): ACTIVE, IPv4 GID index $gid"
}

# bond_down: the device and the bond gone, eth0 and eth1 free and down.
bond_down() {
	rdma link delete "$SROCE_DEV" || fail "rdma link delete $SROCE_DEV failed"
	ip link del "$bond"
	ip link set "$SROCE_NETDEV" down
	ip link set eth1 down
}

# sports PCAP: the UDP source ports of the RoCE packets in PCAP, one a line.
sports() {
	tcpdump -r "$1" -n 2>/dev/null |
		awk '$2 == "IP" { n = split($3, f, "."); print f[n] }' | sort -u
}

# port_intact WHEN: the port is ACTIVE and still has its IPv4 GID. Its
# index may change: on a failover ib_core deletes the bond's GIDs and adds
# them again, and an entry that QPs still hold keeps its slot until they
# let it go (they keep using it: their packets carry the same address).
port_intact() {
	local now
	port_is ACTIVE || fail "$1: port $(port_state), not ACTIVE"
	now=$(gid_index "$SROCE_DEV" 4)
	[[ $now == "$gid" ]] || log "$1: the IPv4 GID is at index $now now, was $gid"
	gid=$now
}

# failover N DOWN UP: at barrier failover-N, both guests take the active
# slave DOWN down; the bond must make UP active. DOWN comes back as the
# backup. Prints nothing; fails on a bond that did not fail over.
failover() {
	local n=$1 down=$2 up=$3 t0
	is_active "$down" || fail "failover $n: $(active_slave) is active, not $down"
	barrier "failover-$n"
	t0=$(date +%s%N)
	ip link set "$down" down
	wait_for 5 is_active "$up" || fail "failover $n: $bond did not move to $up"
	log "failover $n: $down down, $bond moved to $up in $((($(date +%s%N) - t0) / 1000000)) ms"
	sleep 1
	ip link set "$down" up
	port_intact "failover $n"
	ping -c 1 -W 3 "$SROCE_PEER_IP" >/dev/null ||
		fail "failover $n: IP does not reach the peer over $up either"
}

# recovery_counters: the requester's and responder's recovery counters
# (sroce's names; rxe's differ, see netem-lib.sh).
recovery_counters() {
	[[ $SROCE_DEV_TYPE == sroce ]] || { echo "(rxe: see its counters)"; return; }
	local c out=""
	for c in req_retransmits req_timeouts resp_duplicates; do
		out+=" $c=$(cat "$port_dir/hw_counters/$c")"
	done
	echo "${out# }"
}

bond_up active-backup
barrier bond-up

# The traffic: 2 RC QPs, b driving; enough operations to outlast both
# failovers (the test fails if it does not).
ops=400
seed=$((0x5eed0000 + RANDOM))
log "before: $(recovery_counters)"
verify_pair bond 4 "$port" -q 2 -n "$ops" -S "$seed" -N -F &
traffic=$!
sleep 4
eth1_before=$(tx_packets eth1)
failover 1 "$SROCE_NETDEV" eth1
sleep 3
eth1_sent=$(($(tx_packets eth1) - eth1_before))
eth0_before=$(tx_packets "$SROCE_NETDEV")
failover 2 eth1 "$SROCE_NETDEV"
sleep 3
eth0_sent=$(($(tx_packets "$SROCE_NETDEV") - eth0_before))
running=0
kill -0 "$traffic" 2>/dev/null && running=1
wait "$traffic" || fail "sroce-verify across the failovers failed"
log "after: $(recovery_counters)"
log "eth1 sent $eth1_sent packets while active, eth0 $eth0_sent after the failback"
if [[ $SROCE_ROLE == b ]]; then
	# b's client ran every operation; it must still have been running
	((running == 1)) || fail "the traffic ended before the second failover had settled: raise ops"
	((eth1_sent >= 100 && eth0_sent >= 100)) ||
		fail "the RoCE traffic did not move to the active link (eth1 $eth1_sent, eth0 $eth0_sent packets)"
	out=$SROCE_OUT/bond-ipv4-b.txt
	grep "^client: longest wait" "$out" || fail "sroce-verify printed no longest wait"
	grep "^client: conn .*: disconnect" "$out" || true
fi

# The port follows the bond's carrier: both slaves down, then one up.
barrier carrier
ip link set eth1 down
ip link set "$SROCE_NETDEV" down
wait_for 10 port_is DOWN || fail "both slaves down: port $(port_state), not DOWN"
ip link set "$SROCE_NETDEV" up
wait_for 10 port_is ACTIVE || fail "a slave back up: port $(port_state), not ACTIVE"
port_intact "carrier back"
barrier carrier-done

# A hashing bond: balance-xor with layer3+4 hashing (802.3ad's transmit
# hash too) sends each UDP flow through one slave, so a QP's packets stay
# in order only if the QP keeps one UDP source port. 4 RC QPs from b;
# both slaves' egress captured on b: 4 to 8 source ports (the QPs', and
# rdma_cm's), none of them on both slaves.
bond_down
barrier xor-down
bond_up balance-xor xmit_hash_policy layer3+4
barrier xor-up
if [[ $SROCE_ROLE == b ]]; then
	for slave in "$SROCE_NETDEV" eth1; do
		tcpdump -i "$slave" -Q out -n -s 64 -c 3000 -U \
			-w "$SROCE_OUT/xor-$slave.pcap" 'udp dst port 4791' \
			2>"$SROCE_OUT/xor-$slave.log" &
	done
	wait_for 10 grep -q "listening on $SROCE_NETDEV" "$SROCE_OUT/xor-$SROCE_NETDEV.log" ||
		fail "tcpdump did not start"
	wait_for 10 grep -q "listening on eth1" "$SROCE_OUT/xor-eth1.log" ||
		fail "tcpdump did not start"
fi
verify_pair xor 4 "$((port + 1))" -q 4 -n 30 -S "$seed" -N
if [[ $SROCE_ROLE == b ]]; then
	pkill -INT -x tcpdump || true
	wait
	mapfile -t on0 < <(sports "$SROCE_OUT/xor-$SROCE_NETDEV.pcap")
	mapfile -t on1 < <(sports "$SROCE_OUT/xor-eth1.pcap")
	flows=$((${#on0[@]} + ${#on1[@]}))
	# 4 QPs, and rdma_cm's QP1 flows at most (sroce derives a QP's port
	# from its QP numbers; a port per packet would spread every QP)
	((flows >= 4 && flows <= 8)) ||
		fail "balance-xor: $flows UDP source ports (${#on0[@]} through $SROCE_NETDEV, ${#on1[@]} through eth1) for 4 QPs"
	log "balance-xor: UDP source ports through $SROCE_NETDEV: ${on0[*]:-none}; through eth1: ${on1[*]:-none}"
	both=$(comm -12 <(printf '%s\n' "${on0[@]}") <(printf '%s\n' "${on1[@]}"))
	[[ -z $both ]] || fail "a flow left through both slaves: UDP source ports $both"
fi
barrier xor-done
log "PASS: RC data checked across two bond failovers; the port followed the bond's carrier; on balance-xor each flow kept to one slave"
