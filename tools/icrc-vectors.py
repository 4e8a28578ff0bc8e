#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Generate tests/kunit/icrc_vectors.h: RoCEv2 packets and their ICRC.

The IPv4 packets are built by scapy's RoCE layer (scapy.contrib.roce),
which computes the ICRC itself. That layer does not do IPv6 yet, so this
script checks our own ICRC routine, written from IBTA Annex A17.8
(tools/roce_icrc.py), against scapy on every IPv4 packet, and uses it for
IPv6.
Either way the expected values come from outside the kernel code they test.

Usage: tools/icrc-vectors.py [OUTPUT]   (default tests/kunit/icrc_vectors.h)
Needs python3-scapy (Debian), run with the system python3.
"""

import os
import struct
import sys

import scapy
from scapy.compat import raw
from scapy.contrib.roce import BTH, AETH
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.packet import Raw

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from roce_icrc import independent_icrc  # noqa: E402 (after its directory)

ROCE_PORT = 4791


def pattern(n, seed):
    """Deterministic payload bytes."""
    return bytes((seed + i * 7 + (i >> 8)) & 0xff for i in range(n))


def reth(va, rkey, length):
    return struct.pack("!QII", va, rkey, length)


def v4(name, bth, payload=b"", **ip):
    pkt = IP(src="10.0.0.1", dst="10.0.0.2", **ip) / \
        UDP(sport=0xc123, dport=ROCE_PORT) / bth / Raw(payload)
    data = raw(pkt)
    icrc = struct.unpack("<I", data[-4:])[0]
    if icrc != independent_icrc(data):
        sys.exit(f"{name}: scapy ICRC {icrc:#x} != "
                 f"{independent_icrc(data):#x}: the A17.8 routine is wrong")
    return name, data, icrc


def v6(name, bth, payload=b"", **ip):
    # scapy leaves the ICRC of IPv6 packets zero: fill it in ourselves.
    bth = bth.copy()
    bth.icrc = 0
    pkt = IPv6(src="fd00::1", dst="fd00::2", **ip) / \
        UDP(sport=0xd00d, dport=ROCE_PORT) / bth / Raw(payload)
    data = bytearray(raw(pkt))
    icrc = independent_icrc(bytes(data))
    data[-4:] = struct.pack("<I", icrc)
    # The UDP checksum covered the old ICRC: recompute it with the new
    # one (the ICRC masks the UDP checksum, so either value is valid).
    pkt = IPv6(bytes(data))
    del pkt[UDP].chksum
    data = raw(pkt)
    assert independent_icrc(data) == icrc
    return name, data, icrc


def vectors():
    v = []
    # SEND ONLY, 5 bytes of payload + 3 pad bytes.
    v.append(v4("ipv4_send_only_pad3",
                BTH(opcode=0x04, solicited=1, padcount=3, dqpn=0x000011,
                    ackreq=1, psn=0x000001),
                pattern(5, 1) + b"\0\0\0"))
    # RDMA WRITE ONLY with RETH, routers' fields and FECN/BECN set: all
    # of them are masked out of the ICRC.
    v.append(v4("ipv4_write_only_masked",
                BTH(opcode=0x0a, fecn=1, becn=1, dqpn=0xabcdef,
                    psn=0xffffff, pkey=0xffff),
                reth(0x0123456789abcdef, 0x11223344, 64) + pattern(64, 9),
                tos=0x8a, ttl=3, id=0x4242, flags="DF"))
    # ACKNOWLEDGE (BTH + AETH, no payload).
    v.append(v4("ipv4_ack",
                BTH(opcode=0x11, dqpn=0x000102, psn=0x7fffff) /
                AETH(syndrome=0x1f, msn=0x000010)))
    # RDMA READ RESPONSE ONLY, 1024 bytes: long enough to be split
    # across page fragments by the test.
    v.append(v4("ipv4_read_resp_only_1k",
                BTH(opcode=0x10, dqpn=0x000033, psn=0x123456),
                struct.pack("!I", 0x00000005) + pattern(1024, 77),
                ttl=64))
    # UD SEND ONLY WITH IMMEDIATE: DETH + ImmDt.
    v.append(v4("ipv4_ud_send_imm",
                BTH(opcode=0x65, dqpn=0x000001, psn=0x000002),
                struct.pack("!II", 0x80010000, 0x00000077) +
                struct.pack("!I", 0xdeadbeef) + pattern(36, 3)))
    # IPv6: SEND ONLY with traffic class, flow label and hop limit set.
    v.append(v6("ipv6_send_only_flow",
                BTH(opcode=0x04, dqpn=0x000011, psn=0x000100, ackreq=1),
                pattern(40, 5), tc=0xb8, fl=0xabcde, hlim=7))
    # IPv6: RDMA WRITE ONLY, 1024 bytes, pad 0, FECN set.
    v.append(v6("ipv6_write_only_1k",
                BTH(opcode=0x0a, fecn=1, dqpn=0xfedcba, psn=0x000000),
                reth(0xffffffffffff0000, 0x5a5a5a5a, 1024) +
                pattern(1024, 200), hlim=64))
    # IPv6: SEND LAST with 1 byte + 3 pad.
    v.append(v6("ipv6_send_last_pad3",
                BTH(opcode=0x02, padcount=3, dqpn=0x000bad, psn=0x800000),
                pattern(1, 0x42) + b"\0\0\0"))
    return v


def c_bytes(data):
    lines = []
    for i in range(0, len(data), 12):
        lines.append("\t" + " ".join(f"0x{b:02x}," for b in data[i:i + 12]))
    return "\n".join(lines)


def main():
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = sys.argv[1] if len(sys.argv) > 1 else \
        os.path.join(top, "tests/kunit/icrc_vectors.h")
    vecs = vectors()
    text = [
        "/* SPDX-License-Identifier: GPL-2.0 */",
        "/*",
        " * RoCEv2 packets (IP header to ICRC) with their ICRC. Generated by",
        f" * tools/icrc-vectors.py with scapy {scapy.VERSION}: IPv4 ICRCs by",
        " * scapy.contrib.roce, IPv6 ICRCs by the script's own IBTA A17.8",
        " * routine, which it checks against scapy on every IPv4 packet.",
        " * Do not edit; rerun the script.",
        " */",
        "#ifndef SROCE_ICRC_VECTORS_H",
        "#define SROCE_ICRC_VECTORS_H",
        "",
        "#include <linux/types.h>",
        "",
        "struct sroce_icrc_vector {",
        "\tconst char *name;",
        "\tconst u8 *pkt;\t\t/* IP header .. ICRC */",
        "\tunsigned int len;",
        "\tu32 icrc;\t\t/* also the last 4 bytes, little-endian */",
        "};",
        "",
    ]
    for name, data, _ in vecs:
        text.append(f"static const u8 sroce_icrc_{name}[] = {{")
        text.append(c_bytes(data))
        text.append("};")
        text.append("")
    text.append("static const struct sroce_icrc_vector sroce_icrc_vectors[] = {")
    for name, data, icrc in vecs:
        text.append(f"\t{{ \"{name}\", sroce_icrc_{name},")
        text.append(f"\t  sizeof(sroce_icrc_{name}), 0x{icrc:08x} }},")
    text.append("};")
    text.append("")
    text.append("#endif /* SROCE_ICRC_VECTORS_H */")
    with open(out, "w") as f:
        f.write("\n".join(text) + "\n")
    print(f"wrote {len(vecs)} vectors to {out}")


if __name__ == "__main__":
    main()
