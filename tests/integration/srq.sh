#!/bin/bash
# sroce-test: kernels=6.1 pairs=sroce:sroce,sroce:rxe,rxe:sroce pairs.6.1=sroce:sroce full-pairs.6.1=sroce:sroce,sroce:rxe,rxe:sroce,sroce:sroce+e1000e,rxe:sroce+e1000e,sroce:sroce+vmxnet3,sroce:rxe+vmxnet3 timeout=600
# SPDX-License-Identifier: GPL-2.0
#
# Shared receive queues. On each sroce guest, tests/verify/sroce-srq checks
# the SRQ's events over the device's own loopback: the limit event fires
# exactly once per arming, at the right WQE count, and disarms the limit;
# the error state of a QP raises exactly one last-WQE-reached event and
# flushes none of the SRQ's WQEs; a limit above max_wr is refused. Between
# the guests, tests/verify/sroce-msg: 4 RC QPs sharing one SRQ, N messages
# each of 1 byte to 128 KiB, as SEND, SEND with immediate and RDMA WRITE
# with immediate, first from a, then from b; the receiver checks every
# completion (status, opcode, immediate, byte_len, the QP it came on by
# wc.qp_num), every payload byte, and that each message arrived exactly
# once. Then, as interop smoke tests, ibv_srq_pingpong -c (which checks
# one byte per page of the last buffer only, not every message) and
# ib_send_bw --use-srq.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd ibv_srq_pingpong ib_send_bw ss
srqcheck=$SROCE_BUILD/sroce-srq msgcheck=$SROCE_BUILD/sroce-msg
[[ -x $srqcheck ]] || fail "$srqcheck is missing (make verify)"
[[ -x $msgcheck ]] || fail "$msgcheck is missing (make verify)"

iters=200 bw_iters=2000 msgs=396
if [[ $SROCE_KERNEL == debug ]]; then
	iters=50 bw_iters=500 msgs=66
fi
port=18900
idx=$(gid_index "$SROCE_DEV" 4)

if [[ -e /sys/class/infiniband/$SROCE_DEV/sroce_abi_version ]]; then
	out=$SROCE_OUT/srq-events.txt
	with_timeout 120 "$srqcheck" -d "$SROCE_DEV" -g "$idx" >"$out" 2>&1 ||
		{ cat "$out"; fail "sroce-srq failed"; }
	cat "$out"
	grep -q "^srq: 12 messages checked, 2 limit events, 1 last-WQE events, 0 failures: PASS$" "$out" ||
		fail "sroce-srq: no PASS line"
else
	log "sroce-srq: not run on $SROCE_DEV (checks sroce's SRQ events)"
fi
barrier events

# the port counters of an sroce guest and the netdev's and UDP's drop
# counters, at the end (pass or fail), to tell where a lost packet went
trap dump_counters EXIT

tell_peer dev-type "$SROCE_DEV_TYPE"
peer_type=$(from_peer dev-type)

# Up to 128 KiB messages where sroce requests; at most 8 packets where
# rdma_rxe does: its requester can stall when the link's queue refuses a
# packet of a long burst on a busy host (a 64 KiB run rxe:sroce hung with
# rxe at completer_retry_err 48, 12 packets lost on the link).
for sender in a b; do
	stype=$peer_type snd=()
	if [[ $sender == "$SROCE_ROLE" ]]; then
		stype=$SROCE_DEV_TYPE snd=(-S)
	fi
	max=131072
	[[ $stype == rxe ]] && max=8192
	name=srq-msg-from-$sender
	pair "$name" "$msgcheck" -d "$SROCE_DEV" -g "$idx" -t srq -q 4 \
		-n "$msgs" -M "$max" -e "$((RANDOM + 1))" "${snd[@]}" \
		-- -c "$SROCE_PEER_IP"
	grep -q "^msg: srq .*, 0 failures: PASS$" "$SROCE_OUT/$name-$SROCE_ROLE.txt" ||
		fail "$name: no PASS line"
done

# name size qps. Both sides request in a pingpong: at most 8 packets with
# rxe (see above).
specs=("small 64 4" "page 4096 8" "8k 8192 2")
[[ $SROCE_DEV_TYPE == sroce && $peer_type == sroce ]] && specs+=("64k 65536 4")
for spec in "${specs[@]}"; do
	read -r name size qps <<<"$spec"
	n=$iters
	pair "srq-pingpong-$name" ibv_srq_pingpong -d "$SROCE_DEV" -g "$idx" \
		-s "$size" -q "$qps" -r 64 -n "$n" -c -- "$SROCE_PEER_IP"
	out=$SROCE_OUT/srq-pingpong-$name-$SROCE_ROLE.txt
	grep -q "^$n iters in" "$out" || fail "srq-pingpong-$name: no '$n iters' summary"
	! grep -qi "invalid\|mismatch\|Failed status\|error\|couldn't" "$out" ||
		fail "srq-pingpong-$name: errors in the output"
done

for size in 64 8192; do
	pair "send-bw-srq-$size" ib_send_bw -d "$SROCE_DEV" -x "$idx" --use-srq \
		-s "$size" -n "$bw_iters" -F -- "$SROCE_PEER_IP"
	grep -Eq "^ +$size +$bw_iters +[0-9.]+ +[0-9.]+" "$SROCE_OUT/send-bw-srq-$size-$SROCE_ROLE.txt" ||
		fail "send-bw-srq-$size: no result line for $bw_iters x $size bytes"
done

log "PASS: SRQ events, sroce-msg over RC with SRQ (every message checked), ibv_srq_pingpong -c, ib_send_bw --use-srq"
