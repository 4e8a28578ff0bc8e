#!/bin/bash
# sroce-test: kernels=6.1 pairs=none timeout=600
# SPDX-License-Identifier: GPL-2.0
#
# sroce's receive path against RoCEv2 packets built outside the kernel:
# scapy (IPv4 ICRC by scapy.contrib.roce, IPv6 ICRC by the A17.8 routine of
# tools/icrc-vectors.py) injects packets addressed to this guest's own
# addresses into the loopback device, the path a same-host sroce to sroce
# packet takes. sroce must find its device by the destination address and
# count exactly: valid packets in rx_packets, corrupted ICRCs in
# rx_icrc_errors, truncated or unknown packets in rx_malformed.
# Then, with RC QPs of its own (pyverbs) and forged packets at them:
# - a CE-marked request is answered by a CNP whose BTH carries BECN (byte
#   4 = 0x40, annex A17.9.3);
# - a READ to a peer that went silent, while a forger keeps sending READ
#   responses older than it, fails with IBV_WC_RETRY_EXC_ERR within its
#   retry budget and the stale responses' grace (comp.c): they must not
#   keep a dead connection alive;
# - a responder QP reset and connected to another peer while it still
#   answers a forged 1 MiB READ sends none of that answer to the new peer.
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_cmd /usr/bin/python3
[[ $SROCE_DEV_TYPE == sroce ]] || fail "needs an sroce device"

counters=/sys/class/infiniband/$SROCE_DEV/ports/1/hw_counters
snapshot() {
	local c
	for c in rx_packets rx_icrc_errors rx_malformed; do
		printf '%s=%s ' "$c" "$(cat "$counters/$c")"
	done
}

# Injected frames arrive on lo without the route a locally sent packet
# carries, so IPv4 input routing sees our own source address: allow it.
sysctl -qw net.ipv4.conf.lo.accept_local=1 || fail "cannot set accept_local"

before=$(snapshot)
log "before: $before"
expected=$(/usr/bin/python3 - "$SROCE_TOP" "$SROCE_LOCAL_IP" "$SROCE_LOCAL_IP6" <<'EOF'
import importlib.util
import struct
import sys

from scapy.all import Ether, IP, IPv6, UDP, Raw, raw, sendp, conf
from scapy.contrib.roce import BTH, AETH

top, ip4, ip6 = sys.argv[1:4]
spec = importlib.util.spec_from_file_location(
    "roce_icrc", f"{top}/tools/roce_icrc.py")
roce_icrc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(roce_icrc)
conf.verb = 0


def frame(family, bth, payload, icrc="good"):
    """An Ethernet frame for lo carrying IP/UDP/BTH/payload/ICRC."""
    if family == 4:
        pkt = IP(src=ip4, dst=ip4, id=7, flags="DF") / \
            UDP(sport=0xc001, dport=4791) / bth / Raw(payload)
    else:
        bth = bth.copy()
        bth.icrc = 0
        pkt = IPv6(src=ip6, dst=ip6) / \
            UDP(sport=0xc001, dport=4791) / bth / Raw(payload)
    data = bytearray(raw(pkt))
    if family == 6:
        data[-4:] = struct.pack("<I", roce_icrc.independent_icrc(bytes(data)))
    if icrc == "bad":
        data[-1] ^= 0x5a
    if icrc == "none":
        data = data[:-4]
    ip = (IP if family == 4 else IPv6)(bytes(data))
    # Let scapy redo lengths and checksums over the final bytes.
    del ip[UDP].len
    del ip[UDP].chksum
    if family == 4:
        del ip.len
        del ip.chksum
    else:
        del ip.plen
    data = raw(ip)
    if icrc == "good" and roce_icrc.independent_icrc(data) != \
            struct.unpack("<I", data[-4:])[0]:
        sys.exit("internal error: ICRC")
    return Ether(src="00:00:00:00:00:00", dst="00:00:00:00:00:00",
                 type=0x0800 if family == 4 else 0x86dd) / Raw(data)


def reth(length):
    return struct.pack("!QII", 0x1000, 0x1234, length)


frames = []
good = bad = malformed = 0
for fam in (4, 6):
    ok = [
        (BTH(opcode=0x04, padcount=3, dqpn=0x123, psn=1), b"hello\0\0\0"),
        (BTH(opcode=0x0a, dqpn=0x123, psn=2), reth(64) + bytes(range(64))),
        (BTH(opcode=0x11, dqpn=0x123, psn=3) / AETH(syndrome=0x1f), b""),
        (BTH(opcode=0x10, dqpn=0x123, psn=4),
         struct.pack("!I", 0) + bytes(1000)),
    ]
    for bth, pay in ok:
        frames.append(frame(fam, bth, pay))
        good += 1
    for bth, pay in ok[:3]:
        frames.append(frame(fam, bth, pay, icrc="bad"))
        bad += 1
    # Truncated: a BTH without the RETH its opcode needs.
    frames.append(frame(fam, BTH(opcode=0x0a, dqpn=0x123), b""))
    # No ICRC after an ACK's AETH.
    frames.append(frame(fam, BTH(opcode=0x11, dqpn=0x123) /
                        AETH(syndrome=0x1f), b"", icrc="none"))
    # RD opcode: not supported.
    frames.append(frame(fam, BTH(opcode=0x44, dqpn=0x123), b"x" * 8))
    # Pad count on an ACK, which carries no payload.
    frames.append(frame(fam, BTH(opcode=0x11, padcount=2, dqpn=0x123) /
                        AETH(syndrome=0x1f), b""))
    malformed += 4
sendp(frames, iface="lo")
print(f"rx_packets={good} rx_icrc_errors={bad} rx_malformed={malformed}")
EOF
) || fail "building or sending the packets failed"
log "sent (expected deltas): $expected"

# Receive runs in softirq right after injection; give it a moment.
sleep 1
after=$(snapshot)
log "after: $after"

status=0
for pair in $expected; do
	name=${pair%%=*} want=${pair#*=}
	b=$(tr ' ' '\n' <<<"$before" | sed -n "s/^$name=//p")
	a=$(tr ' ' '\n' <<<"$after" | sed -n "s/^$name=//p")
	got=$((a - b))
	if ((got == want)); then
		log "ok - $name +$got"
	else
		echo "FAIL: $name grew by $got, expected $want" >&2
		status=1
	fi
done
((status == 0)) || fail "sroce's receive counters do not match what was sent"
log "loopback receive, ICRC and length validation checked"

# The CNP and stale READ response checks (see the top).
forged=$(/usr/bin/python3 - "$SROCE_TOP" "$SROCE_DEV" "$(gid_index "$SROCE_DEV" 4)" \
	"$SROCE_LOCAL_IP" <<'EOF'
import importlib.util
import socket
import struct
import sys
import time

import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, SendWR

top, dev, gid_idx, ip = sys.argv[1:5]
spec = importlib.util.spec_from_file_location(
    "roce_icrc", f"{top}/tools/roce_icrc.py")
roce_icrc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(roce_icrc)
addr = socket.inet_aton(ip)
NOBODY = 0x0dead0       # no QP has it: the peer that went silent
SQ_PSN = 0x1000
STALE_PSN = SQ_PSN - 64  # older than anything the READ's QP sent
WAIT = 20               # seconds to wait for the READ's completion


def ip_checksum(h):
    s = sum(struct.unpack("!10H", h))
    s = (s >> 16) + (s & 0xffff)
    s += s >> 16
    return (~s) & 0xffff


def frame(bth_and_rest, tos=0):
    """A frame for lo: IPv4 (ECN bits in tos), UDP 4791, good ICRC."""
    udp_len = 8 + len(bth_and_rest) + 4
    iph = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + udp_len, 7, 0x4000,
                      64, 17, 0, addr, addr)
    iph = iph[:10] + struct.pack("!H", ip_checksum(iph)) + iph[12:]
    pkt = iph + struct.pack("!HHHH", 0xc002, 4791, udp_len, 0) + \
        bth_and_rest + bytes(4)
    pkt = pkt[:-4] + struct.pack("<I", roce_icrc.independent_icrc(pkt))
    return bytes(12) + b"\x08\x00" + pkt


def bth(opcode, qpn, psn):
    return struct.pack("!BBHII", opcode, 0, 0xffff, qpn, psn & 0xffffff)


ctx = Context(name=dev)
pd = PD(ctx)


def connect(qp, dest_qpn, access=0, rts=True):
    """RESET, INIT, RTR (and RTS) towards dest_qpn at our own address."""
    a = QPAttr()
    a.qp_state = e.IBV_QPS_RESET
    qp.modify(a, e.IBV_QP_STATE)
    a.qp_state = e.IBV_QPS_INIT
    a.qp_access_flags = access
    a.port_num = 1
    a.pkey_index = 0
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_ACCESS_FLAGS | e.IBV_QP_PORT |
              e.IBV_QP_PKEY_INDEX)
    gr = GlobalRoute(dgid=ctx.query_gid(1, int(gid_idx)),
                     sgid_index=int(gid_idx), hop_limit=64)
    a.qp_state = e.IBV_QPS_RTR
    a.ah_attr = AHAttr(gr=gr, is_global=1, port_num=1)
    a.path_mtu = e.IBV_MTU_1024
    a.dest_qp_num = dest_qpn
    a.rq_psn = 0
    a.max_dest_rd_atomic = 1
    a.min_rnr_timer = 12
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU |
              e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN |
              e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
    if not rts:
        return
    a.qp_state = e.IBV_QPS_RTS
    a.sq_psn = SQ_PSN
    a.timeout = 14          # 67 ms
    a.retry_cnt = 2
    a.rnr_retry = 0
    a.max_rd_atomic = 1
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_SQ_PSN | e.IBV_QP_TIMEOUT |
              e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY |
              e.IBV_QP_MAX_QP_RD_ATOMIC)


def rc_qp(cq, dest_qpn, access=0):
    """An RC QP in RTS whose peer is dest_qpn at our own address."""
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq,
                           cap=QPCap(max_send_wr=4, max_recv_wr=4)))
    connect(qp, dest_qpn, access)
    return qp


out = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
out.bind(("lo", 0))
sniff = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
sniff.bind(("lo", 0))
sniff.settimeout(0.2)

# A CE-marked SEND: the first mark on a QP is answered by a CNP, sent to
# the QP's peer (NOBODY + 1 at our address: it comes back on lo).
np_cq = CQ(ctx, 8)
np_qp = rc_qp(np_cq, NOBODY + 1)
out.send(frame(bth(0x04, np_qp.qp_num, 0) + bytes(8), tos=3))
byte4 = []
end = time.monotonic() + 3
while time.monotonic() < end and not byte4:
    try:
        data, where = sniff.recvfrom(2048)
    except socket.timeout:
        continue
    if where[2] == socket.PACKET_OUTGOING or len(data) < 14 + 20 + 8 + 12:
        continue
    udp = 14 + (data[14] & 0x0f) * 4
    if data[23] != 17 or struct.unpack("!H", data[udp + 2:udp + 4])[0] != 4791:
        continue
    b = data[udp + 8:udp + 20]
    if b[0] == 0x81 and struct.unpack("!I", b[4:8])[0] & 0xffffff == NOBODY + 1:
        byte4.append(b[4])
print("cnp_byte4=" + (",".join(f"{x:#04x}" for x in byte4) or "none"))

# A READ to NOBODY, and a stale READ RESPONSE ONLY (AETH: ACK) every 2 ms.
cq = CQ(ctx, 8)
qp = rc_qp(cq, NOBODY)
mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_READ, num_sge=1,
            sg=[SGE(mr.buf, 64, mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
wr.set_wr_rdma(0x1234, 0x10000)
stale = frame(bth(0x10, qp.qp_num, STALE_PSN) + struct.pack("!I", 0x1f << 24) +
              bytes(64))
qp.post_send(wr)
start = time.monotonic()
sent, status = 0, "none"
while time.monotonic() - start < WAIT:
    out.send(stale)
    sent += 1
    n, wcs = cq.poll()
    if n:
        status = wcs[0].status
        break
    time.sleep(0.002)
print(f"read_status={status} read_secs={time.monotonic() - start:.2f} "
      f"stale_sent={sent}")

# A forged READ of 1 MiB from OLD at a responder QP, which answers 64
# packets at once and queues the rest; at once the QP is reset and
# connected to NEW. No response may reach NEW: they were OLD's.
OLD, NEW, ROUNDS, READ_LEN = NOBODY + 2, NOBODY + 3, 10, 1 << 20
SO_RCVBUFFORCE = 33     # Linux's; Python's socket module lacks it
sniff.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 32 << 20)
src = MR(pd, READ_LEN, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ)
rq_cq = CQ(ctx, 8)
rq = rc_qp(rq_cq, OLD, e.IBV_ACCESS_REMOTE_READ)
read_req = frame(bth(0x0c, rq.qp_num, 0) +
                 struct.pack("!QII", src.buf, src.rkey, READ_LEN))
to_old = to_new = 0
for _ in range(ROUNDS):
    connect(rq, OLD, e.IBV_ACCESS_REMOTE_READ, rts=False)
    out.send(read_req)
    connect(rq, NEW, e.IBV_ACCESS_REMOTE_READ, rts=False)
    quiet = time.monotonic() + 0.5
    while time.monotonic() < quiet:
        try:
            data, where = sniff.recvfrom(8192)
        except socket.timeout:
            continue
        if where[2] == socket.PACKET_OUTGOING or len(data) < 14 + 20 + 8 + 12:
            continue
        udp = 14 + (data[14] & 0x0f) * 4
        b = data[udp + 8:udp + 20]
        if data[23] != 17 or not 0x0d <= b[0] <= 0x10:
            continue
        quiet = time.monotonic() + 0.5
        dqpn = struct.unpack("!I", b[4:8])[0] & 0xffffff
        to_old += dqpn == OLD
        to_new += dqpn == NEW
print(f"reset_rounds={ROUNDS} to_old={to_old} to_new={to_new}")
EOF
) || fail "the forged-packet checks failed to run"
log "forged: $(paste -sd' ' <<<"$forged")"
cnp=$(sed -n 's/^cnp_byte4=//p' <<<"$forged")
[[ $cnp == 0x40 ]] || fail "CNP BTH byte 4: '$cnp', expected 0x40 (BECN)"
log "ok - the CNP carries BECN"
read -r status secs sent < <(sed -n 's/^read_status=\(.*\) read_secs=\(.*\) stale_sent=\(.*\)/\1 \2 \3/p' <<<"$forged") || true
# IBV_WC_RETRY_EXC_ERR is 12. The budget: 8 timeouts of grace, then the
# first timeout, its one-tick recheck and two retries with backoff (1 + 2
# + 4 timeouts of 67 ms): about 1.1 s; 5 s leaves room for TCG.
[[ $status == 12 ]] ||
	fail "the READ to a silent peer: status '$status' after $secs s and $sent stale responses, expected IBV_WC_RETRY_EXC_ERR (12)"
awk -v s="$secs" 'BEGIN { exit !(s <= 5) }' ||
	fail "the READ failed only after $secs s (budget 5 s)"
log "ok - $sent stale READ responses did not keep a dead connection alive: RETRY_EXC_ERR after $secs s"
read -r rounds to_old to_new < <(sed -n 's/^reset_rounds=\(.*\) to_old=\(.*\) to_new=\(.*\)/\1 \2 \3/p' <<<"$forged") || true
((${to_old:-0} > 0)) || fail "the forged READs were not answered: nothing to check"
((${to_new:-1} == 0)) ||
	fail "$to_new READ responses of an old connection reached the new peer after RESET ($rounds rounds, $to_old to the old one)"
log "ok - after $rounds resets mid-answer, $to_old READ responses went to the old peer and none to the new"
