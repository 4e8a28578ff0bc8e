#!/bin/bash
# sroce-test: kernels=6.1 pairs=sroce:rxe,rxe:sroce timeout=600
# SPDX-License-Identifier: GPL-2.0
#
# RoCEv2 on the wire between sroce and stock rdma_rxe, over IPv4 and IPv6,
# with nothing but the kernels' connection managers above the transport:
# the rxe guest's rping connects to the sroce guest, where nothing listens.
# - rxe -> sroce: rxe's CM REQ (a UD SEND to QP1) must pass sroce's length
#   and ICRC checks: sroce's rx_packets grows, rx_icrc_errors and
#   rx_malformed stay 0.
# - sroce -> rxe: the CM REJ sroce sends back must pass rxe's checks: rxe
#   counts a packet in rcvd_pkts only after its ICRC matched, and rping
#   reports REJECTED only when the REJ arrived.
# - Every UDP/4791 packet captured on the sroce side decodes in tshark as
#   InfiniBand, none malformed, and sroce's without an expert warning.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd rping tcpdump tshark

counter() {
	cat "/sys/class/infiniband/$SROCE_DEV/ports/1/hw_counters/$1"
}

sroce_side() {
	local rx0 tx0 rx tx icrc bad pcap=$SROCE_OUT/wire-rxe.pcap tpid n
	rx0=$(counter rx_packets)
	tx0=$(counter tx_packets)
	tcpdump -i "$SROCE_NETDEV" -U -w "$pcap" udp port 4791 2>"$SROCE_OUT/tcpdump.log" &
	tpid=$!
	wait_for 10 grep -q "listening on" "$SROCE_OUT/tcpdump.log" ||
		fail "tcpdump did not start"
	barrier ready
	barrier finished 240
	sleep 1
	kill -INT "$tpid"
	wait "$tpid" || true

	rx=$(($(counter rx_packets) - rx0))
	tx=$(($(counter tx_packets) - tx0))
	icrc=$(counter rx_icrc_errors)
	bad=$(counter rx_malformed)
	log "sroce: received $rx valid packets, sent $tx; ICRC errors $icrc, malformed $bad"
	((rx > 0)) || fail "no RoCEv2 packet from rxe was accepted"
	((icrc == 0)) || fail "$icrc packets from rxe failed sroce's ICRC check"
	((bad == 0)) || fail "$bad packets from rxe were judged malformed"
	((tx > 0)) || fail "sroce sent nothing back"

	n=$(tshark -r "$pcap" -Y infiniband 2>/dev/null | wc -l)
	log "tshark: $n InfiniBand packets in the capture"
	((n >= rx + tx)) || fail "tshark decoded $n RoCEv2 packets, expected >= $((rx + tx))"
	tshark -r "$pcap" -Y infiniband -T fields -e ip.src -e ipv6.src \
		-e infiniband.bth.opcode -e infiniband.bth.destqp 2>/dev/null |
		sed 's/^/    /'
	# rxe sends IPv6 with a zero UDP checksum, which tshark flags: expert
	# warnings count for sroce's packets only, malformed ones for all.
	n=$(tshark -r "$pcap" -Y "_ws.malformed || (_ws.expert.severity >= warning &&
		(ip.src == $SROCE_LOCAL_IP || ipv6.src == $SROCE_LOCAL_IP6))" \
		2>/dev/null | wc -l)
	((n == 0)) || fail "tshark: $n malformed packets or expert warnings"
	log "ok - sroce <-> rxe on the wire"
}

rxe_side() {
	local addr before after out status=0
	barrier ready
	for addr in "$SROCE_PEER_IP" "$SROCE_PEER_IP6"; do
		out=$SROCE_OUT/rping-$addr.txt
		before=$(counter rcvd_pkts)
		# Only rxe's own provider is needed here.
		with_timeout 60 env -u RDMAV_DRIVERS rping -c -a "$addr" -p 7474 -C 1 -v \
			>"$out" 2>&1 || true
		after=$(counter rcvd_pkts)
		sed 's/^/    rping: /' "$out"
		if ! grep -q REJECTED "$out"; then
			echo "FAIL: rping to $addr was not rejected by sroce's CM" >&2
			status=1
		elif ((after <= before)); then
			echo "FAIL: rxe accepted no packet from sroce ($addr)" >&2
			status=1
		else
			log "ok - $addr: REJ from sroce accepted by rxe ($((after - before)) packets)"
		fi
	done
	barrier finished
	((status == 0)) || fail "sroce -> rxe failed"
}

case $SROCE_DEV_TYPE in
sroce) sroce_side ;;
rxe) rxe_side ;;
*) fail "unexpected device type $SROCE_DEV_TYPE" ;;
esac
