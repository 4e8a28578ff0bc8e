#!/bin/bash
# sroce-test: kernels=6.1,6.12 pairs=sroce:sroce,sroce:rxe,rxe:sroce pairs.6.1=sroce:sroce,sroce:rxe pairs.6.12=sroce:sroce timeout=600
# SPDX-License-Identifier: GPL-2.0
#
# UC between the two guests: ibv_uc_pingpong -c (both sides check every
# received buffer) for one-packet and multi-packet (up to 8 packets)
# messages, then perftest ib_send_bw -c UC and ib_write_bw -c UC (every
# completion counted; a lost message would stall them). On an sroce guest
# the resp_dropped counter must not move. The port, netdev and UDP
# counters are printed at the end to tell an sroce drop from a link loss.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd ibv_uc_pingpong ib_send_bw ib_write_bw ss

iters=200 bw_iters=2000
if [[ $SROCE_KERNEL == debug ]]; then
	iters=50 bw_iters=500
fi
port=18800
# rxe has no such counter; on sroce it must exist
dropped_before=
[[ $SROCE_DEV_TYPE == sroce ]] && dropped_before=$(link_counter "$SROCE_DEV" resp_dropped)

# the port counters of an sroce guest and the netdev's and UDP's drop
# counters, at the end (pass or fail), to tell where a lost packet went
trap dump_counters EXIT

idx=$(gid_index "$SROCE_DEV" 4)
idx6=$(gid_index "$SROCE_DEV" 6)

# name size mtu gid
# Messages of at most 8 packets: the guests' link (QEMU dgram over unix
# sockets, host net.unix.max_dgram_qlen 10) drops packets of longer bursts
# when the host is busy, and UC loses the whole message then, by design,
# which leaves ibv_uc_pingpong waiting forever.
for spec in "byte 1 1024 $idx" "page 4096 1024 $idx" "8k 8192 1024 $idx" \
	    "odd 5000 1024 $idx6"; do
	read -r name size mtu gid <<<"$spec"
	pair "uc-pingpong-$name" ibv_uc_pingpong -d "$SROCE_DEV" -g "$gid" \
		-m "$mtu" -s "$size" -n "$iters" -c -- "$SROCE_PEER_IP"
	out=$SROCE_OUT/uc-pingpong-$name-$SROCE_ROLE.txt
	grep -q "^$iters iters in" "$out" || fail "uc-pingpong-$name: no '$iters iters' summary"
	! grep -qi "invalid\|mismatch\|Failed status\|error\|couldn't" "$out" ||
		fail "uc-pingpong-$name: errors in the output"
done

for tool in ib_send_bw ib_write_bw; do
	for size in 64 4096; do
		name=${tool#ib_}-uc-$size
		pair "$name" "$tool" -d "$SROCE_DEV" -x "$idx" -c UC -s "$size" \
			-n "$bw_iters" -F -- "$SROCE_PEER_IP"
		grep -Eq "^ +$size +$bw_iters +[0-9.]+ +[0-9.]+" "$SROCE_OUT/$name-$SROCE_ROLE.txt" ||
			fail "$name: no result line for $bw_iters x $size bytes"
	done
done

if [[ -n $dropped_before ]]; then
	dropped=$(($(link_counter "$SROCE_DEV" resp_dropped) - dropped_before))
	((dropped == 0)) || fail "resp_dropped moved by $dropped on a lossless link"
fi
log "PASS: ibv_uc_pingpong -c (1 B..8 KiB, IPv4/IPv6), ib_send_bw and ib_write_bw over UC"
