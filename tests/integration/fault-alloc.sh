#!/bin/bash
# sroce-test: kernels=debug full-kernels=debug pairs=sroce:sroce timeout=300
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

# connected FILE SECONDS: wait until FILE has a "remote address" line (the
# tool's TCP setup is done). Reads what was appended since the last look,
# with bash builtins only: a fork costs long enough on the debug guest that
# a short run could end before a polling grep noticed it had started.
connected() {
	local file=$1 deadline=$((SECONDS + $2)) fd tick part line=""
	exec {fd}<"$file" {tick}<> <(:)
	while ((SECONDS < deadline)); do
		if IFS= read -r -u "$fd" part; then
			line+=$part
			[[ $line == *"remote address"* ]] && break
			line=""
		else
			line+=$part
			read -r -t 0.05 -u "$tick" || true
		fi
	done
	exec {fd}<&- {tick}<&-
	[[ $line == *"remote address"* ]]
}

# faulty NAME CMD...: CMD as server on a, as client of a on b (port and
# peer appended); once it printed its peer's address (connected, its TCP
# setup done) fault injection starts in its tasks.
faulty() {
	local name=$1 out pidf pid t
	shift
	port=$((port + 1))
	out=$SROCE_OUT/$name-$SROCE_ROLE.txt
	pidf=$SROCE_OUT/$name-$SROCE_ROLE.pid
	: >"$out"
	log "$name: $*"
	set -- "$@" -p "$port"
	if [[ $SROCE_ROLE == b ]]; then
		wait_peer_port "$port" 60
		set -- "$@" "$SROCE_PEER_IP"
	fi
	# The wrapper leaves the tool's own PID (stdbuf and the tool exec it).
	# shellcheck disable=SC2016 # $$ and $@ are the wrapper's
	timeout -k 5 200 bash -c 'echo $$ >"$0"; exec stdbuf -oL "$@"' \
		"$pidf" "$@" >"$out" 2>&1 &
	pid=$!
	if [[ $SROCE_ROLE == a ]]; then
		announce_port "$port" tcp 60
	fi
	connected "$out" 60 || { cat "$out"; fail "$name: no connection"; }
	t=$(<"$pidf")
	[[ -d /proc/$t ]] || { cat "$out"; fail "$name: ended before fault injection could start"; }
	for t in /proc/"$t"/task/*/make-it-fail; do
		echo 1 >"$t" || fail "$name: cannot start fault injection"
	done
	log "$name: fault injection on"
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
