#!/bin/bash
# sroce-test: kernels=6.1,6.12,debug pairs=sroce:sroce,sroce:rxe,rxe:sroce pairs.6.12=rxe:sroce pairs.debug=sroce:sroce timeout=900
# SPDX-License-Identifier: GPL-2.0
# rping over rdma_cm, guest a serving and guest b connecting, over IPv4 and
# IPv6, with several ping sizes. Each ping is a SEND of the client's buffer
# advertisement, an RDMA READ of the client's buffer by the server, an RDMA
# WRITE back into it and SENDs to synchronise; the client (-V) compares the
# buffer it gets back with what it sent. On top of that this script checks
# every "ping data" line that both sides print (-v) against the text rping
# generates for that ping, so a corrupted byte anywhere on the way fails.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd rping rdma ss python3
count=100
sizes=(32 1000 4096 5000 20000)
if [[ $SROCE_KERNEL == debug ]]; then
	count=30
	sizes=(32 4097 20000)
fi

# check_pings FILE PREFIX SIZE: every "<PREFIX>ping data: ..." line of FILE
# is the text rping builds for ping 0, 1, ... (rdma-ping-N: then a rotating
# run of ASCII 'A'..'z'), and there are exactly $count of them.
check_pings() {
	python3 - "$1" "$2" "$3" "$count" <<-'EOF'
		import sys
		path, prefix, size, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
		lines = [l[len(prefix):].rstrip("\n") for l in open(path, errors="replace")
		         if l.startswith(prefix)]
		start = 65
		for n, got in enumerate(lines):
		    text = "rdma-ping-%d: " % n
		    c = start
		    chars = []
		    for _ in range(size - 1 - len(text)):
		        chars.append(chr(c))
		        c = 65 if c >= 122 else c + 1
		    start = 65 if start >= 122 else start + 1
		    want = (text + "".join(chars))[: size - 1]
		    if got != want:
		        print("ping %d differs: got %r..., want %r..." % (n, got[:60], want[:60]))
		        sys.exit(1)
		if len(lines) != count:
		    print("%d pings printed, %d expected" % (len(lines), count))
		    sys.exit(1)
	EOF
}

# rping_status STATUS STDERR: did rping succeed? rping's event thread can
# still be in rdma_get_cm_event() when the main thread destroys the channel
# after the disconnect; it then prints "Bad file descriptor" and exits 255.
# That race (in rping, after every ping was done) is not a failure: the data
# of every ping is checked from the output regardless.
rping_status() {
	local rc=$1 err=$2
	((rc == 0)) && return 0
	((rc == 255)) && grep -q "DISCONNECT EVENT" "$err" &&
		grep -qx "rdma_get_cm_event: Bad file descriptor" "$err" || return 1
	log "rping hit its teardown race after the disconnect (status $rc)"
}

# run FAMILY PORT SIZE
run() {
	local family=$1 port=$2 size=$3 out pid addr rc
	# stdout (the ping data lines) apart from stderr: interleaved buffered
	# writes of the two would cut lines
	out=$SROCE_OUT/rping-ipv$family-$size-$SROCE_ROLE.txt
	if [[ $SROCE_ROLE == a ]]; then
		addr=$SROCE_LOCAL_IP
		[[ $family == 6 ]] && addr=$SROCE_LOCAL_IP6
		with_timeout 240 rping -s -a "$addr" -p "$port" -C "$count" \
			-S "$size" -v -V >"$out" 2>"$out.err" &
		pid=$!
		announce_port "$port" rdma
		rc=0
		wait "$pid" || rc=$?
		rping_status "$rc" "$out.err" || { tail -c 2000 "$out.err"; fail "IPv$family size $size: rping server failed ($rc)"; }
		check_pings "$out" "server ping data: " "$size" ||
			fail "IPv$family size $size: server saw wrong data"
	else
		addr=$SROCE_PEER_IP
		[[ $family == 6 ]] && addr=$SROCE_PEER_IP6
		wait_peer_port "$port"
		rc=0
		with_timeout 240 rping -c -a "$addr" -p "$port" -C "$count" \
			-S "$size" -v -V >"$out" 2>"$out.err" || rc=$?
		rping_status "$rc" "$out.err" ||
			{ tail -c 2000 "$out.err"; fail "IPv$family size $size: rping client failed ($rc)"; }
		check_pings "$out" "ping data: " "$size" ||
			fail "IPv$family size $size: client got wrong data back"
	fi
	# stderr carries rping's event log; any error or mismatch there fails
	! grep -qi "mismatch\|error\|fail" "$out.err" ||
		{ grep -i "mismatch\|error\|fail" "$out.err" | head -5; fail "IPv$family size $size: errors reported"; }
	log "IPv$family: $count pings of $size bytes, every byte checked ($SROCE_DEV_TYPE side)"
}

port=18700
for family in 4 6; do
	for size in "${sizes[@]}"; do
		run "$family" "$port" "$size"
		barrier "rping-$port" 300
		port=$((port + 1))
	done
done
log "PASS"
