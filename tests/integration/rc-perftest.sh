#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1,6.12,7.2,debug pairs=sroce:sroce,sroce:rxe,rxe:sroce pairs.6.1=sroce:sroce mtu=9000 pairs.7.2=sroce:sroce full-pairs.6.1=sroce:sroce,sroce:rxe,rxe:sroce,sroce:sroce+e1000e,rxe:sroce+e1000e,sroce:sroce+vmxnet3,sroce:rxe+vmxnet3 timeout=600 full-distros=trixie:6.12,sid:7.2
# SPDX-License-Identifier: GPL-2.0
#
# perftest's RC tools between the two guests: guest a serves, guest b runs
# the client (the side that posts the RDMA WRITEs, READs, SENDs and atomics;
# the latency tools ping-pong, so both sides post there). Every bandwidth and
# latency tool runs with the QP exchange over perftest's TCP side channel,
# the bandwidth tools with all sizes from 2 B to 8 MiB (-a), the latency
# tools with one size each; then each opcode once more (write and read
# bandwidth, send and atomic latency) connected by rdma_cm (-R), since
# rdma_cm only sets the QP up and the opcodes run the same afterwards.
# Iterations are bounded (-n): TCG guests move tens of MB/s.
#
# perftest exits non-zero on a completion error or a failed connection. On
# top of that, the client's output must have exactly the result rows this
# script expects (one per size, each with the requested iteration count),
# and no side may print an error, so a run that stopped early or skipped a
# size fails.
#
# make check runs everything on 6.1 sroce:sroce (about 70 s on a quiet
# host); make check-full adds rdma_rxe on either side, every opcode
# once (every size of the bandwidth tools, one connection method each for
# the rest), and a subset on 6.12, 7.2 and the debug kernel.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw ib_write_lat \
	ib_read_lat ib_send_lat ib_atomic_lat ss rdma

port=18700
runs=0
idx4=$(gid_index "$SROCE_DEV" 4)
idx6=$(gid_index "$SROCE_DEV" 6)
# -a: every power of two from 2 B to 8 MiB.
all_sizes=$(for ((s = 2; s <= 8388608; s *= 2)); do echo "$s"; done)

# perftest 4.5-0.17 (Debian 12) connects with -R in two steps: a control QP
# through rdma_cm, a handshake over it, then the test QPs through a second
# rdma_cm listen on the same port. Right after the handshake the client
# sends its connect request, and if the server has not listened again yet,
# the request is rejected (reason 8, invalid service ID). perftest then
# retries with rdma_cm IDs it has just destroyed and crashes in librdmacm
# (fixed upstream in perftest 3d9d8d0, "Fix crashes and logical flaws in
# RDMA CM connection retry"). It happens with rxe on both sides as well
# (1 in 12 -R latency runs on 6.1). The client therefore waits a moment in
# every rdma_connect(): an LD_PRELOAD shim built here, in the guest.
cm_delay_ms=1000
[[ $SROCE_KERNEL == debug ]] && cm_delay_ms=3000
cm_shim=/tmp/perftest-cm-delay.so
build_cm_shim() {
	[[ $SROCE_ROLE == b && ! -e $cm_shim ]] || return 0
	require_cmd cc
	cc -shared -fPIC -O2 -o "$cm_shim" -x c - -ldl <<-'EOF' ||
		#define _GNU_SOURCE
		#include <dlfcn.h>
		#include <stdlib.h>
		#include <unistd.h>

		struct rdma_cm_id;
		struct rdma_conn_param;

		int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
		{
			static int (*real)(struct rdma_cm_id *, struct rdma_conn_param *);
			const char *ms = getenv("PERFTEST_CM_DELAY_MS");

			if (!real)
				real = (int (*)(struct rdma_cm_id *, struct rdma_conn_param *))
					dlsym(RTLD_NEXT, "rdma_connect");
			if (ms)
				usleep(atoi(ms) * 1000);
			return real(id, param);
		}
	EOF
		fail "cannot build the rdma_connect shim"
}

# check_output NAME FILE: no error message from perftest in FILE.
check_output() {
	if grep -qiE "error|fail|couldn't|unable|bad wc|segmentation|core dumped" "$2"; then
		cat "$2"
		fail "$1: perftest reported errors"
	fi
}

# check_rows NAME FILE ITERS SIZE...: FILE has exactly one result row per
# SIZE, with ITERS iterations, and no other result row. The figures are not
# checked (TCG timing is noise); perftest prints 0 MB/s and "inf"
# microseconds when it finds no CPU frequency (a guest that could not
# calibrate its TSC, as the debug kernel once did).
value='([0-9.]+|inf|-?nan)'
check_rows() {
	local name=$1 file=$2 iters=$3 size rows
	shift 3
	for size in "$@"; do
		[[ $(grep -cE "^ *$size +$iters +$value" "$file") == 1 ]] ||
			{ cat "$file"; fail "$name: no single result row for $size B x $iters"; }
	done
	rows=$(grep -cE "^ *[0-9]+ +[0-9]+ +$value " "$file" || true)
	[[ $rows == "$#" ]] ||
		{ cat "$file"; fail "$name: $rows result rows, expected $#"; }
}

# perf NAME CM ITERS SIZES TOOL [ARGS...]: one perftest run, guest a the
# server and guest b the client. CM: tcp (perftest's TCP exchange, IPv4
# GID), tcp6 (the same with the IPv6 GID) or rdma (rdma_cm, -R). SIZES: the
# sizes of the result rows expected from the client, "all" with -a.
perf() {
	local name=$1 cm=$2 iters=$3 sizes=$4 out pid rc t0=$SECONDS
	shift 4
	port=$((port + 1))
	out=$SROCE_OUT/$name.txt
	local -a cmd=("$@" -d "$SROCE_DEV" -p "$port" -n "$iters" -F)
	local -a env=()
	case $cm in
	tcp) cmd+=(-x "$idx4") ;;
	tcp6) cmd+=(-x "$idx6") ;;
	rdma)
		cmd+=(-R)
		build_cm_shim
		[[ $SROCE_ROLE == b ]] &&
			env=(env LD_PRELOAD="$cm_shim" PERFTEST_CM_DELAY_MS="$cm_delay_ms")
		;;
	*) fail "perf: unknown exchange $cm" ;;
	esac
	if [[ $SROCE_ROLE == a ]]; then
		with_timeout 240 "${cmd[@]}" >"$out" 2>&1 &
		pid=$!
		announce_port "$port" "$([[ $cm == rdma ]] && echo rdma || echo tcp)" 120
		# A client that failed leaves this server waiting: stop there.
		while kill -0 "$pid" 2>/dev/null; do
			if [[ -e $SROCE_PAIR_DIR/exit.b ]]; then
				kill "$pid" 2>/dev/null || true
				fail "$name: the client failed"
			fi
			sleep 0.5
		done
		rc=0
		wait "$pid" || rc=$?
		((rc == 0)) || { cat "$out"; fail "$name: server exited with $rc (${cmd[*]})"; }
		check_output "$name" "$out"
	else
		wait_peer_port "$port" 180
		rc=0
		with_timeout 240 "${env[@]}" "${cmd[@]}" "$SROCE_PEER_IP" >"$out" 2>&1 || rc=$?
		((rc == 0)) || { cat "$out"; fail "$name: client exited with $rc (${cmd[*]})"; }
		check_output "$name" "$out"
		# shellcheck disable=SC2086 # a list of sizes
		if [[ $sizes == all ]]; then
			check_rows "$name" "$out" "$iters" $all_sizes
		else
			check_rows "$name" "$out" "$iters" $sizes
		fi
		sed -n '/#bytes/,$p' "$out" | sed '/^-*$/d'
	fi
	log "$name: ok ($((SECONDS - t0)) s: ${cmd[*]})"
	runs=$((runs + 1))
	barrier "$name" 300
}

# against rdma_rxe on either side, or sroce on both
against=sroce
[[ $SROCE_DEV_TYPE == rxe || $SROCE_PEER_DEV_TYPE == rxe ]] && against=rxe
case $SROCE_KERNEL/$against in
6.1/rxe)
	perf write-bw tcp 5 all ib_write_bw -a
	perf read-bw tcp 5 all ib_read_bw -a
	perf send-bw tcp 5 all ib_send_bw -a
	perf atomic-bw tcp 100 8 ib_atomic_bw
	perf atomic-lat-cm rdma 50 8 ib_atomic_lat -A CMP_AND_SWAP
	perf write-lat tcp 100 64 ib_write_lat -s 64
	perf read-lat-cm rdma 50 64 ib_read_lat -s 64
	perf send-lat tcp 20 8192 ib_send_lat -s 8192
	perf write-bw-ip6 tcp6 100 65536 ib_write_bw -s 65536
	perf send-bw-cm rdma 100 12345 ib_send_bw -s 12345
	;;
6.1/sroce)
	perf write-bw tcp 5 all ib_write_bw -a
	perf read-bw tcp 5 all ib_read_bw -a
	perf send-bw tcp 5 all ib_send_bw -a
	perf atomic-bw tcp 100 8 ib_atomic_bw
	perf atomic-bw-cas tcp 100 8 ib_atomic_bw -A CMP_AND_SWAP
	perf write-lat tcp 100 64 ib_write_lat -s 64
	perf read-lat tcp 20 65536 ib_read_lat -s 65536
	perf send-lat tcp 20 8192 ib_send_lat -s 8192
	perf atomic-lat tcp 100 8 ib_atomic_lat
	perf write-bw-ip6 tcp6 100 65536 ib_write_bw -s 65536
	perf write-bw-cm rdma 100 65536 ib_write_bw -s 65536
	perf read-bw-cm rdma 10 1048576 ib_read_bw -s 1048576
	perf send-lat-cm rdma 50 64 ib_send_lat -s 64
	perf atomic-lat-cm rdma 50 8 ib_atomic_lat -A CMP_AND_SWAP
	;;
6.12/* | 7.2/*)
	perf write-bw tcp 5 all ib_write_bw -a
	perf read-bw tcp 20 1048576 ib_read_bw -s 1048576
	perf send-bw tcp 100 12345 ib_send_bw -s 12345
	perf atomic-bw-cas tcp 100 8 ib_atomic_bw -A CMP_AND_SWAP
	perf write-lat tcp 50 64 ib_write_lat -s 64
	perf read-lat-cm rdma 50 4096 ib_read_lat -s 4096
	perf send-lat-cm rdma 50 64 ib_send_lat -s 64
	perf atomic-lat tcp 50 8 ib_atomic_lat
	;;
debug/*)
	perf write-bw tcp 20 65536 ib_write_bw -s 65536
	perf read-bw tcp 20 65536 ib_read_bw -s 65536
	perf send-bw-cm rdma 20 4096 ib_send_bw -s 4096
	perf atomic-bw tcp 50 8 ib_atomic_bw
	perf write-lat tcp 20 64 ib_write_lat -s 64
	perf send-lat tcp 20 64 ib_send_lat -s 64
	;;
*) fail "no perftest plan for kernel $SROCE_KERNEL" ;;
esac

# For the record: the port counters (sroce's include responder duplicates
# and NAKs, which show retransmissions) and the link's drops.
rdma statistic show link "$SROCE_DEV/1" 2>/dev/null || true
ip -s link show dev "$SROCE_NETDEV"
log "PASS: $runs perftest runs"
