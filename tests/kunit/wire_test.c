// SPDX-License-Identifier: GPL-2.0
/*
 * Wire format: header layouts against hand-written byte images, the opcode
 * table against IBTA's header lists, AETH and RNR encodings, PSN
 * arithmetic.
 */
#include <kunit/test.h>
#include <linux/limits.h>

#include "psn.h"
#include "wire.h"

static void bth_pack_test(struct kunit *test)
{
	static const u8 expect[SROCE_BTH_LEN] = {
		0x0a,			/* RC RDMA WRITE ONLY */
		0xb0,			/* SE, pad 3, TVer 0 */
		0x80, 0x01,		/* P_Key */
		0x00, 0xab, 0xcd, 0xef,	/* FECN/BECN 0, QP */
		0x80, 0xfe, 0xdc, 0xba,	/* AckReq, PSN */
	};
	struct sroce_bth bth;

	memset(&bth, 0x5a, sizeof(bth));
	sroce_bth_init(&bth, SROCE_OP_RC_RDMA_WRITE_ONLY, true, 3, 0x8001,
		       0xabcdef, true, 0xfedcba);
	KUNIT_EXPECT_EQ(test, memcmp(&bth, expect, sizeof(expect)), 0);

	KUNIT_EXPECT_EQ(test, sroce_bth_opcode(&bth), 0x0a);
	KUNIT_EXPECT_TRUE(test, sroce_bth_se(&bth));
	KUNIT_EXPECT_FALSE(test, sroce_bth_mig(&bth));
	KUNIT_EXPECT_EQ(test, sroce_bth_pad(&bth), 3U);
	KUNIT_EXPECT_EQ(test, sroce_bth_tver(&bth), 0U);
	KUNIT_EXPECT_EQ(test, sroce_bth_pkey(&bth), 0x8001);
	KUNIT_EXPECT_FALSE(test, sroce_bth_fecn(&bth));
	KUNIT_EXPECT_FALSE(test, sroce_bth_becn(&bth));
	KUNIT_EXPECT_EQ(test, sroce_bth_qpn(&bth), 0xabcdefU);
	KUNIT_EXPECT_TRUE(test, sroce_bth_ackreq(&bth));
	KUNIT_EXPECT_EQ(test, sroce_bth_psn(&bth), 0xfedcbaU);
}

/* A CNP as annex A17.9.3 draws it: BECN set in BTH byte 4. */
static void cnp_bth_test(struct kunit *test)
{
	static const u8 expect[SROCE_BTH_LEN] = {
		0x81,			/* CNP */
		0x00,			/* no SE, pad 0, TVer 0 */
		0xff, 0xff,		/* default P_Key */
		0x40, 0xab, 0xcd, 0xef,	/* FECN 0, BECN 1, QP */
		0x00, 0x00, 0x00, 0x00,	/* no AckReq, PSN 0 */
	};
	struct sroce_bth bth;

	memset(&bth, 0x5a, sizeof(bth));
	sroce_cnp_bth_init(&bth, 0xabcdef);
	KUNIT_EXPECT_EQ(test, memcmp(&bth, expect, sizeof(expect)), 0);
	KUNIT_EXPECT_TRUE(test, sroce_bth_becn(&bth));
	KUNIT_EXPECT_FALSE(test, sroce_bth_fecn(&bth));
}

/* Each setter changes its own bits and nothing else. */
static void bth_setters_test(struct kunit *test)
{
	struct sroce_bth bth;
	u8 *b = (u8 *)&bth;

	sroce_bth_init(&bth, 0, false, 0, 0, 0, false, 0);
	KUNIT_EXPECT_TRUE(test, !memchr_inv(&bth, 0, sizeof(bth)));

	sroce_bth_set_fecn(&bth, true);
	sroce_bth_set_becn(&bth, true);
	KUNIT_EXPECT_EQ(test, b[4], 0xc0);
	sroce_bth_set_qpn(&bth, 0xffffff);
	KUNIT_EXPECT_TRUE(test, sroce_bth_fecn(&bth) && sroce_bth_becn(&bth));
	KUNIT_EXPECT_EQ(test, sroce_bth_qpn(&bth), 0xffffffU);
	sroce_bth_set_qpn(&bth, 0x1000001);	/* 25 bits: truncated */
	KUNIT_EXPECT_EQ(test, sroce_bth_qpn(&bth), 1U);
	KUNIT_EXPECT_EQ(test, b[4], 0xc0);
	sroce_bth_set_fecn(&bth, false);
	KUNIT_EXPECT_EQ(test, b[4], 0x40);
	KUNIT_EXPECT_EQ(test, sroce_bth_qpn(&bth), 1U);

	sroce_bth_set_ackreq(&bth, true);
	sroce_bth_set_psn(&bth, 0xffffff);
	KUNIT_EXPECT_TRUE(test, sroce_bth_ackreq(&bth));
	KUNIT_EXPECT_EQ(test, sroce_bth_psn(&bth), 0xffffffU);
	sroce_bth_set_psn(&bth, 0x1000000);	/* wraps to 0 */
	KUNIT_EXPECT_EQ(test, sroce_bth_psn(&bth), 0U);
	KUNIT_EXPECT_EQ(test, b[8], 0x80);
	sroce_bth_set_ackreq(&bth, false);
	KUNIT_EXPECT_EQ(test, b[8], 0x00);

	sroce_bth_set_se(&bth, true);
	sroce_bth_set_mig(&bth, true);
	sroce_bth_set_tver(&bth, 0xf);
	sroce_bth_set_pad(&bth, 2);
	KUNIT_EXPECT_EQ(test, b[1], 0xef);
	sroce_bth_set_pad(&bth, 7);		/* 2 bits only */
	KUNIT_EXPECT_EQ(test, sroce_bth_pad(&bth), 3U);
	sroce_bth_set_se(&bth, false);
	KUNIT_EXPECT_EQ(test, b[1], 0x7f);
	sroce_bth_set_mig(&bth, false);
	sroce_bth_set_tver(&bth, 0);
	KUNIT_EXPECT_EQ(test, b[1], 0x30);

	sroce_bth_set_pkey(&bth, 0xffff);
	KUNIT_EXPECT_EQ(test, b[2], 0xff);
	KUNIT_EXPECT_EQ(test, b[3], 0xff);
	sroce_bth_set_opcode(&bth, SROCE_OP_CNP);
	KUNIT_EXPECT_EQ(test, b[0], 0x81);
}

static void pad_len_test(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, sroce_pad_len(0), 0U);
	KUNIT_EXPECT_EQ(test, sroce_pad_len(1), 3U);
	KUNIT_EXPECT_EQ(test, sroce_pad_len(2), 2U);
	KUNIT_EXPECT_EQ(test, sroce_pad_len(3), 1U);
	KUNIT_EXPECT_EQ(test, sroce_pad_len(4096), 0U);
	KUNIT_EXPECT_EQ(test, sroce_pad_len(U32_MAX), 1U);
}

static void ext_headers_test(struct kunit *test)
{
	static const u8 reth_img[] = {
		0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
		0xde, 0xad, 0xbe, 0xef, 0x80, 0x00, 0x00, 0x01,
	};
	static const u8 atmeth_img[] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf8,
		0x00, 0x00, 0x00, 0x07,
		0x11, 0x11, 0x11, 0x11, 0x22, 0x22, 0x22, 0x22,
		0x33, 0x33, 0x33, 0x33, 0x44, 0x44, 0x44, 0x44,
	};
	static const u8 deth_img[] = {
		0x80, 0x01, 0x00, 0x00, 0x00, 0xff, 0xff, 0xfe,
	};
	static const u8 aeth_img[] = { 0x62, 0x00, 0x01, 0x00 };
	static const u8 atmack_img[] = {
		0x80, 0, 0, 0, 0, 0, 0, 0x01,
	};
	static const u8 feth_img[] = { 0x00, 0x00, 0x00, 0x21 };
	struct sroce_reth reth;
	struct sroce_atmeth atmeth;
	struct sroce_deth deth;
	struct sroce_aeth aeth;
	struct sroce_atmack atmack;
	struct sroce_immdt immdt;
	struct sroce_ieth ieth;
	struct sroce_feth feth;

	sroce_reth_set(&reth, 0x0123456789abcdefULL, 0xdeadbeef, 0x80000001);
	KUNIT_EXPECT_EQ(test, memcmp(&reth, reth_img, sizeof(reth_img)), 0);
	KUNIT_EXPECT_EQ(test, sroce_reth_va(&reth), 0x0123456789abcdefULL);
	KUNIT_EXPECT_EQ(test, sroce_reth_rkey(&reth), 0xdeadbeefU);
	KUNIT_EXPECT_EQ(test, sroce_reth_len(&reth), 0x80000001U);

	sroce_atmeth_set(&atmeth, 0xfffffffffffffff8ULL, 7,
			 0x1111111122222222ULL, 0x3333333344444444ULL);
	KUNIT_EXPECT_EQ(test, memcmp(&atmeth, atmeth_img, sizeof(atmeth_img)), 0);
	KUNIT_EXPECT_EQ(test, sroce_atmeth_va(&atmeth), 0xfffffffffffffff8ULL);
	KUNIT_EXPECT_EQ(test, sroce_atmeth_rkey(&atmeth), 7U);
	KUNIT_EXPECT_EQ(test, sroce_atmeth_swap_add(&atmeth),
			0x1111111122222222ULL);
	KUNIT_EXPECT_EQ(test, sroce_atmeth_compare(&atmeth),
			0x3333333344444444ULL);

	sroce_deth_set(&deth, 0x80010000, 0xfffffffe);	/* SrcQP: 24 bits */
	KUNIT_EXPECT_EQ(test, memcmp(&deth, deth_img, sizeof(deth_img)), 0);
	KUNIT_EXPECT_EQ(test, sroce_deth_qkey(&deth), 0x80010000U);
	KUNIT_EXPECT_EQ(test, sroce_deth_sqp(&deth), 0xfffffeU);

	sroce_aeth_set(&aeth, sroce_syn_nak(SROCE_NAK_REM_ACCESS), 0x1000100);
	KUNIT_EXPECT_EQ(test, memcmp(&aeth, aeth_img, sizeof(aeth_img)), 0);
	KUNIT_EXPECT_EQ(test, sroce_aeth_syn(&aeth), 0x62);
	KUNIT_EXPECT_EQ(test, sroce_aeth_msn(&aeth), 0x000100U);

	sroce_atmack_set(&atmack, 0x8000000000000001ULL);
	KUNIT_EXPECT_EQ(test, memcmp(&atmack, atmack_img, sizeof(atmack_img)), 0);
	KUNIT_EXPECT_EQ(test, sroce_atmack_orig(&atmack),
			0x8000000000000001ULL);

	sroce_immdt_set(&immdt, 0x01020304);
	KUNIT_EXPECT_EQ(test, ((u8 *)&immdt)[0], 0x01);
	KUNIT_EXPECT_EQ(test, sroce_immdt_get(&immdt), 0x01020304U);
	sroce_ieth_set(&ieth, 0xa0b0c0d0);
	KUNIT_EXPECT_EQ(test, ((u8 *)&ieth)[3], 0xd0);
	KUNIT_EXPECT_EQ(test, sroce_ieth_rkey(&ieth), 0xa0b0c0d0U);

	sroce_feth_set(&feth, 2, 1);
	KUNIT_EXPECT_EQ(test, memcmp(&feth, feth_img, sizeof(feth_img)), 0);
	KUNIT_EXPECT_EQ(test, sroce_feth_sel(&feth), 2U);
	KUNIT_EXPECT_EQ(test, sroce_feth_plt(&feth), 1U);
}

static const u8 ext_len[SROCE_EXT_NUM] = {
	[SROCE_EXT_DETH] = 8, [SROCE_EXT_XRCETH] = 4, [SROCE_EXT_FETH] = 4,
	[SROCE_EXT_RETH] = 16,
	[SROCE_EXT_ATMETH] = 28, [SROCE_EXT_AETH] = 4, [SROCE_EXT_ATMACK] = 8,
	[SROCE_EXT_IMMDT] = 4, [SROCE_EXT_IETH] = 4,
};

/* Header lists of IBTA table 40 (and the memory placement extensions). */
static const struct {
	u8 opcode;
	u32 ext;
	u8 hdr_len;
} ibta_layouts[] = {
	{ 0x00, 0, 12 }, { 0x01, 0, 12 }, { 0x02, 0, 12 },
	{ 0x03, SROCE_OPF_IMMDT, 16 }, { 0x04, 0, 12 },
	{ 0x05, SROCE_OPF_IMMDT, 16 },
	{ 0x06, SROCE_OPF_RETH, 28 }, { 0x07, 0, 12 }, { 0x08, 0, 12 },
	{ 0x09, SROCE_OPF_IMMDT, 16 }, { 0x0a, SROCE_OPF_RETH, 28 },
	{ 0x0b, SROCE_OPF_RETH | SROCE_OPF_IMMDT, 32 },
	{ 0x0c, SROCE_OPF_RETH, 28 },
	{ 0x0d, SROCE_OPF_AETH, 16 }, { 0x0e, 0, 12 },
	{ 0x0f, SROCE_OPF_AETH, 16 }, { 0x10, SROCE_OPF_AETH, 16 },
	{ 0x11, SROCE_OPF_AETH, 16 },
	{ 0x12, SROCE_OPF_AETH | SROCE_OPF_ATMACK, 24 },
	{ 0x13, SROCE_OPF_ATMETH, 40 }, { 0x14, SROCE_OPF_ATMETH, 40 },
	{ 0x16, SROCE_OPF_IETH, 16 }, { 0x17, SROCE_OPF_IETH, 16 },
	{ 0x1c, SROCE_OPF_FETH | SROCE_OPF_RETH, 32 },
	{ 0x1d, SROCE_OPF_RETH, 28 },
	{ 0x20, 0, 12 }, { 0x23, SROCE_OPF_IMMDT, 16 },
	{ 0x26, SROCE_OPF_RETH, 28 },
	{ 0x2b, SROCE_OPF_RETH | SROCE_OPF_IMMDT, 32 },
	{ 0x64, SROCE_OPF_DETH, 20 },
	{ 0x65, SROCE_OPF_DETH | SROCE_OPF_IMMDT, 24 },
	{ 0x81, 0, 12 },
	/* XRC: requests with an XRCETH right after the BTH */
	{ 0xa0, SROCE_OPF_XRCETH, 16 },
	{ 0xa3, SROCE_OPF_XRCETH | SROCE_OPF_IMMDT, 20 },
	{ 0xa6, SROCE_OPF_XRCETH | SROCE_OPF_RETH, 32 },
	{ 0xab, SROCE_OPF_XRCETH | SROCE_OPF_RETH | SROCE_OPF_IMMDT, 36 },
	{ 0xac, SROCE_OPF_XRCETH | SROCE_OPF_RETH, 32 },
	{ 0xad, SROCE_OPF_AETH, 16 }, { 0xb1, SROCE_OPF_AETH, 16 },
	{ 0xb2, SROCE_OPF_AETH | SROCE_OPF_ATMACK, 24 },
	{ 0xb3, SROCE_OPF_XRCETH | SROCE_OPF_ATMETH, 44 },
	{ 0xb7, SROCE_OPF_XRCETH | SROCE_OPF_IETH, 20 },
};

static void opcode_layout_test(struct kunit *test)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ibta_layouts); i++) {
		const struct sroce_opcode_info *info =
			sroce_opinfo(ibta_layouts[i].opcode);

		KUNIT_EXPECT_TRUE_MSG(test, info->flags & SROCE_OPF_VALID,
				      "opcode %#x", ibta_layouts[i].opcode);
		KUNIT_EXPECT_EQ_MSG(test, info->flags & SROCE_OPF_EXT_MASK,
				    ibta_layouts[i].ext, "opcode %#x",
				    ibta_layouts[i].opcode);
		KUNIT_EXPECT_EQ_MSG(test, info->hdr_len, ibta_layouts[i].hdr_len,
				    "opcode %#x", ibta_layouts[i].opcode);
	}
	/* Spot checks of offsets where several headers follow the BTH. */
	KUNIT_EXPECT_EQ(test, sroce_opinfo(0x0b)->offset[SROCE_EXT_RETH], 12);
	KUNIT_EXPECT_EQ(test, sroce_opinfo(0x0b)->offset[SROCE_EXT_IMMDT], 28);
	KUNIT_EXPECT_EQ(test, sroce_opinfo(0x12)->offset[SROCE_EXT_AETH], 12);
	KUNIT_EXPECT_EQ(test, sroce_opinfo(0x12)->offset[SROCE_EXT_ATMACK], 16);
	KUNIT_EXPECT_EQ(test, sroce_opinfo(0x65)->offset[SROCE_EXT_DETH], 12);
	KUNIT_EXPECT_EQ(test, sroce_opinfo(0x65)->offset[SROCE_EXT_IMMDT], 20);
	KUNIT_EXPECT_EQ(test, sroce_opinfo(0x1c)->offset[SROCE_EXT_FETH], 12);
	KUNIT_EXPECT_EQ(test, sroce_opinfo(0x1c)->offset[SROCE_EXT_RETH], 16);
	KUNIT_EXPECT_EQ(test, sroce_opinfo(0x17)->offset[SROCE_EXT_IETH], 12);
	KUNIT_EXPECT_EQ(test, sroce_opinfo(0xab)->offset[SROCE_EXT_XRCETH], 12);
	KUNIT_EXPECT_EQ(test, sroce_opinfo(0xab)->offset[SROCE_EXT_RETH], 16);
	KUNIT_EXPECT_EQ(test, sroce_opinfo(0xab)->offset[SROCE_EXT_IMMDT], 32);
	KUNIT_EXPECT_EQ(test, sroce_opinfo(0xb3)->offset[SROCE_EXT_ATMETH], 16);
}

/* Properties every table entry must have, whatever the opcode. */
static void opcode_table_test(struct kunit *test)
{
	unsigned int op, ext, valid = 0;

	for (op = 0; op < SROCE_NUM_OPCODES; op++) {
		const struct sroce_opcode_info *info = sroce_opinfo(op);
		u32 f = info->flags;
		unsigned int len = SROCE_BTH_LEN;
		unsigned int pos = SROCE_BTH_LEN;

		if (!(f & SROCE_OPF_VALID)) {
			KUNIT_EXPECT_EQ_MSG(test, f, 0U, "opcode %#x", op);
			continue;
		}
		valid++;
		KUNIT_EXPECT_NOT_NULL(test, info->name);
		for (ext = 0; ext < SROCE_EXT_NUM; ext++) {
			if (!(f & BIT(ext)))
				continue;
			/* Present headers are packed in enum order. */
			KUNIT_EXPECT_EQ_MSG(test, info->offset[ext], pos,
					    "opcode %#x ext %u", op, ext);
			pos += ext_len[ext];
			len += ext_len[ext];
		}
		KUNIT_EXPECT_EQ_MSG(test, info->hdr_len, len, "opcode %#x", op);
		KUNIT_EXPECT_LE(test, info->hdr_len, SROCE_MAX_HDR_LEN);

		if (f & SROCE_OPF_CNP)
			continue;
		/* Requests go one way, responses the other. */
		KUNIT_EXPECT_EQ_MSG(test, !!(f & SROCE_OPF_REQ),
				    !(f & SROCE_OPF_RESP), "opcode %#x", op);
		/* MIDDLE excludes FIRST and LAST; one of them is set. */
		if (f & SROCE_OPF_MIDDLE)
			KUNIT_EXPECT_FALSE_MSG(test, f & (SROCE_OPF_FIRST |
							 SROCE_OPF_LAST),
					       "opcode %#x", op);
		else
			KUNIT_EXPECT_TRUE_MSG(test, f & (SROCE_OPF_FIRST |
							SROCE_OPF_LAST),
					      "opcode %#x", op);
		/* RETH only on the first packet of a request. */
		if (f & SROCE_OPF_RETH)
			KUNIT_EXPECT_TRUE_MSG(test, f & SROCE_OPF_FIRST,
					      "opcode %#x", op);
		/* Immediate data and invalidate only on a last packet. */
		if (f & (SROCE_OPF_IMMDT | SROCE_OPF_IETH))
			KUNIT_EXPECT_TRUE_MSG(test, f & SROCE_OPF_LAST,
					      "opcode %#x", op);
		/* Completions at the responder come with the last packet. */
		if (f & SROCE_OPF_COMP)
			KUNIT_EXPECT_TRUE_MSG(test, (f & SROCE_OPF_LAST) &&
					      (f & SROCE_OPF_RWQE),
					      "opcode %#x", op);
	}
	/* 25 RC, 12 UC, 2 UD, 23 XRC opcodes and the CNP. */
	KUNIT_EXPECT_EQ(test, valid, 63U);
	/* RD is not supported, nor XRC's placement extensions. */
	KUNIT_EXPECT_FALSE(test, sroce_op_flags(0x40) & SROCE_OPF_VALID);
	KUNIT_EXPECT_FALSE(test, sroce_op_flags(0xbc) & SROCE_OPF_VALID);
	KUNIT_EXPECT_FALSE(test, sroce_op_flags(0x15) & SROCE_OPF_VALID);
	KUNIT_EXPECT_FALSE(test, sroce_op_flags(0xff) & SROCE_OPF_VALID);

	/* UC's SEND and RDMA WRITE are RC's, 0x20 up. */
	for (op = 0; op <= 0x0b; op++) {
		KUNIT_EXPECT_EQ(test, sroce_op_flags(op),
				sroce_op_flags(op | SROCE_OP_UC));
		KUNIT_EXPECT_EQ(test, sroce_op_transport(op | SROCE_OP_UC),
				(unsigned int)SROCE_OP_UC);
	}
	/* XRC's are RC's, 0xa0 up; its requests add the XRCETH. */
	for (op = 0; op <= 0x17; op++) {
		u32 rc = sroce_op_flags(op);

		if (op == 0x15)
			continue;
		KUNIT_EXPECT_EQ_MSG(test, sroce_op_flags(op | SROCE_OP_XRC),
				    rc | (rc & SROCE_OPF_REQ ? SROCE_OPF_XRCETH :
				    0), "opcode %#x", op);
		KUNIT_EXPECT_EQ(test, sroce_op_base(op | SROCE_OP_XRC), (u8)op);
	}
	KUNIT_EXPECT_EQ(test, sroce_op_transport(SROCE_OP_UD_SEND_ONLY),
			(unsigned int)SROCE_OP_UD);
}

static void opcode_semantics_test(struct kunit *test)
{
	u32 f;

	f = sroce_op_flags(SROCE_OP_RC_SEND_LAST_WITH_IMM);
	KUNIT_EXPECT_TRUE(test, f & SROCE_OPF_SEND);
	KUNIT_EXPECT_TRUE(test, f & SROCE_OPF_COMP);
	KUNIT_EXPECT_TRUE(test, f & SROCE_OPF_PAYLOAD);
	KUNIT_EXPECT_FALSE(test, f & SROCE_OPF_FIRST);

	f = sroce_op_flags(SROCE_OP_RC_RDMA_WRITE_LAST);
	KUNIT_EXPECT_FALSE(test, f & (SROCE_OPF_RWQE | SROCE_OPF_COMP));
	f = sroce_op_flags(SROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMM);
	KUNIT_EXPECT_TRUE(test, f & SROCE_OPF_RWQE);
	KUNIT_EXPECT_TRUE(test, f & SROCE_OPF_COMP);

	f = sroce_op_flags(SROCE_OP_RC_RDMA_READ_REQUEST);
	KUNIT_EXPECT_TRUE(test, f & SROCE_OPF_READ);
	KUNIT_EXPECT_TRUE(test, f & SROCE_OPF_REQ);
	KUNIT_EXPECT_FALSE(test, f & SROCE_OPF_PAYLOAD);

	f = sroce_op_flags(SROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE);
	KUNIT_EXPECT_TRUE(test, f & SROCE_OPF_RESP);
	KUNIT_EXPECT_TRUE(test, f & SROCE_OPF_READ);
	KUNIT_EXPECT_TRUE(test, f & SROCE_OPF_PAYLOAD);

	f = sroce_op_flags(SROCE_OP_RC_ACKNOWLEDGE);
	KUNIT_EXPECT_TRUE(test, f & SROCE_OPF_ACK);
	KUNIT_EXPECT_FALSE(test, f & SROCE_OPF_PAYLOAD);

	f = sroce_op_flags(SROCE_OP_RC_ATOMIC_ACKNOWLEDGE);
	KUNIT_EXPECT_TRUE(test, f & SROCE_OPF_ATOMIC);
	KUNIT_EXPECT_TRUE(test, f & SROCE_OPF_RESP);
	KUNIT_EXPECT_FALSE(test, f & SROCE_OPF_ACK);

	f = sroce_op_flags(SROCE_OP_RC_FETCH_ADD);
	KUNIT_EXPECT_TRUE(test, f & SROCE_OPF_ATOMIC);
	KUNIT_EXPECT_TRUE(test, f & SROCE_OPF_REQ);

	f = sroce_op_flags(SROCE_OP_RC_ATOMIC_WRITE);
	KUNIT_EXPECT_TRUE(test, f & SROCE_OPF_ATOMIC_WRITE);
	KUNIT_EXPECT_TRUE(test, f & SROCE_OPF_PAYLOAD);
	KUNIT_EXPECT_FALSE(test, f & SROCE_OPF_ATOMIC);

	f = sroce_op_flags(SROCE_OP_UD_SEND_ONLY);
	KUNIT_EXPECT_TRUE(test, f & SROCE_OPF_COMP);
	KUNIT_EXPECT_EQ(test, f & (SROCE_OPF_FIRST | SROCE_OPF_LAST),
			(u32)(SROCE_OPF_FIRST | SROCE_OPF_LAST));
}

static void aeth_syndrome_test(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, sroce_syn_ack(SROCE_AETH_CREDIT_INVALID), 0x1f);
	KUNIT_EXPECT_EQ(test, sroce_syn_ack(0), 0x00);
	KUNIT_EXPECT_EQ(test, sroce_syn_rnr(14), 0x2e);
	KUNIT_EXPECT_EQ(test, sroce_syn_rnr(0), 0x20);
	KUNIT_EXPECT_EQ(test, sroce_syn_nak(SROCE_NAK_PSN_SEQ_ERR), 0x60);
	KUNIT_EXPECT_EQ(test, sroce_syn_nak(SROCE_NAK_INV_REQ), 0x61);
	KUNIT_EXPECT_EQ(test, sroce_syn_nak(SROCE_NAK_REM_ACCESS), 0x62);
	KUNIT_EXPECT_EQ(test, sroce_syn_nak(SROCE_NAK_REM_OP), 0x63);
	KUNIT_EXPECT_EQ(test, sroce_syn_nak(SROCE_NAK_INV_RD_REQ), 0x64);

	KUNIT_EXPECT_EQ(test, sroce_aeth_syn_type(0x2e), SROCE_AETH_TYPE_RNR);
	KUNIT_EXPECT_EQ(test, sroce_aeth_syn_value(0x2e), 14);
	KUNIT_EXPECT_EQ(test, sroce_aeth_syn_type(0x1f), SROCE_AETH_TYPE_ACK);
	KUNIT_EXPECT_EQ(test, sroce_aeth_syn_type(0x63), SROCE_AETH_TYPE_NAK);
	KUNIT_EXPECT_EQ(test, sroce_aeth_syn_value(0x63), SROCE_NAK_REM_OP);
}

static void aeth_credit_test(struct kunit *test)
{
	unsigned int code;

	KUNIT_EXPECT_EQ(test, sroce_aeth_credits(0), 0U);
	KUNIT_EXPECT_EQ(test, sroce_aeth_credits(5), 6U);
	KUNIT_EXPECT_EQ(test, sroce_aeth_credits(11), 48U);
	KUNIT_EXPECT_EQ(test, sroce_aeth_credits(30), 32768U);
	KUNIT_EXPECT_EQ(test, sroce_aeth_credits(31), U32_MAX);
	KUNIT_EXPECT_EQ(test, sroce_aeth_credits(200), U32_MAX);

	/* Never advertise more credits than there are. */
	KUNIT_EXPECT_EQ(test, sroce_aeth_credit_code(0), 0U);
	KUNIT_EXPECT_EQ(test, sroce_aeth_credit_code(5), 4U);
	KUNIT_EXPECT_EQ(test, sroce_aeth_credit_code(7), 5U);
	KUNIT_EXPECT_EQ(test, sroce_aeth_credit_code(32767), 29U);
	KUNIT_EXPECT_EQ(test, sroce_aeth_credit_code(32768), 30U);
	KUNIT_EXPECT_EQ(test, sroce_aeth_credit_code(U32_MAX), 30U);
	for (code = 0; code < SROCE_AETH_CREDIT_INVALID; code++) {
		u32 n = sroce_aeth_credits(code);

		KUNIT_EXPECT_EQ(test, sroce_aeth_credit_code(n), code);
		if (code)
			KUNIT_EXPECT_GT(test, n, sroce_aeth_credits(code - 1));
		if (n)
			KUNIT_EXPECT_EQ(test, sroce_aeth_credit_code(n - 1),
					code - 1);
	}
}

static void rnr_timer_test(struct kunit *test)
{
	unsigned int code;

	KUNIT_EXPECT_EQ(test, sroce_rnr_timer_usec(0), 655360U);
	KUNIT_EXPECT_EQ(test, sroce_rnr_timer_usec(1), 10U);
	KUNIT_EXPECT_EQ(test, sroce_rnr_timer_usec(5), 60U);
	KUNIT_EXPECT_EQ(test, sroce_rnr_timer_usec(14), 1280U);
	KUNIT_EXPECT_EQ(test, sroce_rnr_timer_usec(18), 5120U);
	KUNIT_EXPECT_EQ(test, sroce_rnr_timer_usec(31), 491520U);
	for (code = 2; code < 32; code++)
		KUNIT_EXPECT_GT(test, sroce_rnr_timer_usec(code),
				sroce_rnr_timer_usec(code - 1));
	/* Only 5 bits are a timer. */
	KUNIT_EXPECT_EQ(test, sroce_rnr_timer_usec(32 + 14), 1280U);
}

static void psn_test(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, sroce_psn_add(0xffffff, 1), 0U);
	KUNIT_EXPECT_EQ(test, sroce_psn_next(0xffffff), 0U);
	KUNIT_EXPECT_EQ(test, sroce_psn_add(0xfffff0, 0x20), 0x10U);
	KUNIT_EXPECT_EQ(test, sroce_psn_add(5, 0), 5U);

	KUNIT_EXPECT_EQ(test, sroce_psn_diff(0, 0xffffff), 1);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(0xffffff, 0), -1);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(0x10, 0xfffff0), 0x20);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(7, 7), 0);
	/* The half-range boundary. */
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(0x7fffff, 0), 0x7fffff);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(0x800000, 0), -0x800000);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(0x800001, 0), -0x7fffff);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(0, 0x7fffff), -0x7fffff);
	/* Bits above 24 do not matter. */
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(0x1000005, 3), 2);

	KUNIT_EXPECT_TRUE(test, sroce_psn_before(0xffffff, 0));
	KUNIT_EXPECT_TRUE(test, sroce_psn_after(0, 0xffffff));
	KUNIT_EXPECT_FALSE(test, sroce_psn_before(0, 0xffffff));
	KUNIT_EXPECT_TRUE(test, sroce_psn_before(0x800001, 0));
	KUNIT_EXPECT_TRUE(test, sroce_psn_after(0x7fffff, 0));
	KUNIT_EXPECT_TRUE(test, sroce_psn_before_eq(4, 4));
	KUNIT_EXPECT_TRUE(test, sroce_psn_after_eq(4, 4));
	KUNIT_EXPECT_FALSE(test, sroce_psn_before(4, 4));
	KUNIT_EXPECT_FALSE(test, sroce_psn_after(4, 4));
	KUNIT_EXPECT_TRUE(test, sroce_psn_after_eq(0x000002, 0xfffffe));

	KUNIT_EXPECT_TRUE(test, sroce_psn_in_window(0xfffffe, 0xfffffe, 4));
	KUNIT_EXPECT_TRUE(test, sroce_psn_in_window(0x000001, 0xfffffe, 4));
	KUNIT_EXPECT_FALSE(test, sroce_psn_in_window(0x000002, 0xfffffe, 4));
	KUNIT_EXPECT_FALSE(test, sroce_psn_in_window(0xfffffd, 0xfffffe, 4));
	KUNIT_EXPECT_FALSE(test, sroce_psn_in_window(3, 3, 0));
}

/*
 * The completer takes a response only if its PSN is in [comp.psn,
 * req.psn_max), whose length it computes as the signed distance
 * sroce_psn_diff(psn_max, comp.psn); the requester keeps that length at
 * most SROCE_PSN_OUTSTANDING_MAX (sroce_psn_room()).
 */
static bool psn_window_takes(u32 psn, u32 comp_psn, u32 psn_max)
{
	return sroce_psn_in_window(psn, comp_psn,
				   sroce_psn_diff(psn_max, comp_psn));
}

static void psn_window_edge_test(struct kunit *test)
{
	const u32 max = SROCE_PSN_OUTSTANDING_MAX, comp = 0xfffff0;
	const u32 stale = sroce_psn_add(comp, SROCE_PSN_MASK);	/* comp - 1 */
	u32 edge = sroce_psn_add(comp, max), next = sroce_psn_add(comp, 5);
	u32 last = sroce_psn_add(edge, SROCE_PSN_MASK);

	KUNIT_EXPECT_EQ(test, max, 0x7fffffU);
	KUNIT_EXPECT_TRUE(test, sroce_psn_room(comp, comp, max));
	KUNIT_EXPECT_FALSE(test, sroce_psn_room(comp, comp, max + 1));
	KUNIT_EXPECT_TRUE(test, sroce_psn_room(comp, next, max - 5));
	KUNIT_EXPECT_FALSE(test, sroce_psn_room(comp, next, max - 4));
	KUNIT_EXPECT_TRUE(test, sroce_psn_room(comp, edge, 0));
	KUNIT_EXPECT_FALSE(test, sroce_psn_room(comp, edge, 1));
	/* a READ of 2 GiB at MTU 256 never fits, even alone */
	KUNIT_EXPECT_FALSE(test, sroce_psn_room(comp, comp, 1U << 23));

	/* The fullest window allowed: every outstanding PSN is taken... */
	KUNIT_EXPECT_TRUE(test, psn_window_takes(comp, comp, edge));
	KUNIT_EXPECT_TRUE(test, psn_window_takes(last, comp, edge));
	KUNIT_EXPECT_FALSE(test, psn_window_takes(edge, comp, edge));
	/* ...one past the last is after comp.psn... */
	KUNIT_EXPECT_TRUE(test, sroce_psn_after(edge, comp));
	/* ...and stale ACKs, the newest and the oldest, are not taken. */
	KUNIT_EXPECT_FALSE(test, psn_window_takes(stale, comp, edge));
	KUNIT_EXPECT_FALSE(test, psn_window_takes(sroce_psn_add(edge, 1),
						  comp, edge));

	/*
	 * One more PSN outstanding, as a 2 GiB message at MTU 256 made it
	 * before sroce_psn_room(): the length turns negative, every PSN is
	 * taken, the stale ACK just before comp.psn too.
	 */
	edge = sroce_psn_add(edge, 1);
	KUNIT_EXPECT_TRUE(test, psn_window_takes(stale, comp, edge));
	KUNIT_EXPECT_FALSE(test, sroce_psn_after(edge, comp));
}

static struct kunit_case sroce_wire_cases[] = {
	KUNIT_CASE(bth_pack_test),
	KUNIT_CASE(bth_setters_test),
	KUNIT_CASE(cnp_bth_test),
	KUNIT_CASE(pad_len_test),
	KUNIT_CASE(ext_headers_test),
	KUNIT_CASE(opcode_layout_test),
	KUNIT_CASE(opcode_table_test),
	KUNIT_CASE(opcode_semantics_test),
	KUNIT_CASE(aeth_syndrome_test),
	KUNIT_CASE(aeth_credit_test),
	KUNIT_CASE(rnr_timer_test),
	{}
};

static struct kunit_suite sroce_wire_suite = {
	.name = "sroce_wire",
	.test_cases = sroce_wire_cases,
};

static struct kunit_case sroce_psn_cases[] = {
	KUNIT_CASE(psn_test),
	KUNIT_CASE(psn_window_edge_test),
	{}
};

static struct kunit_suite sroce_psn_suite = {
	.name = "sroce_psn",
	.test_cases = sroce_psn_cases,
};

kunit_test_suites(&sroce_wire_suite, &sroce_psn_suite);
