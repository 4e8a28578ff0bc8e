#!/bin/bash
# sroce-test: kernels=6.1,6.12,7.2,debug pairs=sroce:sroce,sroce:rxe,rxe:sroce pairs.6.12=sroce:sroce+e1000e pairs.7.2=sroce:sroce pairs.debug=sroce:sroce full-pairs.6.1=sroce:sroce,sroce:rxe,rxe:sroce,sroce:sroce+e1000e,rxe:sroce+e1000e,sroce:sroce+vmxnet3,sroce:rxe+vmxnet3 timeout=900 full-distros=trixie:6.12,sid:7.2
# SPDX-License-Identifier: GPL-2.0
# End-to-end data check with tests/verify/sroce-verify over rdma_cm, guest a
# serving, guest b driving: several RC QPs RDMA-WRITE random data to MRs at
# odd addresses and lengths (1 B .. ~300 KiB, multi-SGE) and READ it back,
# SEND / SEND with immediate / WRITE with immediate messages whose length,
# immediate and contents the server checks, fetch-add and compare-swap with
# every returned original value checked, the server's final memory (hash of
# every byte, atomic slots, guard bytes around each MR) checked by the
# server, then the negative cases (access outside an MR, wrong rkey,
# read-only MR, atomic without permission, misaligned atomic, SEND longer
# than the receive, SEND with no receive and rnr_retry 0) that must fail
# with the right status and change no byte, and SENDs that arrive before
# their receives are posted (RNR NAKs, then success with checked data).
# Over IPv4, then again with fewer operations over IPv6.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd rdma ss
# --netem ARGS...: run over a lossy link (tc netem on this guest's eth0).
# The negative cases are left out then: a lost NAK legitimately turns their
# error into a retry-exceeded one.
negative=()
if [[ ${1:-} == --netem ]]; then
	negative=(-N)
	shift
	require_cmd tc
	modprobe sch_netem 2>/dev/null || true
	tc qdisc replace dev "$SROCE_NETDEV" root netem "$@" ||
		fail "cannot set up netem $*"
	log "eth0 egress: netem $*"
fi
qps=3 ops=40 qps6=2 ops6=12
if [[ $SROCE_KERNEL == debug ]]; then
	qps=2 ops=12 qps6=1 ops6=6
fi
seed=$((0x5eed0000 + RANDOM))

# run FAMILY PORT QPS OPS: one client/server session.
run() {
	local family=$1 port=$2 nqp=$3 nops=$4 out
	out=$SROCE_OUT/verify-ipv$family-$SROCE_ROLE.txt
	verify_pair verify "$family" "$port" -q "$nqp" -n "$nops" -S "$seed" "${negative[@]}"
	if [[ $SROCE_ROLE == b ]]; then
		# every negative case ran and failed the right way
		[[ ${#negative[@]} -gt 0 || $(grep -c "^client: negative case" "$out") -eq 7 ]] ||
			{ cat "$out"; fail "IPv$family: not every negative case ran"; }
		[[ ${#negative[@]} -gt 0 ]] ||
			grep -q "^client: 'sends waiting for late receives': 4 messages completed" "$out" ||
			{ cat "$out"; fail "IPv$family: SENDs did not survive RNR NAKs"; }
	fi
	cat "$out"
	log "IPv$family: $nqp QPs x $nops operations checked ($SROCE_DEV_TYPE side)"
}

# rnr_counters: this side's "req_rnr_naks resp_rnr_naks" ("- -" on rxe,
# which has no such counters).
rnr_counters() {
	if [[ $SROCE_DEV_TYPE == sroce ]]; then
		echo "$(link_counter "$SROCE_DEV" req_rnr_naks) $(link_counter "$SROCE_DEV" resp_rnr_naks)"
	else
		echo "- -"
	fi
}

# check_rnr BEFORE AFTER: both guests call it (an rxe guest with "- -").
# The client's SENDs met no receive in two cases per run (rnr_retry 0, then
# receives posted late), so the server sent RNR NAKs and the client
# received every one of them (the link is clean here).
check_rnr() {
	local -a b a p
	read -ra b <<<"$1"
	read -ra a <<<"$2"
	if [[ ${a[0]} == - ]]; then
		echo "- -" >"$SROCE_PAIR_DIR/rnr.$SROCE_ROLE"
	else
		echo "$((a[0] - b[0])) $((a[1] - b[1]))" >"$SROCE_PAIR_DIR/rnr.$SROCE_ROLE"
	fi
	barrier rnr-counters 120
	read -ra p <"$SROCE_PAIR_DIR/rnr.$SROCE_PEER_ROLE"
	if [[ ${a[0]} == - ]]; then
		return 0
	elif [[ $SROCE_ROLE == a ]]; then
		((a[1] - b[1] >= 4)) ||
			fail "the server sent $((a[1] - b[1])) RNR NAKs; the two RNR cases of two runs need at least 4"
		[[ ${p[0]} == - ]] || (( p[0] == a[1] - b[1] )) ||
			fail "the server sent $((a[1] - b[1])) RNR NAKs, the client received ${p[0]}"
		log "RNR NAKs: $((a[1] - b[1])) sent (resp_rnr_naks), the peer received ${p[0]}"
	else
		((a[0] - b[0] >= 4)) ||
			fail "the client received $((a[0] - b[0])) RNR NAKs; the two RNR cases of two runs need at least 4"
		log "RNR NAKs: $((a[0] - b[0])) received (req_rnr_naks)"
	fi
}

rnr_before=$(rnr_counters)
run 4 18600 "$qps" "$ops"
barrier v4-done 600
run 6 18601 "$qps6" "$ops6"
barrier "done" 600
[[ ${#negative[@]} -gt 0 ]] || check_rnr "$rnr_before" "$(rnr_counters)"
if [[ $SROCE_DEV_TYPE == sroce ]]; then
	# what the receive path went through (drops, duplicates, NAKs)
	rdma statistic show link "$SROCE_DEV/1" || fail "no port counters"
fi
log "PASS"
