#!/bin/bash
# sroce-test: kernels=debug pairs=none timeout=200
# SPDX-License-Identifier: GPL-2.0
#
# modify_qp replaces an RC QP's path while the requester, the responder's
# ACKs and the receive address check use it: tests/verify/sroce-pathmod
# moves QP A through RTS -> SQD -> SQD with a new path (traffic class,
# flow label and so UDP source port) -> RTS every round while A and
# B exchange windows of SENDs through the device's own GID; every message
# is checked, every completion must succeed and query_qp return the path
# just set. Over the IPv4 and the IPv6 GID. On the debug kernel, KASAN and
# lockdep watch the path's RCU publication and freeing.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

[[ $SROCE_DEV_TYPE == sroce ]] || fail "needs an sroce device"
check=$SROCE_BUILD/sroce-pathmod
[[ -x $check ]] || fail "$check is missing (make verify)"
rounds=1000
# KASAN and lockdep under TCG move a few hundred packets a second.
[[ $SROCE_KERNEL == debug ]] && rounds=150

for family in 4 6; do
	out=$SROCE_OUT/pathmod-ipv$family.txt
	rc=0
	with_timeout 80 "$check" -d "$SROCE_DEV" -g "$(gid_index "$SROCE_DEV" "$family")" \
		-n "$rounds" >"$out" 2>&1 || rc=$?
	cat "$out"
	((rc == 0)) || fail "IPv$family: sroce-pathmod exited with $rc"
	want="$rounds path changes under traffic; A received $((rounds * 8)), B received $((rounds * 8)) of $((rounds * 8)) messages intact; [0-9]+ checks, 0 failed: PASS"
	grep -Eqx "$want" "$out" || fail "IPv$family: no PASS line with every message intact"
done
log "PASS"
