#!/bin/bash
# sroce-test: kernels=6.1 full-kernels=6.1,6.12,7.2 pairs=sroce:sroce,sroce:rxe pairs.6.1=sroce:sroce pairs.7.2=sroce:sroce timeout=900
# SPDX-License-Identifier: GPL-2.0
#
# Path MTU against the netdev's MTU (issue 31, item 5). For netdev MTUs
# 1500, 4200 and 9000 on both guests: the port's active MTU must follow
# (1024, 4096, 4096: what fits under the RoCEv2 headers), a QP asking for
# a path MTU above it must be refused (modify to RTR: EINVAL), and every
# path MTU from 256 up to it carries tests/verify/sroce-msg over RC with
# an SRQ, guest a sending to b, messages of 1 byte to 8 packets (SEND,
# SEND with immediate, WRITE with immediate), every byte checked. No
# packet may be refused by IP (tx_errors) on either side. Then the MTU
# changes under traffic: sroce-msg at path MTU 1024 runs while both
# guests switch the netdev between 9000, 1500 and 4200, each still above
# the QP's packets, and must lose nothing.
#
# The rxe peer gets the same path MTUs (the pair sroce:rxe in
# check-full); sroce to sroce in make check.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_pair
require_cmd ibv_devinfo ip python3
msgcheck=$SROCE_BUILD/sroce-msg
[[ -x $msgcheck ]] || fail "$msgcheck is missing (make verify)"
port=18620
idx=$(gid_index "$SROCE_DEV" 4)
trap dump_counters EXIT

# active_mtu: the port's active MTU in bytes, as ibv_devinfo reports it.
active_mtu() {
	ibv_devinfo -d "$SROCE_DEV" -i 1 | awk '$1 == "active_mtu:" { print $2; exit }'
}

# set_mtu BYTES: this guest's netdev MTU, once both guests are ready.
set_mtu() {
	barrier "mtu-$1"
	ip link set dev "$SROCE_NETDEV" mtu "$1"
	barrier "mtu-$1-set"
}

tx_errors() {
	[[ $SROCE_DEV_TYPE == sroce ]] || { echo 0; return; }
	link_counter "$SROCE_DEV" tx_errors
}

# msg NAME PATH_MTU [ARGS...]: sroce-msg, a sending to b, every message checked.
msg() {
	local name=$1 mtu=$2 snd=()
	shift 2
	[[ $SROCE_ROLE == a ]] && snd=(-S)
	pair "$name" "$msgcheck" -d "$SROCE_DEV" -g "$idx" -t srq -q 2 -n 56 \
		-M $((8 * mtu)) -m "$mtu" -e 7 "${snd[@]}" "$@" -- -c "$SROCE_PEER_IP"
	grep -q "^msg: srq .*, path MTU $mtu, .* 0 failures: PASS$" \
		"$SROCE_OUT/$name-$SROCE_ROLE.txt" || fail "$name: no PASS line"
}

errors_before=$(tx_errors)
for spec in "1500 1024" "4200 4096" "9000 4096"; do
	read -r netdev_mtu active <<<"$spec"
	set_mtu "$netdev_mtu"
	got=$(active_mtu)
	[[ $got == "$active" ]] ||
		fail "netdev MTU $netdev_mtu: active_mtu $got, expected $active"
	for mtu in 256 512 1024 2048 4096; do
		((mtu <= active)) || continue
		msg "msg-$netdev_mtu-$mtu" "$mtu"
	done
	log "netdev MTU $netdev_mtu: active MTU $got, path MTUs 256..$active carried every message"
done

# A path MTU above the port's is refused (EINVAL at RTR), one at it is
# taken: at netdev MTU 1500, 2048 and 1024, on QPs of the port's own.
set_mtu 1500
if [[ $SROCE_DEV_TYPE == sroce ]]; then
	out=$SROCE_OUT/path-mtu-refused.txt
	python3 - "$SROCE_DEV" "$idx" >"$out" 2>&1 <<'EOF' || { cat "$out"; fail "path MTU 2048 at netdev MTU 1500: not refused as it should be"; }
import sys
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.qp import QP, QPCap, QPInitAttr, QPAttr
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.pyverbs_error import PyverbsRDMAError
import pyverbs.enums as e

ctx = Context(name=sys.argv[1])
gidx = int(sys.argv[2])
pd = PD(ctx)
cq = CQ(ctx, 4)


def to_rtr(mtu):
    """0 if a new RC QP reaches RTR with path MTU mtu, else the errno."""
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap()))
    attr = QPAttr(qp_state=e.IBV_QPS_INIT)
    attr.qp_access_flags = 0
    qp.to_init(attr)
    attr = QPAttr(qp_state=e.IBV_QPS_RTR)
    gr = GlobalRoute(dgid=ctx.query_gid(1, gidx), sgid_index=gidx)
    attr.ah_attr = AHAttr(gr=gr, is_global=1, port_num=1)
    attr.dest_qp_num = qp.qp_num
    attr.path_mtu = mtu
    try:
        qp.to_rtr(attr)
    except PyverbsRDMAError as err:
        print(f"path MTU enum {mtu}: {err}")
        return err.error_code
    print(f"path MTU enum {mtu}: RTR")
    return 0


sys.exit(0 if to_rtr(e.IBV_MTU_1024) == 0 and to_rtr(e.IBV_MTU_2048) == 22 else 1)
EOF
	cat "$out"
fi

# The netdev MTU changed under traffic, never below the QP's packets.
set_mtu 9000
name=msg-mtu-changes
port=$((port + 1))
out=$SROCE_OUT/$name-$SROCE_ROLE.txt
if [[ $SROCE_ROLE == a ]]; then
	with_timeout 300 "$msgcheck" -d "$SROCE_DEV" -g "$idx" -t srq -q 2 -n 6048 \
		-M 8192 -m 1024 -e 9 -S -p "$port" >"$out" 2>&1 &
	msg_pid=$!
	announce_port "$port" tcp 60
else
	wait_peer_port "$port" 60
	with_timeout 300 "$msgcheck" -d "$SROCE_DEV" -g "$idx" -t srq -q 2 -n 6048 \
		-M 8192 -m 1024 -e 9 -p "$port" -c "$SROCE_PEER_IP" >"$out" 2>&1 &
	msg_pid=$!
fi
changes=0 mtus=(1500 4200 9000)
while sleep 0.25 && kill -0 "$msg_pid" 2>/dev/null; do
	ip link set dev "$SROCE_NETDEV" mtu "${mtus[changes % 3]}"
	changes=$((changes + 1))
done
wait "$msg_pid" || { cat "$out"; fail "$name: sroce-msg failed"; }
cat "$out"
grep -q "^msg: srq .*, path MTU 1024, .* 0 failures: PASS$" "$out" || fail "$name: no PASS line"
((changes >= 4)) || fail "$name: the run ended after $changes MTU changes: too few under traffic"
barrier mtu-changes-done
ip link set dev "$SROCE_NETDEV" mtu "$SROCE_MTU"

errors=$(($(tx_errors) - errors_before))
((errors == 0)) || fail "$SROCE_DEV counted $errors tx_errors (packets IP refused)"
log "PASS: path MTU 256..4096 over netdev MTUs 1500, 4200, 9000, every message checked; a path MTU above the port's refused; $changes MTU changes under traffic lost nothing"
