#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1,6.12,7.2,debug pairs=none timeout=180
# SPDX-License-Identifier: GPL-2.0
#
# Posts racing the end of a drain (issue 30, item 5), as an unprivileged
# user (tests/verify/sroce-doorbell): while the kernel drains a QP's send
# ring it reads the producer index again before it stops, so the provider
# skips the doorbell of a post that finds it draining. On one guest's two
# vCPUs, one thread's doorbell system call sends a list of 32 WRITEs while
# another thread posts one more WRITE at a random moment of that drain,
# and nothing else is posted until both have arrived: a post that skipped
# its doorbell and that the kernel did not see again is never sent (a lost
# wake-up). RC, then UC: on RC each ACK runs the requester again and
# picks up most such posts; UC has no ACKs to hide one. Every byte of
# every WRITE is checked, the device's
# sq_user_wqes counter must count every WQE and sq_doorbells at most the
# posts, and some posts must have skipped the doorbell. On the debug
# kernel too: the race under KASAN and lockdep.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_cmd setpriv
[[ $SROCE_DEV_TYPE == sroce ]] || fail "needs an sroce device"
check=$SROCE_BUILD/sroce-doorbell
[[ -x $check ]] || fail "$check is missing (make verify)"
(($(nproc) >= 2)) || fail "needs two vCPUs, has $(nproc)"
seconds=10

before=$(dev_object_counts "$SROCE_DEV")
idx=$(gid_index "$SROCE_DEV" 4)
for type in rc uc; do
	out=$SROCE_OUT/doorbell-$type.txt
	with_timeout $((seconds + 60)) setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$check" -d "$SROCE_DEV" -g "$idx" -t "$seconds" -q "$type" >"$out" 2>&1 || true
	cat "$out"
	grep -q "^doorbell: .*, 0 failures: PASS$" "$out" || fail "sroce-doorbell -q $type: no PASS line"
done
back_to_before() { [[ $(dev_object_counts "$SROCE_DEV") == "$before" ]]; }
wait_for 10 back_to_before ||
	fail "objects left on $SROCE_DEV: before '$before', after '$(dev_object_counts "$SROCE_DEV")' (qp cq pd mr)"
log "PASS: posts racing the drain's end all completed, every byte checked"
