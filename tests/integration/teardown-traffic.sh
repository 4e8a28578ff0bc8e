#!/bin/bash
# sroce-test: kernels=6.1 pairs=sroce:sroce timeout=240
# SPDX-License-Identifier: GPL-2.0
#
# Teardown while traffic runs. In each phase guest a runs two perftest
# clients against guest b for 30 s, RC RDMA WRITE (ib_write_bw, 64 KiB)
# and UD SEND (ib_send_bw -c UD), and once bytes are moving tears down
# under them:
#   kill9        kill -9 of both verbs processes mid-transfer;
#   link-delete  rdma link delete, the processes still running;
#   rmmod        rmmod sroce, the processes still running (ib_core
#                disassociates them: nothing waits for them to exit);
#                while packets are in flight the module is held and
#                rmmod is refused at once ("in use"), then it must go
#                within 10 s of rdma link delete.
# Each teardown must finish within 10 s; the device is then created again
# and the next phase's traffic must flow on it. The harness fails the run
# on any kernel report and, on the debug kernel, on a leak (kmemleak).
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd ib_write_bw ib_send_bw rdma rmmod insmod ss
[[ $SROCE_DEV == sroce* ]] || fail "needs sroce on both sides"
port=18960
teardowns=0
pids=()

stop_all() {
	local p
	for p in "${pids[@]}"; do
		kill -9 "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	pids=()
}
trap stop_all EXIT

# restore: the module loaded and the device ACTIVE again.
restore() {
	grep -q '^sroce ' /proc/modules || insmod "$SROCE_MODULE" || fail "insmod $SROCE_MODULE"
	[[ -e /sys/class/infiniband/$SROCE_DEV ]] ||
		rdma link add "$SROCE_DEV" type sroce netdev "$SROCE_NETDEV" ||
		fail "rdma link add $SROCE_DEV"
	wait_for 30 grep -qx "4: ACTIVE" "/sys/class/infiniband/$SROCE_DEV/ports/1/state" ||
		fail "$SROCE_DEV not ACTIVE after re-creation"
	gid_index "$SROCE_DEV" 4 >/dev/null
}

# timed SECONDS WHAT CMD...: CMD must succeed within SECONDS.
timed() {
	local t=$1 what=$2 t0=$SECONDS
	shift 2
	with_timeout "$t" "$@" || fail "$what: failed or took over ${t}s"
	log "$what: done in $((SECONDS - t0)) s"
}

phase() {
	local name=$1 idx p t0 out
	local -a rc=(ib_write_bw -s 65536 -D 30 -F) ud=(ib_send_bw -c UD -s 1024 -D 30 -F)
	idx=$(gid_index "$SROCE_DEV" 4)
	port=$((port + 2))
	if [[ $SROCE_ROLE == b ]]; then
		"${rc[@]}" -d "$SROCE_DEV" -x "$idx" -p "$port" >"$SROCE_OUT/$name-rc-b.txt" 2>&1 &
		pids+=($!)
		"${ud[@]}" -d "$SROCE_DEV" -x "$idx" -p $((port + 1)) >"$SROCE_OUT/$name-ud-b.txt" 2>&1 &
		pids+=($!)
		announce_port "$port" tcp 60
		announce_port $((port + 1)) tcp 60
		barrier "$name" 120
		stop_all
		return
	fi
	wait_peer_port "$port" 60
	wait_peer_port $((port + 1)) 60
	"${rc[@]}" -d "$SROCE_DEV" -x "$idx" -p "$port" "$SROCE_PEER_IP" \
		>"$SROCE_OUT/$name-rc-a.txt" 2>&1 &
	pids+=($!)
	"${ud[@]}" -d "$SROCE_DEV" -x "$idx" -p $((port + 1)) "$SROCE_PEER_IP" \
		>"$SROCE_OUT/$name-ud-a.txt" 2>&1 &
	pids+=($!)
	wait_for 30 sroce_moving || fail "$name: no traffic on $SROCE_DEV"
	for p in "${pids[@]}"; do
		kill -0 "$p" 2>/dev/null || fail "$name: a perftest client ended before the teardown"
	done
	case $name in
	kill9)
		t0=$SECONDS
		stop_all
		((SECONDS - t0 <= 10)) || fail "$name: the clients took $((SECONDS - t0)) s to die"
		log "$name: both clients killed and reaped in $((SECONDS - t0)) s"
		;;
	link-delete) timed 10 "$name: rdma link delete under traffic" rdma link delete "$SROCE_DEV" ;;
	rmmod)
		# Packets in flight hold the module (teardown-qdisc.sh), so
		# under traffic rmmod may be refused, at once; once the device
		# is gone they drain and it must go, the users still running.
		if out=$(with_timeout 10 rmmod sroce 2>&1); then
			log "$name: rmmod sroce under traffic succeeded"
		else
			[[ $out == *"in use"* ]] || fail "$name: rmmod sroce under traffic: $out"
			log "$name: rmmod sroce under traffic refused: $out"
			timed 10 "$name: rdma link delete under traffic" rdma link delete "$SROCE_DEV"
			wait_for 10 rmmod sroce || fail "$name: rmmod sroce once the device was gone"
		fi
		out=0
		for p in "${pids[@]}"; do
			kill -0 "$p" 2>/dev/null && out=$((out + 1))
		done
		# perftest may exit on its own once its device is gone.
		log "$name: sroce unloaded, $out of 2 clients still running"
		;;
	esac
	teardowns=$((teardowns + 1))
	stop_all
	restore
	barrier "$name" 120
}

phase kill9
phase link-delete
phase rmmod
# The last phase's re-created device must carry traffic too.
phase kill9
[[ $SROCE_ROLE == a ]] && log "$teardowns teardowns under RC and UD traffic"
exit 0
