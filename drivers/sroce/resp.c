// SPDX-License-Identifier: GPL-2.0
/*
 * Responder (IBTA Vol. 1 9.7.5 and 9.9): the receive side of RC, UC and UD
 * QPs, run in softirq context straight from packet receive.
 *
 * Every request packet is handled to the end under the QP's responder lock
 * (struct sroce_resp_state): PSN check, data placement, receive completion
 * and the decision what to answer. The answer (ACK, NAK, atomic ACK or
 * READ responses) is described in a struct resp_reply (resp_tx.h) and
 * transmitted by resp_tx.c after the lock is dropped, so no lock is held
 * across the IP stack; the consumer's completion and event handlers the
 * packet owes are called after it too (struct sroce_resp_state.owed).
 *
 * Everything in a packet is untrusted. net.c has checked that the headers
 * of the opcode are present and that the payload length matches the UDP
 * length; here lengths are checked against the path MTU, the message
 * (RETH DMA length, receive WQE) and the MR before a byte is placed.
 */
#include <linux/kernel.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

#include "cq.h"
#include "mr.h"
#include "net.h"
#include "psn.h"
#include "qp.h"
#include "resp.h"
#include "resp_tx.h"
#include "sroce.h"
#include "srq.h"
#include "wire.h"

/* ACK after this many requests even without AckReq (ACK coalescing). */
#define SROCE_RESP_ACK_EVERY	16
/* Bytes of the GRH that precedes a UD receive's payload. */
#define SROCE_GRH_LEN		40

/* The verdict on a request packet. */
enum resp_status {
	RESP_OK,		/* accepted: ACK by the coalescing rules */
	RESP_REPLIED,		/* accepted: READ/atomic reply described */
	RESP_RNR,		/* no receive WQE or ODP pages missing (a fault
				 * is queued): RNR NAK, nothing changed
				 */
	RESP_ERR_INV_REQ,	/* class C: NAK invalid request */
	RESP_ERR_ACCESS,	/* class C: NAK remote access error */
	RESP_ERR_LEN,		/* message longer than the receive WQE */
	RESP_ERR_PROT,		/* receive WQE SGE unusable (lkey, access) */
	RESP_ERR_RQ,		/* receive queue corrupted by user space */
};

void sroce_resp_count(struct sroce_qp *qp, enum sroce_rx_stat stat)
{
	atomic64_inc(&qp->sdev->rx_stats.c[stat]);
}

/*
 * The PD of the packet's accesses (under resp.lock): the QP's, or for an
 * XRC target QP, which has none of its own, the PD of the request's XRC
 * SRQ.
 */
static struct ib_pd *resp_pd(const struct sroce_qp *qp)
{
	return qp->resp.xrc_srq ? qp->resp.xrc_srq->ibsrq.pd : qp->ibqp.pd;
}

/* Does @rkey grant @access to [va, va + len) for this packet? */
static struct sroce_mr *resp_rkey_get(struct sroce_qp *qp, u32 rkey, u64 va,
				      u32 len, int access)
{
	return sroce_rkey_get(qp->sdev, resp_pd(qp), &qp->ibqp, rkey, va, len,
			      access);
}

u8 sroce_resp_syn_ack(void)
{
	/* The responder does not track end-to-end credits. */
	return sroce_syn_ack(SROCE_AETH_CREDIT_INVALID);
}

static void resp_reply_ack(struct resp_reply *r, u8 syndrome, u32 psn,
			   u32 msn)
{
	r->kind = REPLY_ACK;
	r->syndrome = syndrome;
	r->psn = psn;
	r->msn = msn;
}

/* ---- receive WQEs and completions ---- */

/*
 * Complete the receive WQE in rs->wqe. If a flush got to it first (the QP
 * went to the error state meanwhile), the flush's completion stands.
 */
static void resp_complete(struct sroce_qp *qp, struct sk_buff *skb,
			  enum ib_wc_status status, u8 opcode, u32 byte_len)
{
	struct sroce_resp_state *rs = &qp->resp;
	struct sroce_cqe cqe = {
		.wr_id = rs->wqe->wr_id,
		.status = status,
		.opcode = opcode,
		.byte_len = byte_len,
		.qp_num = qp->ibqp.qp_num,
		.pkey_index = READ_ONCE(qp->attr.pkey_index),
	};
	bool solicited = true;	/* error completions always are */
	struct sroce_immdt *immdt;
	struct sroce_ieth *ieth;
	struct sroce_deth *deth;

	rs->have_wqe = false;
	if (status == IB_WC_SUCCESS && skb) {
		solicited = sroce_bth_se(sroce_pkt_bth(skb));
		immdt = sroce_pkt_immdt(skb);
		if (immdt) {
			cqe.wc_flags |= SROCE_WC_F_WITH_IMM;
			cqe.ex.imm_data = immdt->imm;
		}
		ieth = sroce_pkt_ieth(skb);
		if (ieth) {
			cqe.wc_flags |= SROCE_WC_F_WITH_INV;
			cqe.ex.invalidated_rkey = sroce_ieth_rkey(ieth);
		}
		deth = sroce_pkt_deth(skb);
		if (deth) {
			cqe.wc_flags |= SROCE_WC_F_GRH;
			cqe.src_qp = sroce_deth_sqp(deth);
			cqe.sl = sroce_pkt_cqe_sl(skb);
			cqe.vlan = sroce_pkt_c(skb)->cqe_vlan;
		}
	}
	sroce_rq_complete(qp, rs->wqe, &cqe, solicited, rs->owed);
}

/* Make rs->wqe the oldest posted receive WQE (it stays posted). */
static enum resp_status resp_get_wqe(struct sroce_qp *qp)
{
	struct sroce_resp_state *rs = &qp->resp;
	int err;

	if (rs->have_wqe)
		return RESP_OK;
	err = sroce_rq_peek(qp, rs->wqe, rs->owed);
	if (err == -EAGAIN)
		return RESP_RNR;
	if (err)
		return RESP_ERR_RQ;
	rs->have_wqe = true;
	rs->msg_offset = 0;
	return RESP_OK;
}

/* ---- checks shared by RC and UC ---- */

/* Does this packet continue (or start) the message in progress? */
static bool resp_op_seq_ok(const struct sroce_resp_state *rs, u32 flags)
{
	bool starts = flags & SROCE_OPF_FIRST;

	switch (rs->msg) {
	case SROCE_RESP_MSG_SEND:
		return (flags & SROCE_OPF_SEND) && !starts;
	case SROCE_RESP_MSG_WRITE:
		return (flags & SROCE_OPF_WRITE) && !starts;
	default:
		return starts;
	}
}

/* Payload sizes IBTA allows at this position of a message (9.7.5.1.4). */
static bool resp_len_ok(u32 flags, u32 len, u32 mtu)
{
	if (!(flags & SROCE_OPF_LAST))
		return len == mtu;		/* FIRST, MIDDLE */
	if (!(flags & SROCE_OPF_FIRST))
		return len && len <= mtu;	/* LAST */
	return len <= mtu;			/* ONLY */
}

static bool resp_qp_allows(const struct sroce_qp *qp, int access)
{
	return READ_ONCE(qp->attr.access_flags) & access;
}

/* ---- SEND ---- */

static enum resp_status resp_send(struct sroce_qp *qp, struct sk_buff *skb)
{
	struct sroce_resp_state *rs = &qp->resp;
	const struct sroce_pkt *pkt = sroce_pkt_c(skb);
	u32 len = pkt->payload_len;
	enum resp_status st;
	int err;

	if (pkt->flags & SROCE_OPF_FIRST) {
		st = resp_get_wqe(qp);
		if (st != RESP_OK)
			return st;
	}
	if (len > rs->wqe->length - rs->msg_offset)
		return RESP_ERR_LEN;
	if (len) {
		err = sroce_sgl_write_skb(qp->sdev, resp_pd(qp), rs->wqe->sge,
					  rs->wqe->num_sge, rs->msg_offset, skb,
					  sroce_pkt_payload_offset(skb), len);
		if (err == -EAGAIN)
			return RESP_RNR;	/* ODP fault queued */
		if (err == -EMSGSIZE)
			return RESP_ERR_LEN;
		if (err)
			return RESP_ERR_PROT;
	}
	rs->msg_offset += len;
	if (!(pkt->flags & SROCE_OPF_LAST)) {
		rs->msg = SROCE_RESP_MSG_SEND;
		return RESP_OK;
	}
	/*
	 * SEND with Invalidate: the rkey must name a valid fast-registration
	 * MR of the QP's PD or a type 2 window bound through this QP (IBTA
	 * 10.6.7.2), else invalid request.
	 */
	if ((pkt->flags & SROCE_OPF_IETH) &&
	    sroce_key_remote_inv(qp->sdev, resp_pd(qp), &qp->ibqp,
				 sroce_ieth_rkey(sroce_pkt_ieth(skb))))
		return RESP_ERR_INV_REQ;

	rs->msg = SROCE_RESP_MSG_NONE;
	rs->msn = sroce_psn_next(rs->msn);
	resp_complete(qp, skb, IB_WC_SUCCESS, SROCE_WC_RECV, rs->msg_offset);
	return RESP_OK;
}

/* ---- RDMA WRITE ---- */

/*
 * Does @rkey grant @access to [va, va + len) in the QP's PD, with its ODP
 * pages mapped? RESP_RNR while they are faulted in (odp.h).
 */
static enum resp_status resp_rkey_check(struct sroce_qp *qp, u32 rkey, u64 va,
					u32 len, int access)
{
	struct sroce_mr *mr;
	int err;

	mr = resp_rkey_get(qp, rkey, va, len, access);
	if (!mr)
		return RESP_ERR_ACCESS;
	err = sroce_mr_ready(mr, va, len, access & IB_ACCESS_REMOTE_WRITE);
	sroce_mr_put(mr);
	return err == -EAGAIN ? RESP_RNR : err ? RESP_ERR_ACCESS : RESP_OK;
}

/* The first packet of a WRITE: validate the RETH and the rkey. */
static enum resp_status resp_write_start(struct sroce_qp *qp,
					 struct sk_buff *skb, u32 mtu)
{
	struct sroce_resp_state *rs = &qp->resp;
	const struct sroce_pkt *pkt = sroce_pkt_c(skb);
	struct sroce_reth *reth = sroce_pkt_reth(skb);
	u32 dlen = sroce_reth_len(reth);
	u64 va = sroce_reth_va(reth);
	enum resp_status st;

	if (pkt->flags & SROCE_OPF_LAST) {
		if (pkt->payload_len != dlen)
			return RESP_ERR_INV_REQ;
	} else if (dlen <= mtu) {
		return RESP_ERR_INV_REQ;
	}
	if (dlen > SROCE_MAX_MSG_SIZE)
		return RESP_ERR_INV_REQ;
	/* A zero-length WRITE carries no valid VA or rkey (IBTA 9.4.3). */
	if (dlen) {
		st = resp_rkey_check(qp, sroce_reth_rkey(reth), va, dlen,
				     IB_ACCESS_REMOTE_WRITE);
		if (st != RESP_OK)
			return st;
	}
	rs->write_rkey = sroce_reth_rkey(reth);
	rs->write_va = va;
	rs->write_resid = dlen;
	rs->write_len = dlen;
	return RESP_OK;
}

static enum resp_status resp_write(struct sroce_qp *qp, struct sk_buff *skb)
{
	struct sroce_resp_state *rs = &qp->resp;
	const struct sroce_pkt *pkt = sroce_pkt_c(skb);
	u32 len = pkt->payload_len;
	enum resp_status st;
	struct sroce_mr *mr;
	int err;

	if (!resp_qp_allows(qp, IB_ACCESS_REMOTE_WRITE))
		return RESP_ERR_INV_REQ;
	/* WRITE with immediate consumes a receive WQE: RNR before all else */
	if (pkt->flags & SROCE_OPF_RWQE) {
		st = resp_get_wqe(qp);
		if (st != RESP_OK)
			return st;
	}
	if (pkt->flags & SROCE_OPF_FIRST) {
		st = resp_write_start(qp, skb, sroce_qp_mtu(qp));
		if (st != RESP_OK)
			return st;
	} else if ((pkt->flags & SROCE_OPF_LAST) ? len != rs->write_resid :
		   len >= rs->write_resid) {
		return RESP_ERR_INV_REQ;
	}
	if (len) {
		mr = resp_rkey_get(qp, rs->write_rkey, rs->write_va, len,
				   IB_ACCESS_REMOTE_WRITE);
		if (!mr)
			return RESP_ERR_ACCESS;
		err = sroce_mr_write_skb(mr, rs->write_va, skb,
					 sroce_pkt_payload_offset(skb), len);
		sroce_mr_put(mr);
		if (err)
			return err == -EAGAIN ? RESP_RNR : RESP_ERR_ACCESS;
		rs->write_va += len;
		rs->write_resid -= len;
	}
	if (!(pkt->flags & SROCE_OPF_LAST)) {
		rs->msg = SROCE_RESP_MSG_WRITE;
		return RESP_OK;
	}
	rs->msg = SROCE_RESP_MSG_NONE;
	rs->msn = sroce_psn_next(rs->msn);
	if (pkt->flags & SROCE_OPF_RWQE)
		resp_complete(qp, skb, IB_WC_SUCCESS,
			      SROCE_WC_RECV_RDMA_WITH_IMM, rs->write_len);
	return RESP_OK;
}

/* ---- RDMA READ and atomics ---- */

/*
 * Responder resources (max_dest_rd_atomic) are a limit the requester must
 * keep (its max_rd_atomic): a READ, atomic, ATOMIC WRITE or FLUSH beyond
 * it gets the invalid request NAK (IBTA 9.7.5.1.3), it is not a reason to
 * forget the oldest answers. A resource is busy from the request until
 * the last packet of its answer is handed to the stack, or the answer is
 * dropped (resp_tx.c, resp_reply_retire()): a requester that keeps to the
 * limit can only send the next such request after that packet reached it.
 */
static bool resp_res_available(const struct sroce_resp_state *rs)
{
	return atomic_read(&rs->res_busy) < rs->num_res;
}

/* The resource for the new request @r answers; it is busy until retired. */
static struct sroce_resp_res *resp_res_claim(struct sroce_resp_state *rs,
					     struct resp_reply *r)
{
	struct sroce_resp_res *res = &rs->res[rs->res_head];

	if (++rs->res_head == rs->num_res)
		rs->res_head = 0;
	atomic_inc(&rs->res_busy);
	r->holds_res = true;
	return res;
}

/* The resource of a duplicate READ (PSN in its range) or atomic. */
static struct sroce_resp_res *resp_res_find(struct sroce_resp_state *rs,
					    u8 type, u32 psn)
{
	struct sroce_resp_res *res;
	unsigned int i;

	for (i = 0; i < rs->num_res; i++) {
		res = &rs->res[i];
		if (res->type == type &&
		    sroce_psn_in_window(psn, res->first_psn,
					sroce_psn_diff(res->last_psn,
						       res->first_psn) + 1))
			return res;
	}
	return NULL;
}

static u32 resp_read_packets(u32 len, u32 mtu)
{
	return len ? DIV_ROUND_UP(len, mtu) : 1;
}

static enum resp_status resp_read(struct sroce_qp *qp, struct sk_buff *skb,
				  struct resp_reply *r)
{
	struct sroce_resp_state *rs = &qp->resp;
	struct sroce_reth *reth = sroce_pkt_reth(skb);
	u32 psn = sroce_pkt_c(skb)->psn, dlen = sroce_reth_len(reth);
	u64 va = sroce_reth_va(reth);
	struct sroce_resp_res *res;
	enum resp_status st;
	u32 npkts;

	if (!resp_res_available(rs) ||
	    !resp_qp_allows(qp, IB_ACCESS_REMOTE_READ) ||
	    dlen > SROCE_MAX_MSG_SIZE)
		return RESP_ERR_INV_REQ;
	/* checked now; looked up again when the responses are sent */
	if (dlen) {
		st = resp_rkey_check(qp, sroce_reth_rkey(reth), va, dlen,
				     IB_ACCESS_REMOTE_READ);
		if (st != RESP_OK)
			return st;
	}
	npkts = resp_read_packets(dlen, sroce_qp_mtu(qp));

	res = resp_res_claim(rs, r);
	res->type = SROCE_RES_READ;
	res->first_psn = psn;
	res->last_psn = sroce_psn_add(psn, npkts - 1);
	res->read.va = va;
	res->read.rkey = sroce_reth_rkey(reth);
	res->read.length = dlen;

	/* A READ request is a complete message (C9-148). */
	rs->msn = sroce_psn_next(rs->msn);
	rs->epsn = sroce_psn_add(psn, npkts);
	r->kind = REPLY_READ;
	r->psn = psn;
	r->msn = rs->msn;
	r->rkey = res->read.rkey;
	r->va = va;
	r->len = dlen;
	return RESP_REPLIED;
}

/*
 * What an atomic's failure in the MR means: pages to fault in, memory
 * not 8-byte aligned (an invalid request, as a misaligned va: the
 * address in memory is checked by mr.c, which knows it), or no access.
 */
static enum resp_status resp_atomic_err(int err)
{
	if (err == -EAGAIN)
		return RESP_RNR;
	return err == -EINVAL ? RESP_ERR_INV_REQ : RESP_ERR_ACCESS;
}

static enum resp_status resp_atomic(struct sroce_qp *qp, struct sk_buff *skb,
				    struct resp_reply *r)
{
	struct sroce_resp_state *rs = &qp->resp;
	const struct sroce_pkt *pkt = sroce_pkt_c(skb);
	struct sroce_atmeth *a = sroce_pkt_atmeth(skb);
	bool cmp_swap = sroce_op_base(pkt->opcode) == SROCE_OP_RC_COMPARE_SWAP;
	u64 va = sroce_atmeth_va(a), orig;
	struct sroce_resp_res *res;
	struct sroce_mr *mr;
	int err;

	if (!resp_res_available(rs) ||
	    !resp_qp_allows(qp, IB_ACCESS_REMOTE_ATOMIC) ||
	    pkt->payload_len)
		return RESP_ERR_INV_REQ;
	mr = resp_rkey_get(qp, sroce_atmeth_rkey(a), va, sizeof(u64),
			   IB_ACCESS_REMOTE_ATOMIC);
	if (!mr)
		return RESP_ERR_ACCESS;
	if (!IS_ALIGNED(va, sizeof(u64))) {
		sroce_mr_put(mr);
		return RESP_ERR_INV_REQ;
	}
	err = sroce_mr_atomic(mr, va, cmp_swap,
			      cmp_swap ? sroce_atmeth_compare(a) :
					 sroce_atmeth_swap_add(a),
			      sroce_atmeth_swap_add(a), &orig);
	sroce_mr_put(mr);
	if (err)
		return resp_atomic_err(err);

	res = resp_res_claim(rs, r);
	res->type = SROCE_RES_ATOMIC;
	res->first_psn = pkt->psn;
	res->last_psn = pkt->psn;
	res->atomic.orig = orig;

	rs->msn = sroce_psn_next(rs->msn);
	rs->epsn = sroce_psn_next(pkt->psn);
	r->kind = REPLY_ATOMIC_ACK;
	r->psn = pkt->psn;
	r->msn = rs->msn;
	r->orig = orig;
	return RESP_REPLIED;
}

/* ---- ATOMIC WRITE and FLUSH (IBTA 1.5 annex A19) ---- */

/*
 * Both hold a responder resource like an atomic and are answered by an
 * RDMA READ RESPONSE ONLY without payload; a duplicate gets that answer
 * again and is never executed again.
 */
static enum resp_status resp_placement_done(struct sroce_qp *qp, u32 psn,
					    struct resp_reply *r)
{
	struct sroce_resp_state *rs = &qp->resp;
	struct sroce_resp_res *res = resp_res_claim(rs, r);

	res->type = SROCE_RES_PLACEMENT;
	res->first_psn = psn;
	res->last_psn = psn;

	rs->msn = sroce_psn_next(rs->msn);
	rs->epsn = sroce_psn_next(psn);
	r->kind = REPLY_READ;
	r->psn = psn;
	r->msn = rs->msn;
	r->len = 0;
	return RESP_REPLIED;
}

/* ATOMIC WRITE: 8 bytes to an aligned address, one store (oA19-28..). */
static enum resp_status resp_atomic_write(struct sroce_qp *qp,
					  struct sk_buff *skb,
					  struct resp_reply *r)
{
	const struct sroce_pkt *pkt = sroce_pkt_c(skb);
	struct sroce_reth *reth = sroce_pkt_reth(skb);
	u64 va = sroce_reth_va(reth), value;
	struct sroce_mr *mr;
	int err;

	if (!resp_res_available(&qp->resp) ||
	    !resp_qp_allows(qp, IB_ACCESS_REMOTE_WRITE) ||
	    sroce_reth_len(reth) != sizeof(value) ||
	    pkt->payload_len != sizeof(value))
		return RESP_ERR_INV_REQ;
	mr = resp_rkey_get(qp, sroce_reth_rkey(reth), va, sizeof(value),
			   IB_ACCESS_REMOTE_WRITE);
	if (!mr)
		return RESP_ERR_ACCESS;
	if (!IS_ALIGNED(va, sizeof(value))) {
		sroce_mr_put(mr);
		return RESP_ERR_INV_REQ;
	}
	/* the bytes as they came: ATOMIC WRITE has no byte order */
	err = skb_copy_bits(skb, sroce_pkt_payload_offset(skb), &value,
			    sizeof(value));
	if (!err)
		err = sroce_mr_atomic_write(mr, va, value);
	sroce_mr_put(mr);
	if (err)
		return resp_atomic_err(err);
	return resp_placement_done(qp, pkt->psn, r);
}

/*
 * FLUSH: every placement of the requests before it (processed in PSN
 * order) is globally visible when it is acknowledged. sroce places data
 * with CPU stores into ordinary RAM, so a full barrier is the whole job;
 * persistence cannot be promised, and no MR or QP ever grants
 * FLUSH_PERSISTENT (the device does not advertise it).
 */
static enum resp_status resp_flush(struct sroce_qp *qp, struct sk_buff *skb,
				   struct resp_reply *r)
{
	const struct sroce_pkt *pkt = sroce_pkt_c(skb);
	struct sroce_feth *feth = sroce_pkt_feth(skb);
	struct sroce_reth *reth = sroce_pkt_reth(skb);
	unsigned int plt = sroce_feth_plt(feth), sel = sroce_feth_sel(feth);
	u32 rkey = sroce_reth_rkey(reth);
	struct sroce_mr *mr;
	int access = 0;

	if (!plt || plt & ~(SROCE_FLUSH_GLOBAL | SROCE_FLUSH_PERSISTENT) ||
	    sel > SROCE_FLUSH_MR || pkt->payload_len ||
	    !resp_res_available(&qp->resp))
		return RESP_ERR_INV_REQ;
	if (plt & SROCE_FLUSH_GLOBAL)
		access |= SROCE_ACCESS_FLUSH_GLOBAL;
	if (plt & SROCE_FLUSH_PERSISTENT)
		access |= SROCE_ACCESS_FLUSH_PERSISTENT;
	/* as rxe: the QP must allow the placement type too */
	if ((READ_ONCE(qp->attr.access_flags) & access) != access)
		return RESP_ERR_INV_REQ;
	if (sel == SROCE_FLUSH_MR)
		mr = sroce_mr_get_whole(qp->sdev, resp_pd(qp), rkey, access);
	else
		mr = sroce_mr_get(qp->sdev, resp_pd(qp), rkey,
				  sroce_reth_va(reth), sroce_reth_len(reth),
				  access);
	if (!mr)
		return RESP_ERR_ACCESS;
	sroce_mr_put(mr);
	/* everything placed before is visible before the answer leaves */
	smp_mb();
	return resp_placement_done(qp, pkt->psn, r);
}

/* ---- duplicates (IBTA 9.7.5.1.2) ---- */

/*
 * A retried READ must restart inside the original at a packet boundary
 * and run to its end; then the responses reuse the original PSNs.
 */
static void resp_dup_read(struct sroce_qp *qp, struct sk_buff *skb,
			  struct resp_reply *r)
{
	struct sroce_resp_state *rs = &qp->resp;
	struct sroce_reth *reth = sroce_pkt_reth(skb);
	u32 psn = sroce_pkt_c(skb)->psn, dlen = sroce_reth_len(reth);
	u64 va = sroce_reth_va(reth), skip;
	struct sroce_resp_res *res;

	res = resp_res_find(rs, SROCE_RES_READ, psn);
	if (!res || sroce_reth_rkey(reth) != res->read.rkey)
		goto drop;
	skip = (u64)sroce_psn_diff(psn, res->first_psn) * sroce_qp_mtu(qp);
	if (skip > res->read.length || va != res->read.va + skip ||
	    dlen != res->read.length - skip)
		goto drop;
	r->kind = REPLY_READ;
	r->psn = psn;
	r->msn = rs->msn;
	r->rkey = res->read.rkey;
	r->va = va;
	r->len = dlen;
	return;
drop:
	sroce_resp_count(qp, SROCE_RESP_DROPPED);
}

static void resp_duplicate(struct sroce_qp *qp, struct sk_buff *skb,
			   struct resp_reply *r)
{
	struct sroce_resp_state *rs = &qp->resp;
	const struct sroce_pkt *pkt = sroce_pkt_c(skb);
	struct sroce_resp_res *res;

	sroce_resp_count(qp, SROCE_RESP_DUPLICATES);
	if (pkt->flags & SROCE_OPF_READ) {
		resp_dup_read(qp, skb, r);
	} else if (pkt->flags & SROCE_OPF_ATOMIC) {
		/* replay the result, never the operation */
		res = resp_res_find(rs, SROCE_RES_ATOMIC, pkt->psn);
		if (!res) {
			sroce_resp_count(qp, SROCE_RESP_DROPPED);
			return;
		}
		r->kind = REPLY_ATOMIC_ACK;
		r->psn = pkt->psn;
		r->msn = rs->msn;
		r->orig = res->atomic.orig;
	} else if (pkt->flags & (SROCE_OPF_ATOMIC_WRITE | SROCE_OPF_FLUSH)) {
		/* answer again; executing it again could undo later writes */
		res = resp_res_find(rs, SROCE_RES_PLACEMENT, pkt->psn);
		if (!res) {
			sroce_resp_count(qp, SROCE_RESP_DROPPED);
			return;
		}
		r->kind = REPLY_READ;
		r->psn = pkt->psn;
		r->msn = rs->msn;
		r->len = 0;
	} else if (sroce_bth_ackreq(sroce_pkt_bth(skb)) ||
		   (pkt->flags & SROCE_OPF_LAST)) {
		/* the ACK was lost: acknowledge everything received */
		resp_reply_ack(r, sroce_resp_syn_ack(),
			       sroce_psn_add(rs->epsn, SROCE_PSN_MASK), rs->msn);
	}
}

/* ---- RC ---- */

/*
 * An XRC target QP's request must name an XRC SRQ of the QP's domain in
 * its XRCETH (sroce_resp_rcv() found none otherwise), and a message that
 * took a receive WQE goes on with the SRQ it took it from. Else: invalid
 * request, as for any request the responder cannot serve.
 */
static bool resp_xrc_ok(struct sroce_qp *qp)
{
	struct sroce_srq *srq = qp->resp.xrc_srq;
	unsigned long flags;
	bool ok = true;

	if (!srq)
		return false;
	spin_lock_irqsave(&qp->rq_lock, flags);
	if (qp->resp.have_wqe || qp->rq.srq_held)
		ok = qp->rq.xsrq == srq;
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	return ok;
}

static enum resp_status resp_rc_execute(struct sroce_qp *qp,
					struct sk_buff *skb,
					struct resp_reply *r)
{
	const struct sroce_pkt *pkt = sroce_pkt_c(skb);

	if (sroce_qp_is_xrc_tgt(qp) && !resp_xrc_ok(qp))
		return RESP_ERR_INV_REQ;
	if (!resp_op_seq_ok(&qp->resp, pkt->flags))
		return RESP_ERR_INV_REQ;
	if (pkt->flags & (SROCE_OPF_SEND | SROCE_OPF_WRITE) &&
	    !resp_len_ok(pkt->flags, pkt->payload_len, sroce_qp_mtu(qp)))
		return RESP_ERR_INV_REQ;
	if (pkt->flags & SROCE_OPF_SEND)
		return resp_send(qp, skb);
	if (pkt->flags & SROCE_OPF_WRITE)
		return resp_write(qp, skb);
	if (pkt->flags & SROCE_OPF_READ)
		return resp_read(qp, skb, r);
	if (pkt->flags & SROCE_OPF_ATOMIC)
		return resp_atomic(qp, skb, r);
	if (pkt->flags & SROCE_OPF_ATOMIC_WRITE)
		return resp_atomic_write(qp, skb, r);
	if (pkt->flags & SROCE_OPF_FLUSH)
		return resp_flush(qp, skb, r);
	return RESP_ERR_INV_REQ;
}

/*
 * A class A or C error (IBTA 9.9.3.1.2): NAK it, complete the receive WQE
 * in use with the error and move the QP to the error state.
 */
static void resp_rc_fatal(struct sroce_qp *qp, enum resp_status st, u32 psn,
			  struct resp_reply *r)
{
	struct sroce_resp_state *rs = &qp->resp;
	enum sroce_nak_code nak = SROCE_NAK_INV_REQ;
	enum ib_wc_status wc = IB_WC_REM_INV_REQ_ERR;

	switch (st) {
	case RESP_ERR_ACCESS:
		nak = SROCE_NAK_REM_ACCESS;
		wc = IB_WC_REM_ACCESS_ERR;
		break;
	case RESP_ERR_LEN:
		wc = IB_WC_LOC_LEN_ERR;
		break;
	case RESP_ERR_PROT:
		nak = SROCE_NAK_REM_OP;
		wc = IB_WC_LOC_PROT_ERR;
		break;
	case RESP_ERR_RQ:
		nak = SROCE_NAK_REM_OP;
		wc = IB_WC_LOC_QP_OP_ERR;
		break;
	default:
		break;
	}
	if (rs->have_wqe)
		resp_complete(qp, NULL, wc, SROCE_WC_RECV, 0);
	rs->failed = true;
	sroce_resp_count(qp, SROCE_RESP_ERR_NAKS);
	resp_reply_ack(r, sroce_syn_nak(nak), psn, rs->msn);
	r->fatal = true;
}

static void resp_rc(struct sroce_qp *qp, struct sk_buff *skb,
		    struct resp_reply *r)
{
	struct sroce_resp_state *rs = &qp->resp;
	const struct sroce_pkt *pkt = sroce_pkt_c(skb);
	s32 diff = sroce_psn_diff(pkt->psn, rs->epsn);
	enum resp_status st;

	if (unlikely(diff > 0)) {
		sroce_resp_count(qp, SROCE_RESP_OUT_OF_SEQ);
		/* packets were lost: ask for them once (class B) */
		if (rs->nak_pending) {
			sroce_resp_count(qp, SROCE_RESP_DROPPED);
			return;
		}
		rs->nak_pending = true;
		sroce_resp_count(qp, SROCE_RESP_SEQ_NAKS);
		resp_reply_ack(r, sroce_syn_nak(SROCE_NAK_PSN_SEQ_ERR),
			       rs->epsn, rs->msn);
		return;
	}
	if (unlikely(diff < 0)) {
		resp_duplicate(qp, skb, r);
		return;
	}
	rs->nak_pending = false;

	st = resp_rc_execute(qp, skb, r);
	switch (st) {
	case RESP_OK:
		rs->epsn = sroce_psn_next(pkt->psn);
		if (sroce_bth_ackreq(sroce_pkt_bth(skb)) ||
		    ++rs->unacked >= SROCE_RESP_ACK_EVERY) {
			rs->unacked = 0;
			resp_reply_ack(r, sroce_resp_syn_ack(), pkt->psn,
				       rs->msn);
		}
		break;
	case RESP_REPLIED:
		rs->unacked = 0;
		break;
	case RESP_RNR:
		rs->nak_pending = true;
		sroce_resp_count(qp, SROCE_RESP_RNR_NAKS);
		resp_reply_ack(r, sroce_syn_rnr(READ_ONCE(qp->attr.min_rnr_timer)),
			       pkt->psn, rs->msn);
		break;
	default:
		resp_rc_fatal(qp, st, pkt->psn, r);
		break;
	}
}

/* ---- UC: no ACKs; a lost or bad packet drops its whole message ---- */

static void resp_uc_abort(struct sroce_resp_state *rs)
{
	/* a partly filled receive WQE stays posted for the next message */
	rs->msg = SROCE_RESP_MSG_NONE;
	rs->have_wqe = false;
}

static bool resp_uc(struct sroce_qp *qp, struct sk_buff *skb)
{
	struct sroce_resp_state *rs = &qp->resp;
	const struct sroce_pkt *pkt = sroce_pkt_c(skb);
	enum resp_status st;

	if (pkt->psn != rs->epsn || rs->uc_drop) {
		resp_uc_abort(rs);
		rs->uc_drop = !(pkt->flags & SROCE_OPF_FIRST);
	}
	rs->epsn = sroce_psn_next(pkt->psn);
	if (rs->uc_drop)
		goto drop;
	if (!resp_op_seq_ok(rs, pkt->flags) ||
	    !resp_len_ok(pkt->flags, pkt->payload_len, sroce_qp_mtu(qp))) {
		st = RESP_ERR_INV_REQ;
	} else if (pkt->flags & SROCE_OPF_SEND) {
		st = resp_send(qp, skb);
	} else if (pkt->flags & SROCE_OPF_WRITE) {
		st = resp_write(qp, skb);
	} else {
		st = RESP_ERR_INV_REQ;
	}
	if (st == RESP_OK)
		return false;
	if (st == RESP_ERR_RQ)
		return true;
	if (st == RESP_ERR_PROT) {
		/* the consumer posted a buffer it may not write */
		resp_complete(qp, NULL, IB_WC_LOC_PROT_ERR, SROCE_WC_RECV, 0);
		return true;
	}
	resp_uc_abort(rs);
	rs->uc_drop = !(pkt->flags & SROCE_OPF_LAST);
drop:
	sroce_resp_count(qp, SROCE_RESP_DROPPED);
	return false;
}

/* ---- UD and GSI: one packet per message, the GRH goes first ---- */

static bool resp_ud(struct sroce_qp *qp, struct sk_buff *skb)
{
	struct sroce_resp_state *rs = &qp->resp;
	const struct sroce_pkt *pkt = sroce_pkt_c(skb);
	union rdma_network_hdr grh;
	enum resp_status st;
	int err;

	BUILD_BUG_ON(sizeof(grh) != SROCE_GRH_LEN);
	st = resp_get_wqe(qp);
	if (st == RESP_ERR_RQ)
		return true;
	if (st != RESP_OK ||
	    rs->wqe->length < SROCE_GRH_LEN ||
	    pkt->payload_len > rs->wqe->length - SROCE_GRH_LEN)
		goto drop;
	sroce_pkt_network_hdr(skb, &grh);
	err = sroce_sgl_write(qp->sdev, qp->ibqp.pd, rs->wqe->sge,
			      rs->wqe->num_sge, 0, &grh, sizeof(grh));
	if (!err && pkt->payload_len)
		err = sroce_sgl_write_skb(qp->sdev, qp->ibqp.pd, rs->wqe->sge,
					  rs->wqe->num_sge, SROCE_GRH_LEN, skb,
					  sroce_pkt_payload_offset(skb),
					  pkt->payload_len);
	if (err == -EAGAIN)
		goto drop;	/* ODP fault queued; UD may drop */
	if (err) {
		/* the consumer posted a buffer it may not write */
		resp_complete(qp, NULL, IB_WC_LOC_PROT_ERR, SROCE_WC_RECV, 0);
		return true;
	}
	resp_complete(qp, skb, IB_WC_SUCCESS, SROCE_WC_RECV,
		      SROCE_GRH_LEN + pkt->payload_len);
	return false;
drop:
	/* no receive posted or too small: UD drops silently (class D) */
	rs->have_wqe = false;
	sroce_resp_count(qp, SROCE_RESP_DROPPED);
	return false;
}

/* ---- a request packet, from rx.c ---- */

/*
 * The XRC SRQ an XRC target QP's request names, referenced, if it exists
 * and belongs to the QP's domain; any other is an invalid request (the
 * peer may write any number there).
 */
static struct sroce_srq *resp_xrc_srq(struct sroce_qp *qp,
				      struct sk_buff *skb, u32 *srqn)
{
	struct sroce_srq *srq;

	*srqn = sroce_xrceth_srqn(sroce_pkt_xrceth(skb));
	srq = sroce_srq_get(qp->sdev, *srqn);
	if (srq && srq->ibsrq.ext.xrc.xrcd != qp->xrcd) {
		sroce_srq_put(srq);
		srq = NULL;
	}
	return srq;
}

void sroce_resp_rcv(struct sroce_qp *qp, struct sk_buff *skb)
{
	struct sroce_resp_state *rs = &qp->resp;
	struct resp_reply reply = { .kind = REPLY_NONE };
	struct sroce_comp_notify owed = {};
	struct sroce_srq *xrc_srq = NULL;
	unsigned long flags;

	/* rx.c let only XRC requests (with an XRCETH) reach a target QP */
	if (sroce_qp_is_xrc_tgt(qp))
		xrc_srq = resp_xrc_srq(qp, skb, &reply.srqn);

	spin_lock_irqsave(&rs->lock, flags);
	rs->owed = &owed;
	rs->xrc_srq = xrc_srq;
	reply.gen = rs->gen;
	if (unlikely(rs->failed)) {
		sroce_resp_count(qp, SROCE_RESP_DROPPED);
	} else {
		switch (qp->ibqp.qp_type) {
		case IB_QPT_RC:
		case IB_QPT_XRC_TGT:
			resp_rc(qp, skb, &reply);
			break;
		case IB_QPT_UC:
			reply.fatal = resp_uc(qp, skb);
			break;
		default:
			reply.fatal = resp_ud(qp, skb);
			break;
		}
		if (reply.fatal)
			rs->failed = true;
	}
	rs->owed = NULL;
	rs->xrc_srq = NULL;
	spin_unlock_irqrestore(&rs->lock, flags);

	consume_skb(skb);
	/* a fatal NAK left to @tx_work errors the QP once it is sent */
	if (!sroce_resp_reply_send(qp, &reply) && reply.fatal)
		sroce_qp_error(qp);
	/* the SRQ limit event @owed may name is the packet's SRQ */
	sroce_comp_notify(qp, &owed);
	if (xrc_srq)
		sroce_srq_put(xrc_srq);
}

/* ---- lifecycle ---- */

int sroce_resp_init(struct sroce_qp *qp)
{
	struct sroce_resp_state *rs = &qp->resp;

	spin_lock_init(&rs->lock);
	spin_lock_init(&rs->tx_lock);
	INIT_LIST_HEAD(&rs->tx_queue);
	INIT_WORK(&rs->tx_work, sroce_resp_tx_work);
	atomic_set(&rs->res_busy, 0);
	rs->wqe = kzalloc(sizeof(*rs->wqe), GFP_KERNEL);
	return rs->wqe ? 0 : -ENOMEM;
}

static void resp_reset(struct sroce_resp_state *rs)
{
	/* what @tx_work still holds is the old connection's: dropped */
	WRITE_ONCE(rs->gen, rs->gen + 1);
	rs->epsn = 0;
	rs->msn = 0;
	rs->nak_pending = false;
	rs->failed = false;
	rs->uc_drop = false;
	rs->unacked = 0;
	rs->msg = SROCE_RESP_MSG_NONE;
	rs->have_wqe = false;
	rs->write_resid = 0;
	rs->res_head = 0;
	if (rs->res)
		memset(rs->res, 0, rs->num_res * sizeof(*rs->res));
}

int sroce_resp_modify(struct sroce_qp *qp, const struct ib_qp_attr *attr,
		      int mask)
{
	struct sroce_resp_state *rs = &qp->resp;
	struct sroce_resp_res *res = NULL, *old = NULL;
	unsigned int num_res = 0;
	unsigned long flags;

	if (mask & IB_QP_MAX_DEST_RD_ATOMIC) {
		num_res = attr->max_dest_rd_atomic;
		if (num_res) {
			res = kcalloc(num_res, sizeof(*res), GFP_KERNEL);
			if (!res)
				return -ENOMEM;
		}
	}

	spin_lock_irqsave(&rs->lock, flags);
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC) {
		old = rs->res;
		rs->res = res;
		rs->num_res = num_res;
		rs->res_head = 0;
	}
	if ((mask & IB_QP_STATE) && attr->qp_state == IB_QPS_RESET)
		resp_reset(rs);
	if (mask & IB_QP_RQ_PSN)
		rs->epsn = attr->rq_psn & SROCE_PSN_MASK;
	spin_unlock_irqrestore(&rs->lock, flags);

	kfree(old);
	return 0;
}

/*
 * After the QP entered RESET: @tx_work drops what it still holds (the
 * generation changed); wait for that, so that no reply of the old
 * connection leaves once the QP is connected again. Process context.
 */
void sroce_resp_reset_sync(struct sroce_qp *qp)
{
	flush_work(&qp->resp.tx_work);
}

void sroce_resp_cleanup(struct sroce_qp *qp)
{
	struct sroce_resp_state *rs = &qp->resp;
	struct resp_tx *tx, *next;

	/* @tx_work held a QP reference: it only has to return */
	cancel_work_sync(&rs->tx_work);
	list_for_each_entry_safe(tx, next, &rs->tx_queue, node)
		kfree(tx);
	INIT_LIST_HEAD(&rs->tx_queue);
	rs->tx_len = 0;
	kfree(rs->res);
	rs->res = NULL;
	rs->num_res = 0;
	kfree(rs->wqe);
	rs->wqe = NULL;
}
