#!/bin/bash
# sroce-test: kernels=debug full-kernels=debug pairs=none timeout=300
# SPDX-License-Identifier: GPL-2.0
#
# Every allocation a verb makes in the kernel fails once (systematic fault
# injection through fail-nth: see tests/verify/sroce-fault-create.c): open,
# PD, MR, completion channel, CQ, RC/UD QPs and their connection, SRQ, AH,
# MW, and an RDMA WRITE and a UD SEND on loopback QPs. Each verb refuses
# cleanly or succeeds, posted data arrives intact, and afterwards the device
# holds no object of the process (restrack) and kmemleak, KASAN and the
# harness's report checks see nothing.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_cmd rdma
[[ $SROCE_DEV == sroce* ]] || fail "needs an sroce device"
check=$SROCE_BUILD/sroce-fault-create
[[ -x $check ]] || fail "$check is missing (make verify)"
dbg=/sys/kernel/debug
for f in failslab fail_page_alloc; do
	[[ -d $dbg/$f ]] || fail "the kernel has no $f"
done
[[ -e /proc/self/fail-nth ]] || fail "the kernel has no fail-nth"

# fail-nth injects regardless of probability; what it may hit: sleeping
# allocations too, and vmalloc's pages (which are __GFP_HIGHMEM), quietly.
defaults() {
	echo Y >"$dbg/failslab/ignore-gfp-wait"
	echo Y >"$dbg/fail_page_alloc/ignore-gfp-wait"
	echo Y >"$dbg/fail_page_alloc/ignore-gfp-highmem"
}
trap defaults EXIT
echo N >"$dbg/failslab/ignore-gfp-wait"
echo N >"$dbg/fail_page_alloc/ignore-gfp-wait"
echo N >"$dbg/fail_page_alloc/ignore-gfp-highmem"
for f in failslab fail_page_alloc; do
	echo 0 >"$dbg/$f/verbose"
	echo 0 >"$dbg/$f/probability"
done

before=$(dev_object_counts "$SROCE_DEV")
out=$SROCE_OUT/fault-create.txt
rc=0
with_timeout 240 "$check" "$SROCE_DEV" "$(gid_index "$SROCE_DEV" 4)" >"$out" 2>&1 || rc=$?
cat "$out"
((rc == 0)) || fail "sroce-fault-create exited with $rc"
grep -q "^[0-9]* checks, 0 failures$" "$out" || fail "no summary line"
points=$(awk '/ points, / { n += $2 } END { print n + 0 }' "$out")
((points >= 100)) || fail "only $points allocations failed: was anything injected?"
after=$(dev_object_counts "$SROCE_DEV")
[[ $after == "$before" ]] ||
	fail "objects (qp cq pd mr) before: $before, after: $after"
kmemleak_check
log "$points allocations failed one at a time; no leak, no object left"
