#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1,6.12,7.2 pairs=sroce:sroce,sroce:rxe pairs.6.1=sroce:sroce pairs.7.2=sroce:sroce timeout=600
# SPDX-License-Identifier: GPL-2.0
#
# Addressing (issue 31, item 5), every message checked by
# tests/verify/sroce-msg over RC with an SRQ, guest a sending to b:
#   IPv6 only  both guests take eth0's IPv4 address away: the device's
#              GID table must lose its IPv4 GID, and sroce-msg runs with
#              GIDs and its side channel on IPv6. The address comes back,
#              and with it the GID.
#   churn      each guest adds an IPv4 and an IPv6 address on subnets of
#              their own and runs sroce-msg over the IPv4 one (and then
#              the IPv6 one) while it adds and removes two more IPv4 and
#              two more IPv6 addresses every 0.1 s (4-5 times a run):
#              no message is lost, and once every added address is gone
#              the GID table is what it was before.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd ip
msgcheck=$SROCE_BUILD/sroce-msg
[[ -x $msgcheck ]] || fail "$msgcheck is missing (make verify)"
port=18640
me=${SROCE_LOCAL_IP##*.} peer=${SROCE_PEER_IP##*.}
gids=/sys/class/infiniband/$SROCE_DEV/ports/1/gids
trap dump_counters EXIT

# roce_v2_gids: the device's RoCE v2 GIDs, one per line, sorted.
roce_v2_gids() {
	local f i type gid
	for f in "$gids"/*; do
		i=${f##*/}
		type=
		read -r type <"$gids/../gid_attrs/types/$i" 2>/dev/null || true
		[[ $type == "RoCE v2" ]] || continue
		read -r gid <"$f"
		[[ $gid == 0000:0000:0000:0000:0000:0000:0000:0000 ]] || echo "$gid"
	done | sort
}

has_gid() { roce_v2_gids | grep -qx "$(gid_of_ip "$1")"; }
lacks_gid() { ! has_gid "$1"; }

# msg NAME GIDX PEER [ARGS...]: sroce-msg, a sending, its side channel to PEER.
msg() {
	local name=$1 gidx=$2 to=$3 snd=()
	shift 3
	[[ $SROCE_ROLE == a ]] && snd=(-S)
	pair "$name" "$msgcheck" -d "$SROCE_DEV" -g "$gidx" -t srq -q 2 "$@" \
		"${snd[@]}" -- -c "$to"
	grep -q "^msg: srq .*, 0 failures: PASS$" "$SROCE_OUT/$name-$SROCE_ROLE.txt" ||
		fail "$name: no PASS line"
}

# IPv6 only.
barrier v4-off
ip addr del "$SROCE_LOCAL_IP/24" dev "$SROCE_NETDEV"
wait_for 10 lacks_gid "$SROCE_LOCAL_IP" ||
	fail "the GID of $SROCE_LOCAL_IP stayed after the address was removed"
v4=$(roce_v2_gids | grep -c "^0000:0000:0000:0000:0000:ffff:" || true)
((v4 == 0)) || fail "$v4 IPv4 GIDs left on an IPv6-only link: $(roce_v2_gids | tr '\n' ' ')"
barrier v4-gone
msg ipv6-only "$(gid_index "$SROCE_DEV" 6)" "$SROCE_PEER_IP6" -n 300 -M 65536
ip addr add "$SROCE_LOCAL_IP/24" dev "$SROCE_NETDEV"
gid_index "$SROCE_DEV" 4 >/dev/null
barrier v4-back
log "IPv6 only: no IPv4 GID, every message over IPv6; the IPv4 GID back with its address"

# Addresses added and removed under traffic.
base=$(roce_v2_gids)
ip addr add "10.0.201.$me/24" dev "$SROCE_NETDEV"
ip -6 addr add "fd00:201::$me/64" dev "$SROCE_NETDEV" nodad
barrier churn-up

# churn_start FLAG: in the background, add and remove the churned
# addresses until FLAG is gone; churn_stop FLAG sets rounds to the times
# all four were added (a failed ip command is not counted).
churn_start() {
	local flag=$1
	(
		set +e
		n=0
		while [[ -e $flag ]]; do
			ok=1
			for a in "10.0.202.$me/24" "10.0.203.$me/24"; do
				ip addr add "$a" dev "$SROCE_NETDEV" || ok=0
			done
			for a in "fd00:202::$me/64" "fd00:203::$me/64"; do
				ip -6 addr add "$a" dev "$SROCE_NETDEV" nodad || ok=0
			done
			sleep 0.1
			ip addr flush dev "$SROCE_NETDEV" to 10.0.202.0/24
			ip addr flush dev "$SROCE_NETDEV" to 10.0.203.0/24
			ip -6 addr flush dev "$SROCE_NETDEV" to fd00:202::/64
			ip -6 addr flush dev "$SROCE_NETDEV" to fd00:203::/64
			sleep 0.1
			n=$((n + ok))
		done
		echo "$n" >"$flag.count"
	) &
	churner=$!
}

churn_stop() {
	local flag=$1
	rm -f "$flag"
	wait "$churner"
	read -r rounds <"$flag.count"
}

for family in 4 6; do
	if [[ $family == 4 ]]; then
		local_ip=10.0.201.$me to=10.0.201.$peer
	else
		local_ip=fd00:201::$me to=fd00:201::$peer
	fi
	idx=$(gid_index "$SROCE_DEV" "$family" "$local_ip")
	flag=$SROCE_OUT/churning-$family
	: >"$flag"
	churn_start "$flag"
	msg "churn-ipv$family" "$idx" "$to" -n 3600 -M 16384
	churn_stop "$flag"
	((rounds >= 3)) || fail "churn over IPv$family: the addresses came and went only $rounds times under traffic"
	log "IPv$family: every message over $local_ip while 4 other addresses came and went $rounds times"
done

ip addr del "10.0.201.$me/24" dev "$SROCE_NETDEV"
ip -6 addr del "fd00:201::$me/64" dev "$SROCE_NETDEV"
gids_back() { [[ $(roce_v2_gids) == "$base" ]]; }
wait_for 10 gids_back ||
	fail "the GID table did not return to what it was: now $(roce_v2_gids | tr '\n' ' '), was ${base//$'\n'/ }"
barrier churn-done
log "PASS: IPv6-only link, and addresses added and removed under traffic: every message checked, the GID table follows"
