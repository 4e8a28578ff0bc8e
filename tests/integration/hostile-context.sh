#!/bin/bash
# sroce-test: kernels=6.1 pairs=none timeout=120
# SPDX-License-Identifier: GPL-2.0
#
# An unprivileged user asking for verbs contexts in ways a driver could
# refuse (tests/verify/sroce-hostile-context.c): a request payload, or a
# response it cannot receive. ib_core leaks a process's task_struct for each
# context its driver refuses through the ioctl interface, so sroce makes
# them all; this counts the kernel's task_structs around 256 such processes.
# (The old driver refused both: the count grew by one per process.)
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_cmd setpriv
[[ $SROCE_DEV == sroce* ]] || fail "needs an sroce device"
check=$SROCE_BUILD/sroce-hostile-context
[[ -x $check ]] || fail "$check is missing (make verify)"
procs=256

# Tasks are freed after an RCU grace period; what SLUB counts as in use
# also includes objects free on per-CPU lists: a few dozen at most here.
tasks_allocated() {
	sleep 2
	awk '$1 == "task_struct" { print $2 }' /proc/slabinfo
}

# hostile PROCS: as nobody, as an attacker would be
hostile() {
	with_timeout 90 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$check" "$SROCE_DEV" "$1"
}
hostile 16 || fail "sroce-hostile-context failed warming up"
before=$(tasks_allocated)
out=$SROCE_OUT/hostile-context.txt
rc=0
hostile "$procs" >"$out" 2>&1 || rc=$?
cat "$out"
after=$(tasks_allocated)
log "task_structs allocated: $before before $procs processes, $after after"
((rc == 0)) || fail "sroce-hostile-context failed (status $rc)"
for v in "request payload" "unwritable response"; do
	grep -q "^$v: $((procs / 2)) of $((procs / 2)) contexts made$" "$out" ||
		fail "not every context with a $v was made"
done
((after - before < procs / 4)) ||
	fail "$((after - before)) more task_structs after $procs processes: leaked"
