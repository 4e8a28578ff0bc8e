#!/bin/bash
# sroce-test: kernels=debug full-kernels=6.1,6.12,debug pairs=none timeout=600
# SPDX-License-Identifier: GPL-2.0
#
# A hostile peer: anything may arrive on UDP 4791. While victim RC and UD
# pingpongs run on this guest's sroce device (over its own address, the
# loopback path), a fuzzer injects RoCEv2 packets at the victims' QPs, at
# RC, UC and UD QPs left in every state from RESET to ERR
# (tests/verify/sroce-qp-states) and at QPs that do not exist: every
# opcode (the valid RC, UC and UD ones mostly), random BTH fields and pad
# counts, random extension headers and payloads of random length
# (truncated ones too), valid ICRCs mostly, and for RC the PSN the
# responder expects next (learnt by watching the victims' own packets),
# so the packets reach the responder's and completer's deepest paths:
# placement, READ and atomic execution, NAKs; and floods of duplicate
# SENDs, WRITEs and READs with AckReq. A victim may be torn down by this,
# as the spec allows a forged peer to; the kernel must not be harmed (the
# harness fails the run on any oops, WARN, KASAN, lockdep or kmemleak
# report), QPs in RESET and INIT must take no packet, a bystander pingpong
# on QPs the fuzzer does not aim at must check all its data, and the device
# must hold no more objects afterwards than before, nor the kernel more
# unreclaimable slab memory (a queue a peer could grow, or a leak of a few
# bytes per packet, would show there).
set -euo pipefail
# shellcheck source=tests/integration/lib.sh
. "$SROCE_TOP/tests/integration/lib.sh"

require_cmd /usr/bin/python3 ibv_rc_pingpong ibv_ud_pingpong rdma
[[ $SROCE_DEV == sroce* ]] || fail "needs an sroce device"
states=$SROCE_BUILD/sroce-qp-states
[[ -x $states ]] || fail "$states is missing (make verify)"
# The debug kernel is there for KASAN and lockdep on the paths the packets
# reach, which a thousand or two find as well; 6.1 fuzzes at five times that.
count=8000
[[ $SROCE_KERNEL == debug ]] && count=1500
dev=$SROCE_DEV
idx=$(gid_index "$dev" 4)
ip=$SROCE_LOCAL_IP
# Injected frames arrive on lo without the route a locally sent packet
# carries, so IPv4 input routing sees our own source address: allow it.
sysctl -qw net.ipv4.conf.lo.accept_local=1 || fail "cannot set accept_local"

lqpns() {
	rdma resource show qp link "$dev/1" 2>/dev/null |
		sed -n 's/.* lqpn \([0-9]*\) .*/\1/p' | grep -vx 1 | sort -n
}

before=$(dev_object_counts "$dev")
# Unreclaimable slab, in kB; 2 MiB of slack for the caches the run warms.
sunreclaim() { sed -n 's/^SUnreclaim: *\([0-9]*\) kB$/\1/p' /proc/meminfo; }
slab_slack=2048
slab0=$(sunreclaim)
[[ -n $slab0 ]] || fail "no SUnreclaim in /proc/meminfo"
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill -9 "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
}
trap cleanup EXIT

# victims: long pingpongs whose QPs the fuzzer aims at
out=$SROCE_OUT
ibv_rc_pingpong -d "$dev" -g "$idx" -p 18501 -n 1000000 -s 2048 >"$out/victim-rc-s.txt" 2>&1 &
pids+=($!)
ibv_ud_pingpong -d "$dev" -g "$idx" -p 18502 -n 1000000 -s 512 >"$out/victim-ud-s.txt" 2>&1 &
pids+=($!)
wait_for 20 listening 18501 || fail "victim RC server not listening"
wait_for 20 listening 18502 || fail "victim UD server not listening"
ibv_rc_pingpong -d "$dev" -g "$idx" -p 18501 -n 1000000 -s 2048 "$ip" >"$out/victim-rc-c.txt" 2>&1 &
pids+=($!)
ibv_ud_pingpong -d "$dev" -g "$idx" -p 18502 -n 1000000 -s 512 "$ip" >"$out/victim-ud-c.txt" 2>&1 &
pids+=($!)
has_four_qps() { (($(lqpns | wc -l) >= 4)); }
wait_for 20 has_four_qps || fail "the victims did not create their QPs: $(lqpns | paste -sd' ')"
victims=$(lqpns | paste -sd,)
log "victim QPNs: $victims"
coproc STATES { "$states" "$dev" "$idx" 2>&1; }
read -r -t 60 -u "${STATES[0]}" word targets || fail "sroce-qp-states said nothing"
[[ $word == qpns ]] || fail "sroce-qp-states: '$word $targets'"
log "QPs in every state: $targets"

icrc0=$(link_counter "$dev" rx_icrc_errors)
# (its progress and, should it stall, its stack go to this test's output)
sending=$out/fuzzer-sending
/usr/bin/python3 - "$SROCE_TOP" "$ip" "$victims" "$targets" "$count" "$sending" <<'EOF' &
import faulthandler
import importlib.util
import os
import random
import select
import socket
import struct
import sys
import time

top, ip, victims, targets = sys.argv[1:5]
count = int(sys.argv[5])
sending = sys.argv[6]   # made once the first packet went
spec = importlib.util.spec_from_file_location("roce_icrc", f"{top}/tools/roce_icrc.py")
roce_icrc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(roce_icrc)
victims = [int(q) for q in victims.split(",")]
targets = [int(q) for q in targets.split(",")]
rng = random.Random(0x5eed ^ os.getpid())
addr = socket.inet_aton(ip)

# Opcodes with a meaning: RC, UC, UD requests and responses, CNP.
VALID = list(range(0x00, 0x19)) + list(range(0x20, 0x2c)) + [0x64, 0x65, 0x81]
# The next PSN each victim QP expects, from watching the victims' packets;
# the fuzzer's own packets carry this IP ID and TTL, and are not learnt from.
# sroce-qp-states's QPs expect PSN 1 and send nothing.
expect = {q: 1 for q in targets}
MARK_ID, MARK_TTL = 0x5eed, 63
LEARN_BATCH, LEARN_EVERY = 8, 8


def ip_checksum(h):
    s = sum(struct.unpack("!10H", h))
    s = (s >> 16) + (s & 0xffff)
    s += s >> 16
    return (~s) & 0xffff


def frame(bth_and_rest, good_icrc):
    udp_len = 8 + len(bth_and_rest) + 4
    iph = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, MARK_ID, 0x4000,
                      MARK_TTL, 17, 0, addr, addr)
    iph = iph[:10] + struct.pack("!H", ip_checksum(iph)) + iph[12:]
    udp = struct.pack("!HHHH", rng.randrange(0xc000, 0x10000), 4791, udp_len, 0)
    pkt = iph + udp + bth_and_rest + b"\0\0\0\0"
    icrc = roce_icrc.independent_icrc(pkt)
    if not good_icrc:
        icrc ^= 1 << rng.randrange(32)
    pkt = pkt[:-4] + struct.pack("<I", icrc)
    return b"\0" * 12 + b"\x08\x00" + pkt


def learn(sniff):
    """Record the PSNs the victims send each other (UDP 4791 on lo).

    At most LEARN_BATCH packets a call, a call every LEARN_EVERY packets
    sent: on the debug kernel the victims send faster than Python reads,
    and draining the socket starved the sender (CI: 500 packets in 167 s,
    every stack sample in here). The socket's small buffer keeps what is
    read recent enough."""
    for _ in range(LEARN_BATCH):
        if not select.select([sniff], [], [], 0)[0]:
            return
        data = sniff.recv(4096)
        if len(data) < 14 + 20 + 8 + 12 or data[12:14] != b"\x08\x00":
            continue
        ihl = (data[14] & 0x0f) * 4
        udp = 14 + ihl
        if struct.unpack("!H", data[18:20])[0] == MARK_ID and data[22] == MARK_TTL:
            continue
        if data[23] != 17 or struct.unpack("!H", data[udp + 2:udp + 4])[0] != 4791:
            continue
        bth = data[udp + 8:udp + 20]
        opcode = bth[0]
        dqpn = struct.unpack("!I", bth[4:8])[0] & 0xffffff
        psn = struct.unpack("!I", bth[8:12])[0] & 0xffffff
        if dqpn in victims and opcode < 0x20:
            expect[dqpn] = (psn + 1) & 0xffffff


def duplicate(qpn):
    """A duplicate SEND, WRITE or READ with AckReq: each wants an answer."""
    opcode = rng.choice((0x04, 0x0a, 0x0c))
    psn = (expect[qpn] - rng.randrange(1, 9)) & 0xffffff
    bth = struct.pack("!BBHII", opcode, 0, 0xffff, qpn, (1 << 31) | psn)
    reth = struct.pack("!QII", rng.randrange(1 << 64), rng.randrange(1 << 32),
                       rng.choice((0, 8, 4096, 65536)))
    body = {0x04: bytes(4 * rng.randrange(16)), 0x0a: reth + bytes(64),
            0x0c: reth}[opcode]
    return frame(bth + body, True)


def packet():
    r = rng.random()
    if r < 0.5:
        qpn = rng.choice(victims)
    elif r < 0.8:
        qpn = rng.choice(targets)
    else:
        qpn = rng.randrange(0x800000, 0x1000000)   # nobody's
    if qpn in expect and rng.random() < 0.15:
        return duplicate(qpn)
    opcode = rng.choice(VALID) if rng.random() < 0.9 else rng.randrange(256)
    if qpn in expect and rng.random() < 0.7:
        psn = (expect[qpn] + rng.choice((0, 0, 0, 1, -1, -2))) & 0xffffff
    else:
        psn = rng.randrange(1 << 24)
    flags = rng.randrange(256) if rng.random() < 0.2 else rng.choice((0, 0x80))
    tver = rng.randrange(16) if rng.random() < 0.05 else 0
    pkey = 0xffff if rng.random() < 0.95 else rng.randrange(1 << 16)
    b1 = (flags & 0x80) | (rng.randrange(4) << 4) | tver  # SE, pad, TVer
    ackreq = rng.randrange(2) << 31
    bth = struct.pack("!BBHII", opcode, b1, pkey, qpn, ackreq | psn)
    # extension headers and payload: random bytes of random length
    n = rng.choice((0, 4, 8, 12, 16, 20, 28, 32, rng.randrange(1100)))
    body = bytes(rng.randrange(256) for _ in range(n))
    return frame(bth + body, rng.random() < 0.9)


out = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
out.bind(("lo", 0))
sniff = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
sniff.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
sniff.bind(("lo", 0))
# Its progress, and where it is should 500 packets take over a minute
# (re-armed at each progress line).
faulthandler.dump_traceback_later(60)
sent = refused = 0
start = time.time()
while sent < count:
    if sent % LEARN_EVERY == 0:
        learn(sniff)
    try:
        out.send(packet())
        sent += 1
        if sent == 1:
            open(sending, "w").close()
        if sent % 500 == 0:
            print(f"fuzz: {sent} sent, {refused} refused, {time.time() - start:.0f} s",
                  flush=True)
            faulthandler.dump_traceback_later(60)
    except OSError:
        refused += 1
        time.sleep(0.001)
faulthandler.cancel_dump_traceback_later()
learnt = sum(q in expect for q in victims)
print(f"fuzz: {sent} packets ({refused} sends refused) in {time.time() - start:.0f} s, "
      f"PSNs learnt for {learnt} of {len(victims)} victim QPs, "
      f"{len(targets)} QPs in every state")
EOF
fuzz=$!
pids+=("$fuzz")

# the bystander: QPs created after the fuzzer chose its targets, while it
# sends
wait_for 120 test -e "$sending" || fail "the fuzzer sent nothing in 120 s"
pair_out=$out/bystander
ibv_rc_pingpong -d "$dev" -g "$idx" -p 18503 -n 300 -s 4096 -c >"$pair_out-s.txt" 2>&1 &
bs=$!
wait_for 60 listening 18503 || fail "bystander server not listening"
with_timeout 240 ibv_rc_pingpong -d "$dev" -g "$idx" -p 18503 -n 300 -s 4096 -c "$ip" \
	>"$pair_out-c.txt" 2>&1 || { cat "$pair_out-c.txt"; fail "the bystander pingpong failed"; }
wait "$bs" || { cat "$pair_out-s.txt"; fail "the bystander's server failed"; }
grep -q "^300 iters in" "$pair_out-c.txt" || fail "bystander: no '300 iters' summary"
log "bystander: 300 checked round trips while the fuzzer ran"

wait "$fuzz" || fail "the fuzzer failed"
log "the fuzzer is done: checking and destroying the QPs in every state"
echo "done" >&"${STATES[1]}"
statelog=$out/qp-states.txt
timeout 60 cat <&"${STATES[0]}" >"$statelog" || true
cat "$statelog"
# (bash forgets a coproc's PID once it ended: read its verdict instead)
grep -q "^[0-9]* checks, 0 failures$" "$statelog" ||
	fail "QPs in RESET or INIT took packets, or a QP could not be destroyed"
log "QPs in every state checked and destroyed"
# A tenth of the packets carry a bad ICRC; about half of those are counted
# as such (the rest are malformed before their ICRC is looked at).
icrc=$(($(link_counter "$dev" rx_icrc_errors) - icrc0))
((icrc >= count / 50)) || fail "only $icrc ICRC errors counted: the packets did not arrive"
log "$icrc packets with a bad ICRC counted"
for f in "$out"/victim-*.txt; do
	log "$(basename "$f"): $(tail -n 1 "$f")"
done
cleanup
pids=()
back_to_before() { [[ $(dev_object_counts "$dev") == "$before" ]]; }
wait_for 20 back_to_before ||
	fail "objects left on $dev: before '$before', after '$(dev_object_counts "$dev")' (qp cq pd mr)"
log "objects back to '$before' (qp cq pd mr)"
# Freed skbs and QPs go through RCU and the slab's per-CPU lists: wait.
# Not on the debug kernel: KASAN's quarantine keeps freed objects in their
# slabs for a while (kmemleak watches leaks there).
if [[ $SROCE_KERNEL != debug ]]; then
	slab_back() { (($(sunreclaim) - slab0 <= slab_slack)); }
	wait_for 30 slab_back ||
		fail "unreclaimable slab grew by $(($(sunreclaim) - slab0)) kB over the fuzzing (slack $slab_slack kB)"
fi
log "unreclaimable slab: $slab0 kB before, $(sunreclaim) kB after"
