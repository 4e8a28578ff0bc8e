#!/bin/bash
# sroce-test: kernels=6.12,debug full-kernels=6.1,6.12,7.2,debug pairs=none timeout=480
# SPDX-License-Identifier: GPL-2.0
#
# The kernel-verbs self-test: loads sroce_kverbs.ko (tests/kverbs), a
# kernel consumer of sroce0 that runs fast-registration, LOCAL_INV, SEND
# with Invalidate, local-DMA-lkey and completion-handler cases between two
# RC QPs of the device connected to each other through its own GID. It
# prints KTAP to the kernel log; every case listed below must report "ok",
# the plan must match, and the module must unload leaving the device's
# resource counts as they were.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

# The cases sroce_kverbs.ko runs, in order (its kv_cases[]).
CASES=(fastreg_write_read local_inv rereg_new_key send_with_inv
	send_inv_bad_rkey send_inv_other_pd local_inv_refused map_too_many
	reg_bad_access reg_inv_chain reg_send_chain atomic_kernel_align
	dma_mr_send_recv handler_unlocked)

[[ $SROCE_DEV_TYPE == sroce ]] || fail "needs an sroce device"
module=${SROCE_KVERBS_MODULE:-}
[[ -n $module && -f $module ]] || fail "no sroce_kverbs.ko: SROCE_KVERBS_MODULE='$module'"
require_cmd rdma dmesg

resources() {
	rdma resource show | grep -w "$SROCE_DEV"
}

# Later scripts of the same boot must not find the module still loaded.
trap 'lsmod | grep -q "^sroce_kverbs " && rmmod sroce_kverbs || true' EXIT

gid=$(gid_index "$SROCE_DEV" 4)
before=$(resources)
log "resources before: $before"
lines=$(dmesg | wc -l)
start=$SECONDS
with_timeout 200 insmod "$module" ibdev="$SROCE_DEV" gid_index="$gid" ||
	fail "insmod sroce_kverbs.ko failed"
log "cases ran in $((SECONDS - start)) s"
dmesg | tail -n +"$((lines + 1))" | sed -e 's/^\[[ 0-9.]*\] //' >"$SROCE_OUT/kverbs.ktap"
rmmod sroce_kverbs || fail "rmmod sroce_kverbs failed"
after=$(resources)
log "resources after:  $after"

ktap=$SROCE_OUT/kverbs.ktap
# The KTAP block as the module printed it: tests/run counts its
# "ok N name" / "not ok N name" lines, one result per case.
sed -n '/^KTAP version 1$/,/^# sroce_kverbs: [0-9]* of [0-9]* failed$/p' "$ktap"
grep -qx 'KTAP version 1' "$ktap" || fail "no KTAP header in the kernel log"
plan=$(grep -xE '1\.\.[0-9]+' "$ktap" | head -1)
[[ $plan == "1..${#CASES[@]}" ]] || fail "plan '$plan', expected 1..${#CASES[@]}"
failed=0
for i in "${!CASES[@]}"; do
	n=$((i + 1)) name=${CASES[$i]}
	if grep -qx "ok $n $name" "$ktap"; then
		continue
	elif grep -q "^not ok $n $name" "$ktap"; then
		log "FAILED: $(grep "^not ok $n $name" "$ktap")"
	else
		log "MISSING: case $n $name reported nothing"
	fi
	failed=$((failed + 1))
done
((failed == 0)) || fail "$failed of ${#CASES[@]} kernel-verbs cases failed"
[[ $before == "$after" ]] || fail "resources changed: before '$before', after '$after'"
log "all ${#CASES[@]} kernel-verbs cases passed"
