#!/bin/bash
# sroce-test: kernels=debug pairs=sroce:sroce timeout=300
# SPDX-License-Identifier: GPL-2.0
#
# A QP's cached IPv6 route must not outlive its network namespace (an IPv6
# dst's ops live in the namespace). Guest a moves its netdev into a new
# namespace with an sroce device on it (lib.sh netns_enter), and
# tests/verify/sroce-hold exchanges 64 verified RC SENDs with guest b over
# the IPv6 GIDs, so the QP caches its route, then leaves the namespace
# while still holding the QP. The namespace is deleted: the netdev (a
# physical one) goes back to the initial namespace, and the device goes
# with it at once although sroce-hold still holds its QP (ib_core
# disassociates the holder and destroys the QP); the QP's cached routes
# are released when the netdev leaves, before the namespace is
# dismantled. sroce-hold's own destroy then finds nothing left to do.
# The namespace must be dismantled, the netdev never be waited for, and
# the debug kernel report nothing (KASAN, kmemleak, lockdep).
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd ip rdma
hold=$SROCE_BUILD/sroce-hold
[[ -x $hold ]] || fail "$hold is missing (make verify)"
[[ $SROCE_DEV_TYPE == sroce ]] || fail "needs an sroce device"

NS=sroce-route
NS_DEV=sroce8
out=$SROCE_OUT/hold-$SROCE_ROLE.txt
dev=$SROCE_DEV
if [[ $SROCE_ROLE == a ]]; then
	trap 'netns_leave "$NS" || { echo "FAIL: could not leave namespace $NS" >&2; exit 1; }' EXIT
	netns_enter "$NS" "$NS_DEV"
	dev=$NS_DEV
fi
barrier route-ready 120

args=(-d "$dev" -g "$(gid_index "$dev" 6)")
[[ $SROCE_ROLE == a ]] && args+=(-n /proc/1/ns/net)
[[ $SROCE_ROLE == b ]] && args+=(-c)
# a runs in the initial namespace from the start but on a device whose
# netdev is in $NS (RDMA devices are shared between namespaces).
coproc HOLD { with_timeout 200 "$hold" "${args[@]}" 2>&1; }
read -r -t 60 -u "${HOLD[0]}" word qpn gid || fail "sroce-hold said nothing"
[[ $word == local ]] || fail "sroce-hold: '$word $qpn $gid'"
tell_peer hold "$qpn $gid"
from_peer hold 60 >&"${HOLD[1]}"
read -r -t 120 -u "${HOLD[0]}" line || fail "sroce-hold: no traffic"
echo "$line" >"$out"
[[ $line == "ready 32 verified" ]] || fail "sroce-hold: '$line', not 32 messages received intact"
log "64 RC SENDs over IPv6 exchanged, 32 received and verified here"
barrier route-traffic 120

if [[ $SROCE_ROLE == a ]]; then
	ip netns delete "$NS"
	# The netdev comes back when the namespace is dismantled.
	wait_for 30 test -e "/sys/class/net/$SROCE_NETDEV" ||
		fail "$SROCE_NETDEV did not come back from the deleted namespace"
	wait_for 30 test ! -e "/sys/class/infiniband/$NS_DEV" ||
		fail "$NS_DEV stayed after its netdev left the namespace"
	log "namespace $NS deleted: $NS_DEV went at once, its QP still held"
fi
echo destroy >&"${HOLD[1]}"
read -r -t 60 -u "${HOLD[0]}" line || line=
echo "$line" >>"$out"
[[ $line == destroyed ]] || fail "sroce-hold: '$line', not destroyed"
wait "$HOLD_PID" || fail "sroce-hold failed"
if [[ $SROCE_ROLE == a ]]; then
	# With the limit at one namespace, a new one can be made only once
	# none is left: $NS must be dismantled now.
	limit=/proc/sys/user/max_net_namespaces
	max=$(cat "$limit")
	echo 1 >"$limit"
	settled=0
	wait_for 60 unshare -n true && settled=1
	echo "$max" >"$limit"
	((settled)) || fail "namespace $NS was not dismantled after its device went away"
	! dmesg | grep -q "unregister_netdevice: waiting for" ||
		fail "the kernel waited for a netdev reference"
	log "the holder's QP destroyed after its device; $NS dismantled"
fi
barrier route-done 120
log "PASS"
