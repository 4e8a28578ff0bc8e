#!/bin/bash
# sroce-test: kernels=debug pairs=none timeout=180
# SPDX-License-Identifier: GPL-2.0
#
# XRC beyond what rdma-core's suite (pyverbs.sh) covers: the target's
# refusals. tests/verify/sroce-xrc.c, over the device's own IPv4 GID:
# SEND (3 packets, and with immediate), RDMA WRITE, READ and FETCH_ADD
# through XRC QPs, every byte and completion field checked; a SEND naming
# another domain's SRQ and one naming no SRQ are NAKed as invalid
# requests without touching any SRQ; the PD of the named SRQ, not a QP's,
# grants RDMA access; a domain in use cannot be closed. On the debug
# kernel: KASAN, lockdep and kmemleak watch the error and teardown paths.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

[[ $SROCE_DEV_TYPE == sroce ]] || fail "needs an sroce device"
check=$SROCE_BUILD/sroce-xrc
[[ -x $check ]] || fail "$check is missing (make verify)"

out=$SROCE_OUT/xrc.txt
rc=0
with_timeout 120 "$check" -d "$SROCE_DEV" -g "$(gid_index "$SROCE_DEV" 4)" >"$out" 2>&1 || rc=$?
cat "$out"
((rc == 0)) || fail "sroce-xrc exited with $rc"
grep -q "^xrc: SEND naming another domain's SRQ: remote invalid request error, nothing received$" "$out" ||
	fail "no NAK for another domain's SRQ"
grep -q "^xrc: SEND naming no SRQ: remote invalid request error, nothing received$" "$out" ||
	fail "no NAK for a missing SRQ"
grep -Eq "^xrc: [0-9]+ checks, 0 failed: PASS$" "$out" || fail "no PASS line"
log "PASS"
