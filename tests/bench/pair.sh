#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of tools/sroce-bench (no sroce-test line: not a test). Guest a
# serves, guest b measures, ROUNDS times in a row:
#   ib_write_bw 64 KiB and 1 MiB, ib_send_lat 8 B and 256 B on $SROCE_DEV,
#   TCP bandwidth (qperf tcp_bw, same message sizes) and latency (qperf
#   tcp_lat, same sizes) between the same two guests over the same link.
# b writes "ROUND METRIC VALUE UNIT" lines to $SROCE_OUT/bench.txt: MB/s are
# 10^6 bytes per second (perftest's MiB/s are converted), latencies are
# microseconds, one way (perftest's t_typical, the median of half round
# trips; qperf's average of half round trips).
#   pair.sh [ROUNDS]
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd ib_write_bw ib_send_lat qperf ss
rounds=${1:-3}
idx=$(gid_index "$SROCE_DEV" 4)
port=18900
qperf_port=19765
result=$SROCE_OUT/bench.txt

# perf NAME ITERS TOOL [ARGS...]: one perftest run (a serves, b is the
# client); on b, the output is left in $SROCE_OUT/NAME.txt.
perf() {
	local name=$1 iters=$2 out pid rc=0
	shift 2
	port=$((port + 1))
	out=$SROCE_OUT/$name.txt
	local -a cmd=("$@" -d "$SROCE_DEV" -x "$idx" -p "$port" -n "$iters" -F)
	if [[ $SROCE_ROLE == a ]]; then
		with_timeout 300 "${cmd[@]}" >"$out" 2>&1 &
		pid=$!
		announce_port "$port" tcp 120
		wait "$pid" || rc=$?
	else
		wait_peer_port "$port" 300
		with_timeout 300 "${cmd[@]}" "$SROCE_PEER_IP" >"$out" 2>&1 || rc=$?
	fi
	((rc == 0)) || { cat "$out"; fail "$name: ${cmd[*]} exited with $rc"; }
	barrier "$name" 300
}

# record ROUND METRIC VALUE UNIT
record() {
	[[ $3 =~ ^[0-9]+(\.[0-9]+)?$ ]] || fail "$2: no figure in the output (got '$3')"
	echo "$1 $2 $3 $4" | tee -a "$result"
}

# bw_of FILE SIZE ITERS: BW average of the result row, MiB/s -> MB/s.
bw_of() {
	awk -v s="$2" -v n="$3" '$1 == s && $2 == n { printf "%.2f", $4 * 1.048576 }' "$1"
}

# lat_of FILE SIZE ITERS: t_typical of the result row, usec.
lat_of() {
	awk -v s="$2" -v n="$3" '$1 == s && $2 == n { print $5 }' "$1"
}

# qperf_run TEST SIZE: one qperf client run against guest a; prints the
# figure in MB/s (tcp_bw) or usec (tcp_lat).
qperf_run() {
	local out
	out=$(with_timeout 60 qperf "$SROCE_PEER_IP" -lp "$qperf_port" -uu -t 3 -m "$2" "$1" 2>&1) ||
		fail "qperf $1 -m $2: $out"
	echo "$out" >>"$SROCE_OUT/qperf.txt"
	case $1 in
	tcp_bw) awk '$1 == "bw" && $4 == "bytes/sec" { printf "%.2f", $3 / 1e6 }' <<<"$out" ;;
	tcp_lat) awk '$1 == "latency" && $4 == "ns" { printf "%.2f", $3 / 1e3 }' <<<"$out" ;;
	esac
}

if [[ $SROCE_ROLE == a ]]; then
	with_timeout $((rounds * 200 + 60)) qperf -lp "$qperf_port" >/dev/null 2>&1 &
	qperf_pid=$!
	announce_port "$qperf_port" tcp 60
else
	: >"$result"
	echo "kernel $(uname -r) dev $SROCE_DEV mtu $(cat "/sys/class/net/$SROCE_NETDEV/mtu")" |
		tee "$SROCE_OUT/env.txt"
	wait_peer_port "$qperf_port" 120
fi

for ((r = 1; r <= rounds; r++)); do
	perf "write-bw-64k-$r" 1000 ib_write_bw -s 65536
	perf "write-bw-1m-$r" 100 ib_write_bw -s 1048576
	perf "send-lat-8-$r" 1000 ib_send_lat -s 8
	perf "send-lat-256-$r" 1000 ib_send_lat -s 256
	if [[ $SROCE_ROLE == b ]]; then
		record "$r" write_bw_65536 "$(bw_of "$SROCE_OUT/write-bw-64k-$r.txt" 65536 1000)" MB/s
		record "$r" write_bw_1048576 "$(bw_of "$SROCE_OUT/write-bw-1m-$r.txt" 1048576 100)" MB/s
		record "$r" send_lat_8 "$(lat_of "$SROCE_OUT/send-lat-8-$r.txt" 8 1000)" usec
		record "$r" send_lat_256 "$(lat_of "$SROCE_OUT/send-lat-256-$r.txt" 256 1000)" usec
		record "$r" tcp_bw_65536 "$(qperf_run tcp_bw 65536)" MB/s
		record "$r" tcp_bw_1048576 "$(qperf_run tcp_bw 1048576)" MB/s
		record "$r" tcp_lat_8 "$(qperf_run tcp_lat 8)" usec
		record "$r" tcp_lat_256 "$(qperf_run tcp_lat 256)" usec
	fi
	barrier "round-$r" 300
done
if [[ $SROCE_ROLE == a ]]; then
	kill "$qperf_pid" 2>/dev/null || true
fi
log "bench: $rounds rounds done"
