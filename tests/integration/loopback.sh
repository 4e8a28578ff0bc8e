#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1,6.12,debug pairs=none timeout=400
# SPDX-License-Identifier: GPL-2.0
#
# sroce to sroce on one host: both ends of an RC connection on the same
# device, addressed by the guest's own IPv4 and IPv6 GIDs. Packets leave
# through the IP stack, loop through lo and must come back to the device
# that owns the destination address. ibv_rc_pingpong -c checks little: the
# client sets the first byte of each page of its buffer to 0, and at the
# end the server checks that byte of each page of its final receive buffer
# (filled with 0x7b before), printing "invalid data in page N" and still
# exiting 0; not every message, not the other bytes, nothing on the
# client. The script fails on that line from either side. The device's
# counters must show the packets received back with no ICRC or length
# errors.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_cmd ibv_rc_pingpong
[[ $SROCE_DEV_TYPE == sroce ]] || fail "needs an sroce device"
iters=200
sizes=(1 4096 65536)
# KASAN and lockdep under TCG move a few hundred packets a second.
if [[ $SROCE_KERNEL == debug ]]; then
	iters=20
	sizes=(1 4096 16384)
fi

counter() {
	cat "/sys/class/infiniband/$SROCE_DEV/ports/1/hw_counters/$1"
}

# pingpong FAMILY SIZE PORT
pingpong() {
	local family=$1 size=$2 port=$3 gid out=$SROCE_OUT/pp-ipv$1-$2 spid
	gid=$(gid_index "$SROCE_DEV" "$family")
	ibv_rc_pingpong -d "$SROCE_DEV" -g "$gid" -p "$port" -s "$size" \
		-n "$iters" -c >"$out.server" 2>&1 &
	spid=$!
	wait_for 10 listening "$port" || fail "ibv_rc_pingpong server did not listen on $port"
	if ! with_timeout 120 ibv_rc_pingpong -d "$SROCE_DEV" -g "$gid" -p "$port" \
		-s "$size" -n "$iters" -c localhost >"$out.client" 2>&1; then
		sed 's/^/    client: /' "$out.client"
		kill "$spid" 2>/dev/null || true
		fail "IPv$family, $size bytes: client failed"
	fi
	if ! with_timeout 30 tail --pid="$spid" -f /dev/null || ! wait "$spid"; then
		sed 's/^/    server: /' "$out.server"
		fail "IPv$family, $size bytes: server failed"
	fi
	if grep -H "invalid data" "$out.server" "$out.client"; then
		fail "IPv$family, $size bytes: ibv_rc_pingpong found a byte it did not send"
	fi
	grep -q "$iters iters" "$out.client" ||
		fail "IPv$family, $size bytes: client did not report $iters iterations"
	log "ok - IPv$family, $size bytes x $iters: $(grep 'Mbit/sec' "$out.client")"
}

rx0=$(counter rx_packets)
port=18515
for family in 4 6; do
	for size in "${sizes[@]}"; do
		pingpong "$family" "$size" "$port"
		port=$((port + 1))
	done
done

rx=$(($(counter rx_packets) - rx0))
log "received back $rx packets; ICRC errors $(counter rx_icrc_errors), malformed $(counter rx_malformed)"
((rx >= 2 * ${#sizes[@]} * 2 * iters)) || fail "only $rx packets came back through loopback"
(($(counter rx_icrc_errors) == 0)) || fail "ICRC errors on loopback"
(($(counter rx_malformed) == 0)) || fail "malformed packets on loopback"
log "loopback checked"
