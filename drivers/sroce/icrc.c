// SPDX-License-Identifier: GPL-2.0
/*
 * RoCEv2 invariant CRC over a possibly non-linear skb, without linearizing:
 * the masked headers are copied to the stack (at most 80 bytes), the rest
 * is read in place from the linear area, page fragments and frag list.
 */
#include <crypto/hash.h>
#include <linux/crc32.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/moduleparam.h>
#include <linux/skbuff.h>
#include <linux/udp.h>

#include "compat.h"
#include "icrc.h"
#include "wire.h"

#define SROCE_IPV4_MAX_HDR	60

#if SROCE_CRC32_VIA_CRYPTO
/*
 * The crypto API's "crc32", whichever driver the kernel ranks first
 * (crc32-pclmul where the CPU has PCLMULQDQ, else crc32-generic): one
 * transform for the module's life, set before any device exists. NULL:
 * crc32_le(), when the kernel has no "crc32" or its driver keeps a state
 * other than the bare running CRC that sroce_icrc_crc32() relies on.
 */
static struct crypto_shash *sroce_crc32_tfm;

static u32 sroce_icrc_shash(struct crypto_shash *tfm, u32 crc,
			    const void *data, size_t len)
{
	SHASH_DESC_ON_STACK(desc, tfm);
	u32 *state = shash_desc_ctx(desc);

	desc->tfm = tfm;
	*state = crc;	/* what its init would set from the seed */
	crypto_shash_update(desc, data, len);
	return *state;
}

u32 sroce_icrc_crc32(u32 crc, const void *data, size_t len)
{
	if (!sroce_crc32_tfm)
		return crc32_le(crc, data, len);
	return sroce_icrc_shash(sroce_crc32_tfm, crc, data, len);
}

void sroce_icrc_module_init(void)
{
	struct crypto_shash *tfm = crypto_alloc_shash("crc32", 0, 0);

	if (IS_ERR(tfm))
		return;
	if (crypto_shash_descsize(tfm) != sizeof(u32)) {
		crypto_free_shash(tfm);
		return;
	}
	sroce_crc32_tfm = tfm;
}

void sroce_icrc_module_exit(void)
{
	crypto_free_shash(sroce_crc32_tfm);
}

const char *sroce_icrc_engine(void)
{
	return sroce_crc32_tfm ? crypto_shash_driver_name(sroce_crc32_tfm) :
				 "crc32_le";
}
#else
u32 sroce_icrc_crc32(u32 crc, const void *data, size_t len)
{
	return crc32_le(crc, data, len);
}

void sroce_icrc_module_init(void)
{
}

void sroce_icrc_module_exit(void)
{
}

const char *sroce_icrc_engine(void)
{
	return "crc32_le";
}
#endif

SROCE_EXPORT_FOR_KUNIT(sroce_icrc_crc32);
SROCE_EXPORT_FOR_KUNIT(sroce_icrc_engine);

static int sroce_icrc_engine_get(char *buf, const struct kernel_param *kp)
{
	return scnprintf(buf, PAGE_SIZE, "%s\n", sroce_icrc_engine());
}

static const struct kernel_param_ops sroce_icrc_engine_ops = {
	.get = sroce_icrc_engine_get,
};

module_param_cb(icrc_engine, &sroce_icrc_engine_ops, NULL, 0444);
MODULE_PARM_DESC(icrc_engine, "The CRC-32 code computing ICRCs (read only)");

static u32 sroce_icrc_headers(const u8 *nh, unsigned int ip_len)
{
	u8 buf[SROCE_IPV4_MAX_HDR + sizeof(struct udphdr) + SROCE_BTH_LEN];
	unsigned int len = ip_len + sizeof(struct udphdr) + SROCE_BTH_LEN;
	struct udphdr *udph;

	memcpy(buf, nh, len);
	if ((buf[0] >> 4) == 4) {
		struct iphdr *iph = (struct iphdr *)buf;

		iph->tos = 0xff;
		iph->ttl = 0xff;
		iph->check = htons(0xffff);
	} else {
		struct ipv6hdr *ip6h = (struct ipv6hdr *)buf;

		/* Version stays; traffic class and flow label go. */
		buf[0] |= 0x0f;
		memset(&buf[1], 0xff, 3);
		ip6h->hop_limit = 0xff;
	}
	udph = (struct udphdr *)(buf + ip_len);
	udph->check = htons(0xffff);
	/* BTH byte 4: FECN, BECN and reserved bits. */
	buf[ip_len + sizeof(struct udphdr) + 4] = 0xff;

	return sroce_icrc_crc32(SROCE_ICRC_LRH_SEED, buf, len);
}

/* The CRC-32 of [from, to) of skb, offsets from skb->data. */
static u32 sroce_icrc_data(struct sk_buff *skb, u32 crc, unsigned int from,
			   unsigned int to)
{
	struct skb_seq_state st;
	unsigned int consumed = 0, n;
	const u8 *data;

	if (to <= skb_headlen(skb))
		return sroce_icrc_crc32(crc, skb->data + from, to - from);

	skb_prepare_seq_read(skb, from, to, &st);
	while ((n = skb_seq_read(consumed, &data, &st)) != 0) {
		/* skb_seq_read() returns whole blocks, even past @to. */
		n = min(n, to - from - consumed);
		crc = sroce_icrc_crc32(crc, data, n);
		consumed += n;
		if (consumed == to - from) {
			skb_abort_seq_read(&st);
			break;
		}
	}
	return crc;
}

u32 sroce_icrc_compute(struct sk_buff *skb)
{
	int ip_len = skb_transport_header(skb) - skb_network_header(skb);
	int from = skb_transport_offset(skb) + sizeof(struct udphdr) +
		   SROCE_BTH_LEN;
	int to = skb->len - SROCE_ICRC_LEN;
	u32 crc;

	/* Callers validate received headers before: these are bugs. */
	if (WARN_ON_ONCE(ip_len < (int)sizeof(struct iphdr) ||
			 ip_len > SROCE_IPV4_MAX_HDR || from < 0 || to < from))
		return 0;

	crc = sroce_icrc_headers(skb_network_header(skb), ip_len);
	if (from < to)
		crc = sroce_icrc_data(skb, crc, from, to);
	return ~crc;
}

SROCE_EXPORT_FOR_KUNIT(sroce_icrc_compute);

int sroce_icrc_check(struct sk_buff *skb)
{
	__le32 wire, *p;

	p = skb_header_pointer(skb, skb->len - SROCE_ICRC_LEN, sizeof(wire),
			       &wire);
	if (!p || le32_to_cpu(*p) != sroce_icrc_compute(skb))
		return -EBADMSG;
	return 0;
}

SROCE_EXPORT_FOR_KUNIT(sroce_icrc_check);
