// SPDX-License-Identifier: GPL-2.0
/*
 * The opcode table and the AETH credit and RNR timer encodings.
 */
#include <linux/cache.h>
#include <linux/init.h>
#include <linux/kernel.h>
#include <linux/limits.h>

#include "compat.h"
#include "wire.h"

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
 * Name and flags of every opcode sroce speaks; sroce_wire_init() adds
 * SROCE_OPF_VALID, the header length and the extension header offsets.
 * Unlisted opcodes (RD, XRC, reserved) stay all-zero: not valid.
 */
struct sroce_opcode_info sroce_opcode_info[SROCE_NUM_OPCODES] __ro_after_init = {
	[SROCE_OP_RC_SEND_FIRST] = { "RC_SEND_FIRST", F_SEND | SROCE_OPF_FIRST },
	[SROCE_OP_RC_SEND_MIDDLE] = { "RC_SEND_MIDDLE", F_SEND | SROCE_OPF_MIDDLE },
	[SROCE_OP_RC_SEND_LAST] = { "RC_SEND_LAST", F_SEND_LAST },
	[SROCE_OP_RC_SEND_LAST_WITH_IMM] = {
		"RC_SEND_LAST_WITH_IMM", F_SEND_LAST | SROCE_OPF_IMMDT },
	[SROCE_OP_RC_SEND_ONLY] = { "RC_SEND_ONLY", F_SEND_ONLY },
	[SROCE_OP_RC_SEND_ONLY_WITH_IMM] = {
		"RC_SEND_ONLY_WITH_IMM", F_SEND_ONLY | SROCE_OPF_IMMDT },
	[SROCE_OP_RC_RDMA_WRITE_FIRST] = {
		"RC_RDMA_WRITE_FIRST", F_WRITE | SROCE_OPF_FIRST | SROCE_OPF_RETH },
	[SROCE_OP_RC_RDMA_WRITE_MIDDLE] = {
		"RC_RDMA_WRITE_MIDDLE", F_WRITE | SROCE_OPF_MIDDLE },
	[SROCE_OP_RC_RDMA_WRITE_LAST] = {
		"RC_RDMA_WRITE_LAST", F_WRITE | SROCE_OPF_LAST },
	[SROCE_OP_RC_RDMA_WRITE_LAST_WITH_IMM] = {
		"RC_RDMA_WRITE_LAST_WITH_IMM",
		F_WRITE | SROCE_OPF_LAST | F_WRITE_IMM },
	[SROCE_OP_RC_RDMA_WRITE_ONLY] = {
		"RC_RDMA_WRITE_ONLY", F_WRITE | F_ONLY | SROCE_OPF_RETH },
	[SROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMM] = {
		"RC_RDMA_WRITE_ONLY_WITH_IMM",
		F_WRITE | F_ONLY | SROCE_OPF_RETH | F_WRITE_IMM },
	[SROCE_OP_RC_RDMA_READ_REQUEST] = {
		"RC_RDMA_READ_REQUEST",
		SROCE_OPF_REQ | SROCE_OPF_READ | F_ONLY | SROCE_OPF_RETH },
	[SROCE_OP_RC_RDMA_READ_RESPONSE_FIRST] = {
		"RC_RDMA_READ_RESPONSE_FIRST",
		F_READ_RESP | SROCE_OPF_FIRST | SROCE_OPF_AETH },
	[SROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE] = {
		"RC_RDMA_READ_RESPONSE_MIDDLE", F_READ_RESP | SROCE_OPF_MIDDLE },
	[SROCE_OP_RC_RDMA_READ_RESPONSE_LAST] = {
		"RC_RDMA_READ_RESPONSE_LAST",
		F_READ_RESP | SROCE_OPF_LAST | SROCE_OPF_AETH },
	[SROCE_OP_RC_RDMA_READ_RESPONSE_ONLY] = {
		"RC_RDMA_READ_RESPONSE_ONLY",
		F_READ_RESP | F_ONLY | SROCE_OPF_AETH },
	[SROCE_OP_RC_ACKNOWLEDGE] = {
		"RC_ACKNOWLEDGE",
		SROCE_OPF_RESP | SROCE_OPF_ACK | F_ONLY | SROCE_OPF_AETH },
	[SROCE_OP_RC_ATOMIC_ACKNOWLEDGE] = {
		"RC_ATOMIC_ACKNOWLEDGE",
		SROCE_OPF_RESP | SROCE_OPF_ATOMIC | F_ONLY | SROCE_OPF_AETH |
		SROCE_OPF_ATMACK },
	[SROCE_OP_RC_COMPARE_SWAP] = { "RC_COMPARE_SWAP", F_ATOMIC },
	[SROCE_OP_RC_FETCH_ADD] = { "RC_FETCH_ADD", F_ATOMIC },
	[SROCE_OP_RC_SEND_LAST_WITH_INV] = {
		"RC_SEND_LAST_WITH_INV", F_SEND_LAST | SROCE_OPF_IETH },
	[SROCE_OP_RC_SEND_ONLY_WITH_INV] = {
		"RC_SEND_ONLY_WITH_INV", F_SEND_ONLY | SROCE_OPF_IETH },
	/*
	 * Memory placement extensions (A19): 8 bytes of payload, answered
	 * by a READ RESPONSE ONLY without payload, as FLUSH is.
	 */
	[SROCE_OP_RC_ATOMIC_WRITE] = {
		"RC_ATOMIC_WRITE",
		SROCE_OPF_REQ | SROCE_OPF_ATOMIC_WRITE | F_ONLY | SROCE_OPF_RETH |
		SROCE_OPF_PAYLOAD },
	/* Answered by a READ RESPONSE ONLY without payload. */
	[SROCE_OP_RC_FLUSH] = {
		"RC_FLUSH",
		SROCE_OPF_REQ | SROCE_OPF_FLUSH | F_ONLY | SROCE_OPF_FETH |
		SROCE_OPF_RETH },

	[SROCE_OP_UC_SEND_FIRST] = { "UC_SEND_FIRST", F_SEND | SROCE_OPF_FIRST },
	[SROCE_OP_UC_SEND_MIDDLE] = { "UC_SEND_MIDDLE", F_SEND | SROCE_OPF_MIDDLE },
	[SROCE_OP_UC_SEND_LAST] = { "UC_SEND_LAST", F_SEND_LAST },
	[SROCE_OP_UC_SEND_LAST_WITH_IMM] = {
		"UC_SEND_LAST_WITH_IMM", F_SEND_LAST | SROCE_OPF_IMMDT },
	[SROCE_OP_UC_SEND_ONLY] = { "UC_SEND_ONLY", F_SEND_ONLY },
	[SROCE_OP_UC_SEND_ONLY_WITH_IMM] = {
		"UC_SEND_ONLY_WITH_IMM", F_SEND_ONLY | SROCE_OPF_IMMDT },
	[SROCE_OP_UC_RDMA_WRITE_FIRST] = {
		"UC_RDMA_WRITE_FIRST", F_WRITE | SROCE_OPF_FIRST | SROCE_OPF_RETH },
	[SROCE_OP_UC_RDMA_WRITE_MIDDLE] = {
		"UC_RDMA_WRITE_MIDDLE", F_WRITE | SROCE_OPF_MIDDLE },
	[SROCE_OP_UC_RDMA_WRITE_LAST] = {
		"UC_RDMA_WRITE_LAST", F_WRITE | SROCE_OPF_LAST },
	[SROCE_OP_UC_RDMA_WRITE_LAST_WITH_IMM] = {
		"UC_RDMA_WRITE_LAST_WITH_IMM",
		F_WRITE | SROCE_OPF_LAST | F_WRITE_IMM },
	[SROCE_OP_UC_RDMA_WRITE_ONLY] = {
		"UC_RDMA_WRITE_ONLY", F_WRITE | F_ONLY | SROCE_OPF_RETH },
	[SROCE_OP_UC_RDMA_WRITE_ONLY_WITH_IMM] = {
		"UC_RDMA_WRITE_ONLY_WITH_IMM",
		F_WRITE | F_ONLY | SROCE_OPF_RETH | F_WRITE_IMM },

	[SROCE_OP_UD_SEND_ONLY] = {
		"UD_SEND_ONLY", F_SEND_ONLY | SROCE_OPF_DETH },
	[SROCE_OP_UD_SEND_ONLY_WITH_IMM] = {
		"UD_SEND_ONLY_WITH_IMM",
		F_SEND_ONLY | SROCE_OPF_DETH | SROCE_OPF_IMMDT },

	/* 16 reserved bytes follow the BTH; receivers just count it. */
	[SROCE_OP_CNP] = { "CNP", SROCE_OPF_CNP | SROCE_OPF_PAYLOAD | F_ONLY },
};

SROCE_EXPORT_FOR_KUNIT(sroce_opcode_info);

static const u8 sroce_ext_len[SROCE_EXT_NUM] = {
	[SROCE_EXT_DETH] = SROCE_DETH_LEN,
	[SROCE_EXT_FETH] = SROCE_FETH_LEN,
	[SROCE_EXT_RETH] = SROCE_RETH_LEN,
	[SROCE_EXT_ATMETH] = SROCE_ATMETH_LEN,
	[SROCE_EXT_AETH] = SROCE_AETH_LEN,
	[SROCE_EXT_ATMACK] = SROCE_ATMACK_LEN,
	[SROCE_EXT_IMMDT] = SROCE_IMMDT_LEN,
	[SROCE_EXT_IETH] = SROCE_IETH_LEN,
};

/* Present extension headers follow the BTH in enum sroce_ext order. */
void __init sroce_wire_init(void)
{
	unsigned int op, ext;

	for (op = 0; op < SROCE_NUM_OPCODES; op++) {
		struct sroce_opcode_info *info = &sroce_opcode_info[op];
		unsigned int off = SROCE_BTH_LEN;

		if (!info->name)
			continue;
		info->flags |= SROCE_OPF_VALID;
		for (ext = 0; ext < SROCE_EXT_NUM; ext++) {
			if (!(info->flags & BIT(ext)))
				continue;
			info->offset[ext] = off;
			off += sroce_ext_len[ext];
		}
		info->hdr_len = off;
	}
}

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
