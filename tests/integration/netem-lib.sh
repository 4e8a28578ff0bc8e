# SPDX-License-Identifier: GPL-2.0
# sroce-library: sourced by the tests, not one itself
# shellcheck shell=bash
#
# Helpers for tests over a lossy link (sourced after lib.sh; not a test).
#
#   netem_setup ARGS...   tc netem ARGS on this guest's eth0 egress
#   loss_begin TAG        remember the counters before a phase
#   loss_fail MSG         fail, with the device's counters and QPs and the
#                         qdisc's statistics printed for diagnosis
#   loss_check TAG        after the phase, on both guests: this guest's netem
#                         really dropped packets, and the two devices'
#                         counters show that the transport recovered
#                         (retransmissions, duplicates, sequence NAKs);
#                         fails otherwise, so a run that lost nothing or
#                         never retransmitted cannot pass.
#
# The counters that prove recovery, per device type:
#   sroce: req_retransmits req_timeouts req_seq_naks (requester),
#          resp_duplicates resp_seq_naks (responder)
#   rxe:   completer_retry_err rcvd_seq_err (requester),
#          duplicate_request out_of_seq_request (responder)

# shellcheck disable=SC2034 # used through a nameref (loss_counters)
loss_counters_sroce=(req_retransmits req_timeouts req_seq_naks
	resp_duplicates resp_seq_naks)
# shellcheck disable=SC2034
loss_counters_rxe=(completer_retry_err rcvd_seq_err duplicate_request
	out_of_seq_request)

netem_setup() {
	require_cmd tc
	modprobe sch_netem 2>/dev/null || true
	# the harness's qdisc comes back however the test ends
	trap 'tc qdisc replace dev "$SROCE_NETDEV" root pfifo_fast' EXIT
	tc qdisc replace dev "$SROCE_NETDEV" root netem "$@" ||
		fail "cannot set up netem $*"
	log "$SROCE_NETDEV egress: netem $*"
}

# netem's drop counter on eth0 (packets netem discarded).
netem_dropped() {
	tc -s qdisc show dev "$SROCE_NETDEV" |
		sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' | head -1
}

# "name value" for each recovery counter of this guest's device.
loss_counters() {
	local -n names=loss_counters_$SROCE_DEV_TYPE
	local name dir=/sys/class/infiniband/$SROCE_DEV/ports/1/hw_counters
	for name in "${names[@]}"; do
		[[ -r $dir/$name ]] || fail "$SROCE_DEV has no hw counter $name"
		echo "$name $(cat "$dir/$name")"
	done
}

loss_fail() {
	rdma statistic show link "$SROCE_DEV/1" 2>&1 || true
	rdma resource show qp 2>&1 | grep -v " QP1 \| GSI " || true
	tc -s qdisc show dev "$SROCE_NETDEV" 2>&1 || true
	fail "$@"
}

loss_begin() {
	local tag=$1
	loss_counters >"$SROCE_OUT/loss-$tag.before"
	netem_dropped >"$SROCE_OUT/loss-$tag.dropped-before"
}

loss_check() {
	local tag=$1 name before after delta sum=0 dropped detail="" peer
	local peer_file mine=$SROCE_PAIR_DIR/loss-$tag-$SROCE_ROLE
	local -A old=()
	while read -r name before; do
		old[$name]=$before
	done <"$SROCE_OUT/loss-$tag.before"
	while read -r name after; do
		delta=$((after - ${old[$name]:-0}))
		sum=$((sum + delta))
		detail+=" $name=$delta"
	done < <(loss_counters)
	dropped=$(($(netem_dropped) - $(cat "$SROCE_OUT/loss-$tag.dropped-before")))
	log "$tag: netem dropped $dropped packets here; $SROCE_DEV:$detail"
	echo "$dropped $sum" >"$mine.tmp"
	mv "$mine.tmp" "$mine"
	barrier "loss-$tag" 120
	peer=b
	[[ $SROCE_ROLE == b ]] && peer=a
	peer_file=$SROCE_PAIR_DIR/loss-$tag-$peer
	[[ -r $peer_file ]] || fail "$tag: no counters from the peer"
	read -r _ peer_sum <"$peer_file"
	((dropped > 0)) || fail "$tag: netem dropped nothing: the loss test is vacuous"
	((sum + peer_sum > 0)) ||
		fail "$tag: no retransmission, duplicate or sequence NAK counted on either side"
	log "$tag: recovery counted: $sum here, $peer_sum on the peer"
}
