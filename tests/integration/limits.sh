#!/bin/bash
# sroce-test: kernels=6.1 pairs=none timeout=240
# SPDX-License-Identifier: GPL-2.0
#
# What a device lets its users hold (tests/verify/sroce-limits.c), run as
# an unprivileged user:
# - a CQ's ring is charged to the creator's memory cgroup, and a cgroup at
#   its memory.max gets ENOMEM from create_cq, not the OOM killer;
# - under a 256 KiB RLIMIT_MEMLOCK an MR of 1 MiB is refused with ENOMEM,
#   smaller ones fit;
# - with the module loaded with small max_pd/cq/qp/srq/mr/mw/ah, the
#   device reports exactly those, and of each type one process creates
#   the limit less what the kernel holds, then ENOMEM; another process is
#   refused too; freeing one admits exactly one more;
# - out-of-range parameters are refused at load; the module is reloaded
#   with the defaults at the end.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_cmd setpriv rdma insmod rmmod
[[ $SROCE_DEV == sroce* ]] || fail "needs an sroce device"
check=$SROCE_BUILD/sroce-limits
[[ -x $check ]] || fail "$check is missing (make verify)"
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
nd=$(netdev_of_dev "$SROCE_DEV")
cgroot=/sys/fs/cgroup cg=/sys/fs/cgroup/sroce-limits

unload() {
	with_timeout 20 rdma link delete "$SROCE_DEV" || fail "rdma link delete $SROCE_DEV"
	wait_for 10 rmmod sroce || fail "rmmod sroce"
}

# load [PARAM=VALUE...]: the module with these parameters, the device added
# again and ACTIVE.
load() {
	insmod "$SROCE_MODULE" "$@" || fail "insmod $SROCE_MODULE $*"
	rdma link add "$SROCE_DEV" type sroce netdev "$nd" || fail "rdma link add after reload"
	wait_for 30 grep -qx "4: ACTIVE" "/sys/class/infiniband/$SROCE_DEV/ports/1/state" ||
		fail "$SROCE_DEV not ACTIVE after reload"
}

# A failure part way must not leave later tests a device with small limits.
restore_defaults() {
	rmdir "$cg" 2>/dev/null || true
	[[ $(cat /sys/module/sroce/parameters/max_qp 2>/dev/null) == 65536 &&
		-e /sys/class/infiniband/$SROCE_DEV ]] && return
	rdma link delete "$SROCE_DEV" 2>/dev/null || true
	rmmod sroce 2>/dev/null || true
	insmod "$SROCE_MODULE" || return 0
	rdma link add "$SROCE_DEV" type sroce netdev "$nd" || true
}
trap restore_defaults EXIT

held() { dev_objects "$SROCE_DEV" "$1"; }

# --- memory cgroup ------------------------------------------------------------
grep -q " $cgroot cgroup2 " /proc/mounts || mount -t cgroup2 none "$cgroot" ||
	fail "cannot mount cgroup2"
grep -qw memory "$cgroot/cgroup.controllers" || fail "the kernel has no memory cgroup"
echo +memory >"$cgroot/cgroup.subtree_control"
mkdir -p "$cg"
chown 65534 "$cg/memory.max"
out=$SROCE_OUT/limits-memcg.txt
rc=0
# shellcheck disable=SC2016 # $$ and $1 belong to the inner shell
with_timeout 120 sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg" \
	"${nobody[@]}" "$check" memcg "$SROCE_DEV" "$cg" >"$out" 2>&1 || rc=$?
cat "$out"
((rc == 0)) || fail "sroce-limits memcg failed (status $rc)"
grep -q "^under memory.max .*: [0-9]* CQs, then Cannot allocate memory$" "$out" ||
	fail "no ENOMEM verdict under memory.max"
rmdir "$cg"

# --- pinned memory ------------------------------------------------------------
out=$SROCE_OUT/limits-memlock.txt
rc=0
# shellcheck disable=SC2016 # $0 and $1 belong to the inner shell
with_timeout 60 "${nobody[@]}" bash -c 'ulimit -l 256 && exec "$0" memlock "$1"' \
	"$check" "$SROCE_DEV" >"$out" 2>&1 || rc=$?
cat "$out"
((rc == 0)) || fail "sroce-limits memlock failed (status $rc)"

# --- object limits ------------------------------------------------------------
unload
for bad in max_qp=0 max_qp=65537 max_mr=-1 max_ah=many; do
	if msg=$(insmod "$SROCE_MODULE" "$bad" 2>&1); then
		fail "insmod with $bad succeeded"
	fi
	log "insmod with $bad refused: $msg"
done

declare -A max=([pd]=9 [cq]=7 [qp]=5 [srq]=4 [mr]=12 [mw]=6 [ah]=8)
params=()
for t in "${!max[@]}"; do
	params+=("max_$t=${max[$t]}")
done
load "${params[@]}"
for t in "${!max[@]}"; do
	[[ $(cat "/sys/module/sroce/parameters/max_$t") == "${max[$t]}" ]] ||
		fail "parameter max_$t reads $(cat "/sys/module/sroce/parameters/max_$t")"
done

# What the kernel holds already (the MAD layer's QP1, its CQ and PD), plus
# the PD and CQ sroce-limits creates its objects with. Every kernel PD of a
# device without a local DMA lkey comes with an internal DMA MR that restrack
# does not list.
kpd=$(held pd) kcq=$(held cq) kqp=$(held qp) ksrq=$(held srq) kmr=$(held mr)
declare -A expect=(
	[pd]=$((max[pd] - kpd - 1)) [cq]=$((max[cq] - kcq - 1)) [qp]=$((max[qp] - kqp))
	[srq]=$((max[srq] - ksrq)) [mr]=$((max[mr] - kmr - kpd)) [mw]=${max[mw]} [ah]=${max[ah]})
log "the kernel holds pd $kpd, cq $kcq, qp $kqp, srq $ksrq, mr $kmr (and $kpd internal MRs)"

idx=$(gid_index "$SROCE_DEV" 4)
out=$SROCE_OUT/limits-count.txt
rc=0
with_timeout 120 "${nobody[@]}" "$check" count "$SROCE_DEV" "$idx" >"$out" 2>&1 || rc=$?
cat "$out"
((rc == 0)) || fail "sroce-limits count failed (status $rc)"
for t in "${!max[@]}"; do
	grep -qx "max_$t ${max[$t]}" "$out" || fail "the device does not report max_$t ${max[$t]}"
	grep -qx "$t: ${expect[$t]} created" "$out" ||
		fail "$t: expected ${expect[$t]} created ($t limit ${max[$t]})"
done
log "every type stops at its limit"

unload
load
[[ $(cat /sys/module/sroce/parameters/max_qp) == 65536 ]] || fail "max_qp not back to its default"
log "module reloaded with the default limits"
