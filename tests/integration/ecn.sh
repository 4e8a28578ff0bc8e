#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1,6.12 pairs=sroce:sroce timeout=300
# SPDX-License-Identifier: GPL-2.0
#
# RoCEv2 congestion control (drivers/sroce/cc.c) at a bottleneck that marks
# ECN. Guest a's RoCE ingress is redirected through an ifb device shaped
# to 100 Mbit/s (htb) with a CoDel queue that marks ECN-capable packets CE
# (and drops only above its limit of 300 packets): a shallow switch port,
# in effect, between the requester and the responder, which the
# requester's own transmit credits cannot see. The bottleneck's real rate
# is what ifb and htb reach on a's vCPU (about 30 Mbit/s under TCG).
# Guest b writes to a with two QPs (ib_write_bw -q 2), twice:
#   off  a's notification point is off (sroce.ecn=0 on a): marks arrive,
#        no CNP answers them; the window only shrinks on losses;
#   on   a answers marks with CNPs and b's windows shrink on them.
# Checked, from counters both kernels and the qdisc keep:
# - b's requests are ECN-capable (CoDel marked some in both runs);
# - off: a sent no CNP and b took none; on: a sent CNPs, b took them and
#   cut its windows;
# - on queues less (the median of the CoDel queue's length sampled during
#   the run is at most half of off's) and loses less: two windows of 256
#   overflow the queue without CNPs, so off drops at its limit and b
#   resends; on must drop and resend fewer;
# - the bottleneck stays busy: on moves at least 60% of off's bytes per
#   second (under TCG a run's rate varies by tens of percent).
# (Not on the debug kernel, which has no ifb, htb, codel and mirred.)
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd ib_write_bw tc rdma ss ip
[[ $SROCE_DEV == sroce* ]] || fail "needs sroce on both sides"
param=/sys/module/sroce/parameters/ecn
[[ -w $param ]] || fail "no $param"

port=19100 ifb=ecn0 secs=8
idx=$(gid_index "$SROCE_DEV" 4)

cleanup() {
	echo 1 >"$param"
	if [[ $SROCE_ROLE == a ]]; then
		tc qdisc del dev "$SROCE_NETDEV" ingress 2>/dev/null || true
		ip link del "$ifb" 2>/dev/null || true
	fi
}
trap cleanup EXIT

# a: UDP 4791 arriving on the netdev goes through $ifb's bottleneck.
bottleneck() {
	modprobe -qa ifb sch_htb sch_codel sch_ingress cls_u32 act_mirred
	ip link add "$ifb" type ifb
	ip link set "$ifb" up
	tc qdisc add dev "$ifb" root handle 1: htb default 1
	tc class add dev "$ifb" parent 1: classid 1:1 htb rate 100mbit
	tc qdisc add dev "$ifb" parent 1:1 handle 10: codel limit 300 \
		target 1ms interval 10ms ecn
	tc qdisc add dev "$SROCE_NETDEV" handle ffff: ingress
	tc filter add dev "$SROCE_NETDEV" parent ffff: protocol ip u32 \
		match ip protocol 17 0xff match ip dport 4791 0xffff \
		action mirred egress redirect dev "$ifb"
}

# codel_stat NAME: the CoDel qdisc's statistic NAME (backlog: packets).
codel_stat() {
	tc -s qdisc show dev "$ifb" | awk -v n="$1" '
		$1 == "qdisc" { codel = ($2 == "codel") }
		!codel { next }
		n == "backlog" && $1 == "backlog" { sub("p", "", $3); v = $3 }
		n != "backlog" { for (i = 1; i < NF; i++) if ($i == n) v = $(i + 1) }
		END { print v + 0 }'
}

# sample_queue FILE: the CoDel queue's length every 0.1 s, one per line,
# until killed.
sample_queue() {
	while :; do
		codel_stat backlog >>"$1"
		sleep 0.1
	done
}

# active_median FILE: the median of FILE's samples from the first to the
# last that is not 0: the queue while the transfer ran, not its setup.
active_median() {
	awk '{ v[NR] = $1 } $1 > 0 { if (!first) first = NR; last = NR }
		END { for (i = first; first && i <= last; i++) print v[i] }' "$1" |
		sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : 0 }'
}

# run MODE: one ib_write_bw run with a's notification point MODE (0/1);
# leaves "MODE key value" lines in $SROCE_OUT/ecn-MODE-ROLE.txt.
run() {
	local mode=$1 res=$SROCE_OUT/ecn-$1-$SROCE_ROLE.txt sampler name c
	local -a mine
	if [[ $SROCE_ROLE == a ]]; then
		echo "$mode" >"$param"
		mine=(np_ecn_marked_roce_packets np_cnp_sent)
	else
		mine=(rp_cnp_handled rp_window_cuts req_retransmits req_timeouts req_seq_naks)
	fi
	for c in "${mine[@]}"; do
		echo "$c $(link_counter "$SROCE_DEV" "$c")"
	done >"$res.before"
	if [[ $SROCE_ROLE == a ]]; then
		for c in ecn_mark drop_overlimit; do
			echo "$c $(codel_stat "$c")"
		done >>"$res.before"
		: >"$res.queue"
		sample_queue "$res.queue" &
		sampler=$!
	fi
	name=write-ecn-$mode
	pair "$name" ib_write_bw -d "$SROCE_DEV" -x "$idx" -q 2 -s 65536 \
		-D "$secs" -F -- "$SROCE_PEER_IP"
	if [[ $SROCE_ROLE == a ]]; then
		kill "$sampler"
		wait "$sampler" 2>/dev/null || true
	fi
	: >"$res"
	while read -r c v; do
		if [[ $c == ecn_mark || $c == drop_overlimit ]]; then
			echo "$c $(($(codel_stat "$c") - v))"
		else
			echo "$c $(($(link_counter "$SROCE_DEV" "$c") - v))"
		fi
	done <"$res.before" >"$res"
	if [[ $SROCE_ROLE == a ]]; then
		echo "queue_median $(active_median "$res.queue")" >>"$res"
	else
		# the client's row: bytes iterations peak average rate
		awk '$1 == 65536 && NF >= 5 { print "mbps " $4 }' \
			"$SROCE_OUT/$name-b.txt" >>"$res"
		grep -q "^mbps " "$res" || fail "$name: no result row"
	fi
	log "ecn=$mode on a: $(paste -sd' ' "$res")"
}

if [[ $SROCE_ROLE == a ]]; then
	bottleneck
fi
barrier bottleneck
run 0
run 1

# Each side hands its figures over, then both check all of them.
declare -A f
for mode in 0 1; do
	tell_peer "ecn$mode" "$(paste -sd' ' "$SROCE_OUT/ecn-$mode-$SROCE_ROLE.txt")"
	# shellcheck disable=SC2046 # "name value" pairs, split on purpose
	set -- $(paste -sd' ' "$SROCE_OUT/ecn-$mode-$SROCE_ROLE.txt") \
		$(from_peer "ecn$mode")
	while (($#)); do
		f[$mode.$1]=$2
		shift 2
	done
done
for mode in 0 1; do
	((f[$mode.ecn_mark] > 0)) ||
		fail "ecn=$mode: CoDel marked nothing: requests are not ECN-capable, or no queue built"
done
((f[0.np_cnp_sent] == 0 && f[0.rp_cnp_handled] == 0)) ||
	fail "ecn=0 on a, yet CNPs: ${f[0.np_cnp_sent]} sent, ${f[0.rp_cnp_handled]} taken"
((f[1.np_cnp_sent] > 0)) || fail "ecn=1: a answered ${f[1.np_ecn_marked_roce_packets]} marks with no CNP"
((f[1.rp_cnp_handled] > 0 && f[1.rp_window_cuts] > 0)) ||
	fail "ecn=1: b took ${f[1.rp_cnp_handled]} CNPs and cut ${f[1.rp_window_cuts]} windows"
((f[0.queue_median] >= 50)) ||
	fail "no queue built without CNPs (median ${f[0.queue_median]} packets): no bottleneck to test"
((f[1.queue_median] * 2 <= f[0.queue_median])) ||
	fail "the queue did not shrink: median ${f[1.queue_median]} packets with CNPs, ${f[0.queue_median]} without"
((f[0.drop_overlimit] > 0)) ||
	fail "the queue never overflowed without CNPs: no loss to compare"
((f[1.drop_overlimit] < f[0.drop_overlimit] &&
	f[1.req_retransmits] < f[0.req_retransmits])) ||
	fail "more loss with CNPs: drops ${f[1.drop_overlimit]} vs ${f[0.drop_overlimit]}, resent ${f[1.req_retransmits]} vs ${f[0.req_retransmits]}"
awk -v on="${f[1.mbps]}" -v off="${f[0.mbps]}" 'BEGIN { exit !(on >= 0.6 * off) }' ||
	fail "the bottleneck idled with CNPs: ${f[1.mbps]} MB/s vs ${f[0.mbps]} without"
log "queue median ${f[0.queue_median]} -> ${f[1.queue_median]} packets, drops ${f[0.drop_overlimit]} -> ${f[1.drop_overlimit]}, resent ${f[0.req_retransmits]} -> ${f[1.req_retransmits]}, ${f[0.mbps]} -> ${f[1.mbps]} MB/s"
