# SPDX-License-Identifier: GPL-2.0
"""The RoCEv2 ICRC, written from IBTA Annex A17.8, without scapy.

tools/icrc-vectors.py checks it against scapy's RoCE layer; the guests'
packet forgers (tests/integration/peer-fuzz.sh, wire-scapy.sh) import
this alone, since importing scapy takes minutes on the debug kernel.
"""

import zlib


def independent_icrc(ip_packet):
    """ICRC of an IP/UDP/BTH/... packet whose last 4 bytes are the ICRC."""
    b = bytearray(ip_packet[:-4])
    version = b[0] >> 4
    if version == 4:
        ihl = (b[0] & 0x0f) * 4
        b[1] = 0xff                   # TOS
        b[8] = 0xff                   # TTL
        b[10:12] = b"\xff\xff"        # header checksum
    elif version == 6:
        ihl = 40
        b[0] |= 0x0f                  # traffic class (high nibble) ...
        b[1:4] = b"\xff\xff\xff"      # ... and flow label
        b[7] = 0xff                   # hop limit
    else:
        raise ValueError("not IP")
    b[ihl + 6:ihl + 8] = b"\xff\xff"  # UDP checksum
    b[ihl + 8 + 4] = 0xff             # BTH FECN/BECN/resv6
    return zlib.crc32(b"\xff" * 8 + bytes(b)) & 0xffffffff
