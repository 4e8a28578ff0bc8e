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
