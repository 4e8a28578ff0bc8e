#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1,debug pairs=sroce:sroce timeout=240
# SPDX-License-Identifier: GPL-2.0
# Deterministic loss: each phase drops one chosen packet of one RC operation
# with a tc filter (clsact ingress, u32 on the BTH, gact), so the retransmit
# timer, sequence NAKs, duplicate detection and READ / atomic replay run in
# every `make check`, not only under check-full's random netem loss. Guest b
# runs tests/verify/sroce-drop against guest a on a fresh QP per phase:
#   ack     b drops the ACK of a lone WRITE: b times out once and resends
#           it, a counts one duplicate and ACKs again;
#   read    b drops the MIDDLE response of a 3-packet READ: b's completer
#           sees the gap at LAST and asks again from the lost PSN (one
#           request resent, no timeout), a replays from that PSN;
#   atomic  b drops the ATOMIC ACKNOWLEDGE of a FETCH_ADD: b times out and
#           resends, a answers from its responder resource without adding
#           again (the server checks the memory: added exactly once);
#   last    a drops WRITE LAST of a 3-packet WRITE: b times out and resends
#           all 3, a counts FIRST and MIDDLE as duplicates;
#   ackreq  a drops the first of two chained WRITE ONLYs (AckReq set): a
#           sees the second out of sequence and NAKs, b resends both;
#   rnr     five chained SENDs with rnr_retry 1, a posting each receive
#           only after RNR NAKing its message once; b drops the ACK of the
#           first, so only the second's RNR NAK tells b the first arrived:
#           that progress must renew b's RNR budget (else the second fails
#           with RNR_RETRY_EXC_ERR). Each RNR NAK makes b resend the rest
#           (5+4+3+2+1 packets), which a drops as out of sequence after the
#           NAKed one (4+3+2+1).
# Packets are dropped where they arrive, as a lossy wire would: a drop at
# the sender's egress returns NET_XMIT_DROP to sroce, whose responder takes
# it for a full queue and sends the reply again at once (measured: the ACK
# went out on the second try, no counter moved). Each filter drops its
# first match and passes the second (gact determ: odd matches dropped); its
# action counters must show exactly the matches and the one drop expected. Every phase checks its data (sroce-drop) and
# the exact movement of both devices' recovery counters: the protocol fixes
# them, as nothing else travels on the QP and the retransmit timeout (QP
# timeout 18, about 1 s) is far above a round trip.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd tc rdma ss
[[ $SROCE_DEV == sroce* ]] || fail "needs sroce on both sides"
check=$SROCE_BUILD/sroce-drop
[[ -x $check ]] || fail "$check is missing (make verify)"

counters=(req_timeouts req_retransmits req_seq_naks resp_duplicates
	resp_seq_naks resp_out_of_seq req_rnr_naks resp_rnr_naks)
hw=/sys/class/infiniband/$SROCE_DEV/ports/1/hw_counters
clsact=0 server=

cleanup() {
	if [[ -n $server ]]; then
		kill "$server" 2>/dev/null || true
		wait "$server" 2>/dev/null || true
	fi
	((clsact == 0)) || tc qdisc del dev "$SROCE_NETDEV" clsact || true
}
trap cleanup EXIT

modprobe -qa sch_ingress cls_u32 act_gact 2>/dev/null || true
if tc qdisc show dev "$SROCE_NETDEV" | grep -q clsact; then
	fail "$SROCE_NETDEV already has a clsact qdisc: left by another test?"
fi

# snap: this device's recovery counters, one line of values.
snap() {
	local c v=()
	for c in "${counters[@]}"; do
		v+=("$(cat "$hw/$c")") || fail "$SROCE_DEV has no counter $c"
	done
	echo "${v[*]}"
}

# phase NAME OP DROPPER MATCHES "U32 MATCH..." EXPECT-B EXPECT-A
# Runs OP with a filter on guest DROPPER's ingress, which must see MATCHES
# packets and drop the first. EXPECT-B / EXPECT-A: "counter=delta ..." of guest b
# (the requester) / a (the responder); every other counter must not move.
phase() {
	local name=$1 op=$2 dropper=$3 matches=$4 match=$5 expect
	local port=$((18780 + ${#done_phases[@]})) seed out stats pkts drops
	local -a before after
	local -A want=()
	local c i bad=
	expect=$([[ $SROCE_ROLE == b ]] && echo "$6" || echo "$7")
	seed=$((0xd7090000 + port))
	out=$SROCE_OUT/drop-$name-$SROCE_ROLE.txt
	barrier "drop-$name-start"
	read -ra before <<<"$(snap)"
	if [[ $SROCE_ROLE == "$dropper" ]]; then
		tc qdisc add dev "$SROCE_NETDEV" clsact ||
			fail "cannot add clsact (CONFIG_NET_SCH_INGRESS)"
		clsact=1
		# shellcheck disable=SC2086 # $match is a list of u32 selectors
		tc filter add dev "$SROCE_NETDEV" ingress protocol ip prio 1 u32 \
			match ip protocol 17 0xff match ip dport 4791 0xffff \
			$match action gact drop random determ pass 2 ||
			fail "$name: cannot add the dropping filter"
	fi
	if [[ $SROCE_ROLE == a ]]; then
		"$check" -s -b "$SROCE_LOCAL_IP" -p "$port" -o "$op" -S "$seed" \
			-t 60 >"$out" 2>&1 &
		server=$!
		announce_port "$port" rdma
		wait "$server" || { cat "$out"; fail "$name: sroce-drop server failed"; }
		server=
		grep -q "^server: $op .*: PASS$" "$out" ||
			{ cat "$out"; fail "$name: the server did not report PASS"; }
	else
		wait_peer_port "$port"
		with_timeout 70 "$check" -c "$SROCE_PEER_IP" -p "$port" -o "$op" \
			-S "$seed" -T 18 -t 60 >"$out" 2>&1 ||
			{ cat "$out"; fail "$name: sroce-drop client failed"; }
		grep -q "^client: $op .*: PASS$" "$out" ||
			{ cat "$out"; fail "$name: the client did not report PASS"; }
	fi
	cat "$out"
	# both ends are done with the QP: nothing of this phase is in flight
	barrier "drop-$name-ran"
	read -ra after <<<"$(snap)"
	if [[ $SROCE_ROLE == "$dropper" ]]; then
		stats=$(tc -s filter show dev "$SROCE_NETDEV" ingress)
		tc qdisc del dev "$SROCE_NETDEV" clsact || fail "cannot remove clsact"
		clsact=0
		pkts=$(sed -n 's/.*Sent [0-9]* bytes \([0-9]*\) pkt.*/\1/p' <<<"$stats")
		drops=$(sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' <<<"$stats")
		[[ $pkts == "$matches" && $drops == 1 ]] || {
			echo "$stats"
			fail "$name: the filter saw ${pkts:-no} packets and dropped ${drops:-none}; expected $matches and 1"
		}
		log "$name: the filter on $SROCE_ROLE dropped 1 of its $pkts packets"
	fi
	for i in $expect; do
		want[${i%=*}]=${i#*=}
	done
	for i in "${!counters[@]}"; do
		c=${counters[i]}
		if ((after[i] - before[i] != ${want[$c]:-0})); then
			echo "  $c moved by $((after[i] - before[i])), expected ${want[$c]:-0}" >&2
			bad=1
		fi
	done
	[[ -z $bad ]] || fail "$name: $SROCE_DEV's recovery counters moved wrongly"
	log "$name: data checked; $SROCE_DEV's counters moved by exactly: ${expect:-nothing}"
	done_phases+=("$name")
}

done_phases=()
# BTH opcode at IP + 28 (20-byte IP, 8-byte UDP header); AckReq is the top
# bit of BTH byte 8 (before the PSN); a WRITE's RETH DMA length is at
# BTH + 24.
phase ack write b 2 "match u8 0x11 0xff at 28" \
	"req_timeouts=1 req_retransmits=1" "resp_duplicates=1"
# the resent READ asks from the MIDDLE's PSN and is answered FIRST, LAST
phase read read3 b 1 "match u8 0x0e 0xff at 28" \
	"req_retransmits=1" "resp_duplicates=1"
phase atomic fadd b 2 "match u8 0x12 0xff at 28" \
	"req_timeouts=1 req_retransmits=1" "resp_duplicates=1"
phase last write3 a 2 "match u8 0x08 0xff at 28" \
	"req_timeouts=1 req_retransmits=3" "resp_duplicates=2"
phase ackreq write2 a 2 \
	"match u8 0x0a 0xff at 28 match u8 0x80 0x80 at 36 match u32 64 0xffffffff at 52" \
	"req_seq_naks=1 req_retransmits=2" "resp_out_of_seq=1 resp_seq_naks=1"
# the AETH follows the BTH (IP + 40): syndrome type ACK (top 3 bits 0), MSN 1
phase rnr rnr5 b 1 "match u8 0x11 0xff at 28 match u32 0x00000001 0xe0ffffff at 40" \
	"req_rnr_naks=5 req_retransmits=15" "resp_rnr_naks=5 resp_out_of_seq=10"
barrier drop-done
log "PASS: ${done_phases[*]}"
