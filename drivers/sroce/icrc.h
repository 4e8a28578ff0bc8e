/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RoCEv2 invariant CRC (IBTA Annex A17.8): CRC-32 (the Ethernet
 * polynomial, reflected, inverted at start and end) over
 *
 *   8 bytes of 0xff standing in for the LRH RoCEv2 does not have,
 *   the IP header with the fields routers change masked to all-ones
 *   (IPv4: TOS, TTL, header checksum; IPv6: traffic class, flow label,
 *   hop limit),
 *   the UDP header with the checksum masked to all-ones,
 *   the BTH with its FECN/BECN/reserved byte masked to all-ones,
 *   the rest of the packet up to the ICRC (extension headers, payload, pad).
 *
 * The 32-bit result goes on the wire least significant byte first.
 */
#ifndef SROCE_ICRC_H
#define SROCE_ICRC_H

#include <linux/skbuff.h>
#include <linux/types.h>

/* crc32_le(~0, 8 bytes of 0xff): the state after the masked LRH. */
#define SROCE_ICRC_LRH_SEED	0xdebb20e3U

/*
 * The ICRC of the packet in skb. Needs skb_network_header() at an IPv4
 * (any IHL) or IPv6 header (no extension headers) directly followed by the
 * UDP header at skb_transport_header(), the BTH after it, everything from
 * the network header to the end of the BTH in the linear area and at or
 * after skb->data - headroom, and the ICRC as the last SROCE_ICRC_LEN bytes
 * of skb. The payload may be in fragments or a frag list.
 */
u32 sroce_icrc_compute(struct sk_buff *skb);

/* 0 if the ICRC at the end of skb matches, -EBADMSG if not. */
int sroce_icrc_check(struct sk_buff *skb);

/*
 * The CRC-32 engine (compat.h, SROCE_CRC32_VIA_CRYPTO): found at module
 * load, never failing (crc32_le() is the floor), released at unload.
 */
void sroce_icrc_module_init(void);
void sroce_icrc_module_exit(void);
/* crc32_le(crc, data, len), computed by the engine; any context. */
u32 sroce_icrc_crc32(u32 crc, const void *data, size_t len);
/* The engine's name (parameter icrc_engine): a crypto driver or crc32_le. */
const char *sroce_icrc_engine(void);

#endif /* SROCE_ICRC_H */
