#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1,6.12,7.2,debug pairs=sroce:sroce,sroce:rxe pairs.7.2=sroce:sroce pairs.debug=sroce:sroce timeout=600
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
# Last, guest a deletes eth0.100 under RC WRITE and READ traffic over it
# (delete_phase): the deletion must not wait on sroce, the QPs must fail
# with retry-exceeded completions and leave nothing behind, and the VLAN,
# added back, must carry checked data again.
# (The debug kernel has no 802.1Q driver.)
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd rping ip tcpdump python3 ib_write_bw ib_read_bw
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

# vlan_up: eth0.100 with this guest's addresses, and the GIDs ib_core adds
# for them on eth0's device. Priority 6 (ToS 0x10's, rt_tos2priority())
# leaves tagged with PCP 5.
vlan_up() {
	ip link add link "$SROCE_NETDEV" name "$vdev" type vlan id 100 egress-qos-map 6:5
	ip addr add "10.0.100.$me/24" dev "$vdev"
	ip -6 addr add "fd00:100::$me/64" dev "$vdev" nodad
	ip link set "$vdev" up
	gid_index "$SROCE_DEV" 4 "10.0.100.$me" >/dev/null
	gid_index "$SROCE_DEV" 6 "fd00:100::$me" >/dev/null
}
vlan_up
tcpdump -i "$SROCE_NETDEV" -U -w "$cap" 'vlan 100 and udp port 4791' 2>/dev/null &
capture=$!
tx0=$(cat "/sys/class/net/$vdev/statistics/tx_packets")

# run FAMILY PORT [LABEL]: rping to guest a's VLAN address, data checked
run() {
	local family=$1 port=$2 label=${3:-vlan} addr
	addr=10.0.100.$(guest_a_host)
	[[ $family == 6 ]] && addr=fd00:100::$(guest_a_host)
	rping_pair "$label-ipv$family" "$addr" "$port" "$count" "$size"
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

# ended PID: has the process PID ended?
# shellcheck disable=SC2317 # called through wait_for
ended() { ! kill -0 "$1" 2>/dev/null; }

# expect_retry_error NAME PID OUT T0: perftest process PID must end on a
# failed completion, transport retries exceeded (status 12), within 120 s
# of the deletion at T0 ($SECONDS). sroce doubles the timeout on each
# retry (comp.c): perftest's default 7 retries of 67 ms took 14 to 65 s
# here, 191 times the measured round trip; with one retry it is 3 times.
expect_retry_error() {
	local name=$1 pid=$2 out=$3 t0=$4 rc=0
	wait_for 120 ended "$pid" ||
		{ cat "$out"; fail "$name still runs 120 s after the VLAN was deleted"; }
	wait "$pid" || rc=$?
	((rc != 0)) || { cat "$out"; fail "$name succeeded although its VLAN was deleted"; }
	grep -q "Failed status 12:" "$out" ||
		{ cat "$out"; fail "$name ended ($rc) without a retry-exceeded completion"; }
	log "$name ended $((SECONDS - t0)) s after the deletion on $(grep -m1 'Failed status' "$out" | sed 's/^ *//')"
}

# two_rc_qps_in_rts: at least two RC QPs of this guest's device in RTS.
# shellcheck disable=SC2317 # called through wait_for
two_rc_qps_in_rts() {
	(($(rdma resource show qp | grep -c "^link $SROCE_DEV/1 .* type RC state RTS ") >= 2))
}

# objects_back COUNTS: the device's QP CQ PD MR counts are COUNTS again.
# shellcheck disable=SC2317 # called through wait_for
objects_back() {
	[[ $(dev_object_counts "$SROCE_DEV") == "$1" ]]
}

# kill_server NAME PID: the passive perftest NAME (started as job PID)
# waits for a disconnect that cannot reach it any more: kill -9 it, as a
# user would, and reap the job.
kill_server() {
	pkill -9 -x "$1" 2>/dev/null || true
	wait "$2" 2>/dev/null || true
}

# both_connected: this guest's perftest client and server have connected
# (their output is buffered until they exit: the QPs tell).
both_connected() {
	wait_for 60 two_rc_qps_in_rts ||
		{ rdma resource show qp; fail "perftest did not connect both ways over VLAN 100"; }
}

# Deleting the VLAN under RC traffic. Both ways over VLAN 100, perftest
# connecting through rdma_cm to the VLAN addresses (one retry): 64 KiB WRITEs
# from a to b and 64 KiB READs from b to a, so guest a, which deletes
# eth0.100 once bytes move, is a requester and a responder on the VLAN it
# loses. The deletion must end within 10 s: a QP or its cached route
# holding the VLAN netdev would make its unregister wait for ever. Then
# both clients must end on a retry-exceeded completion (a's packets have
# no route left, b's reach no VLAN), every object they made must be gone,
# and after eth0.100 is added back rping over it checks its data again.
# Against rdma_rxe (6.1, perftest's 7 retries) the clients did not end
# within 60 s: sroce's backed-off retries outlasted it, and rxe's READs
# once ended on a local QP operation error (status 2), its perftest hung.
# delete_under_client PID OUT: guest a's side of the deletion, its client
# PID (output OUT) moving data; sets the caller's t0 to when it began.
delete_under_client() {
	local del
	wait_for 30 sroce_moving || fail "no traffic on $SROCE_DEV over VLAN 100"
	ended "$1" && { cat "$2"; fail "the client ended before the deletion"; }
	t0=$SECONDS
	ip link del "$vdev" &
	del=$!
	wait_for 10 ended "$del" ||
		fail "deleting $vdev under traffic took over 10 s (a reference on it is never put)"
	wait "$del" || fail "ip link del $vdev failed"
	log "$vdev deleted under RC WRITE and READ traffic in $((SECONDS - t0)) s"
}

delete_phase() {
	if [[ $SROCE_DEV_TYPE != sroce || $SROCE_PEER_DEV_TYPE != sroce ]]; then
		log "the VLAN's deletion runs between two sroce devices only"
		return 0
	fi
	local -a opts=(-R --retry_count=1 -s 65536 -D 150 -F -d "$SROCE_DEV")
	local wport=18910 rport=18911 objs0 t0 serve sport client cport spid cpid cout
	objs0=$(dev_object_counts "$SROCE_DEV")
	# a serves the READs and sends the WRITEs; b the other way round
	if [[ $SROCE_ROLE == a ]]; then
		serve=read sport=$rport client=write cport=$wport
	else
		serve=write sport=$wport client=read cport=$rport
	fi
	cout=$SROCE_OUT/vlan-del-$client-$SROCE_ROLE.txt
	with_timeout 200 "ib_${serve}_bw" "${opts[@]}" -p "$sport" \
		>"$SROCE_OUT/vlan-del-$serve-$SROCE_ROLE.txt" 2>&1 &
	spid=$!
	announce_port "$sport" rdma 60
	wait_peer_port "$cport" 60
	with_timeout 200 "ib_${client}_bw" "${opts[@]}" -p "$cport" "10.0.100.$peer" \
		>"$cout" 2>&1 &
	cpid=$!
	both_connected
	barrier vlan-del-started 120
	t0=$SECONDS
	[[ $SROCE_ROLE == a ]] && delete_under_client "$cpid" "$cout"
	expect_retry_error "ib_${client}_bw ($SROCE_ROLE's ${client^^}s)" "$cpid" "$cout" "$t0"
	kill_server "ib_${serve}_bw" "$spid"
	barrier vlan-del-clients 120
	wait_for 10 objects_back "$objs0" ||
		fail "QP CQ PD MR counts of $SROCE_DEV: $(dev_object_counts "$SROCE_DEV") after, $objs0 before"
	[[ $SROCE_ROLE == a ]] && vlan_up
	barrier vlan-del-done 120
	run 4 18912 vlan-readded
}
delete_phase
