#!/bin/bash
# sroce-test: kernels=6.1,6.12 full-kernels=6.1,6.12 pairs=sroce:sroce pairs.6.12=sroce:sroce+e1000e timeout=180
# SPDX-License-Identifier: GPL-2.0
#
# Teardown while a qdisc still holds packets sroce built. Guest a sends a
# 64-packet RC message to guest b through a prio qdisc whose RoCE band is
# a tbf at 8 kbit/s: after the first packet or two the rest wait in the
# tbf, each with sroce's transmit-credit destructor. Then, with the
# packets still held:
#   kill -9 of the sender (its QP is destroyed), rdma link delete, and
#   rmmod, which must refuse while the packets hold the module (the old
#   code unloaded, and freeing the held packets then called the
#   destructor in freed module memory: an oops);
#   deleting the qdisc frees the packets; rmmod must then succeed.
# The pingpong processes run without a timeout wrapper so that kill -9
# reaches the verbs process itself; the harness bounds the script.
# Finally the module is loaded again, the device re-created, and a short
# checked ibv_rc_pingpong runs between the guests. (netem would not show
# this: it orphans each packet as it queues it.)
# (Not on the debug kernel, which has no tbf and prio.)
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd tc rdma ibv_rc_pingpong rmmod insmod ss
[[ $SROCE_DEV == sroce* ]] || fail "needs sroce on both sides"
nd=$SROCE_NETDEV
port=18950
qdisc=0 pid=

cleanup() {
	[[ -n $pid ]] && kill -9 "$pid" 2>/dev/null
	((qdisc == 0)) || release_roce_egress
	return 0
}
trap cleanup EXIT

# holds N: the tbf holds at least N packets.
holds() { (($(roce_egress_backlog) >= $1)); }

idx=$(gid_index "$SROCE_DEV" 4)
if [[ $SROCE_ROLE == b ]]; then
	ibv_rc_pingpong -d "$SROCE_DEV" -g "$idx" -p "$port" \
		-s 65536 -n 5 -m 1024 >"$SROCE_OUT/held-b.txt" 2>&1 &
	pid=$!
	announce_port "$port" tcp 60
	barrier torn-down 150
	kill -9 "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=
else
	hold_roce_egress 8kbit
	qdisc=1
	wait_peer_port "$port" 60
	ibv_rc_pingpong -d "$SROCE_DEV" -g "$idx" -p "$port" \
		-s 65536 -n 5 -m 1024 "$SROCE_PEER_IP" >"$SROCE_OUT/held-a.txt" 2>&1 &
	pid=$!
	wait_for 30 holds 20 ||
		fail "the tbf holds $(roce_egress_backlog) packets, expected at least 20"
	n=$(roce_egress_backlog)
	log "the tbf holds $n packets of the RC message"

	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
	with_timeout 20 rdma link delete "$SROCE_DEV" || fail "rdma link delete while packets are held"
	n=$(roce_egress_backlog)
	((n > 0)) || fail "the tbf let its packets go early; nothing to test"
	if out=$(rmmod sroce 2>&1); then
		fail "rmmod sroce succeeded while the tbf held $n of its packets"
	fi
	log "rmmod refused while $n packets are held: $out"
	release_roce_egress
	qdisc=0
	wait_for 10 rmmod sroce || fail "rmmod sroce after the held packets were freed"
	log "rmmod sroce succeeded once the packets were freed"
	insmod "$SROCE_MODULE" || fail "insmod $SROCE_MODULE"
	rdma link add "$SROCE_DEV" type sroce netdev "$nd" || fail "rdma link add after reload"
	wait_for 30 grep -qx "4: ACTIVE" "/sys/class/infiniband/$SROCE_DEV/ports/1/state" ||
		fail "$SROCE_DEV not ACTIVE after reload"
	barrier torn-down 150
fi

idx=$(gid_index "$SROCE_DEV" 4)
pair after-reload ibv_rc_pingpong -d "$SROCE_DEV" -g "$idx" -s 4096 -n 20 -c -- "$SROCE_PEER_IP"
out=$SROCE_OUT/after-reload-$SROCE_ROLE.txt
grep -q "^20 iters in" "$out" || fail "after-reload: no '20 iters' summary"
! grep -qi "invalid\|error\|couldn't" "$out" || fail "after-reload: errors in ibv_rc_pingpong output"
log "traffic passes after the reload"
