#!/bin/bash
# sroce-test: kernels=debug pairs=none timeout=600
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
# with addresses beyond the address space refused; a READ into a sink
# another thread keeps unmapping must complete rather than be retried
# forever. Then churn (sroce-odp -c): WRITE and READ back an ODP MR that
# another thread keeps unmapping and prefetching, every byte READ from a
# page the process owns; and once more while the device is deleted and
# the module unloaded under it, faults being served: rmmod must not
# leave a fault work item running module code. On the debug kernel
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

out=$SROCE_OUT/odp-churn.txt
with_timeout 120 "$odpcheck" -d "$SROCE_DEV" -g "$idx" -c 20 >"$out" 2>&1 || true
cat "$out"
grep -q "^churn: .*, 0 failures: PASS$" "$out" || fail "sroce-odp -c: no PASS line"
log "PASS: ODP data under unmapping and prefetching races"

# rmmod while faults are being served: the device goes first (that
# deregisters the MRs), then the module. Generous limits: on the debug
# kernel under TCG one churn round (a WRITE and a READ racing unmaps)
# takes seconds, and dereg waits for the faults in flight; a hang is
# still caught.
"$odpcheck" -d "$SROCE_DEV" -g "$idx" -c 60 >"$SROCE_OUT/odp-rmmod.txt" 2>&1 &
churner=$!
sleep 5
kill -0 "$churner" 2>/dev/null || fail "sroce-odp -c ended early: $(cat "$SROCE_OUT/odp-rmmod.txt")"
with_timeout 120 rdma link delete "$SROCE_DEV" || fail "rdma link delete during ODP faults"
wait_for 60 rmmod sroce 2>/dev/null || fail "rmmod sroce during ODP faults"
wait "$churner" 2>/dev/null || true
tail -n 3 "$SROCE_OUT/odp-rmmod.txt"
insmod "$SROCE_MODULE" || fail "insmod $SROCE_MODULE after rmmod"
rdma link add "$SROCE_DEV" type sroce netdev "$SROCE_NETDEV" || fail "rdma link add $SROCE_DEV"
log "PASS: device deleted and module unloaded during ODP faults"
