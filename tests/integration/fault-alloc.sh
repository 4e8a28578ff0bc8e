#!/bin/bash
# sroce-test: kernels=debug pairs=sroce:sroce timeout=300
# SPDX-License-Identifier: GPL-2.0
#
# A request packet that cannot be allocated must not stall its QP. With
# failslab (the debug kernel's fault injection) failing a third of the
# atomic allocations made in the verbs processes' own context, which is
# where sroce builds the packets a doorbell asks for, both guests run:
#   RC  ibv_rc_pingpong -c, 4-packet messages (the old kernel armed no
#       timer when the first packet of a burst failed: it waited forever);
#   UD  ibv_ud_pingpong, which waits for each answer: a message that is
#       never sent stops it (UD has no timer at all).
# Injection starts once a pingpong is connected, so that its TCP setup
# (bind allocates atomically) is spared.
# req_alloc_failures must show the failures happened, and the requester's
# retry (2 ms later, from a timer) must have carried every message.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd ibv_rc_pingpong ibv_ud_pingpong pgrep stdbuf ss
[[ $SROCE_DEV == sroce* ]] || fail "needs sroce on both sides"
fs=/sys/kernel/debug/failslab
[[ -d $fs ]] || fail "the kernel has no failslab"
port=18990 iters=400

stop_faults() {
	echo 0 >"$fs/probability"
}
trap stop_faults EXIT
# Only allocations that cannot sleep (ignore-gfp-wait), only in tasks that
# asked for it (make-it-fail), quietly. In a verbs process those are the
# packets a doorbell makes sroce build (6.1 cannot narrow this to the
# sk_buff cache at run time: its failslab attribute is read-only).
echo Y >"$fs/ignore-gfp-wait"
echo N >"$fs/cache-filter"
echo Y >"$fs/task-filter"
echo 0 >"$fs/verbose"
echo -1 >"$fs/times"
echo 0 >"$fs/space"
echo 1 >"$fs/interval"
echo 33 >"$fs/probability"

# faulty NAME CMD...: CMD as server on a, as client of a on b (port and
# peer appended); once it printed its peer's address (connected, its TCP
# setup done) fault injection starts in its tasks.
faulty() {
	local name=$1 out pid t
	shift
	port=$((port + 1))
	out=$SROCE_OUT/$name-$SROCE_ROLE.txt
	log "$name: $*"
	if [[ $SROCE_ROLE == a ]]; then
		timeout -k 5 200 stdbuf -oL "$@" -p "$port" >"$out" 2>&1 &
		pid=$!
		announce_port "$port" tcp 60
	else
		wait_peer_port "$port" 60
		timeout -k 5 200 stdbuf -oL "$@" -p "$port" "$SROCE_PEER_IP" >"$out" 2>&1 &
		pid=$!
	fi
	wait_for 60 grep -q "remote address" "$out" || { cat "$out"; fail "$name: no connection"; }
	# $pid is timeout(1); the tool (stdbuf execs it) is its child
	for t in /proc/"$(pgrep -P "$pid")"/task/*/make-it-fail; do
		echo 1 >"$t" || fail "$name: cannot start fault injection"
	done
	wait "$pid" || { cat "$out"; fail "$name failed"; }
	cat "$out"
	barrier "$name"
}

fails0=$(link_counter "$SROCE_DEV" req_alloc_failures)
idx=$(gid_index "$SROCE_DEV" 4)

faulty rc-faults ibv_rc_pingpong -d "$SROCE_DEV" -g "$idx" -s 4096 -m 1024 -n "$iters" -c
out=$SROCE_OUT/rc-faults-$SROCE_ROLE.txt
grep -q "^$iters iters in" "$out" || fail "rc-faults: no '$iters iters' summary"
! grep -qi "invalid\|error\|couldn't" "$out" || fail "rc-faults: errors in ibv_rc_pingpong output"

faulty ud-faults ibv_ud_pingpong -d "$SROCE_DEV" -g "$idx" -s 1024 -n "$iters"
out=$SROCE_OUT/ud-faults-$SROCE_ROLE.txt
grep -q "^$iters iters in" "$out" || fail "ud-faults: no '$iters iters' summary: a message was lost"

stop_faults
fails=$(($(link_counter "$SROCE_DEV" req_alloc_failures) - fails0))
((fails > 0)) || fail "no request packet allocation failed: the faults were not injected"
log "$fails request packets could not be allocated; every message arrived"
