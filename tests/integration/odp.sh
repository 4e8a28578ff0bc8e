#!/bin/bash
# sroce-test: kernels=debug full-kernels=debug,7.2 pairs=none timeout=500
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
# forever. Then churn (sroce-odp -R): WRITE and READ back an ODP MR that
# another thread keeps unmapping and prefetching, every byte READ from a
# page the process owns; and once more while the device is deleted and
# the module unloaded under it, faults being served: rmmod must not
# leave a fault work item running module code. On the debug kernel
# KASAN, lockdep and kmemleak watch the notifiers, the fault work, the
# child umems and the copies.
#
# What ODP costs the kernel (security.md): with odp_max_children at 64,
# an implicit MR maps 64 chunks, the 65th is a remote access error, and
# WRITEs to PROT_NONE chunks leave no child. Then uid 65534, under a
# 64 KiB RLIMIT_MEMLOCK and in a 64 MiB memory cgroup (where the kernel
# has them: the debug kernel has not), registers 1 GiB ODP MRs over
# PROT_NONE address space: refused with ENOMEM once their page lists (16
# bytes per 4 KiB page) reach odp_max_mb, at its default (1/32 of RAM)
# and at 8 MiB (2 GiB of MRs).
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_cmd setpriv
odpcheck=$SROCE_BUILD/sroce-odp
[[ -x $odpcheck ]] || fail "$odpcheck is missing (make verify)"
[[ $SROCE_DEV_TYPE == sroce ]] || fail "needs an sroce device"
params=/sys/module/sroce/parameters
[[ -w $params/odp_max_children && -w $params/odp_max_mb ]] ||
	fail "the module has no odp_max_children or odp_max_mb parameter"
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
cgroot=/sys/fs/cgroup cg=/sys/fs/cgroup/sroce-odp
children=$(cat "$params/odp_max_children") max_mb=$(cat "$params/odp_max_mb")

restore() {
	echo "$children" >"$params/odp_max_children"
	echo "$max_mb" >"$params/odp_max_mb"
	rmdir "$cg" 2>/dev/null || true
}
trap restore EXIT

out=$SROCE_OUT/odp.txt
idx=$(gid_index "$SROCE_DEV" 4)
echo 64 >"$params/odp_max_children"
with_timeout 180 "$odpcheck" -d "$SROCE_DEV" -g "$idx" -C 64 >"$out" 2>&1 || true
echo "$children" >"$params/odp_max_children"
cat "$out"
grep -q "^odp: .*, 0 failures: PASS$" "$out" || fail "sroce-odp: no PASS line"
log "PASS: ODP faults, invalidation by munmap, errors for unmapped memory, implicit ODP, its children capped"

# --- what registering costs, unprivileged, in a memory cgroup ----------------
inside=(env)
if [[ -d $cgroot ]]; then
	grep -q " $cgroot cgroup2 " /proc/mounts || mount -t cgroup2 none "$cgroot" ||
		fail "cannot mount cgroup2"
	grep -qw memory "$cgroot/cgroup.controllers" || fail "the kernel has no memory cgroup"
	echo +memory >"$cgroot/cgroup.subtree_control"
	mkdir -p "$cg"
	echo 64M >"$cg/memory.max"
	# shellcheck disable=SC2016 # $$ and $1 belong to the inner shell
	inside=(sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg")
else
	log "no cgroups in this kernel: registering outside a memory cgroup"
	cg=''
fi

# odp_mem MIB: with odp_max_mb at MIB, 1 GiB MRs fit MIB / 4 times.
odp_mem() {
	local fit=$(($1 / 4)) rc=0 out=$SROCE_OUT/odp-mem-$1.txt
	echo "$1" >"$params/odp_max_mb"
	# shellcheck disable=SC2016 # $@ belongs to the inner shell
	with_timeout 120 "${inside[@]}" \
		"${nobody[@]}" bash -c 'ulimit -l 64 && exec "$@"' bash \
		"$odpcheck" -d "$SROCE_DEV" -M $((fit + 2)) ${cg:+-c "$cg"} >"$out" 2>&1 || rc=$?
	cat "$out"
	grep -qx "odp-mem: $fit GiB registered, then Cannot allocate memory" "$out" ||
		fail "odp_max_mb=$1: not refused after $fit GiB of ODP MRs"
	# the port's odp_pages gauge, read while they are registered: their
	# 4 KiB pages of range, 2^18 per GiB (the refused one left none)
	grep -q "^odp-mem: odp_pages $((fit << 18)), " "$out" ||
		fail "odp_max_mb=$1: odp_pages is not the $((fit << 18)) pages of $fit GiB registered"
	((rc == 0)) || fail "sroce-odp -M failed (status $rc)"
	grep -qx "odp-mem: refused: PASS" "$out" || fail "sroce-odp -M: no PASS line"
}
odp_mem "$max_mb"
odp_mem 8
log "PASS: ODP registrations refused past odp_max_mb ($max_mb MiB by default, then 8)"

out=$SROCE_OUT/odp-churn.txt
with_timeout 120 "$odpcheck" -d "$SROCE_DEV" -g "$idx" -R 20 >"$out" 2>&1 || true
cat "$out"
grep -q "^churn: .*, 0 failures: PASS$" "$out" || fail "sroce-odp -R: no PASS line"
log "PASS: ODP data under unmapping and prefetching races"

# rmmod while faults are being served: the device goes first (that
# deregisters the MRs), then the module. Generous limits: on the debug
# kernel under TCG one churn round (a WRITE and a READ racing unmaps)
# takes seconds, and dereg waits for the faults in flight; a hang is
# still caught (a doorbell that kept running the requester while the
# peer NAKed made the delete wait for minutes: SROCE_REQ_RUN_QUOTA).
"$odpcheck" -d "$SROCE_DEV" -g "$idx" -R 60 >"$SROCE_OUT/odp-rmmod.txt" 2>&1 &
churner=$!
sleep 5
kill -0 "$churner" 2>/dev/null || fail "sroce-odp -R ended early: $(cat "$SROCE_OUT/odp-rmmod.txt")"
with_timeout 120 rdma link delete "$SROCE_DEV" || fail "rdma link delete during ODP faults"
wait_for 60 rmmod sroce 2>/dev/null || fail "rmmod sroce during ODP faults"
wait "$churner" 2>/dev/null || true
tail -n 3 "$SROCE_OUT/odp-rmmod.txt"
insmod "$SROCE_MODULE" || fail "insmod $SROCE_MODULE after rmmod"
rdma link add "$SROCE_DEV" type sroce netdev "$SROCE_NETDEV" || fail "rdma link add $SROCE_DEV"
log "PASS: device deleted and module unloaded during ODP faults"
