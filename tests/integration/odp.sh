#!/bin/bash
# sroce-test: kernels=debug pairs=none timeout=180
# SPDX-License-Identifier: GPL-2.0
#
# On-demand paging MRs beyond rdma-core's suite (pyverbs.sh runs its ODP
# tests): tests/verify/sroce-odp between two QPs of this guest's device.
# WRITE into never-touched ODP pages, READ back, FETCH_AND_ADD, all data
# checked through a second mapping of the target's memfd; then the
# target's second half is unmapped while that alias keeps its pages: a
# WRITE there must complete with a remote access error and leave the
# alias untouched (a write through a stale page would show there), a WRITE
# from an unmapped source with a local protection error, and dereg must
# return. Then the same through an implicit MR (the whole address space)
# on memory mapped after it, across one of its 2 MiB chunk boundaries,
# with addresses beyond the address space refused. On the debug kernel
# KASAN, lockdep and kmemleak watch the notifiers, the fault work, the
# child umems and the copies.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

odpcheck=$SROCE_BUILD/sroce-odp
[[ -x $odpcheck ]] || fail "$odpcheck is missing (make verify)"
[[ $SROCE_DEV_TYPE == sroce ]] || fail "needs an sroce device"

out=$SROCE_OUT/odp.txt
idx=$(gid_index "$SROCE_DEV" 4)
with_timeout 120 "$odpcheck" -d "$SROCE_DEV" -g "$idx" >"$out" 2>&1 || true
cat "$out"
grep -q "^odp: .*, 0 failures: PASS$" "$out" || fail "sroce-odp: no PASS line"
log "PASS: ODP faults, invalidation by munmap, errors for unmapped memory, implicit ODP"
