/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RoCEv2 wire format (IBTA Vol. 1 chapter 9 and Annex A17): the base
 * transport header and the extension headers carried in UDP port 4791,
 * the opcode table and the AETH syndrome encodings.
 *
 * A RoCEv2 packet is Ethernet / IPv4 or IPv6 / UDP / BTH / extension
 * headers / payload / 0..3 pad bytes / ICRC. There is no LRH and no GRH on
 * the wire: the IP header plays the GRH's role.
 *
 * All multi-byte fields are big-endian. Headers start at arbitrary byte
 * offsets in a frame, so every struct is packed and read through the
 * accessors below, never by casting to wider types.
 */
#ifndef SROCE_WIRE_H
#define SROCE_WIRE_H

#include <linux/bits.h>
#include <linux/build_bug.h>
#include <linux/compiler.h>
#include <linux/skbuff.h>
#include <linux/types.h>
#include <linux/udp.h>
#include <asm/byteorder.h>

#define SROCE_UDP_PORT		4791
/* RoCEv2 source ports carry flow entropy in the dynamic range. */
#define SROCE_UDP_SPORT_MIN	0xc000
#define SROCE_ICRC_LEN		4
#define SROCE_DEFAULT_PKEY	0xffff
#define SROCE_BTH_TVER		0

/* Extension headers in the order they follow the BTH on the wire. */
enum sroce_ext {
	SROCE_EXT_DETH,
	SROCE_EXT_XRCETH,
	SROCE_EXT_FETH,
	SROCE_EXT_RETH,
	SROCE_EXT_ATMETH,
	SROCE_EXT_AETH,
	SROCE_EXT_ATMACK,
	SROCE_EXT_IMMDT,
	SROCE_EXT_IETH,
	SROCE_EXT_NUM
};

/* Base transport header, 12 bytes. */
struct sroce_bth {
	u8 opcode;
	u8 se_m_pad_tver;	/* SE:1 M:1 PadCnt:2 TVer:4 */
	__be16 pkey;
	__be32 fb_qpn;		/* FECN:1 BECN:1 Resv6:6 DestQP:24 */
	__be32 a_psn;		/* AckReq:1 Resv7:7 PSN:24 */
} __packed;

/* RDMA extended transport header, 16 bytes. */
struct sroce_reth {
	__be64 va;
	__be32 rkey;
	__be32 dma_len;
} __packed;

/* ACK extended transport header, 4 bytes: Syndrome:8 MSN:24. */
struct sroce_aeth {
	__be32 syn_msn;
} __packed;

/* Immediate data, 4 bytes. */
struct sroce_immdt {
	__be32 imm;
} __packed;

/* Invalidate extended transport header, 4 bytes. */
struct sroce_ieth {
	__be32 rkey;
} __packed;

/* Datagram extended transport header, 8 bytes. */
struct sroce_deth {
	__be32 qkey;
	__be32 src_qpn;		/* Resv8:8 SrcQP:24 */
} __packed;

/* Atomic extended transport header, 28 bytes. */
struct sroce_atmeth {
	__be64 va;
	__be32 rkey;
	__be64 swap_add;
	__be64 compare;
} __packed;

/* Atomic acknowledge extended transport header, 8 bytes. */
struct sroce_atmack {
	__be64 orig;
} __packed;

/* XRC extended transport header, 4 bytes: Resv8:8 XRCSRQ:24. */
struct sroce_xrceth {
	__be32 srqn;
} __packed;

/* FLUSH extended transport header, 4 bytes: Resv:26 SEL:2 PLT:4. */
struct sroce_feth {
	__be32 sel_plt;
} __packed;

#define SROCE_BTH_LEN		sizeof(struct sroce_bth)
#define SROCE_RETH_LEN		sizeof(struct sroce_reth)
#define SROCE_AETH_LEN		sizeof(struct sroce_aeth)
#define SROCE_IMMDT_LEN		sizeof(struct sroce_immdt)
#define SROCE_IETH_LEN		sizeof(struct sroce_ieth)
#define SROCE_DETH_LEN		sizeof(struct sroce_deth)
#define SROCE_ATMETH_LEN	sizeof(struct sroce_atmeth)
#define SROCE_ATMACK_LEN	sizeof(struct sroce_atmack)
#define SROCE_FETH_LEN		sizeof(struct sroce_feth)
#define SROCE_XRCETH_LEN	sizeof(struct sroce_xrceth)
/* Largest BTH + extension headers of any opcode (XRC atomics). */
#define SROCE_MAX_HDR_LEN	(SROCE_BTH_LEN + SROCE_XRCETH_LEN + \
				 SROCE_ATMETH_LEN)

static_assert(SROCE_BTH_LEN == 12);
static_assert(SROCE_RETH_LEN == 16);
static_assert(SROCE_AETH_LEN == 4);
static_assert(SROCE_DETH_LEN == 8);
static_assert(SROCE_ATMETH_LEN == 28);
static_assert(SROCE_ATMACK_LEN == 8);
static_assert(SROCE_XRCETH_LEN == 4);

/* ---- BTH accessors ---- */

#define SROCE_BTH_SE		0x80
#define SROCE_BTH_MIG		0x40
#define SROCE_BTH_PAD_SHIFT	4
#define SROCE_BTH_PAD_MASK	0x30
#define SROCE_BTH_TVER_MASK	0x0f
#define SROCE_BTH_FECN		BIT(31)
#define SROCE_BTH_BECN		BIT(30)
#define SROCE_BTH_QPN_MASK	0x00ffffffU
#define SROCE_BTH_ACKREQ	BIT(31)
#define SROCE_BTH_PSN_MASK	0x00ffffffU

static inline u8 sroce_bth_opcode(const struct sroce_bth *bth)
{
	return bth->opcode;
}

static inline bool sroce_bth_se(const struct sroce_bth *bth)
{
	return bth->se_m_pad_tver & SROCE_BTH_SE;
}

static inline bool sroce_bth_mig(const struct sroce_bth *bth)
{
	return bth->se_m_pad_tver & SROCE_BTH_MIG;
}

static inline unsigned int sroce_bth_pad(const struct sroce_bth *bth)
{
	return (bth->se_m_pad_tver & SROCE_BTH_PAD_MASK) >> SROCE_BTH_PAD_SHIFT;
}

static inline unsigned int sroce_bth_tver(const struct sroce_bth *bth)
{
	return bth->se_m_pad_tver & SROCE_BTH_TVER_MASK;
}

static inline u16 sroce_bth_pkey(const struct sroce_bth *bth)
{
	return be16_to_cpu(bth->pkey);
}

static inline bool sroce_bth_fecn(const struct sroce_bth *bth)
{
	return be32_to_cpu(bth->fb_qpn) & SROCE_BTH_FECN;
}

static inline bool sroce_bth_becn(const struct sroce_bth *bth)
{
	return be32_to_cpu(bth->fb_qpn) & SROCE_BTH_BECN;
}

static inline u32 sroce_bth_qpn(const struct sroce_bth *bth)
{
	return be32_to_cpu(bth->fb_qpn) & SROCE_BTH_QPN_MASK;
}

static inline bool sroce_bth_ackreq(const struct sroce_bth *bth)
{
	return be32_to_cpu(bth->a_psn) & SROCE_BTH_ACKREQ;
}

static inline u32 sroce_bth_psn(const struct sroce_bth *bth)
{
	return be32_to_cpu(bth->a_psn) & SROCE_BTH_PSN_MASK;
}

static inline void sroce_bth_set_opcode(struct sroce_bth *bth, u8 opcode)
{
	bth->opcode = opcode;
}

static inline void sroce_bth_set_se(struct sroce_bth *bth, bool se)
{
	if (se)
		bth->se_m_pad_tver |= SROCE_BTH_SE;
	else
		bth->se_m_pad_tver &= ~SROCE_BTH_SE;
}

static inline void sroce_bth_set_mig(struct sroce_bth *bth, bool mig)
{
	if (mig)
		bth->se_m_pad_tver |= SROCE_BTH_MIG;
	else
		bth->se_m_pad_tver &= ~SROCE_BTH_MIG;
}

static inline void sroce_bth_set_pad(struct sroce_bth *bth, unsigned int pad)
{
	bth->se_m_pad_tver = (bth->se_m_pad_tver & ~SROCE_BTH_PAD_MASK) |
			     ((pad << SROCE_BTH_PAD_SHIFT) & SROCE_BTH_PAD_MASK);
}

static inline void sroce_bth_set_tver(struct sroce_bth *bth, unsigned int tver)
{
	bth->se_m_pad_tver = (bth->se_m_pad_tver & ~SROCE_BTH_TVER_MASK) |
			     (tver & SROCE_BTH_TVER_MASK);
}

static inline void sroce_bth_set_pkey(struct sroce_bth *bth, u16 pkey)
{
	bth->pkey = cpu_to_be16(pkey);
}

static inline void sroce_bth_set_fecn(struct sroce_bth *bth, bool on)
{
	if (on)
		bth->fb_qpn |= cpu_to_be32(SROCE_BTH_FECN);
	else
		bth->fb_qpn &= ~cpu_to_be32(SROCE_BTH_FECN);
}

static inline void sroce_bth_set_becn(struct sroce_bth *bth, bool on)
{
	if (on)
		bth->fb_qpn |= cpu_to_be32(SROCE_BTH_BECN);
	else
		bth->fb_qpn &= ~cpu_to_be32(SROCE_BTH_BECN);
}

static inline void sroce_bth_set_qpn(struct sroce_bth *bth, u32 qpn)
{
	bth->fb_qpn = (bth->fb_qpn & ~cpu_to_be32(SROCE_BTH_QPN_MASK)) |
		      cpu_to_be32(qpn & SROCE_BTH_QPN_MASK);
}

static inline void sroce_bth_set_ackreq(struct sroce_bth *bth, bool ackreq)
{
	if (ackreq)
		bth->a_psn |= cpu_to_be32(SROCE_BTH_ACKREQ);
	else
		bth->a_psn &= ~cpu_to_be32(SROCE_BTH_ACKREQ);
}

static inline void sroce_bth_set_psn(struct sroce_bth *bth, u32 psn)
{
	bth->a_psn = (bth->a_psn & ~cpu_to_be32(SROCE_BTH_PSN_MASK)) |
		     cpu_to_be32(psn & SROCE_BTH_PSN_MASK);
}

/*
 * Write a whole BTH; reserved bits, FECN/BECN and M are zero, TVer is 0.
 * pad is the number of pad bytes after the payload, (4 - len % 4) % 4.
 */
static inline void sroce_bth_init(struct sroce_bth *bth, u8 opcode, bool se,
				  unsigned int pad, u16 pkey, u32 qpn,
				  bool ackreq, u32 psn)
{
	bth->opcode = opcode;
	bth->se_m_pad_tver = (se ? SROCE_BTH_SE : 0) |
			     ((pad << SROCE_BTH_PAD_SHIFT) & SROCE_BTH_PAD_MASK) |
			     SROCE_BTH_TVER;
	bth->pkey = cpu_to_be16(pkey);
	bth->fb_qpn = cpu_to_be32(qpn & SROCE_BTH_QPN_MASK);
	bth->a_psn = cpu_to_be32((ackreq ? SROCE_BTH_ACKREQ : 0) |
				 (psn & SROCE_BTH_PSN_MASK));
}

/* Pad bytes that follow a payload of len bytes. */
static inline unsigned int sroce_pad_len(unsigned int len)
{
	return -len & 3;
}

/* ---- extension header accessors ---- */

static inline u64 sroce_reth_va(const struct sroce_reth *reth)
{
	return be64_to_cpu(reth->va);
}

static inline u32 sroce_reth_rkey(const struct sroce_reth *reth)
{
	return be32_to_cpu(reth->rkey);
}

static inline u32 sroce_reth_len(const struct sroce_reth *reth)
{
	return be32_to_cpu(reth->dma_len);
}

static inline void sroce_reth_set(struct sroce_reth *reth, u64 va, u32 rkey,
				  u32 len)
{
	reth->va = cpu_to_be64(va);
	reth->rkey = cpu_to_be32(rkey);
	reth->dma_len = cpu_to_be32(len);
}

static inline u32 sroce_immdt_get(const struct sroce_immdt *immdt)
{
	return be32_to_cpu(immdt->imm);
}

static inline void sroce_immdt_set(struct sroce_immdt *immdt, u32 imm)
{
	immdt->imm = cpu_to_be32(imm);
}

static inline u32 sroce_ieth_rkey(const struct sroce_ieth *ieth)
{
	return be32_to_cpu(ieth->rkey);
}

static inline void sroce_ieth_set(struct sroce_ieth *ieth, u32 rkey)
{
	ieth->rkey = cpu_to_be32(rkey);
}

#define SROCE_DETH_SQP_MASK	0x00ffffffU

static inline u32 sroce_deth_qkey(const struct sroce_deth *deth)
{
	return be32_to_cpu(deth->qkey);
}

static inline u32 sroce_deth_sqp(const struct sroce_deth *deth)
{
	return be32_to_cpu(deth->src_qpn) & SROCE_DETH_SQP_MASK;
}

static inline void sroce_deth_set(struct sroce_deth *deth, u32 qkey, u32 sqp)
{
	deth->qkey = cpu_to_be32(qkey);
	deth->src_qpn = cpu_to_be32(sqp & SROCE_DETH_SQP_MASK);
}

static inline u64 sroce_atmeth_va(const struct sroce_atmeth *a)
{
	return be64_to_cpu(a->va);
}

static inline u32 sroce_atmeth_rkey(const struct sroce_atmeth *a)
{
	return be32_to_cpu(a->rkey);
}

static inline u64 sroce_atmeth_swap_add(const struct sroce_atmeth *a)
{
	return be64_to_cpu(a->swap_add);
}

static inline u64 sroce_atmeth_compare(const struct sroce_atmeth *a)
{
	return be64_to_cpu(a->compare);
}

static inline void sroce_atmeth_set(struct sroce_atmeth *a, u64 va, u32 rkey,
				    u64 swap_add, u64 compare)
{
	a->va = cpu_to_be64(va);
	a->rkey = cpu_to_be32(rkey);
	a->swap_add = cpu_to_be64(swap_add);
	a->compare = cpu_to_be64(compare);
}

static inline u64 sroce_atmack_orig(const struct sroce_atmack *a)
{
	return be64_to_cpu(a->orig);
}

static inline void sroce_atmack_set(struct sroce_atmack *a, u64 orig)
{
	a->orig = cpu_to_be64(orig);
}

#define SROCE_XRCETH_SRQN_MASK	0x00ffffffU

static inline u32 sroce_xrceth_srqn(const struct sroce_xrceth *x)
{
	return be32_to_cpu(x->srqn) & SROCE_XRCETH_SRQN_MASK;
}

static inline void sroce_xrceth_set(struct sroce_xrceth *x, u32 srqn)
{
	x->srqn = cpu_to_be32(srqn & SROCE_XRCETH_SRQN_MASK);
}

#define SROCE_FETH_PLT_MASK	0x0000000fU	/* placement type */
#define SROCE_FETH_SEL_MASK	0x00000030U	/* selectivity level */
#define SROCE_FETH_SEL_SHIFT	4

static inline unsigned int sroce_feth_plt(const struct sroce_feth *f)
{
	return be32_to_cpu(f->sel_plt) & SROCE_FETH_PLT_MASK;
}

static inline unsigned int sroce_feth_sel(const struct sroce_feth *f)
{
	return (be32_to_cpu(f->sel_plt) & SROCE_FETH_SEL_MASK) >>
	       SROCE_FETH_SEL_SHIFT;
}

static inline void sroce_feth_set(struct sroce_feth *f, unsigned int sel,
				  unsigned int plt)
{
	f->sel_plt = cpu_to_be32(((sel << SROCE_FETH_SEL_SHIFT) &
				  SROCE_FETH_SEL_MASK) |
				 (plt & SROCE_FETH_PLT_MASK));
}

/* ---- AETH: syndrome (IBTA 9.7.5.1) and MSN ---- */

#define SROCE_AETH_MSN_MASK	0x00ffffffU
#define SROCE_AETH_SYN_SHIFT	24
#define SROCE_AETH_TYPE_MASK	0xe0	/* of the 8-bit syndrome */
#define SROCE_AETH_VALUE_MASK	0x1f
#define SROCE_AETH_TYPE_ACK	0x00	/* value: credit count code */
#define SROCE_AETH_TYPE_RNR	0x20	/* value: RNR timer code */
#define SROCE_AETH_TYPE_NAK	0x60	/* value: enum sroce_nak_code */

enum sroce_nak_code {
	SROCE_NAK_PSN_SEQ_ERR	= 0,
	SROCE_NAK_INV_REQ	= 1,
	SROCE_NAK_REM_ACCESS	= 2,
	SROCE_NAK_REM_OP	= 3,
	SROCE_NAK_INV_RD_REQ	= 4,
};

/* Credit count code meaning "no end-to-end flow control credits known". */
#define SROCE_AETH_CREDIT_INVALID	31

static inline u8 sroce_aeth_syn(const struct sroce_aeth *aeth)
{
	return be32_to_cpu(aeth->syn_msn) >> SROCE_AETH_SYN_SHIFT;
}

static inline u32 sroce_aeth_msn(const struct sroce_aeth *aeth)
{
	return be32_to_cpu(aeth->syn_msn) & SROCE_AETH_MSN_MASK;
}

static inline void sroce_aeth_set(struct sroce_aeth *aeth, u8 syn, u32 msn)
{
	aeth->syn_msn = cpu_to_be32((u32)syn << SROCE_AETH_SYN_SHIFT |
				    (msn & SROCE_AETH_MSN_MASK));
}

static inline u8 sroce_aeth_syn_type(u8 syn)
{
	return syn & SROCE_AETH_TYPE_MASK;
}

static inline u8 sroce_aeth_syn_value(u8 syn)
{
	return syn & SROCE_AETH_VALUE_MASK;
}

static inline u8 sroce_syn_ack(unsigned int credit_code)
{
	return SROCE_AETH_TYPE_ACK | (credit_code & SROCE_AETH_VALUE_MASK);
}

static inline u8 sroce_syn_rnr(unsigned int rnr_timer_code)
{
	return SROCE_AETH_TYPE_RNR | (rnr_timer_code & SROCE_AETH_VALUE_MASK);
}

static inline u8 sroce_syn_nak(enum sroce_nak_code code)
{
	return SROCE_AETH_TYPE_NAK | (code & SROCE_AETH_VALUE_MASK);
}

/* Largest credit count code whose value does not exceed credits. */
unsigned int sroce_aeth_credit_code(u32 credits);
/* Credits a code stands for; U32_MAX for SROCE_AETH_CREDIT_INVALID. */
u32 sroce_aeth_credits(unsigned int code);
/* RNR NAK timer (IBTA 9.7.5.2.8): 5-bit code to microseconds. */
u32 sroce_rnr_timer_usec(unsigned int code);

/* ---- opcodes (IBTA 9.2.1 and table 40) ---- */

#define SROCE_OP_TRANSPORT_MASK	0xe0
#define SROCE_OP_RC		0x00
#define SROCE_OP_UC		0x20
#define SROCE_OP_RD		0x40
#define SROCE_OP_UD		0x60
#define SROCE_OP_CNP_BASE	0x80
#define SROCE_OP_XRC		0xa0
/* The operation within a transport: the RC opcode of the same packet. */
#define SROCE_OP_BASE_MASK	0x1f

enum sroce_opcode {
	SROCE_OP_RC_SEND_FIRST			= 0x00,
	SROCE_OP_RC_SEND_MIDDLE			= 0x01,
	SROCE_OP_RC_SEND_LAST			= 0x02,
	SROCE_OP_RC_SEND_LAST_WITH_IMM		= 0x03,
	SROCE_OP_RC_SEND_ONLY			= 0x04,
	SROCE_OP_RC_SEND_ONLY_WITH_IMM		= 0x05,
	SROCE_OP_RC_RDMA_WRITE_FIRST		= 0x06,
	SROCE_OP_RC_RDMA_WRITE_MIDDLE		= 0x07,
	SROCE_OP_RC_RDMA_WRITE_LAST		= 0x08,
	SROCE_OP_RC_RDMA_WRITE_LAST_WITH_IMM	= 0x09,
	SROCE_OP_RC_RDMA_WRITE_ONLY		= 0x0a,
	SROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMM	= 0x0b,
	SROCE_OP_RC_RDMA_READ_REQUEST		= 0x0c,
	SROCE_OP_RC_RDMA_READ_RESPONSE_FIRST	= 0x0d,
	SROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE	= 0x0e,
	SROCE_OP_RC_RDMA_READ_RESPONSE_LAST	= 0x0f,
	SROCE_OP_RC_RDMA_READ_RESPONSE_ONLY	= 0x10,
	SROCE_OP_RC_ACKNOWLEDGE			= 0x11,
	SROCE_OP_RC_ATOMIC_ACKNOWLEDGE		= 0x12,
	SROCE_OP_RC_COMPARE_SWAP		= 0x13,
	SROCE_OP_RC_FETCH_ADD			= 0x14,
	SROCE_OP_RC_SEND_LAST_WITH_INV		= 0x16,
	SROCE_OP_RC_SEND_ONLY_WITH_INV		= 0x17,
	SROCE_OP_RC_FLUSH			= 0x1c,
	SROCE_OP_RC_ATOMIC_WRITE		= 0x1d,

	SROCE_OP_UC_SEND_FIRST			= 0x20,
	SROCE_OP_UC_SEND_MIDDLE			= 0x21,
	SROCE_OP_UC_SEND_LAST			= 0x22,
	SROCE_OP_UC_SEND_LAST_WITH_IMM		= 0x23,
	SROCE_OP_UC_SEND_ONLY			= 0x24,
	SROCE_OP_UC_SEND_ONLY_WITH_IMM		= 0x25,
	SROCE_OP_UC_RDMA_WRITE_FIRST		= 0x26,
	SROCE_OP_UC_RDMA_WRITE_MIDDLE		= 0x27,
	SROCE_OP_UC_RDMA_WRITE_LAST		= 0x28,
	SROCE_OP_UC_RDMA_WRITE_LAST_WITH_IMM	= 0x29,
	SROCE_OP_UC_RDMA_WRITE_ONLY		= 0x2a,
	SROCE_OP_UC_RDMA_WRITE_ONLY_WITH_IMM	= 0x2b,

	/* XRC (IBTA 9.2.1): the RC operation codes, requests with XRCETH */
	SROCE_OP_XRC_SEND_FIRST			= 0xa0,
	SROCE_OP_XRC_SEND_MIDDLE		= 0xa1,
	SROCE_OP_XRC_SEND_LAST			= 0xa2,
	SROCE_OP_XRC_SEND_LAST_WITH_IMM		= 0xa3,
	SROCE_OP_XRC_SEND_ONLY			= 0xa4,
	SROCE_OP_XRC_SEND_ONLY_WITH_IMM		= 0xa5,
	SROCE_OP_XRC_RDMA_WRITE_FIRST		= 0xa6,
	SROCE_OP_XRC_RDMA_WRITE_MIDDLE		= 0xa7,
	SROCE_OP_XRC_RDMA_WRITE_LAST		= 0xa8,
	SROCE_OP_XRC_RDMA_WRITE_LAST_WITH_IMM	= 0xa9,
	SROCE_OP_XRC_RDMA_WRITE_ONLY		= 0xaa,
	SROCE_OP_XRC_RDMA_WRITE_ONLY_WITH_IMM	= 0xab,
	SROCE_OP_XRC_RDMA_READ_REQUEST		= 0xac,
	SROCE_OP_XRC_RDMA_READ_RESPONSE_FIRST	= 0xad,
	SROCE_OP_XRC_RDMA_READ_RESPONSE_MIDDLE	= 0xae,
	SROCE_OP_XRC_RDMA_READ_RESPONSE_LAST	= 0xaf,
	SROCE_OP_XRC_RDMA_READ_RESPONSE_ONLY	= 0xb0,
	SROCE_OP_XRC_ACKNOWLEDGE		= 0xb1,
	SROCE_OP_XRC_ATOMIC_ACKNOWLEDGE		= 0xb2,
	SROCE_OP_XRC_COMPARE_SWAP		= 0xb3,
	SROCE_OP_XRC_FETCH_ADD			= 0xb4,
	SROCE_OP_XRC_SEND_LAST_WITH_INV		= 0xb6,
	SROCE_OP_XRC_SEND_ONLY_WITH_INV		= 0xb7,

	SROCE_OP_UD_SEND_ONLY			= 0x64,
	SROCE_OP_UD_SEND_ONLY_WITH_IMM		= 0x65,

	/* RoCEv2 congestion notification packet (Annex A17.9.3). */
	SROCE_OP_CNP				= 0x81,
};

/*
 * A CNP's BTH (annex A17.9.3): BECN=1 (byte 4 = 0x40), which reaction
 * points may require before they slow down; default P_Key, PSN 0.
 */
static inline void sroce_cnp_bth_init(struct sroce_bth *bth, u32 qpn)
{
	sroce_bth_init(bth, SROCE_OP_CNP, false, 0, SROCE_DEFAULT_PKEY, qpn,
		       false, 0);
	sroce_bth_set_becn(bth, true);
}

#define SROCE_NUM_OPCODES	256

/* Which extension headers follow the BTH (bit n is enum sroce_ext n). */
#define SROCE_OPF_DETH		BIT(SROCE_EXT_DETH)
#define SROCE_OPF_XRCETH	BIT(SROCE_EXT_XRCETH)
#define SROCE_OPF_FETH		BIT(SROCE_EXT_FETH)
#define SROCE_OPF_RETH		BIT(SROCE_EXT_RETH)
#define SROCE_OPF_ATMETH	BIT(SROCE_EXT_ATMETH)
#define SROCE_OPF_AETH		BIT(SROCE_EXT_AETH)
#define SROCE_OPF_ATMACK	BIT(SROCE_EXT_ATMACK)
#define SROCE_OPF_IMMDT		BIT(SROCE_EXT_IMMDT)
#define SROCE_OPF_IETH		BIT(SROCE_EXT_IETH)
#define SROCE_OPF_EXT_MASK	(BIT(SROCE_EXT_NUM) - 1)
/* Message structure. */
#define SROCE_OPF_VALID		BIT(9)	/* a known opcode */
#define SROCE_OPF_PAYLOAD	BIT(10)	/* may carry payload (and pad) */
#define SROCE_OPF_FIRST		BIT(11)	/* FIRST or ONLY packet of a message */
#define SROCE_OPF_MIDDLE	BIT(12)
#define SROCE_OPF_LAST		BIT(13)	/* LAST or ONLY packet of a message */
#define SROCE_OPF_REQ		BIT(14)	/* requester to responder */
#define SROCE_OPF_RESP		BIT(15)	/* responder to requester */
/* Operation. */
#define SROCE_OPF_SEND		BIT(16)
#define SROCE_OPF_WRITE		BIT(17)
#define SROCE_OPF_READ		BIT(18)	/* READ request or READ response */
#define SROCE_OPF_ATOMIC	BIT(19)	/* CmpSwap/FetchAdd or their ACK */
#define SROCE_OPF_ACK		BIT(20)	/* ACKNOWLEDGE */
#define SROCE_OPF_ATOMIC_WRITE	BIT(21)
#define SROCE_OPF_FLUSH		BIT(22)
#define SROCE_OPF_CNP		BIT(23)
/* The responder consumes a receive WQE / completes on this packet. */
#define SROCE_OPF_RWQE		BIT(24)	/* SEND or WRITE with immediate */
#define SROCE_OPF_COMP		BIT(25)	/* ...and generates the completion */

struct sroce_opcode_info {
	const char *name;
	u32 flags;
	u8 hdr_len;			/* BTH + extension headers */
	u8 offset[SROCE_EXT_NUM];	/* from the BTH; valid if present */
};

/* Filled in at module init (sroce_wire_init()), read-only after. */
extern struct sroce_opcode_info sroce_opcode_info[SROCE_NUM_OPCODES];
void sroce_wire_init(void);

static inline const struct sroce_opcode_info *sroce_opinfo(u8 opcode)
{
	return &sroce_opcode_info[opcode];
}

static inline u32 sroce_op_flags(u8 opcode)
{
	return sroce_opcode_info[opcode].flags;
}

static inline unsigned int sroce_op_transport(u8 opcode)
{
	return opcode & SROCE_OP_TRANSPORT_MASK;
}

/* The RC opcode of the same operation (XRC's and UC's share the codes). */
static inline u8 sroce_op_base(u8 opcode)
{
	return opcode & SROCE_OP_BASE_MASK;
}

/* ---- the parsed packet, kept in skb->cb on receive ---- */

/*
 * Filled in by the receive path (net.c) after the packet has been fully
 * validated: BTH and the opcode's extension headers are in the linear
 * area; hdr_len + payload_len + pad + ICRC == UDP payload length; the ICRC
 * was correct. When sroce_transport_rcv() is called, skb->data points at
 * the BTH; the IP header is at skb_network_header() and the UDP header at
 * skb_transport_header(). The payload may be in page fragments: copy it
 * with skb_copy_bits() from sroce_pkt_payload_offset().
 */
struct sroce_pkt {
	u32 flags;		/* sroce_opcode_info.flags */
	u32 psn;
	u32 qpn;		/* destination QP */
	u32 payload_len;	/* without pad and ICRC */
	u16 bth_offset;		/* BTH from skb->head */
	__be16 udp_sport;
	u8 opcode;
	u8 hdr_len;		/* BTH + extension headers */
	u8 pad;
	u8 network_type;	/* enum rdma_network_type: IPV4 or IPV6 */
	u16 cqe_vlan;		/* struct sroce_cqe.vlan of a UD receive */
	/* Free for the transport while it owns the skb. */
	u64 transport_priv[2];
};

static inline struct sroce_pkt *sroce_pkt(struct sk_buff *skb)
{
	BUILD_BUG_ON(sizeof(struct sroce_pkt) > sizeof_field(struct sk_buff, cb));
	return (struct sroce_pkt *)skb->cb;
}

static inline const struct sroce_pkt *sroce_pkt_c(const struct sk_buff *skb)
{
	return (const struct sroce_pkt *)skb->cb;
}

static inline struct sroce_bth *sroce_pkt_bth(const struct sk_buff *skb)
{
	return (struct sroce_bth *)(skb->head + sroce_pkt_c(skb)->bth_offset);
}

/* Pointer to extension header ext of a parsed packet; NULL if absent. */
static inline void *sroce_pkt_ext(const struct sk_buff *skb, enum sroce_ext ext)
{
	const struct sroce_pkt *pkt = sroce_pkt_c(skb);

	if (!(pkt->flags & BIT(ext)))
		return NULL;
	return (u8 *)sroce_pkt_bth(skb) + sroce_opcode_info[pkt->opcode].offset[ext];
}

static inline struct sroce_reth *sroce_pkt_reth(const struct sk_buff *skb)
{
	return sroce_pkt_ext(skb, SROCE_EXT_RETH);
}

static inline struct sroce_aeth *sroce_pkt_aeth(const struct sk_buff *skb)
{
	return sroce_pkt_ext(skb, SROCE_EXT_AETH);
}

static inline struct sroce_immdt *sroce_pkt_immdt(const struct sk_buff *skb)
{
	return sroce_pkt_ext(skb, SROCE_EXT_IMMDT);
}

static inline struct sroce_ieth *sroce_pkt_ieth(const struct sk_buff *skb)
{
	return sroce_pkt_ext(skb, SROCE_EXT_IETH);
}

static inline struct sroce_deth *sroce_pkt_deth(const struct sk_buff *skb)
{
	return sroce_pkt_ext(skb, SROCE_EXT_DETH);
}

static inline struct sroce_atmeth *sroce_pkt_atmeth(const struct sk_buff *skb)
{
	return sroce_pkt_ext(skb, SROCE_EXT_ATMETH);
}

static inline struct sroce_atmack *sroce_pkt_atmack(const struct sk_buff *skb)
{
	return sroce_pkt_ext(skb, SROCE_EXT_ATMACK);
}

static inline struct sroce_xrceth *sroce_pkt_xrceth(const struct sk_buff *skb)
{
	return sroce_pkt_ext(skb, SROCE_EXT_XRCETH);
}

static inline struct sroce_feth *sroce_pkt_feth(const struct sk_buff *skb)
{
	return sroce_pkt_ext(skb, SROCE_EXT_FETH);
}

/* Offset of the payload from skb->data, for skb_copy_bits() & co. */
static inline int sroce_pkt_payload_offset(const struct sk_buff *skb)
{
	const struct sroce_pkt *pkt = sroce_pkt_c(skb);

	return (int)(skb->head + pkt->bth_offset - skb->data) + pkt->hdr_len;
}

#endif /* SROCE_WIRE_H */
