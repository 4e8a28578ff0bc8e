#!/bin/bash
# sroce-test: kernels=6.12 pairs=none timeout=360
# SPDX-License-Identifier: GPL-2.0
#
# What libibverbs and sysfs report for sroce0 on eth0 (10.0.0.1/24,
# fd00::1/64): device limits as drivers/sroce/sroce.h declares them, port
# state, link layer, active MTU following the netdev MTU, and the RoCEv2
# GID table following the netdev's IPv4/IPv6 addresses (with GID_CHANGE
# events: ibv_asyncwatch must see at least one), in sysfs and in
# ibv_devinfo -v.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"	# has_uverbs_open; the log, fail and wait_for below replace its own

DEV=${SROCE_DEV:-sroce0}
NETDEV=${SROCE_NETDEV:-eth0}
IP4=${SROCE_LOCAL_IP:-10.0.0.1}
IP6=${SROCE_LOCAL_IP6:-fd00::1}
PORT=/sys/class/infiniband/$DEV/ports/1
checks=0
mtu0=$(cat "/sys/class/net/$NETDEV/mtu")
add4=10.0.0.77 add6=fd00::77
watch_pid="" events=""

# Whatever ends the script, the next one on this guest gets the netdev as
# the harness set it up.
cleanup() {
	set +e
	[[ -z $watch_pid ]] || kill "$watch_pid" 2>/dev/null
	[[ -z $events ]] || rm -f "$events"
	ip addr del $add4/24 dev "$NETDEV" 2>/dev/null
	ip -6 addr del $add6/64 dev "$NETDEV" 2>/dev/null
	ip link set "$NETDEV" mtu "$mtu0"
}
trap cleanup EXIT

log() { echo "device-devinfo: $*"; }
ok() { checks=$((checks + 1)); echo "ok $checks - $*"; }
fail() {
	echo "FAIL: $*"
	dmesg | tail -n 20
	exit 1
}

wait_for() {
	local secs=$1 what=$2 end
	shift 2
	end=$((SECONDS + secs))
	until "$@"; do
		[ $SECONDS -lt $end ] || fail "timed out after ${secs}s: $what"
		sleep 0.2
	done
}

# Each ibv_devinfo run costs seconds in a TCG guest: query once, then
# again only after changing something.
info=""
refresh() { info=$(ibv_devinfo -v -d "$DEV") || fail "ibv_devinfo -v -d $DEV"; }

# devinfo_field NAME: the value of the first "NAME:" line of $info.
devinfo_field() {
	awk -v k="$1:" '$1 == k { $1 = ""; sub(/^ +/, ""); print; exit }' <<<"$info"
}

expect_field() {
	local got
	got=$(devinfo_field "$1")
	[ "$got" = "$2" ] || fail "ibv_devinfo $1: got '$got', want '$2'"
	ok "ibv_devinfo $1: $2"
}

# A limit from drivers/sroce/sroce.h, e.g. header_limit SROCE_MAX_QP.
header_limit() {
	local expr
	expr=$(sed -n "s/^#define $1[[:space:]]\\+\\(.*\\)/\\1/p" \
		"$SROCE_TOP/drivers/sroce/sroce.h")
	[ -n "$expr" ] || fail "$1 not found in sroce.h"
	echo $((expr))
}

# sysfs_gid_index GID: index of a RoCE v2 GID on $NETDEV, in sysfs form.
# Builtins only: a fork per table entry costs seconds in a TCG guest.
sysfs_gid_index() {
	local f i gid type ndev
	for f in "$PORT"/gids/*; do
		read -r gid <"$f" || continue
		[ "$gid" = "$1" ] || continue
		i=${f##*/}
		read -r type <"$PORT/gid_attrs/types/$i" 2>/dev/null || continue
		read -r ndev <"$PORT/gid_attrs/ndevs/$i" 2>/dev/null || continue
		[[ $type == "RoCE v2" && $ndev == "$NETDEV" ]] || continue
		echo "$i"
		return 0
	done
	return 1
}
sysfs_has_gid() { sysfs_gid_index "$1" >/dev/null; }
sysfs_lacks_gid() { ! sysfs_gid_index "$1" >/dev/null; }
devinfo_has_gid() {
	grep -qE "GID\[ *[0-9]+\]:[[:space:]]+$1, RoCE v2\$" <<<"$info"
}

# The sysfs spelling of an IPv6 address: eight 4-digit groups.
v6_gid() {
	local head=$1 tail="" h=() t=() g n out=""
	if [[ $1 == *::* ]]; then
		head=${1%%::*}
		tail=${1##*::}
	fi
	[ -z "$head" ] || IFS=: read -ra h <<<"$head"
	[ -z "$tail" ] || IFS=: read -ra t <<<"$tail"
	n=$((8 - ${#h[@]} - ${#t[@]}))
	for g in "${h[@]}"; do out+=$(printf '%04x:' "0x$g"); done
	while [ $n -gt 0 ]; do out+="0000:"; n=$((n - 1)); done
	for g in "${t[@]}"; do out+=$(printf '%04x:' "0x$g"); done
	echo "${out%:}"
}

# The sysfs spelling of an IPv4-mapped GID: ::ffff:a.b.c.d.
v4_gid() {
	local a b c d
	IFS=. read -r a b c d <<<"$1"
	printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n' "$a" "$b" "$c" "$d"
}

[ -e "/sys/class/infiniband/$DEV" ] || fail "no device $DEV"
ibv_devices | grep -q "^ *$DEV " || fail "ibv_devices does not list $DEV: $(ibv_devices)"
ok "ibv_devices lists $DEV"

refresh

# --- device ---------------------------------------------------------------
expect_field node_guid "$(cat "/sys/class/infiniband/$DEV/node_guid")"
expect_field sys_image_guid "$(cat "/sys/class/infiniband/$DEV/node_guid")"
expect_field phys_port_cnt 1
expect_field max_qp "$(header_limit SROCE_MAX_QP)"
expect_field max_qp_wr "$(header_limit SROCE_MAX_QP_WR)"
expect_field max_sge "$(header_limit SROCE_MAX_SGE)"
expect_field max_cq "$(header_limit SROCE_MAX_CQ)"
expect_field max_cqe "$(header_limit SROCE_MAX_CQE)"
expect_field max_mr "$(header_limit SROCE_MAX_MR)"
expect_field max_pd "$(header_limit SROCE_MAX_PD)"
expect_field max_ah "$(header_limit SROCE_MAX_AH)"
expect_field max_qp_rd_atom "$(header_limit SROCE_MAX_RD_ATOMIC)"
expect_field max_pkeys 1

# --- port -----------------------------------------------------------------
expect_field state "PORT_ACTIVE (4)"
expect_field phys_state "LINK_UP (5)"
expect_field link_layer Ethernet
expect_field max_mtu "4096 (5)"
expect_field gid_tbl_len "$(header_limit SROCE_GID_TABLE_LEN)"

# active_mtu: the largest IB MTU that fits the netdev MTU with RoCEv2
# headers (IPv6 + UDP + BTH + largest extension headers + ICRC = 96 bytes).
for pair in 1500:1024:3 2200:2048:4 2100:1024:3 4200:4096:5 4000:2048:4 9000:4096:5; do
	IFS=: read -r mtu ib enum <<<"$pair"
	ip link set "$NETDEV" mtu "$mtu" || fail "cannot set $NETDEV mtu $mtu"
	refresh
	expect_field active_mtu "$ib ($enum)"
done
ip link set "$NETDEV" mtu "$mtu0"
ok "active_mtu follows the $NETDEV MTU"

# --- GIDs -------------------------------------------------------------------
# Index 0: the default GID, fe80:: + the EUI-64 that is also the node GUID.
want0="fe80:0000:0000:0000:$(cat "/sys/class/infiniband/$DEV/node_guid")"
[ "$(cat "$PORT/gids/0")" = "$want0" ] ||
	fail "GID 0 $(cat "$PORT/gids/0"), want $want0"
[ "$(cat "$PORT/gid_attrs/types/0")" = "RoCE v2" ] ||
	fail "GID 0 type $(cat "$PORT/gid_attrs/types/0")"
ok "GID 0 is the link-local default GID, RoCE v2"

if grep -l "v1" "$PORT"/gid_attrs/types/* 2>/dev/null; then
	fail "RoCE v1 GIDs in the table: sroce speaks RoCEv2 only"
fi
ok "no RoCE v1 GIDs"

gid4=$(v4_gid "$IP4")
gid6=$(v6_gid "$IP6")
wait_for 10 "GID for $IP4" sysfs_has_gid "$gid4"
ok "sysfs GID[$(sysfs_gid_index "$gid4")] $gid4 (RoCE v2, $NETDEV) for $IP4"
wait_for 10 "GID for $IP6" sysfs_has_gid "$gid6"
ok "sysfs GID[$(sysfs_gid_index "$gid6")] $gid6 (RoCE v2, $NETDEV) for $IP6"
refresh
devinfo_has_gid "::ffff:$IP4" || fail "ibv_devinfo -v lacks ::ffff:$IP4, RoCE v2"
ok "ibv_devinfo -v shows ::ffff:$IP4, RoCE v2"
devinfo_has_gid "$IP6" || fail "ibv_devinfo -v lacks $IP6, RoCE v2"
ok "ibv_devinfo -v shows $IP6, RoCE v2"

# Addresses added and removed on the netdev appear and vanish as GIDs, and
# consumers hear about it.
events=$(mktemp)
timeout 60 ibv_asyncwatch -d "$DEV" >"$events" 2>&1 &
watch_pid=$!
wait_for 30 "ibv_asyncwatch to open $DEV" has_uverbs_open "$watch_pid"
sleep 1	# from open() to its context (GET_CONTEXT)
ip addr add $add4/24 dev "$NETDEV"
ip -6 addr add $add6/64 dev "$NETDEV" nodad
wait_for 10 "GID for added $add4" sysfs_has_gid "$(v4_gid $add4)"
wait_for 10 "GID for added $add6" sysfs_has_gid "$(v6_gid $add6)"
refresh
devinfo_has_gid "::ffff:$add4" || fail "ibv_devinfo -v lacks ::ffff:$add4"
devinfo_has_gid "$add6" || fail "ibv_devinfo -v lacks $add6"
ok "adding $add4 and $add6 to $NETDEV added their RoCE v2 GIDs"
ip addr del $add4/24 dev "$NETDEV"
ip -6 addr del $add6/64 dev "$NETDEV"
wait_for 10 "GID for $add4 removed" sysfs_lacks_gid "$(v4_gid $add4)"
wait_for 10 "GID for $add6 removed" sysfs_lacks_gid "$(v6_gid $add6)"
refresh
if devinfo_has_gid "::ffff:$add4" || devinfo_has_gid "$add6"; then
	fail "ibv_devinfo -v still shows a removed address's GID"
fi
if sysfs_lacks_gid "$gid4" || sysfs_lacks_gid "$gid6"; then
	fail "the harness's own GIDs went away with the extra addresses"
fi
ok "removing them removed the GIDs; $IP4 and $IP6 remain"
sleep 1
kill "$watch_pid" 2>/dev/null || true
wait "$watch_pid" 2>/dev/null || true
watch_pid=""
grep -q GID_CHANGE "$events" || fail "no GID_CHANGE event: $(cat "$events")"
ok "ibv_asyncwatch saw GID_CHANGE"

log "$checks checks passed"
