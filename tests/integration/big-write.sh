#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1 pairs=sroce:sroce timeout=2400 full-only
# SPDX-License-Identifier: GPL-2.0
#
# One 2 GiB RDMA WRITE at path MTU 256 over a lossy link
# (tests/verify/sroce-bigwrite.c): 2^23 PSNs, half the PSN space. The
# requester once reserved a whole message's PSNs at its start, so this
# WRITE made every PSN look outstanding and stale ACKs current; the WRITE
# must complete, the responder's memory hold the data, and the QP then
# carry a WRITE and a READ of fresh data. netem drops on both guests'
# egress, and the devices' counters must show the transport recovered.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"
# shellcheck source=tests/integration/netem-lib.sh
. "$SROCE_TOP/tests/integration/netem-lib.sh"

require_pair
check=$SROCE_BUILD/sroce-bigwrite
[[ -x $check ]] || fail "$check is missing (make verify)"
port=18990
idx=$(gid_index "$SROCE_DEV" 4)
out=$SROCE_OUT/bigwrite-$SROCE_ROLE.txt

netem_setup loss 0.1%
loss_begin bigwrite
if [[ $SROCE_ROLE == a ]]; then
	with_timeout 2200 "$check" -d "$SROCE_DEV" -g "$idx" -p "$port" >"$out" 2>&1 &
	pid=$!
	announce_port "$port" tcp 180
	wait "$pid" || { cat "$out"; loss_fail "sroce-bigwrite (responder) failed"; }
else
	wait_peer_port "$port" 180
	with_timeout 2200 "$check" -d "$SROCE_DEV" -g "$idx" -p "$port" \
		-c "$SROCE_PEER_IP" >"$out" 2>&1 ||
		{ cat "$out"; loss_fail "sroce-bigwrite (client) failed"; }
fi
cat "$out"
grep -q "^bigwrite: .*: PASS$" "$out" || fail "sroce-bigwrite: no PASS line"
loss_check bigwrite
barrier big-write 2300
