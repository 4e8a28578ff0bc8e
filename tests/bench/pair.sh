#!/bin/sh
# Guest side of tools/sroce-bench: guest a serves, guest b measures and writes
# "name value unit" lines to $SROCE_OUT/bench.txt. Every wait is bounded.
#   pair.sh SIZE ITERS TCP(0|1)
set -eu

size=$1
iters=$2
tcp=$3

gid_index() {
	for type in /sys/class/infiniband/"$SROCE_DEV"/ports/1/gid_attrs/types/*; do
		idx=${type##*/}
		[ "$(cat "$type" 2>/dev/null)" = "RoCE v2" ] || continue
		case $(cat /sys/class/infiniband/"$SROCE_DEV"/ports/1/gids/"$idx") in
		0000:0000:0000:0000:0000:ffff:*) echo "$idx"; return 0 ;;
		esac
	done
	echo "no RoCEv2 IPv4 GID on $SROCE_DEV" >&2
	return 1
}

gid=$(gid_index)
common="-d $SROCE_DEV -x $gid -m 4096 -F"

serve() {
	timeout 120 "$@" >/dev/null 2>&1 || true
}

measure() {
	n=0
	while [ $n -lt 30 ]; do
		if out=$(timeout 120 "$@" "$SROCE_PEER_IP" 2>&1); then
			echo "$out"
			return 0
		fi
		n=$((n + 1))
		sleep 1
	done
	echo "$out" >&2
	return 1
}

if [ "$SROCE_ROLE" = a ]; then
	# shellcheck disable=SC2086
	serve ib_write_bw $common -n "$iters" -s "$size"
	# shellcheck disable=SC2086
	serve ib_send_lat $common -n "$iters" -s 64
	if [ "$tcp" = 1 ]; then
		timeout 90 qperf -lp 19765 >/dev/null 2>&1 || true
	fi
	exit 0
fi

result=$SROCE_OUT/bench.txt
: >"$result"
# shellcheck disable=SC2086
bw=$(measure ib_write_bw $common -n "$iters" -s "$size" | awk -v s="$size" '$1 == s { print $4 }')
echo "ib_write_bw_${size} ${bw:?no ib_write_bw result} MB/s" >>"$result"
sleep 2
# shellcheck disable=SC2086
lat=$(measure ib_send_lat $common -n "$iters" -s 64 | awk '$1 == 64 { print $5 }')
echo "ib_send_lat_64 ${lat:?no ib_send_lat result} usec" >>"$result"
if [ "$tcp" = 1 ]; then
	sleep 2
	n=0
	until out=$(timeout 60 qperf "$SROCE_PEER_IP" -lp 19765 -t 5 -m "$size" tcp_bw 2>&1); do
		n=$((n + 1))
		[ $n -lt 20 ] || { echo "$out" >&2; exit 1; }
		sleep 1
	done
	echo "$out" | awk -v s="$size" '$1 == "bw" { v = $3; if ($4 == "GB/sec") v *= 1000; if ($4 == "KB/sec") v /= 1000; print "tcp_bw_" s " " v " MB/s" }' >>"$result"
	out=$(timeout 60 qperf "$SROCE_PEER_IP" -lp 19765 -t 5 -m 64 tcp_lat 2>&1)
	echo "$out" | awk '$1 == "latency" { v = $3; if ($4 == "ms") v *= 1000; if ($4 == "ns") v /= 1000; print "tcp_lat_64 " v " usec" }' >>"$result"
fi
cat "$result"
