// SPDX-License-Identifier: GPL-2.0
/*
 * ICRC against packets whose ICRC was computed outside the kernel
 * (icrc_vectors.h, from scapy), over linear, fragmented and frag-listed
 * skbs, the masking rules of IBTA A17.8, and the CRC-32 engine (the
 * crypto API's "crc32" before 6.14) against crc32_le().
 */
#include <kunit/test.h>
#include <linux/crc32.h>
#include <linux/random.h>

#include "icrc.h"
#include "icrc_vectors.h"
#include "sroce_test.h"
#include "wire.h"

static void icrc_seed_test(struct kunit *test)
{
	static const u8 lrh[8] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	};

	KUNIT_EXPECT_EQ(test, crc32_le(~0U, lrh, sizeof(lrh)),
			SROCE_ICRC_LRH_SEED);
}

struct icrc_layout {
	const char *name;
	/* bytes after the IP/UDP/BTH headers kept linear; ~0: all */
	unsigned int linear_extra;
	bool frag_list;
};

static const struct icrc_layout icrc_layouts[] = {
	{ "linear", ~0U, false },
	{ "frags", 0, false },
	{ "frags+3", 3, false },
	{ "frag_list", 0, true },
};

static void icrc_vectors_test(struct kunit *test)
{
	unsigned int v, l;

	for (v = 0; v < ARRAY_SIZE(sroce_icrc_vectors); v++) {
		const struct sroce_icrc_vector *vec = &sroce_icrc_vectors[v];
		unsigned int hdrs = sroce_test_ip_len(vec->pkt) + 8 +
				    SROCE_BTH_LEN;
		__le32 wire;

		/* The ICRC goes on the wire least significant byte first. */
		memcpy(&wire, vec->pkt + vec->len - 4, sizeof(wire));
		KUNIT_EXPECT_EQ_MSG(test, le32_to_cpu(wire), vec->icrc, "%s",
				    vec->name);

		for (l = 0; l < ARRAY_SIZE(icrc_layouts); l++) {
			const struct icrc_layout *lay = &icrc_layouts[l];
			unsigned int linear = lay->linear_extra == ~0U ?
					      vec->len :
					      hdrs + lay->linear_extra;
			struct sk_buff *skb;

			skb = sroce_test_skb(test, vec->pkt, vec->len, linear,
					     lay->frag_list, l & 1);
			if (!skb)
				return;
			KUNIT_EXPECT_EQ_MSG(test, sroce_icrc_compute(skb),
					    vec->icrc, "%s %s", vec->name,
					    lay->name);
			KUNIT_EXPECT_EQ_MSG(test, sroce_icrc_check(skb), 0,
					    "%s %s", vec->name, lay->name);
			if (linear < vec->len)
				KUNIT_EXPECT_TRUE(test, skb_is_nonlinear(skb));
			kfree_skb(skb);
		}
	}
}

/*
 * Flip one byte of a packet: the ICRC must notice unless the byte is one
 * the ICRC masks. The skb is laid out from the intact packet, then the
 * byte is changed in place (in the head or in a fragment).
 */
static int icrc_check_flipped(struct kunit *test,
			      const struct sroce_icrc_vector *vec,
			      unsigned int off, bool frags)
{
	unsigned int ip_len = sroce_test_ip_len(vec->pkt);
	unsigned int hdrs = ip_len + 8 + SROCE_BTH_LEN;
	struct sk_buff *skb;
	int ret;
	u8 b;

	skb = sroce_test_skb(test, vec->pkt, vec->len,
			     frags ? hdrs : vec->len, false, true);
	if (!skb)
		return 0;
	if (off < ip_len) {
		skb_network_header(skb)[off] ^= 0x10;
	} else {
		KUNIT_ASSERT_EQ(test, skb_copy_bits(skb, off - ip_len, &b, 1), 0);
		b ^= 0x10;
		KUNIT_ASSERT_EQ(test, skb_store_bits(skb, off - ip_len, &b, 1), 0);
	}
	ret = sroce_icrc_check(skb);
	kfree_skb(skb);
	return ret;
}

static void icrc_mask_test(struct kunit *test)
{
	/* [0]: IPv4 send only; [5]: IPv6 send only with flow label. */
	const struct sroce_icrc_vector *v4 = &sroce_icrc_vectors[0];
	const struct sroce_icrc_vector *v6 = &sroce_icrc_vectors[5];
	static const unsigned int v4_masked[] = {
		1,		/* TOS */
		8,		/* TTL */
		10, 11,		/* header checksum */
		20 + 6, 20 + 7,	/* UDP checksum */
		20 + 8 + 4,	/* BTH FECN/BECN/resv6 */
	};
	static const unsigned int v4_covered[] = {
		0, 2, 3, 4, 5, 6, 9, 12, 15, 16, 19,	/* IP */
		20, 21, 22, 23, 24, 25,			/* UDP ports, len */
		28, 29, 30, 31, 33, 35, 36, 39,		/* BTH */
		40, 44,				/* payload, pad */
	};
	static const unsigned int v6_masked[] = {
		1, 2, 3,	/* traffic class, flow label */
		7,		/* hop limit */
		40 + 6, 40 + 7,	/* UDP checksum */
		40 + 8 + 4,	/* BTH FECN/BECN/resv6 */
	};
	static const unsigned int v6_covered[] = {
		0, 4, 5, 6, 8, 23, 24, 39,	/* IPv6 */
		40, 41, 45,			/* UDP */
		48, 53, 59,			/* BTH */
		60, 99,				/* payload */
	};
	unsigned int i;

	KUNIT_ASSERT_EQ(test, v4->pkt[0] >> 4, 4);
	KUNIT_ASSERT_EQ(test, v6->pkt[0] >> 4, 6);

	for (i = 0; i < ARRAY_SIZE(v4_masked); i++)
		KUNIT_EXPECT_EQ_MSG(test, icrc_check_flipped(test, v4,
							     v4_masked[i], i & 1),
				    0, "IPv4 byte %u", v4_masked[i]);
	for (i = 0; i < ARRAY_SIZE(v4_covered); i++)
		KUNIT_EXPECT_EQ_MSG(test, icrc_check_flipped(test, v4,
							     v4_covered[i], i & 1),
				    -EBADMSG, "IPv4 byte %u", v4_covered[i]);
	for (i = 0; i < ARRAY_SIZE(v6_masked); i++)
		KUNIT_EXPECT_EQ_MSG(test, icrc_check_flipped(test, v6,
							     v6_masked[i], i & 1),
				    0, "IPv6 byte %u", v6_masked[i]);
	for (i = 0; i < ARRAY_SIZE(v6_covered); i++)
		KUNIT_EXPECT_EQ_MSG(test, icrc_check_flipped(test, v6,
							     v6_covered[i], i & 1),
				    -EBADMSG, "IPv6 byte %u", v6_covered[i]);
	/* The ICRC itself. */
	KUNIT_EXPECT_EQ(test, icrc_check_flipped(test, v4, v4->len - 1, false),
			-EBADMSG);
	KUNIT_EXPECT_EQ(test, icrc_check_flipped(test, v6, v6->len - 4, true),
			-EBADMSG);
}

/*
 * The engine (the crypto API's "crc32" before 6.14, crc32_le() after)
 * against crc32_le() itself: the lengths around the folding code's
 * thresholds and strides, at every alignment of a word, with the seeds
 * the ICRC uses and a random one. The vectors above check the ICRC.
 */
static void icrc_engine_test(struct kunit *test)
{
	static const size_t lens[] = {
		0, 1, 3, 8, 15, 16, 17, 63, 64, 65, 79, 80, 127, 128, 129,
		255, 256, 1000, 1024, 4095, 4096, 4097, 9000,
	};
	const u32 seeds[] = { ~0U, SROCE_ICRC_LRH_SEED, get_random_u32() };
	u8 *buf = kunit_kmalloc(test, 9000 + 8, GFP_KERNEL);
	unsigned int l, off, s, bad = 0;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	get_random_bytes(buf, 9000 + 8);
	kunit_info(test, "ICRC engine: %s\n", sroce_icrc_engine());
	for (l = 0; l < ARRAY_SIZE(lens); l++)
		for (off = 0; off < 8; off++)
			for (s = 0; s < ARRAY_SIZE(seeds); s++)
				bad += sroce_icrc_crc32(seeds[s], buf + off,
							lens[l]) !=
				       crc32_le(seeds[s], buf + off, lens[l]);
	KUNIT_EXPECT_EQ(test, bad, 0);
}

static struct kunit_case sroce_icrc_cases[] = {
	KUNIT_CASE(icrc_seed_test),
	KUNIT_CASE(icrc_vectors_test),
	KUNIT_CASE(icrc_mask_test),
	KUNIT_CASE(icrc_engine_test),
	{}
};

static struct kunit_suite sroce_icrc_suite = {
	.name = "sroce_icrc",
	.test_cases = sroce_icrc_cases,
};

kunit_test_suites(&sroce_icrc_suite);
