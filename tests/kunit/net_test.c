// SPDX-License-Identifier: GPL-2.0
/*
 * The receive path's validation (sroce_net_parse): well-formed packets are
 * parsed into struct sroce_pkt; every length from the wire is bounded and
 * malformed packets are refused with the right error.
 */
#include <kunit/test.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/slab.h>
#include <linux/udp.h>
#include <rdma/ib_verbs.h>

#include "icrc_vectors.h"
#include "net.h"
#include "sroce_test.h"
#include "wire.h"

static const struct sroce_icrc_vector *find_vector(struct kunit *test,
						   const char *name)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sroce_icrc_vectors); i++)
		if (!strcmp(sroce_icrc_vectors[i].name, name))
			return &sroce_icrc_vectors[i];
	KUNIT_FAIL(test, "no vector %s", name);
	return NULL;
}

static int parse_bytes(struct kunit *test, const u8 *pkt, unsigned int len,
		       bool frags)
{
	unsigned int linear = frags ? sroce_test_ip_len(pkt) + 8 + 4 : len;
	struct sk_buff *skb;
	int ret;

	skb = sroce_test_skb(test, pkt, len, linear, false, true);
	if (!skb)
		return -ENOMEM;
	ret = sroce_net_parse(skb);
	kfree_skb(skb);
	return ret;
}

static void parse_vectors_test(struct kunit *test)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sroce_icrc_vectors); i++) {
		const struct sroce_icrc_vector *v = &sroce_icrc_vectors[i];

		/* Headers split over fragments get pulled into the head. */
		KUNIT_EXPECT_EQ_MSG(test, parse_bytes(test, v->pkt, v->len,
						      false), 0, "%s", v->name);
		KUNIT_EXPECT_EQ_MSG(test, parse_bytes(test, v->pkt, v->len,
						      true), 0, "%s", v->name);
	}
}

static void parse_fields_test(struct kunit *test)
{
	const struct sroce_icrc_vector *v;
	const struct sroce_pkt *pkt;
	struct sroce_reth *reth;
	struct sroce_aeth *aeth;
	struct sk_buff *skb;
	u8 payload[64];
	unsigned int ip_len;

	/* IPv4 RDMA WRITE ONLY: RETH and 64 bytes of payload. */
	v = find_vector(test, "ipv4_write_only_masked");
	KUNIT_ASSERT_NOT_NULL(test, v);
	ip_len = sroce_test_ip_len(v->pkt);
	skb = sroce_test_skb(test, v->pkt, v->len, ip_len + 8 + 12, false,
			     true);
	KUNIT_ASSERT_NOT_NULL(test, skb);
	KUNIT_ASSERT_EQ(test, sroce_net_parse(skb), 0);
	pkt = sroce_pkt(skb);
	KUNIT_EXPECT_EQ(test, pkt->opcode, SROCE_OP_RC_RDMA_WRITE_ONLY);
	KUNIT_EXPECT_EQ(test, pkt->psn, 0xffffffU);
	KUNIT_EXPECT_EQ(test, pkt->qpn, 0xabcdefU);
	KUNIT_EXPECT_EQ(test, pkt->hdr_len, 28);
	KUNIT_EXPECT_EQ(test, pkt->pad, 0);
	KUNIT_EXPECT_EQ(test, pkt->payload_len, 64U);
	KUNIT_EXPECT_EQ(test, pkt->network_type, RDMA_NETWORK_IPV4);
	KUNIT_EXPECT_EQ(test, ntohs(pkt->udp_sport), 0xc123);
	KUNIT_EXPECT_EQ(test, pkt->flags, sroce_op_flags(pkt->opcode));
	KUNIT_EXPECT_PTR_EQ(test, (u8 *)sroce_pkt_bth(skb),
			    skb->data + sizeof(struct udphdr));
	KUNIT_EXPECT_TRUE(test, sroce_bth_fecn(sroce_pkt_bth(skb)));
	reth = sroce_pkt_reth(skb);
	KUNIT_ASSERT_NOT_NULL(test, reth);
	KUNIT_EXPECT_EQ(test, sroce_reth_va(reth), 0x0123456789abcdefULL);
	KUNIT_EXPECT_EQ(test, sroce_reth_rkey(reth), 0x11223344U);
	KUNIT_EXPECT_EQ(test, sroce_reth_len(reth), 64U);
	KUNIT_EXPECT_NULL(test, sroce_pkt_aeth(skb));
	KUNIT_EXPECT_NULL(test, sroce_pkt_immdt(skb));
	/* The payload, read across fragments from where wire.h says. */
	KUNIT_EXPECT_EQ(test, sroce_pkt_payload_offset(skb), 8 + 28);
	KUNIT_ASSERT_EQ(test, skb_copy_bits(skb, sroce_pkt_payload_offset(skb),
					    payload, sizeof(payload)), 0);
	KUNIT_EXPECT_EQ(test, memcmp(payload, v->pkt + ip_len + 8 + 28,
				     sizeof(payload)), 0);
	/* Pulling UDP off, as net.c does before the transport, changes nothing. */
	__skb_pull(skb, sizeof(struct udphdr));
	KUNIT_EXPECT_EQ(test, sroce_pkt_payload_offset(skb), 28);
	KUNIT_EXPECT_EQ(test, sroce_reth_rkey(sroce_pkt_reth(skb)), 0x11223344U);
	kfree_skb(skb);

	/* IPv4 ACK: AETH, no payload. */
	v = find_vector(test, "ipv4_ack");
	KUNIT_ASSERT_NOT_NULL(test, v);
	skb = sroce_test_skb(test, v->pkt, v->len, v->len, false, true);
	KUNIT_ASSERT_NOT_NULL(test, skb);
	KUNIT_ASSERT_EQ(test, sroce_net_parse(skb), 0);
	pkt = sroce_pkt(skb);
	KUNIT_EXPECT_EQ(test, pkt->payload_len, 0U);
	KUNIT_EXPECT_EQ(test, pkt->psn, 0x7fffffU);
	aeth = sroce_pkt_aeth(skb);
	KUNIT_ASSERT_NOT_NULL(test, aeth);
	KUNIT_EXPECT_EQ(test, sroce_aeth_syn(aeth), 0x1f);
	KUNIT_EXPECT_EQ(test, sroce_aeth_msn(aeth), 0x10U);
	kfree_skb(skb);

	/* IPv6 SEND LAST: 1 byte and 3 pad bytes. */
	v = find_vector(test, "ipv6_send_last_pad3");
	KUNIT_ASSERT_NOT_NULL(test, v);
	skb = sroce_test_skb(test, v->pkt, v->len, v->len, false, true);
	KUNIT_ASSERT_NOT_NULL(test, skb);
	KUNIT_ASSERT_EQ(test, sroce_net_parse(skb), 0);
	pkt = sroce_pkt(skb);
	KUNIT_EXPECT_EQ(test, pkt->network_type, RDMA_NETWORK_IPV6);
	KUNIT_EXPECT_EQ(test, pkt->payload_len, 1U);
	KUNIT_EXPECT_EQ(test, pkt->pad, 3);
	KUNIT_EXPECT_EQ(test, pkt->psn, 0x800000U);
	KUNIT_EXPECT_EQ(test, pkt->qpn, 0xbadU);
	kfree_skb(skb);

	/* UD SEND ONLY WITH IMMEDIATE: DETH then ImmDt. */
	v = find_vector(test, "ipv4_ud_send_imm");
	KUNIT_ASSERT_NOT_NULL(test, v);
	skb = sroce_test_skb(test, v->pkt, v->len, v->len, false, true);
	KUNIT_ASSERT_NOT_NULL(test, skb);
	KUNIT_ASSERT_EQ(test, sroce_net_parse(skb), 0);
	KUNIT_EXPECT_EQ(test, sroce_deth_qkey(sroce_pkt_deth(skb)), 0x80010000U);
	KUNIT_EXPECT_EQ(test, sroce_deth_sqp(sroce_pkt_deth(skb)), 0x77U);
	KUNIT_EXPECT_EQ(test, sroce_immdt_get(sroce_pkt_immdt(skb)), 0xdeadbeefU);
	KUNIT_EXPECT_EQ(test, sroce_pkt(skb)->payload_len, 36U);
	kfree_skb(skb);
}

/*
 * Start from a valid packet, change it, fix up the IP and UDP lengths and
 * the ICRC (so only the intended defect is left) and parse it.
 */
static int parse_modified(struct kunit *test, const char *name,
			  void (*modify)(u8 *bth, unsigned int *udp_payload),
			  bool fix_icrc, bool frags)
{
	const struct sroce_icrc_vector *v = find_vector(test, name);
	unsigned int ip_len, udp_payload, len;
	u8 *pkt;
	int ret;

	if (!v)
		return -ENOENT;
	ip_len = sroce_test_ip_len(v->pkt);
	pkt = kzalloc(v->len + 64, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, pkt);
	memcpy(pkt, v->pkt, v->len);
	udp_payload = v->len - ip_len - 8;

	modify(pkt + ip_len + 8, &udp_payload);

	len = ip_len + 8 + udp_payload;
	if (ip_len == 40) {
		((struct ipv6hdr *)pkt)->payload_len = htons(len - 40);
	} else {
		((struct iphdr *)pkt)->tot_len = htons(len);
		((struct iphdr *)pkt)->check = 0;	/* masked anyway */
	}
	((struct udphdr *)(pkt + ip_len))->len = htons(8 + udp_payload);
	if (fix_icrc && udp_payload >= SROCE_BTH_LEN + SROCE_ICRC_LEN)
		sroce_test_fix_icrc(test, pkt, len);

	ret = parse_bytes(test, pkt, len, frags);
	kfree(pkt);
	return ret;
}

static void keep(u8 *bth, unsigned int *len)
{
}

static void truncate_bth(u8 *bth, unsigned int *len)
{
	*len = SROCE_BTH_LEN - 1;
}

static void bth_and_icrc_only(u8 *bth, unsigned int *len)
{
	/* A WRITE ONLY's RETH is missing. */
	*len = SROCE_BTH_LEN + SROCE_ICRC_LEN;
}

static void short_reth(u8 *bth, unsigned int *len)
{
	/* BTH + 15 of the RETH's 16 bytes + ICRC. */
	*len = SROCE_BTH_LEN + 15 + SROCE_ICRC_LEN;
}

static void no_icrc(u8 *bth, unsigned int *len)
{
	/* An ACK without the ICRC: BTH + AETH only. */
	*len = SROCE_BTH_LEN + SROCE_AETH_LEN;
}

static void pad_on_ack(u8 *bth, unsigned int *len)
{
	sroce_bth_set_pad((struct sroce_bth *)bth, 1);
}

static void ack_with_payload(u8 *bth, unsigned int *len)
{
	*len += 4;	/* 4 stray bytes between AETH and ICRC */
}

static void pad_beyond_payload(u8 *bth, unsigned int *len)
{
	/* SEND ONLY of 0 bytes claiming 3 pad bytes. */
	sroce_bth_set_pad((struct sroce_bth *)bth, 3);
	*len = SROCE_BTH_LEN + SROCE_ICRC_LEN;
}

static void send_pad3_zero_payload(u8 *bth, unsigned int *len)
{
	/* 3 pad bytes and no payload: odd but well-formed. */
	sroce_bth_set_pad((struct sroce_bth *)bth, 3);
	*len = SROCE_BTH_LEN + 3 + SROCE_ICRC_LEN;
}

static void opcode_rd(u8 *bth, unsigned int *len)
{
	bth[0] = 0x44;	/* RD SEND ONLY: not supported */
}

static void opcode_reserved(u8 *bth, unsigned int *len)
{
	bth[0] = 0x15;
}

static void tver_1(u8 *bth, unsigned int *len)
{
	sroce_bth_set_tver((struct sroce_bth *)bth, 1);
}

static void corrupt_payload(u8 *bth, unsigned int *len)
{
	bth[SROCE_BTH_LEN + 1] ^= 1;
}

static void parse_malformed_test(struct kunit *test)
{
	static const char *const send4 = "ipv4_send_only_pad3";
	static const char *const write4 = "ipv4_write_only_masked";
	static const char *const ack4 = "ipv4_ack";
	static const char *const write6 = "ipv6_write_only_1k";
	unsigned int frags;

	for (frags = 0; frags < 2; frags++) {
		/* The test's own rewriting leaves valid packets valid. */
		KUNIT_EXPECT_EQ(test, parse_modified(test, write4, keep, true,
						     frags), 0);
		KUNIT_EXPECT_EQ(test, parse_modified(test, send4,
						     send_pad3_zero_payload,
						     true, frags), 0);

		KUNIT_EXPECT_EQ(test, parse_modified(test, send4, truncate_bth,
						     true, frags), -EINVAL);
		KUNIT_EXPECT_EQ(test, parse_modified(test, write4,
						     bth_and_icrc_only, true,
						     frags), -EINVAL);
		KUNIT_EXPECT_EQ(test, parse_modified(test, write6, short_reth,
						     true, frags), -EINVAL);
		KUNIT_EXPECT_EQ(test, parse_modified(test, ack4, no_icrc,
						     false, frags), -EINVAL);
		KUNIT_EXPECT_EQ(test, parse_modified(test, ack4, pad_on_ack,
						     true, frags), -EINVAL);
		KUNIT_EXPECT_EQ(test, parse_modified(test, ack4,
						     ack_with_payload, true,
						     frags), -EINVAL);
		KUNIT_EXPECT_EQ(test, parse_modified(test, send4,
						     pad_beyond_payload, true,
						     frags), -EINVAL);
		KUNIT_EXPECT_EQ(test, parse_modified(test, send4, opcode_rd,
						     true, frags), -EOPNOTSUPP);
		KUNIT_EXPECT_EQ(test, parse_modified(test, send4,
						     opcode_reserved, true,
						     frags), -EOPNOTSUPP);
		KUNIT_EXPECT_EQ(test, parse_modified(test, write6, tver_1,
						     true, frags), -EOPNOTSUPP);
		KUNIT_EXPECT_EQ(test, parse_modified(test, write6,
						     corrupt_payload, false,
						     frags), -EBADMSG);
		KUNIT_EXPECT_EQ(test, parse_modified(test, send4,
						     corrupt_payload, false,
						     frags), -EBADMSG);
	}
}

/* An IPv6 extension header between IP and UDP is refused. */
static void parse_ipv6_ext_test(struct kunit *test)
{
	const struct sroce_icrc_vector *v = find_vector(test,
							"ipv6_send_only_flow");
	struct sk_buff *skb;

	KUNIT_ASSERT_NOT_NULL(test, v);
	skb = sroce_test_skb(test, v->pkt, v->len, v->len, false, false);
	KUNIT_ASSERT_NOT_NULL(test, skb);
	/* Pretend 8 bytes of options: UDP then starts 8 bytes later. */
	skb_set_transport_header(skb, 48);
	__skb_pull(skb, 48);
	KUNIT_EXPECT_EQ(test, sroce_net_parse(skb), -EINVAL);
	kfree_skb(skb);
}

static struct kunit_case sroce_rx_cases[] = {
	KUNIT_CASE(parse_vectors_test),
	KUNIT_CASE(parse_fields_test),
	KUNIT_CASE(parse_malformed_test),
	KUNIT_CASE(parse_ipv6_ext_test),
	{}
};

static struct kunit_suite sroce_rx_suite = {
	.name = "sroce_rx",
	.test_cases = sroce_rx_cases,
};

kunit_test_suites(&sroce_rx_suite);
