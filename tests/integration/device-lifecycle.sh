#!/bin/bash
# sroce-test: kernels=6.12 full-kernels=6.1,6.12,7.2,debug pairs=none timeout=420 distros=trixie:6.12 full-distros=trixie:6.12,sid:7.2
# SPDX-License-Identifier: GPL-2.0
#
# The life of an sroce device in one guest: rdma link add/delete, refusals
# (second device on a netdev, rxe* names, non-Ethernet netdevs), port state
# following the netdev (admin down/up, carrier through a veth peer) with
# the matching async events, removal when the netdev is unregistered (with
# IB_EVENT_DEVICE_FATAL to a user holding the device, which does not delay
# it) or leaves the namespace, and rmmod with devices present and a user
# holding one (disassociated, not waited for), followed by a
# kmemleak scan, a reload and a re-add.
#
# Works whether or not the harness created sroce0 (--no-device).
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"	# has_uverbs_open; the log, fail and wait_for below replace its own

NETDEV=${SROCE_NETDEV:-eth0}
DEV=sroce0
SYS=/sys/class/infiniband
checks=0

log() { echo "device-lifecycle: $*"; }
ok() { checks=$((checks + 1)); echo "ok $checks - $*"; }
fail() {
	echo "FAIL: $*"
	echo "--- rdma link; dmesg tail"
	rdma link show 2>&1 || true
	dmesg | tail -n 30
	exit 1
}

# wait_for SECONDS DESCRIPTION COMMAND...: poll COMMAND until it succeeds.
wait_for() {
	local secs=$1 what=$2 end
	shift 2
	end=$((SECONDS + secs))
	until "$@"; do
		[ $SECONDS -lt $end ] || fail "timed out after ${secs}s: $what"
		sleep 0.2
	done
}

dev_exists() { [ -e "$SYS/$1" ]; }
# exited PID: has our child PID ended (a zombie until waited for)?
exited() { [ ! -e "/proc/$1" ] || [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" = Z ]; }
dev_absent() { [ ! -e "$SYS/$1" ]; }
port_state_is() { grep -qx "$2" "$SYS/$1/ports/1/state" 2>/dev/null; }
phys_state_is() { grep -qx "$2" "$SYS/$1/ports/1/phys_state" 2>/dev/null; }
rdma_link_has() { rdma link show "$1/1" 2>/dev/null | grep -q -- "$2"; }

# ibv_* tools work only with the provider; it is part of the product.
have_provider() { ibv_devinfo -d "$1" >/dev/null 2>&1; }

# Run `rdma link add`, expecting failure with an error text and a kernel
# message.
expect_add_refused() {
	local name=$1 netdev=$2 errtext=$3 kmsg=$4 out before mark
	before=$(rdma link show "$name/1" 2>/dev/null || true)
	# Never clear the log (the harness reads all of it): mark it instead.
	mark="device-lifecycle: mark $checks $name"
	echo "$mark" >/dev/kmsg
	if out=$(rdma link add "$name" type sroce netdev "$netdev" 2>&1); then
		fail "rdma link add $name on $netdev succeeded, must be refused"
	fi
	echo "$out" | grep -q "$errtext" ||
		fail "rdma link add $name on $netdev: expected '$errtext', got: $out"
	dmesg | sed -n "/$mark\$/,\$p" | grep -q "$kmsg" ||
		fail "no kernel message '$kmsg' for refused $name"
	# A name already in use keeps its device, bound as before.
	[ "$(rdma link show "$name/1" 2>/dev/null || true)" = "$before" ] ||
		fail "refused add changed $name: $(rdma link show "$name/1" 2>&1)"
	ok "add $name on $netdev refused: $out / kernel: $kmsg"
}

add_dev() {
	rdma link add "$1" type sroce netdev "$2" ||
		fail "rdma link add $1 type sroce netdev $2"
	wait_for 5 "$1 in sysfs" dev_exists "$1"
}

check_active() {
	wait_for 10 "$1 port ACTIVE" port_state_is "$1" "4: ACTIVE"
	phys_state_is "$1" "5: LinkUp" ||
		fail "$1 phys_state $(cat "$SYS/$1/ports/1/phys_state")"
	rdma_link_has "$1" "state ACTIVE physical_state LINK_UP netdev $2" ||
		fail "rdma link: $(rdma link show "$1/1")"
}

# EUI-64 from a MAC: flip the universal/local bit, insert ff:fe.
expected_guid() {
	local m
	IFS=: read -ra m <"/sys/class/net/$1/address"
	printf '%02x%s:%sff:fe%s:%s%s\n' $((0x${m[0]} ^ 2)) "${m[1]}" "${m[2]}" \
		"${m[3]}" "${m[4]}" "${m[5]}"
}

modprobe veth
modprobe 8021q
command -v ip rdma >/dev/null || fail "ip/rdma tools missing"
abi=$(sed -n 's/^#define SROCE_ABI_VERSION \([0-9]*\).*/\1/p' \
	"$SROCE_TOP/include/uapi/rdma/sroce-abi.h")
[ -n "$abi" ] || fail "cannot read SROCE_ABI_VERSION"

# On the debug kernel, forget leak suspects from before this test.
kmemleak=/sys/kernel/debug/kmemleak
[ -e $kmemleak ] || mount -t debugfs none /sys/kernel/debug 2>/dev/null || true
if [ -e $kmemleak ]; then
	echo scan >$kmemleak
	echo clear >$kmemleak
else
	kmemleak=""
fi

# --- add and delete ------------------------------------------------------
if dev_exists $DEV; then
	rdma link delete $DEV || fail "rdma link delete $DEV (harness-made)"
	wait_for 5 "$DEV removed" dev_absent $DEV
	ok "harness-created $DEV deleted"
fi
for d in "$SYS"/*; do
	if [ -e "$d/sroce_abi_version" ]; then
		fail "stray sroce device $(basename "$d")"
	fi
done

add_dev $DEV "$NETDEV"
check_active $DEV "$NETDEV"
ok "$DEV added on $NETDEV, port ACTIVE/LinkUp, rdma link shows netdev"

[ "$(cat $SYS/$DEV/sroce_abi_version)" = "$abi" ] ||
	fail "sroce_abi_version '$(cat $SYS/$DEV/sroce_abi_version)' != $abi"
ok "sysfs sroce_abi_version = $abi"
[ "$(cat $SYS/$DEV/node_guid)" = "$(expected_guid "$NETDEV")" ] ||
	fail "node_guid $(cat $SYS/$DEV/node_guid), want $(expected_guid "$NETDEV")"
ok "node_guid $(cat $SYS/$DEV/node_guid) is the EUI-64 of $NETDEV's MAC"
grep -qx Ethernet $SYS/$DEV/ports/1/link_layer ||
	fail "link_layer $(cat $SYS/$DEV/ports/1/link_layer)"
ok "link_layer Ethernet"

expect_add_refused sroce1 "$NETDEV" "File exists" \
	"$NETDEV already has RDMA device $DEV"
expect_add_refused rxe7 "$NETDEV" "Invalid argument" \
	"rxe\* device names belong to rdma_rxe"
expect_add_refused sroce1 lo "Invalid argument" "lo is not an Ethernet device"
check_active $DEV "$NETDEV"
ok "$DEV unaffected by the refused adds"

rdma link delete $DEV || fail "rdma link delete $DEV"
wait_for 5 "$DEV removed" dev_absent $DEV
rdma link show 2>/dev/null | grep -q "^link $DEV/" && fail "rdma link still lists $DEV"
ok "rdma link delete removed $DEV"

add_dev $DEV "$NETDEV"
check_active $DEV "$NETDEV"
ok "$DEV re-added on $NETDEV"

# --- port state follows the netdev --------------------------------------
events=""
if have_provider $DEV; then
	events=$(mktemp)
	timeout 60 ibv_asyncwatch -d $DEV >"$events" 2>&1 &
	watch_pid=$!
	wait_for 30 "ibv_asyncwatch to open $DEV" has_uverbs_open $watch_pid
	sleep 1	# from open() to its context (GET_CONTEXT)
fi
ip6=$(ip -6 -o addr show dev "$NETDEV" scope global | awk '{ print $4 }')

ip link set "$NETDEV" down
wait_for 10 "$DEV port DOWN" port_state_is $DEV "1: DOWN"
phys_state_is $DEV "3: Disabled" ||
	fail "phys_state $(cat $SYS/$DEV/ports/1/phys_state) with $NETDEV down"
rdma_link_has $DEV "state DOWN physical_state DISABLED" ||
	fail "rdma link: $(rdma link show $DEV/1)"
ok "ip link set $NETDEV down -> port DOWN/Disabled"
if [ -n "$events" ]; then
	ibv_devinfo -d $DEV | grep -q "state:.*PORT_DOWN" ||
		fail "ibv_devinfo: $(ibv_devinfo -d $DEV | grep state:)"
	ok "ibv_devinfo shows PORT_DOWN"
fi

ip link set "$NETDEV" up
check_active $DEV "$NETDEV"
ok "ip link set $NETDEV up -> port ACTIVE/LinkUp"
# IPv6 drops addresses on link down; give back what the harness set.
for a in $ip6; do
	ip -6 addr replace "$a" dev "$NETDEV" nodad
done
if [ -n "$events" ]; then
	ibv_devinfo -d $DEV | grep -q "state:.*PORT_ACTIVE" ||
		fail "ibv_devinfo: $(ibv_devinfo -d $DEV | grep state:)"
	ok "ibv_devinfo shows PORT_ACTIVE"
	sleep 1
	kill "$watch_pid" 2>/dev/null || true
	wait "$watch_pid" 2>/dev/null || true
	grep -q "PORT_ERR" "$events" || fail "no PORT_ERR event: $(cat "$events")"
	grep -q "PORT_ACTIVE" "$events" ||
		fail "no PORT_ACTIVE event: $(cat "$events")"
	[ "$(grep -n PORT_ERR "$events" | head -1 | cut -d: -f1)" -lt \
		"$(grep -n PORT_ACTIVE "$events" | tail -1 | cut -d: -f1)" ] ||
		fail "events out of order: $(cat "$events")"
	ok "ibv_asyncwatch saw PORT_ERR then PORT_ACTIVE"
	rm -f "$events"
else
	log "provider not usable here: ibv_devinfo/ibv_asyncwatch checks NOT run"
	fail "libibverbs cannot open $DEV (RDMAV_DRIVERS=${RDMAV_DRIVERS:-unset})"
fi

# Carrier without admin state: a veth's carrier follows its peer.
ip link add sv0 type veth peer name sv1
ip link set sv0 up
ip link set sv1 up
add_dev sroce9 sv0
check_active sroce9 sv0
expect_add_refused sroce8 sv0 "File exists" "sv0 already has RDMA device sroce9"
expect_add_refused $DEV sv1 "File exists" "$DEV: an RDMA device of that name exists"
ip link set sv1 down
wait_for 10 "sroce9 DOWN on carrier loss" port_state_is sroce9 "1: DOWN"
phys_state_is sroce9 "2: Polling" ||
	fail "phys_state $(cat $SYS/sroce9/ports/1/phys_state) without carrier"
ok "carrier off (peer down) -> port DOWN/Polling"
ip link set sv1 up
check_active sroce9 sv0
ok "carrier on -> port ACTIVE"

# --- the netdev going away ----------------------------------------------
# A user holding the device hears IB_EVENT_DEVICE_FATAL, and the device
# goes at once: ib_core disassociates the user (its later verbs fail with
# EIO) instead of waiting until it closes the device, which it may never do.
events=$(mktemp)
timeout 60 ibv_asyncwatch -d sroce9 >"$events" 2>&1 &
watch_pid=$!
wait_for 30 "ibv_asyncwatch to open sroce9" has_uverbs_open $watch_pid
sleep 1	# from open() to its context (GET_CONTEXT)
ip link del sv0 &
del_pid=$!
wait_for 10 "ibv_asyncwatch to see DEVICE_FATAL on sroce9" grep -q DEVICE_FATAL "$events"
ok "ibv_asyncwatch saw DEVICE_FATAL when sroce9's netdev was deleted"
# Within unregister_netdevice's 10 s: past it the kernel logs a leaked
# netdev reference (which fails the run).
wait_for 8 "ip link del sv0 to return while a user still holds sroce9" exited $del_pid
wait "$del_pid" || fail "ip link del sv0 failed"
kill -0 "$watch_pid" 2>/dev/null || fail "ibv_asyncwatch ended before the check"
wait_for 10 "sroce9 removed with its netdev" dev_absent sroce9
ok "deleting the netdev removed sroce9 while its user still ran"
kill "$watch_pid" 2>/dev/null || true
wait "$watch_pid" 2>/dev/null || true
rm -f "$events"

ip link add sv0 type veth peer name sv1
ip link set sv0 up
add_dev sroce9 sv0
ip netns add sroce-lifecycle
ip link set sv0 netns sroce-lifecycle
wait_for 10 "sroce9 removed when sv0 left the namespace" dev_absent sroce9
ok "moving the netdev to another namespace removed sroce9"
ip netns exec sroce-lifecycle rdma link add sroce9 type sroce netdev sv0 ||
	fail "rdma link add from inside a namespace"
wait_for 5 "sroce9 added from a namespace" dev_exists sroce9
# rdma link names the netdev only to callers in the netdev's namespace.
ip netns exec sroce-lifecycle rdma link show sroce9/1 | grep -q "netdev sv0" ||
	fail "rdma link in the namespace: $(ip netns exec sroce-lifecycle rdma link show sroce9/1)"
ok "device added on a netdev of another namespace"
ip netns del sroce-lifecycle
wait_for 15 "sroce9 removed with its namespace" dev_absent sroce9
ok "deleting the namespace (and its netdev) removed sroce9"

# --- upper devices in other namespaces ----------------------------------
# ib_core gives a port the GIDs of its netdev's upper devices in every
# namespace (a container's VLAN or macvlan on the host's NIC), so a
# namespace holding one needs sroce's sockets, and only while the port
# exists. A VLAN of sv0 moves in and out of a namespace while sroce9 on
# sv0 is deleted and added: the namespace must end with sockets exactly
# when both are there.
ns_sockets() { ip netns exec sroce-up ss -Hlun "sport = :4791" | wc -l; }
has_ns_sockets() { [ "$(ns_sockets)" -gt 0 ]; }
ip link add sv0 type veth peer name sv1
ip link set sv0 up
add_dev sroce9 sv0
ip netns add sroce-up
ip link add link sv0 name sv0.7 type vlan id 7
ip link set sv0.7 netns sroce-up
wait_for 5 "sockets in the namespace of sv0.7" has_ns_sockets
ok "a namespace with an upper device of sroce9's netdev has $(ns_sockets) RoCEv2 sockets"
(
	for _ in $(seq 40); do
		ip -n sroce-up link set sv0.7 netns 1
		ip link set sv0.7 netns sroce-up
	done
) &
mover=$!
for _ in $(seq 12); do
	rdma link delete sroce9 || fail "rdma link delete sroce9 while sv0.7 moves"
	rdma link add sroce9 type sroce netdev sv0 ||
		fail "rdma link add sroce9 while sv0.7 moves"
done
wait "$mover" || fail "moving sv0.7 between namespaces failed"
[ "$(ns_sockets)" -gt 0 ] || fail "sv0.7 in sroce-up and sroce9 on sv0, but no socket there"
rdma link delete sroce9
[ "$(ns_sockets)" -eq 0 ] || fail "$(ns_sockets) sockets stay in sroce-up without sroce9"
add_dev sroce9 sv0
[ "$(ns_sockets)" -gt 0 ] || fail "sroce9 added again, but no socket in sroce-up"
ip -n sroce-up link set sv0.7 netns 1
[ "$(ns_sockets)" -eq 0 ] || fail "$(ns_sockets) sockets stay in sroce-up after sv0.7 left"
ip link set sv0.7 netns sroce-up
ok "40 moves of sv0.7 raced 12 deletes and adds of sroce9: sockets follow both"
# The namespace goes with the VLAN in it and its sockets open.
ip netns del sroce-up
ip link del sv0
ok "deleting a namespace that holds sockets for an upper device"

# --- rmmod with devices present -----------------------------------------
ip link add sv0 type veth peer name sv1
add_dev sroce9 sv0
dev_exists $DEV || fail "$DEV vanished"
# A process holding $DEV with a QP and its mapped rings (ibv_rc_pingpong
# waits for its peer with everything created) does not keep the module:
# rmmod disassociates it.
ibv_rc_pingpong -d $DEV -p 18940 >/dev/null 2>&1 &
holder=$!
wait_for 30 "ibv_rc_pingpong to listen" listening 18940
rmmod sroce || fail "rmmod sroce with devices present and a user holding $DEV"
kill -0 "$holder" 2>/dev/null || fail "ibv_rc_pingpong ended before rmmod"
kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
for d in $DEV sroce9; do
	dev_absent "$d" || fail "$d still present after rmmod"
done
grep -q '^sroce ' /proc/modules && fail "sroce still loaded"
ok "rmmod sroce removed $DEV and sroce9"
ip link del sv0

if [ -n "$kmemleak" ]; then
	# Objects must be older than kmemleak's minimum age to be reported.
	sleep 6
	echo scan >$kmemleak
	echo scan >$kmemleak
	leaks=$(cat $kmemleak)
	[ -z "$leaks" ] || fail "kmemleak after rmmod: $leaks"
	ok "kmemleak: nothing leaked after rmmod"
else
	log "kernel without kmemleak: leak scan only on the debug kernel"
fi

insmod "$SROCE_MODULE" || fail "insmod $SROCE_MODULE after rmmod"
add_dev $DEV "$NETDEV"
check_active $DEV "$NETDEV"
ok "module reloaded, $DEV re-added and ACTIVE"

log "$checks checks passed"
