#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of tools/sroce-demo: each guest shows its RDMA device in turn,
# then the guests talk over it: guest a serves, guest b is the client of
# rping (rdma_cm; SENDs, RDMA READ and WRITE; the client checks the data it
# gets back) and of ib_write_bw (RDMA WRITEs). Guest b writes what it saw to
# $SROCE_OUT/demo.txt for the summary.
#   demo-guest.sh [--brief]   (--brief: one line per device, no ping)
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"
require_pair
require_cmd rping ib_write_bw

brief=0
[[ ${1:-} == --brief ]] && brief=1
pings=5
ping_size=64
bw_size=65536
bw_iters=500
rping_port=7174
bw_port=18515
result=$SROCE_OUT/demo.txt
echo "$SROCE_DEV" >"$SROCE_PAIR_DIR/dev.$SROCE_ROLE"

banner() {
	echo
	echo "==== guest $SROCE_ROLE ($SROCE_LOCAL_IP, $SROCE_DEV): $* ===="
}

# One guest at a time, so the two outputs do not interleave.
show_device() {
	local idx4 idx6
	idx4=$(gid_index "$SROCE_DEV" 4)
	idx6=$(gid_index "$SROCE_DEV" 6)
	if ((brief)); then
		banner "$SROCE_DEV on $SROCE_NETDEV, port $(cut -d' ' -f2 \
			"/sys/class/infiniband/$SROCE_DEV/ports/1/state"), RoCEv2 GIDs $idx4 (IPv4) and $idx6 (IPv6)"
		return
	fi
	banner "the RDMA link on eth0 (rdma link show)"
	rdma link show
	banner "the device as libibverbs sees it (ibv_devinfo -d $SROCE_DEV)"
	ibv_devinfo -d "$SROCE_DEV" || fail "ibv_devinfo -d $SROCE_DEV failed"
	banner "RoCEv2 GIDs of $SROCE_DEV"
	echo "IPv4 GID index $idx4: $(gid_of_ip "$SROCE_LOCAL_IP")"
	echo "IPv6 GID index $idx6: $(gid_of_ip "$SROCE_LOCAL_IP6")"
}

if [[ $SROCE_ROLE == a ]]; then
	show_device
	barrier shown-a
	barrier shown-b
	if ((!brief)); then
		banner "ping guest b over the link, IPv4 and IPv6"
		ping -c 3 -W 5 "$SROCE_PEER_IP" || fail "no IPv4 ping reply from $SROCE_PEER_IP"
		ping -c 3 -W 5 "$SROCE_PEER_IP6" || fail "no IPv6 ping reply from $SROCE_PEER_IP6"
	fi
	barrier pinged
else
	barrier shown-a
	show_device
	barrier shown-b
	barrier pinged
fi
peer_dev=$(cat "$SROCE_PAIR_DIR/dev.$SROCE_PEER_ROLE")
if [[ $SROCE_ROLE == b ]]; then
	echo "devices $peer_dev $SROCE_DEV" >"$result"
fi

# rping: a serves, b connects; -V: each side checks the data it received.
# rping can exit 255 after a complete run when its event thread loses a race
# with the teardown (see tests/integration/rping.sh): the pings are counted
# from the output instead.
out=$SROCE_OUT/rping.txt
if [[ $SROCE_ROLE == a ]]; then
	rping -s -a "$SROCE_LOCAL_IP" -p "$rping_port" -C "$pings" -S "$ping_size" -V \
		>"$out" 2>&1 &
	pid=$!
	announce_port "$rping_port" rdma
	wait "$pid" || true
	barrier rping
else
	wait_peer_port "$rping_port"
	banner "rping -c -a $SROCE_PEER_IP -C $pings -S $ping_size -v -V (guest a's $peer_dev)"
	with_timeout 120 rping -c -a "$SROCE_PEER_IP" -p "$rping_port" -C "$pings" -S "$ping_size" \
		-v -V >"$out" 2>"$out.err" || true
	cat "$out"
	got=$(grep -c "^ping data: rdma-ping-" "$out" || true)
	! grep -qi "mismatch\|error" "$out" "$out.err" || { cat "$out.err"; fail "rping reported errors"; }
	((got == pings)) || fail "rping: $got of $pings pings came back"
	echo "rping $got $pings" >>"$result"
	barrier rping
fi

# ib_write_bw: b WRITEs into a's memory.
idx=$(gid_index "$SROCE_DEV" 4)
cmd=(ib_write_bw -d "$SROCE_DEV" -x "$idx" -p "$bw_port" -s "$bw_size" -n "$bw_iters" -F)
out=$SROCE_OUT/write_bw.txt
if [[ $SROCE_ROLE == a ]]; then
	with_timeout 240 "${cmd[@]}" >"$out" 2>&1 &
	pid=$!
	announce_port "$bw_port"
	wait "$pid" || { cat "$out"; fail "ib_write_bw server failed"; }
else
	wait_peer_port "$bw_port"
	banner "${cmd[*]} $SROCE_PEER_IP (into guest a's $peer_dev)"
	with_timeout 240 "${cmd[@]}" "$SROCE_PEER_IP" >"$out" 2>&1 || { cat "$out"; fail "ib_write_bw failed"; }
	sed -n '/#bytes/,$p' "$out"
	# perftest's MB are MiB
	mbs=$(awk -v s="$bw_size" -v n="$bw_iters" '$1 == s && $2 == n { printf "%.1f", $4 * 1.048576 }' "$out")
	[[ -n $mbs ]] || fail "ib_write_bw printed no result row"
	echo "write_bw $mbs" >>"$result"
fi
barrier write-bw 300
