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
# - with the module loaded with small max_pd/cq/qp/srq/mr/mw/ah and a
#   user_share and kernel_reserve: uid 65534 creates of each type its
#   share and holds it; uid 65533 still creates its share beside it (users
#   then hold every AH they may); root still creates objects of every type
#   but AHs; and rping as root connects through rdma_cm, whose connection
#   manager needs AHs of the kernel's reserve, and its pings are checked;
# - once those processes exited, one user alone creates its share of each
#   type, then ENOMEM, and so does another process of the same user;
#   freeing one admits exactly one more; the device reports the limits;
# - out-of-range parameters are refused at load; the module is reloaded
#   with the defaults at the end.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_cmd setpriv rdma insmod rmmod rping python3
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
for bad in max_qp=0 max_qp=65537 max_mr=-1 max_ah=many user_share=0 user_share=101 \
	kernel_reserve=91; do
	if msg=$(insmod "$SROCE_MODULE" "$bad" 2>&1); then
		fail "insmod with $bad succeeded"
	fi
	log "insmod with $bad refused: $msg"
done

# One uid may hold share % of each limit (rounded down, at least one); all
# users together all but reserve % (rounded up), which only the kernel can
# take. The limits leave root room for rping's objects (two PDs, CQs and
# QPs, seven MRs) when the others hold what they can; two users fill AHs.
declare -A max=([pd]=20 [cq]=24 [qp]=16 [srq]=8 [mr]=40 [mw]=10 [ah]=16)
share=40 reserve=25
params=("user_share=$share" "kernel_reserve=$reserve")
for t in "${!max[@]}"; do
	params+=("max_$t=${max[$t]}")
done
load "${params[@]}"
for t in "${!max[@]}"; do
	[[ $(cat "/sys/module/sroce/parameters/max_$t") == "${max[$t]}" ]] ||
		fail "parameter max_$t reads $(cat "/sys/module/sroce/parameters/max_$t")"
done

# What the kernel holds already (the MAD layer's QP1, its CQ and PD). Every
# kernel PD of a device without a local DMA lkey comes with an internal DMA
# MR that restrack does not list. Each process of sroce-limits creates a PD
# and a CQ of its own before it counts (own).
kpd=$(held pd) kcq=$(held cq) kqp=$(held qp) ksrq=$(held srq) kmr=$(held mr)
declare -A kernel=([pd]=$kpd [cq]=$kcq [qp]=$kqp [srq]=$ksrq [mr]=$((kmr + kpd)) [mw]=0 [ah]=0)
declare -A own=([pd]=1 [cq]=1 [qp]=0 [srq]=0 [mr]=0 [mw]=0 [ah]=0)
declare -A umax pool users
for t in "${!max[@]}"; do
	umax[$t]=$((max[$t] * share / 100 > 0 ? max[$t] * share / 100 : 1))
	pool[$t]=$((max[$t] - (max[$t] * reserve + 99) / 100))
	users[$t]=0
done
log "the kernel holds pd $kpd, cq $kcq, qp $kqp, srq $ksrq, mr $kmr (and $kpd internal MRs)"

# may T: how many of T one more sroce-limits process may create, with what
# users[] hold now (its own PD and CQ included).
may() {
	local t=$1 n m
	n=$((umax[$t] - own[$t]))
	m=$((pool[$t] - kernel[$t] - users[$t] - own[$t]))
	((m < n)) && n=$m
	echo $((n < 0 ? 0 : n))
}

# expect_created FILE T...: FILE says "T: N created", N what may says.
expect_created() {
	local out=$1 t n
	shift
	for t in "$@"; do
		n=$(may "$t")
		grep -qx "$t: $n created" "$out" ||
			fail "$out: expected '$t: $n created' (limit ${max[$t]}, one user's ${umax[$t]}, all users' ${pool[$t]})"
	done
}

# count_held FILE: what a holder's FILE says it created, and its own PD and
# CQ, are held by users from now on.
count_held() {
	local t n
	for t in "${alltypes[@]}"; do
		n=$(sed -n "s/^$t: \([0-9]*\) created$/\1/p" "$1")
		users[$t]=$((users[$t] + ${n:-0} + own[$t]))
	done
}

idx=$(gid_index "$SROCE_DEV" 4)
alltypes=(pd cq qp srq mr mw ah)
kill_holders() {
	local pid
	for pid in "${holders[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	holders=()
}
holders=()
trap 'kill_holders; restore_defaults' EXIT

# hold UID TYPES: sroce-limits of UID creates what it may of TYPES and holds
# it; returns once it holds (its output in $SROCE_OUT/limits-hold-UID.txt).
hold() {
	local uid=$1 types=$2 out=$SROCE_OUT/limits-hold-$1.txt
	setpriv --reuid="$uid" --regid="$uid" --clear-groups \
		"$check" hold "$SROCE_DEV" "$idx" "$types" >"$out" 2>&1 &
	holders+=($!)
	wait_for 60 grep -qx holding "$out" || { cat "$out"; fail "uid $uid does not hold its objects"; }
	cat "$out"
	! grep -q FAIL "$out" || fail "sroce-limits hold as uid $uid failed"
}

# take UID: sroce-limits of UID creates what it may of every type, then
# frees it; its output in $SROCE_OUT/limits-take-UID.txt.
take() {
	local uid=$1 out=$SROCE_OUT/limits-take-$1.txt rc=0
	with_timeout 60 setpriv --reuid="$uid" --regid="$uid" --clear-groups \
		"$check" take "$SROCE_DEV" "$idx" all >"$out" 2>&1 || rc=$?
	cat "$out"
	((rc == 0)) || fail "sroce-limits take as uid $uid failed (status $rc)"
	expect_created "$out" "${alltypes[@]}"
}

# uid 65534 takes what it may of every type and holds it; beside it, uid
# 65533 still creates objects of every type, and then holds every AH users
# may have; root still creates objects of every type but AHs.
hold 65534 all
expect_created "$SROCE_OUT/limits-hold-65534.txt" "${alltypes[@]}"
count_held "$SROCE_OUT/limits-hold-65534.txt"
log "uid 65534 holds one user's share of every type"
for t in "${alltypes[@]}"; do
	(($(may "$t") > 0)) || fail "uid 65533 may create no $t beside uid 65534"
done
take 65533
log "uid 65533 creates objects of every type beside uid 65534"
hold 65533 ah
expect_created "$SROCE_OUT/limits-hold-65533.txt" ah
count_held "$SROCE_OUT/limits-hold-65533.txt"
(($(may ah) == 0)) || fail "users' AHs are not all taken: the test proves nothing"
for t in "${alltypes[@]}"; do
	[[ $t == ah ]] || (($(may "$t") > 0)) || fail "root may create no $t"
done
take 0
log "root creates objects of every type but AHs, which users hold all of"

# The kernel's reserve: rdma_cm's connection manager (a kernel consumer)
# creates an AH for each of its MADs, and every AH users may have is taken.
# rping as root, both ends on this device; the client checks every ping.
port=18790
rout=$SROCE_OUT/limits-rping
with_timeout 60 rping -s -a "$SROCE_LOCAL_IP" -p "$port" -C 5 -S 100 -v -V \
	>"$rout-server.txt" 2>"$rout-server.err" &
spid=$!
wait_for 20 listening "$port" rdma || fail "rping server does not listen"
rc=0
with_timeout 60 rping -c -a "$SROCE_LOCAL_IP" -p "$port" -C 5 -S 100 -v -V \
	>"$rout-client.txt" 2>"$rout-client.err" || rc=$?
src=0
wait "$spid" || src=$?
rping_status "$rc" "$rout-client.err" ||
	{ cat "$rout-client.err"; fail "rping client failed ($rc) with users' AHs all taken"; }
rping_status "$src" "$rout-server.err" ||
	{ cat "$rout-server.err"; fail "rping server failed ($src)"; }
check_pings "$rout-client.txt" "ping data: " 100 5 || fail "rping client got wrong data back"
log "rping through rdma_cm connects and moves 5 checked pings with users' AHs all taken"

kill_holders
users=([pd]=0 [cq]=0 [qp]=0 [srq]=0 [mr]=0 [mw]=0 [ah]=0)

# Alone again (every object of the others uncharged as their processes
# exited): one user stops at its share of each type.
out=$SROCE_OUT/limits-count.txt
rc=0
with_timeout 120 "${nobody[@]}" "$check" count "$SROCE_DEV" "$idx" >"$out" 2>&1 || rc=$?
cat "$out"
((rc == 0)) || fail "sroce-limits count failed (status $rc)"
for t in "${!max[@]}"; do
	grep -qx "max_$t ${max[$t]}" "$out" || fail "the device does not report max_$t ${max[$t]}"
	n=$(may "$t")
	grep -qx "$t: $n created" "$out" ||
		fail "$t: expected $n created (limit ${max[$t]}, one user's ${umax[$t]})"
done
log "every type stops at one user's share"

unload
load
[[ $(cat /sys/module/sroce/parameters/max_qp) == 65536 ]] || fail "max_qp not back to its default"
log "module reloaded with the default limits"
