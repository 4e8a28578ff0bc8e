#!/bin/bash
# sroce-test: kernels=6.1 pairs=sroce:sroce,rxe:sroce pairs.6.1=sroce:sroce timeout=600
# SPDX-License-Identifier: GPL-2.0
#
# Every RC opcode on the wire, decoded by Wireshark. Guest b runs the
# sroce-verify client against guest a's server with a fixed seed, once over
# IPv4 and once over IPv6, while guest a captures eth0 (tcpdump, UDP/4791).
# That traffic has SENDs of 0 B .. 70001 B with and without immediate
# (ONLY, FIRST, MIDDLE, LAST), RDMA WRITEs and WRITEs with immediate (ONLY,
# FIRST, MIDDLE, LAST), RDMA READ requests and their FIRST/MIDDLE/LAST/ONLY
# responses, compare-swap and fetch-add with their atomic ACKs, ACKs and
# NAKs (the negative cases, RNR), and the rdma_cm MADs (UD SEND ONLY to QP1).
# Acknowledges must include ACKs, RNR NAKs and NAKs (AETH syndrome).
# On each capture tshark must decode every UDP/4791 packet as InfiniBand
# (BTH), of the run's IP family only, none malformed or with an expert
# error, and none sent by sroce with an expert warning; the per-opcode
# counts are printed and each of the opcodes above must appear.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd tcpdump tshark rdma ss
seed=0x5eed0417

echo "$SROCE_DEV_TYPE" >"$SROCE_PAIR_DIR/type.$SROCE_ROLE"
barrier types
peer_type=$(cat "$SROCE_PAIR_DIR/type.$SROCE_PEER_ROLE")

# BTH opcodes that must appear (IBTA Vol. 1 table 38), by name.
declare -A expect=(
	[0]="RC SEND FIRST" [1]="RC SEND MIDDLE" [2]="RC SEND LAST"
	[3]="RC SEND LAST with Immediate" [4]="RC SEND ONLY"
	[5]="RC SEND ONLY with Immediate"
	[6]="RC RDMA WRITE FIRST" [7]="RC RDMA WRITE MIDDLE"
	[8]="RC RDMA WRITE LAST" [9]="RC RDMA WRITE LAST with Immediate"
	[10]="RC RDMA WRITE ONLY" [11]="RC RDMA WRITE ONLY with Immediate"
	[12]="RC RDMA READ Request" [13]="RC RDMA READ response FIRST"
	[14]="RC RDMA READ response MIDDLE" [15]="RC RDMA READ response LAST"
	[16]="RC RDMA READ response ONLY" [17]="RC Acknowledge"
	[18]="RC ATOMIC Acknowledge" [19]="RC CmpSwap" [20]="RC FetchAdd"
	[100]="UD SEND ONLY"
)

# The payloads are random bytes: keep Wireshark's heuristic dissectors of
# InfiniBand payloads (RPC-over-RDMA, SMB Direct, iSER, ...) from taking
# them for their protocols and calling them malformed. Every RoCEv2 header
# is still dissected.
tshark() {
	command tshark --disable-heuristic rpcrdma_infiniband \
		--disable-heuristic smb_direct_infiniband \
		--disable-heuristic iser_infiniband --disable-heuristic sdp_infiniband \
		--disable-heuristic smcr_infiniband --disable-heuristic fc_infiniband \
		--disable-heuristic lnet_ib --disable-heuristic eth_over_ib \
		--disable-heuristic mellanox_eoib --disable-protocol nvme-rdma "$@"
}

# analyse PCAP FAMILY: the checks above on one capture. Each tshark pass
# dissects the whole capture, seconds under TCG: one pass writes the fields
# the counts need (BTH opcode, AETH syndrome, IPv4 and IPv6 sources, each
# empty where the header is absent), two more filter on expert info.
analyse() {
	local pcap=$1 family=$2 total ib other malformed warn op n
	local -A count=()
	local filter="udp.port == 4791" fields=$SROCE_OUT/fields-ipv$family.tsv

	tshark -r "$pcap" -Y "$filter" -T fields -E occurrence=f \
		-e infiniband.bth.opcode -e infiniband.aeth.syndrome.opcode \
		-e ip.src -e ipv6.src >"$fields" 2>/dev/null
	total=$(awk 'END { print NR }' "$fields")
	ib=$(awk -F'\t' '$1 != "" { n++ } END { print n + 0 }' "$fields")
	log "IPv$family: $total UDP/4791 packets, $ib decoded with a BTH"
	((total > 0)) || fail "IPv$family: nothing captured"
	((ib == total)) || fail "IPv$family: $((total - ib)) packets did not decode as InfiniBand"
	other=$(awk -F'\t' -v col=$((family == 4 ? 4 : 3)) '$col != "" { n++ } END { print n + 0 }' "$fields")
	((other == 0)) || fail "IPv$family: $other packets of the other IP family"

	# rxe sends IPv6 with a zero UDP checksum, which tshark reports as an
	# error: that one is let pass for rxe's packets, nothing else is.
	# Warnings count for sroce's packets only.
	local sroce_from="ip.src == 0.0.0.0" src
	[[ $SROCE_DEV_TYPE == sroce ]] &&
		sroce_from+=" || ip.src == $SROCE_LOCAL_IP || ipv6.src == $SROCE_LOCAL_IP6"
	[[ $peer_type == sroce ]] &&
		sroce_from+=" || ip.src == $SROCE_PEER_IP || ipv6.src == $SROCE_PEER_IP6"
	src="_ws.malformed || (_ws.expert.severity >= error &&
		(($sroce_from) || udp.checksum != 0))"
	malformed=$(tshark -r "$pcap" -Y "$src" 2>/dev/null | wc -l)
	((malformed == 0)) || {
		tshark -r "$pcap" -Y "$src" -V 2>/dev/null |
			grep -i "expert\|malformed" | sort | uniq -c | head
		fail "IPv$family: $malformed malformed packets or expert errors"
	}
	warn=$(tshark -r "$pcap" -Y "_ws.expert.severity >= warning && ($sroce_from)" \
		2>/dev/null | wc -l)
	((warn == 0)) || fail "IPv$family: $warn expert warnings on sroce's packets"

	while read -r n op; do
		count[$op]=$n
	done < <(cut -f1 "$fields" | sort -n | uniq -c)
	log "IPv$family: packets per BTH opcode:"
	for op in $(printf '%s\n' "${!count[@]}" | sort -n); do
		printf '    %3d  %-36s %6d\n' "$op" "${expect[$op]:-(not expected)}" "${count[$op]}"
	done
	for op in $(printf '%s\n' "${!expect[@]}" | sort -n); do
		[[ -n ${count[$op]:-} ]] ||
			fail "IPv$family: no ${expect[$op]} (opcode $op) on the wire"
	done
	# AETH syndrome types (IBTA 9.7.5.2.1): ACK 0, RNR NAK 1, NAK 3
	local -A syn=()
	while read -r n op; do
		syn[$op]=$n
	done < <(cut -f2 "$fields" | grep -v '^$' | sort -n | uniq -c)
	log "IPv$family: AETH syndromes: ACK ${syn[0]:-0}, RNR NAK ${syn[1]:-0}, NAK ${syn[3]:-0}"
	[[ -n ${syn[0]:-} && -n ${syn[1]:-} && -n ${syn[3]:-} ]] ||
		fail "IPv$family: not every AETH syndrome type (ACK, RNR NAK, NAK) seen"
	log "ok - IPv$family: every expected opcode seen, all $total packets decoded cleanly"
}

# run FAMILY PORT
run() {
	local family=$1 port=$2 pcap tpid
	pcap=$SROCE_OUT/wire-ipv$family.pcap
	if [[ $SROCE_ROLE == a ]]; then
		tcpdump -i "$SROCE_NETDEV" -U -B 16384 -w "$pcap" udp port 4791 \
			2>"$SROCE_OUT/tcpdump-ipv$family.log" &
		tpid=$!
		wait_for 10 grep -q "listening on" "$SROCE_OUT/tcpdump-ipv$family.log" ||
			fail "tcpdump did not start"
	fi
	verify_pair verify "$family" "$port" -q 1 -n 40 -S "$seed"
	barrier "ipv$family-done" 300
	if [[ $SROCE_ROLE == a ]]; then
		sleep 1
		kill -INT "$tpid"
		wait "$tpid" || true
		cat "$SROCE_OUT/tcpdump-ipv$family.log"
		analyse "$pcap" "$family"
	fi
}

run 4 18800
barrier v4-analysed 300
run 6 18801
barrier v6-analysed 300
log "PASS"
