#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of tools/sroce-bench (no sroce-test line: not a test): one
# round of every workload. Guest a serves, guest b measures:
#   perftest on $SROCE_DEV: WRITE, READ and SEND bandwidth (64 KiB, WRITE
#   also 1 MiB and 8 QPs), WRITE message rate (64 B, with and without post
#   lists of 16), SEND and WRITE latency (8 B, typical and 99th
#   percentile), WRITE and READ bandwidth for every size from 2 B to 8 MiB;
#   qperf over TCP between the same guests and link: bandwidth (64 KiB,
#   1 MiB messages and a sweep of sizes) and latency (8 B); the link's own
#   frame rate each way (pktgen), written by each receiver to link.txt.
# b writes "ROUND METRIC VALUE UNIT" lines to $SROCE_OUT/bench.txt: MB/s are
# 10^6 bytes per second (perftest's MiB/s are converted), Mpps millions of
# messages per second, latencies microseconds one way (perftest's half
# round trips; qperf's average of half round trips), and the sweeps
# "ROUND sweep_{write,read,tcp} SIZE VALUE MB/s" to $SROCE_OUT/sweep.txt.
# Each guest also writes, per perftest workload, "ROUND WORKLOAD ROLE
# busy_ms MB" and its device's port counters that moved
# ("ROUND WORKLOAD ROLE counter NAME DELTA") to $SROCE_OUT/cost.txt: busy_ms
# is the guest's non-idle CPU time (/proc/stat) over the whole run, setup
# included, MB what the run moved. Both perftest sides were seen busy for
# the whole run (polling, and setup under TCG), so busy_ms says little per
# MB. kern_ms is the guest's kernel time (system, irq, softirq) while the
# data moved (the first to the last 0.1 s sample in which the netdev moved
# more than 100 kB), and xfer_ms that window: it leaves out perftest's
# polling and the setup (process start, memory registration, connection),
# which in a run of 32 MB cost as much kernel time as the transfer.
# A perftest run that fails (rdma_rxe's multi-QP runs have ended in retry
# exceeded errors) is recorded as "ROUND WORKLOAD ROLE failed STATUS" in
# cost.txt, its figures are left out, and the round goes on.
#   pair.sh ROUND
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd ib_write_bw ib_read_bw ib_send_bw ib_send_lat ib_write_lat qperf ss tc ibv_devinfo
round=${1:?round number}
idx=$(gid_index "$SROCE_DEV" 4)
port=18900
qperf_port=19765
result=$SROCE_OUT/bench.txt
cost=$SROCE_OUT/cost.txt
counters=/sys/class/infiniband/$SROCE_DEV/ports/1/hw_counters
failed=()	# perftest runs that failed in this guest

# active_mtu: the device's active path MTU in bytes.
active_mtu() {
	ibv_devinfo -d "$SROCE_DEV" | awk '$1 == "active_mtu:" { print $2; exit }'
}

# busy_ms: non-idle CPU time of this guest since boot (user, nice,
# system, irq, softirq; /proc/stat counts in USER_HZ = 100 per second).
busy_ms() {
	awk '$1 == "cpu" { print ($2 + $3 + $4 + $7 + $8) * 10 }' /proc/stat
}

# sample_start FILE: every 0.1 s until sample_stop, "KERNEL_TICKS BYTES"
# (system + irq + softirq in USER_HZ ticks; bytes sent and received by
# the netdev) appended to FILE. No process is started per sample.
sample_start() {
	local net=/sys/class/net/$SROCE_NETDEV/statistics
	(
		exec {tick}<> <(:)
		while :; do
			read -r _ _ _ sys _ _ irq softirq _ </proc/stat
			read -r tx <"$net/tx_bytes"
			read -r rx <"$net/rx_bytes"
			echo "$((sys + irq + softirq)) $((tx + rx))"
			read -r -t 0.1 -u "$tick" _ || true
		done
	) >"$1" 2>/dev/null &
	sampler=$!
}

sample_stop() {
	kill "$sampler" 2>/dev/null || true
	wait "$sampler" 2>/dev/null || true
}

# transfer_cost FILE: "kern_ms MS xfer_ms MS" over the samples in which the
# netdev moved more than 100 kB (from the sample before the first to the
# last of them), or nothing when none did.
transfer_cost() {
	awk 'NR > 1 && $2 - b > 100000 { if (!first) { first = NR; k0 = k; } last = NR; k1 = $1 }
	     { k = $1; b = $2 }
	     END { if (first) print "kern_ms", (k1 - k0) * 10, "xfer_ms", (last - first + 1) * 100 }' "$1"
}

# counter_snapshot: "NAME VALUE" per port counter of the device.
counter_snapshot() {
	local f
	[[ -d $counters ]] || return 0
	for f in "$counters"/*; do
		echo "${f##*/} $(cat "$f")"
	done
}

# perf NAME BYTES TOOL [ARGS...]: one perftest run (a serves, b is the
# client), its output left in $SROCE_OUT/NAME.txt, its CPU time and the
# counters that moved appended to cost.txt. BYTES: what the run moves.
perf() {
	local name=$1 bytes=$2 out pid rc=0 busy0 before sampler
	shift 2
	port=$((port + 1))
	out=$SROCE_OUT/$name.txt
	local -a cmd=("$@" -d "$SROCE_DEV" -x "$idx" -p "$port" -F)
	busy0=$(busy_ms)
	before=$(counter_snapshot)
	sample_start "$SROCE_OUT/$name.samples"
	if [[ $SROCE_ROLE == a ]]; then
		with_timeout 300 "${cmd[@]}" >"$out" 2>&1 &
		pid=$!
		announce_port "$port" tcp 120
		wait "$pid" || rc=$?
	else
		wait_peer_port "$port" 300
		with_timeout 300 "${cmd[@]}" "$SROCE_PEER_IP" >"$out" 2>&1 || rc=$?
	fi
	sample_stop
	if ((rc != 0)); then
		log "$name: ${cmd[*]} exited with $rc; its figures are left out"
		echo "$round $name $SROCE_ROLE failed $rc" >>"$cost"
		failed+=("$name")
	fi
	echo "$round $name $SROCE_ROLE busy_ms $(($(busy_ms) - busy0)) $((bytes / 1000000))" \
		"$(transfer_cost "$SROCE_OUT/$name.samples")" >>"$cost"
	join <(sort <<<"$before") <(counter_snapshot | sort) |
		awk -v p="$round $name $SROCE_ROLE counter" '$3 != $2 { print p, $1, $3 - $2 }' >>"$cost"
	barrier "$name" 300
}

# record METRIC VALUE UNIT [RUN]: nothing when perftest's RUN failed. A
# zero is no measurement (perftest prints 0.00 MiB/s for a run that moved
# nothing in time): the run counts as failed, like a nonzero exit.
record() {
	if [[ -n ${4:-} && " ${failed[*]} " == *" $4 "* ]]; then
		log "$1: not recorded, $4 failed"
		return 0
	fi
	[[ $2 =~ ^[0-9]+(\.[0-9]+)?$ ]] || fail "$1: no figure in the output (got '$2')"
	if [[ $2 =~ ^0+(\.0+)?$ ]]; then
		log "$1: 0 $3 is no figure; ${4:-the run} counts as failed"
		echo "$round ${4:-$1} $SROCE_ROLE failed zero" >>"$cost"
		return 0
	fi
	echo "$round $1 $2 $3" | tee -a "$result"
}

# column FILE SIZE COLUMN [SCALE]: that column of the result row of SIZE
# bytes (perftest prints one per size), times SCALE. Never an exponent,
# which record would take for no figure (a p99 of 14660 us was 1.466e+04).
column() {
	awk -v s="$2" -v c="$3" -v k="${4:-1}" '$1 == s && NF >= c {
		v = $c * k; printf (v < 1 ? "%.6f\n" : "%.2f\n"), v; exit }' "$1"
}

mib=1.048576
if [[ $SROCE_ROLE == a ]]; then
	with_timeout 1200 qperf -lp "$qperf_port" >/dev/null 2>&1 &
	qperf_pid=$!
	announce_port "$qperf_port" tcp 60
else
	echo "kernel $(uname -r) dev $SROCE_DEV mtu $(cat "/sys/class/net/$SROCE_NETDEV/mtu")" \
		"path_mtu $(active_mtu) pclmulqdq $(grep -qw pclmulqdq /proc/cpuinfo && echo yes || echo no)" |
		tee "$SROCE_OUT/env.txt"
	wait_peer_port "$qperf_port" 120
fi

perf write-bw-64k $((65536 * 1000)) ib_write_bw -s 65536 -n 1000
perf write-bw-1m $((1048576 * 100)) ib_write_bw -s 1048576 -n 100
perf read-bw-64k $((65536 * 500)) ib_read_bw -s 65536 -n 500
perf send-bw-64k $((65536 * 500)) ib_send_bw -s 65536 -n 500
perf write-bw-64k-q8 $((65536 * 200 * 8)) ib_write_bw -s 65536 -n 200 -q 8
perf write-rate-64 $((64 * 5000)) ib_write_bw -s 64 -n 5000
perf write-rate-64-l16 $((64 * 5120)) ib_write_bw -s 64 -n 5120 -l 16
perf send-lat-8 $((8 * 1000)) ib_send_lat -s 8 -n 1000
perf write-lat-8 $((8 * 1000)) ib_write_lat -s 8 -n 1000
# message-size sweeps, 2 B to 8 MiB: 20 messages of each size
perf write-bw-sweep $((20 * (16777216 - 2))) ib_write_bw -a -n 20
perf read-bw-sweep $((20 * (16777216 - 2))) ib_read_bw -a -n 20

# The link's own limit, measured in every boot: the frames per second it
# carries of the size of a full RoCE packet (a WRITE's middle packet: path
# MTU of payload and 58 bytes of Ethernet, IPv4, UDP, BTH and ICRC), for the
# active path MTU and for 1024 (MTU 1500's), each way. The sender is the
# kernel's pktgen (no system call per frame; one transmit and one virtio
# kick per frame, as each stack pays); the receiver counts its netdev's
# rx_packets over 3 s of the flood and drops the frames at ingress (tc), so
# the figure is the link's and its drivers', not an IP stack's. The
# receiver writes "ROUND link SIZE FROM FRAMES_PER_S" to link.txt.
pktgen_set() {
	echo "$2" >"/proc/net/pktgen/$1"
	grep -q '^Result: OK' "/proc/net/pktgen/$1" ||
		fail "pktgen $1 '$2': $(grep '^Result:' "/proc/net/pktgen/$1")"
}

# link_rate SIZE FROM: one direction, FROM (a or b) sending.
link_rate() {
	local size=$1 from=$2 mac rx0 rx1 t0 t1 pid setting
	local rx=/sys/class/net/$SROCE_NETDEV/statistics/rx_packets
	if [[ $SROCE_ROLE == "$from" ]]; then
		mac=$(cat "$SROCE_PAIR_DIR/mac.$SROCE_PEER_ROLE")
		pktgen_set kpktgend_0 rem_device_all
		pktgen_set kpktgend_0 "add_device $SROCE_NETDEV"
		for setting in "count 0" "clone_skb 0" "delay 0" "pkt_size $size" \
			"dst $SROCE_PEER_IP" "dst_mac $mac" "udp_dst_min 9" "udp_dst_max 9"; do
			pktgen_set "$SROCE_NETDEV" "$setting"
		done
		echo start >/proc/net/pktgen/pgctrl &
		pid=$!
		barrier "link-$size-$from" 60
		barrier "link-$size-$from-counted" 60
		echo stop >/proc/net/pktgen/pgctrl
		wait "$pid" || true
		pktgen_set kpktgend_0 rem_device_all
	else
		barrier "link-$size-$from" 60
		sleep 1
		read -r rx0 <"$rx"
		t0=$EPOCHREALTIME
		sleep 3
		read -r rx1 <"$rx"
		t1=$EPOCHREALTIME
		barrier "link-$size-$from-counted" 60
		awk -v r="$round" -v s="$size" -v f="$from" -v n=$((rx1 - rx0)) -v t0="$t0" -v t1="$t1" \
			'BEGIN { printf "%s link %s %s %.0f\n", r, s, f, n / (t1 - t0) }' |
			tee -a "$SROCE_OUT/link.txt"
	fi
}

link_limit() {
	local pmtu size from
	modprobe pktgen
	cat "/sys/class/net/$SROCE_NETDEV/address" >"$SROCE_PAIR_DIR/mac.$SROCE_ROLE"
	tc qdisc add dev "$SROCE_NETDEV" clsact
	tc filter add dev "$SROCE_NETDEV" ingress protocol ip prio 1 u32 \
		match ip protocol 17 0xff match ip dport 9 0xffff action drop
	barrier link-ready 60
	pmtu=$(active_mtu)
	for size in $(printf '%s\n' $((1024 + 58)) $((pmtu + 58)) | sort -un); do
		for from in a b; do
			link_rate "$size" "$from"
		done
	done
	tc qdisc del dev "$SROCE_NETDEV" clsact
	rmmod pktgen
}

link_limit

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

if [[ $SROCE_ROLE == b ]]; then
	o=$SROCE_OUT
	# bandwidth: column 4 (BW average, MiB/s); message rate: column 5
	record write_bw_65536 "$(column "$o/write-bw-64k.txt" 65536 4 $mib)" MB/s write-bw-64k
	record write_bw_1048576 "$(column "$o/write-bw-1m.txt" 1048576 4 $mib)" MB/s write-bw-1m
	record read_bw_65536 "$(column "$o/read-bw-64k.txt" 65536 4 $mib)" MB/s read-bw-64k
	record send_bw_65536 "$(column "$o/send-bw-64k.txt" 65536 4 $mib)" MB/s send-bw-64k
	record write_bw_65536_q8 "$(column "$o/write-bw-64k-q8.txt" 65536 4 $mib)" MB/s write-bw-64k-q8
	record write_rate_64 "$(column "$o/write-rate-64.txt" 64 5)" Mpps write-rate-64
	record write_rate_64_l16 "$(column "$o/write-rate-64-l16.txt" 64 5)" Mpps write-rate-64-l16
	# latency: column 5 (t_typical), column 8 (99% percentile)
	record send_lat_8 "$(column "$o/send-lat-8.txt" 8 5)" usec send-lat-8
	record send_lat_8_p99 "$(column "$o/send-lat-8.txt" 8 8)" usec send-lat-8
	record write_lat_8 "$(column "$o/write-lat-8.txt" 8 5)" usec write-lat-8
	record write_lat_8_p99 "$(column "$o/write-lat-8.txt" 8 8)" usec write-lat-8
	record tcp_bw_65536 "$(qperf_run tcp_bw 65536)" MB/s
	record tcp_bw_1048576 "$(qperf_run tcp_bw 1048576)" MB/s
	record tcp_lat_8 "$(qperf_run tcp_lat 8)" usec
	# sweeps: "ROUND sweep_NAME SIZE VALUE MB/s" lines in sweep.txt
	for kind in write read; do
		awk -v r="$round" -v k="$kind" -v m="$mib" \
			'$1 ~ /^[0-9]+$/ && $2 == 20 && NF >= 5 { printf "%s sweep_%s %s %.4g MB/s\n", r, k, $1, $4 * m }' \
			"$o/$kind-bw-sweep.txt" >>"$SROCE_OUT/sweep.txt"
	done
	for size in 64 512 4096 32768 262144 2097152 8388608; do
		echo "$round sweep_tcp $size $(qperf_run tcp_bw "$size") MB/s" >>"$SROCE_OUT/sweep.txt"
	done
fi
barrier "round-done" 300
if [[ $SROCE_ROLE == a ]]; then
	# $qperf_pid is the subshell running with_timeout: end qperf itself
	pkill -x qperf 2>/dev/null || true
	wait "$qperf_pid" 2>/dev/null || true
fi
log "bench: round $round done"
