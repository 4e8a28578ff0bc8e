// SPDX-License-Identifier: GPL-2.0
/*
 * The opcode table and the AETH credit and RNR timer encodings.
 */
#include <linux/kernel.h>
#include <linux/limits.h>

#include "compat.h"
#include "wire.h"

/*
 * Extension header offsets follow from the flags: each header sits after
 * the BTH and every present header that precedes it in enum sroce_ext.
 */
#define SROCE_EXT_SIZE(f, ext, len)	(((f) & BIT(ext)) ? (len) : 0)
#define SROCE_OFF_DETH(f)	SROCE_BTH_LEN
#define SROCE_OFF_FETH(f)	(SROCE_OFF_DETH(f) + \
				 SROCE_EXT_SIZE(f, SROCE_EXT_DETH, SROCE_DETH_LEN))
#define SROCE_OFF_RETH(f)	(SROCE_OFF_FETH(f) + \
				 SROCE_EXT_SIZE(f, SROCE_EXT_FETH, SROCE_FETH_LEN))
#define SROCE_OFF_ATMETH(f)	(SROCE_OFF_RETH(f) + \
				 SROCE_EXT_SIZE(f, SROCE_EXT_RETH, SROCE_RETH_LEN))
#define SROCE_OFF_AETH(f)	(SROCE_OFF_ATMETH(f) + \
				 SROCE_EXT_SIZE(f, SROCE_EXT_ATMETH, SROCE_ATMETH_LEN))
#define SROCE_OFF_ATMACK(f)	(SROCE_OFF_AETH(f) + \
				 SROCE_EXT_SIZE(f, SROCE_EXT_AETH, SROCE_AETH_LEN))
#define SROCE_OFF_IMMDT(f)	(SROCE_OFF_ATMACK(f) + \
				 SROCE_EXT_SIZE(f, SROCE_EXT_ATMACK, SROCE_ATMACK_LEN))
#define SROCE_OFF_IETH(f)	(SROCE_OFF_IMMDT(f) + \
				 SROCE_EXT_SIZE(f, SROCE_EXT_IMMDT, SROCE_IMMDT_LEN))
#define SROCE_HDR_LEN(f)	(SROCE_OFF_IETH(f) + \
				 SROCE_EXT_SIZE(f, SROCE_EXT_IETH, SROCE_IETH_LEN))

#define OP(opcode, f) [SROCE_OP_##opcode] = {				\
	.name = #opcode,						\
	.flags = (f) | SROCE_OPF_VALID,					\
	.hdr_len = SROCE_HDR_LEN(f),					\
	.offset = {							\
		[SROCE_EXT_DETH] = SROCE_OFF_DETH(f),			\
		[SROCE_EXT_FETH] = SROCE_OFF_FETH(f),			\
		[SROCE_EXT_RETH] = SROCE_OFF_RETH(f),			\
		[SROCE_EXT_ATMETH] = SROCE_OFF_ATMETH(f),		\
		[SROCE_EXT_AETH] = SROCE_OFF_AETH(f),			\
		[SROCE_EXT_ATMACK] = SROCE_OFF_ATMACK(f),		\
		[SROCE_EXT_IMMDT] = SROCE_OFF_IMMDT(f),			\
		[SROCE_EXT_IETH] = SROCE_OFF_IETH(f),			\
	},								\
}

#define F_ONLY		(SROCE_OPF_FIRST | SROCE_OPF_LAST)
#define F_SEND		(SROCE_OPF_REQ | SROCE_OPF_SEND | SROCE_OPF_PAYLOAD | \
			 SROCE_OPF_RWQE)
#define F_SEND_LAST	(F_SEND | SROCE_OPF_LAST | SROCE_OPF_COMP)
#define F_SEND_ONLY	(F_SEND | F_ONLY | SROCE_OPF_COMP)
#define F_WRITE		(SROCE_OPF_REQ | SROCE_OPF_WRITE | SROCE_OPF_PAYLOAD)
#define F_WRITE_IMM	(SROCE_OPF_IMMDT | SROCE_OPF_RWQE | SROCE_OPF_COMP)
#define F_READ_RESP	(SROCE_OPF_RESP | SROCE_OPF_READ | SROCE_OPF_PAYLOAD)
#define F_ATOMIC	(SROCE_OPF_REQ | SROCE_OPF_ATOMIC | SROCE_OPF_ATMETH | \
			 F_ONLY)

/*
 * RC and UC share SEND and RDMA WRITE; the opcode's transport bits tell
 * them apart. Unlisted opcodes are all-zero: not SROCE_OPF_VALID.
 */
#define SEND_WRITE_OPS(t)						\
	OP(t##_SEND_FIRST, F_SEND | SROCE_OPF_FIRST),			\
	OP(t##_SEND_MIDDLE, F_SEND | SROCE_OPF_MIDDLE),			\
	OP(t##_SEND_LAST, F_SEND_LAST),					\
	OP(t##_SEND_LAST_WITH_IMM, F_SEND_LAST | SROCE_OPF_IMMDT),	\
	OP(t##_SEND_ONLY, F_SEND_ONLY),					\
	OP(t##_SEND_ONLY_WITH_IMM, F_SEND_ONLY | SROCE_OPF_IMMDT),	\
	OP(t##_RDMA_WRITE_FIRST, F_WRITE | SROCE_OPF_FIRST |		\
				 SROCE_OPF_RETH),			\
	OP(t##_RDMA_WRITE_MIDDLE, F_WRITE | SROCE_OPF_MIDDLE),		\
	OP(t##_RDMA_WRITE_LAST, F_WRITE | SROCE_OPF_LAST),		\
	OP(t##_RDMA_WRITE_LAST_WITH_IMM, F_WRITE | SROCE_OPF_LAST |	\
					 F_WRITE_IMM),			\
	OP(t##_RDMA_WRITE_ONLY, F_WRITE | F_ONLY | SROCE_OPF_RETH),	\
	OP(t##_RDMA_WRITE_ONLY_WITH_IMM, F_WRITE | F_ONLY |		\
					 SROCE_OPF_RETH | F_WRITE_IMM)

const struct sroce_opcode_info sroce_opcode_info[SROCE_NUM_OPCODES] = {
	SEND_WRITE_OPS(RC),
	OP(RC_RDMA_READ_REQUEST, SROCE_OPF_REQ | SROCE_OPF_READ | F_ONLY |
				 SROCE_OPF_RETH),
	OP(RC_RDMA_READ_RESPONSE_FIRST, F_READ_RESP | SROCE_OPF_FIRST |
					SROCE_OPF_AETH),
	OP(RC_RDMA_READ_RESPONSE_MIDDLE, F_READ_RESP | SROCE_OPF_MIDDLE),
	OP(RC_RDMA_READ_RESPONSE_LAST, F_READ_RESP | SROCE_OPF_LAST |
				       SROCE_OPF_AETH),
	OP(RC_RDMA_READ_RESPONSE_ONLY, F_READ_RESP | F_ONLY | SROCE_OPF_AETH),
	OP(RC_ACKNOWLEDGE, SROCE_OPF_RESP | SROCE_OPF_ACK | F_ONLY |
			   SROCE_OPF_AETH),
	OP(RC_ATOMIC_ACKNOWLEDGE, SROCE_OPF_RESP | SROCE_OPF_ATOMIC | F_ONLY |
				  SROCE_OPF_AETH | SROCE_OPF_ATMACK),
	OP(RC_COMPARE_SWAP, F_ATOMIC),
	OP(RC_FETCH_ADD, F_ATOMIC),
	OP(RC_SEND_LAST_WITH_INV, F_SEND_LAST | SROCE_OPF_IETH),
	OP(RC_SEND_ONLY_WITH_INV, F_SEND_ONLY | SROCE_OPF_IETH),
	/* Memory placement extensions: 8 bytes of payload, answered by ACK. */
	OP(RC_ATOMIC_WRITE, SROCE_OPF_REQ | SROCE_OPF_ATOMIC_WRITE | F_ONLY |
			    SROCE_OPF_RETH | SROCE_OPF_PAYLOAD),
	/* Answered by a READ RESPONSE ONLY without payload. */
	OP(RC_FLUSH, SROCE_OPF_REQ | SROCE_OPF_FLUSH | F_ONLY |
		     SROCE_OPF_FETH | SROCE_OPF_RETH),

	SEND_WRITE_OPS(UC),

	OP(UD_SEND_ONLY, F_SEND_ONLY | SROCE_OPF_DETH),
	OP(UD_SEND_ONLY_WITH_IMM, F_SEND_ONLY | SROCE_OPF_DETH |
				  SROCE_OPF_IMMDT),

	/* 16 reserved bytes follow the BTH; receivers just count it. */
	OP(CNP, SROCE_OPF_CNP | SROCE_OPF_PAYLOAD | F_ONLY),
};
SROCE_EXPORT_FOR_KUNIT(sroce_opcode_info);

/*
 * End-to-end credit counts (IBTA table 44): code n stands for this many
 * receive WQEs; 31 means the count is not known.
 */
static const u16 sroce_credit_table[SROCE_AETH_CREDIT_INVALID] = {
	0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384,
	512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384,
	24576, 32768,
};

unsigned int sroce_aeth_credit_code(u32 credits)
{
	unsigned int lo = 0, hi = ARRAY_SIZE(sroce_credit_table) - 1;

	/* The last code whose count is <= credits. */
	while (lo < hi) {
		unsigned int mid = (lo + hi + 1) / 2;

		if (sroce_credit_table[mid] <= credits)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}
SROCE_EXPORT_FOR_KUNIT(sroce_aeth_credit_code);

u32 sroce_aeth_credits(unsigned int code)
{
	if (code >= ARRAY_SIZE(sroce_credit_table))
		return U32_MAX;
	return sroce_credit_table[code];
}
SROCE_EXPORT_FOR_KUNIT(sroce_aeth_credits);

/* RNR NAK timer field (IBTA table 45), in microseconds. */
static const u32 sroce_rnr_timer_table[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
	1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960,
	61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

u32 sroce_rnr_timer_usec(unsigned int code)
{
	return sroce_rnr_timer_table[code & SROCE_AETH_VALUE_MASK];
}
SROCE_EXPORT_FOR_KUNIT(sroce_rnr_timer_usec);
