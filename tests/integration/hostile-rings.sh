#!/bin/bash
# sroce-test: kernels=debug pairs=none timeout=180
# SPDX-License-Identifier: GPL-2.0
#
# A hostile local user rewriting its own mapped rings (tests/verify/
# sroce-hostile-rings.c): the SQ producer moved behind what the kernel
# fetched must put that QP in error at once (the old kernel spun about
# 2^32 times under the SQ lock with interrupts off), random and adversarial
# ring words and slot contents must do no harm, and another process's
# checked traffic on the same device goes on untouched. Runs as an
# unprivileged user, as an attacker would; afterwards the device holds no
# more objects than before.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_cmd setpriv rdma
[[ $SROCE_DEV == sroce* ]] || fail "needs an sroce device"
check=$SROCE_BUILD/sroce-hostile-rings
[[ -x $check ]] || fail "$check is missing (make verify)"
seconds=8
[[ $SROCE_KERNEL == debug ]] && seconds=15

before=$(dev_object_counts "$SROCE_DEV")
idx=$(gid_index "$SROCE_DEV" 4)
out=$SROCE_OUT/hostile-rings.txt
rc=0
with_timeout $((seconds + 60)) setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$check" "$SROCE_DEV" "$idx" "$seconds" >"$out" 2>&1 || rc=$?
cat "$out"
((rc == 0)) || fail "sroce-hostile-rings failed (status $rc)"
grep -q "^back: .*QP state 6, QP_FATAL seen" "$out" || fail "no verdict on the backwards producer"
grep -q "^good: [1-9][0-9]* rounds" "$out" || fail "the good process reported no rounds"
back_to_before() { [[ $(dev_object_counts "$SROCE_DEV") == "$before" ]]; }
wait_for 10 back_to_before ||
	fail "objects left on $SROCE_DEV: before '$before', after '$(dev_object_counts "$SROCE_DEV")' (qp cq pd mr)"
log "objects back to '$before' (qp cq pd mr)"
