// SPDX-License-Identifier: GPL-2.0
/*
 * Requester: kernel consumers' post_send, the fetch of send WQEs from the
 * SQ ring into validated shadows, and their segmentation into request
 * packets (IBTA 9.4, 9.7.4.1).
 *
 * One context at a time builds and sends a QP's packets (the RUNNING bit
 * of req.run_flags), whichever context asked: the doorbell or post_send
 * (process), the completer when an ACK opens the window (softirq) or a
 * timer. Packets are built under sq_lock in small batches and transmitted
 * after it is dropped, so the lock is never held across the IP stack and
 * packets of one QP leave in PSN order.
 */

#include <linux/bitops.h>
#include <linux/jiffies.h>
#include <linux/rcupdate.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/skbuff.h>
#include <linux/workqueue.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_verbs.h>

#include "sroce.h"
#include "qp.h"
#include "mr.h"
#include "ah.h"
#include "psn.h"
#include "wire.h"

/* An AckReq at least this often within long messages. */
#define SROCE_ACKREQ_INTERVAL	32
/* Packets built per hold of sq_lock. */
#define SROCE_REQ_BATCH		16
/*
 * RC payloads from this size on reference MR pages instead of copying.
 * Only RC: its WQE completes on the ACK, once the responder has every
 * packet, so a copy still held by a qdisc is a duplicate whose bytes no
 * one takes. UD and UC complete when the last packet is built, after which
 * the application may rewrite the buffer while the packet still waits to
 * leave: they copy.
 */
#define SROCE_ZCOPY_MIN		512
/* Request packets a QP may have in the IP stack and NIC queues. */
#define SROCE_TX_INFLIGHT_HIGH	64
#define SROCE_TX_INFLIGHT_LOW	16

/* req.run_flags */
enum {
	SROCE_REQ_RUNNING,
	SROCE_REQ_AGAIN,
};

/* sroce_tx_acct.flags */
enum {
	SROCE_TX_WAITING,	/* the requester stopped at the high mark */
};

#define SROCE_SEND_FLAGS \
	(IB_SEND_FENCE | IB_SEND_SIGNALED | IB_SEND_SOLICITED | IB_SEND_INLINE)

static bool sroce_qp_is_ud(const struct sroce_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI;
}

/* Largest UD payload: the netdev's MTU as an IB MTU. */
static u32 sroce_ud_mtu(const struct sroce_qp *qp)
{
	return ib_mtu_enum_to_int(iboe_get_mtu(READ_ONCE(qp->sdev->ndev->mtu)));
}

/* ---- post_send of kernel consumers ---- */

/* Work requests that run locally: no packet, no PSN. */
static bool sroce_opcode_local(u32 opcode)
{
	return opcode == IB_WR_REG_MR || opcode == IB_WR_LOCAL_INV ||
	       opcode == IB_WR_BIND_MW;
}

static int sroce_post_fill_inline(struct sroce_qp *qp,
				  const struct ib_send_wr *wr,
				  struct sroce_send_wqe *slot)
{
	u8 *dst = (u8 *)slot + SROCE_SEND_WQE_HDR_SIZE;
	u32 total = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		u32 len = wr->sg_list[i].length;

		if (len > qp->sq.max_inline - total)
			return -EINVAL;
		memcpy(dst + total, (void *)(uintptr_t)wr->sg_list[i].addr, len);
		total += len;
	}
	slot->inline_len = total;
	return 0;
}

/* The value of a kernel ATOMIC WRITE: exactly 8 bytes of kernel memory. */
static int sroce_post_fill_atomic_write(const struct ib_send_wr *wr,
					struct sroce_send_wqe *slot)
{
	u8 *dst = slot->wr.atomic_write.value;
	u32 total = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		u32 len = wr->sg_list[i].length;

		if (len > sizeof(slot->wr.atomic_write.value) - total)
			return -EINVAL;
		memcpy(dst + total, (void *)(uintptr_t)wr->sg_list[i].addr, len);
		total += len;
	}
	return total == sizeof(slot->wr.atomic_write.value) ? 0 : -EINVAL;
}

static int sroce_post_fill_wr(const struct ib_send_wr *wr,
			      struct sroce_send_wqe *slot)
{
	/* u32: ATOMIC_WRITE is not in 6.1's enum ib_wr_opcode */
	switch ((u32)wr->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		slot->wr.rdma.remote_addr = rdma_wr(wr)->remote_addr;
		slot->wr.rdma.rkey = rdma_wr(wr)->rkey;
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		slot->wr.atomic.remote_addr = atomic_wr(wr)->remote_addr;
		slot->wr.atomic.compare_add = atomic_wr(wr)->compare_add;
		slot->wr.atomic.swap = atomic_wr(wr)->swap;
		slot->wr.atomic.rkey = atomic_wr(wr)->rkey;
		break;
	case SROCE_WR_ATOMIC_WRITE:
		/* rdma_wr() names the target; the SGEs hold the 8 bytes */
		slot->wr.atomic_write.remote_addr = rdma_wr(wr)->remote_addr;
		slot->wr.atomic_write.rkey = rdma_wr(wr)->rkey;
		break;
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_SEND_WITH_INV:
	case IB_WR_LOCAL_INV:
		break;
	case IB_WR_REG_MR:
		/* the MR is found again by the key's index when it runs */
		if (reg_wr(wr)->key >> 8 != to_smr(reg_wr(wr)->mr)->key >> 8)
			return -EINVAL;
		if (!sroce_mr_fast_access_ok(reg_wr(wr)->access))
			return -EINVAL;
		slot->wr.bind_mw.rkey = reg_wr(wr)->key;
		slot->wr.bind_mw.access = reg_wr(wr)->access;
		break;
	default:
		return -EINVAL;
	}
	if (wr->opcode == IB_WR_SEND_WITH_INV ||
	    wr->opcode == IB_WR_LOCAL_INV)
		slot->ex.invalidate_rkey = wr->ex.invalidate_rkey;
	else
		slot->ex.imm_data = wr->ex.imm_data;
	return 0;
}

/* One kernel send WR into the ring (sq_post_lock held). */
static int sroce_post_one_send(struct sroce_qp *qp, const struct ib_send_wr *wr)
{
	struct sroce_sq *sq = &qp->sq;
	struct sroce_send_wqe *slot;
	struct sroce_sge *sge;
	int i, err;

	if (sq->kproducer - sroce_queue_load_consumer(&sq->queue) >=
	    sq->queue.num_entries)
		return -ENOMEM;
	if (!(wr->send_flags & IB_SEND_INLINE) && wr->num_sge > sq->max_sge)
		return -EINVAL;

	slot = sroce_queue_slot(&sq->queue, sq->kproducer);
	memset(slot, 0, SROCE_SEND_WQE_HDR_SIZE);
	slot->wr_id = wr->wr_id;
	slot->opcode = wr->opcode;
	slot->send_flags = wr->send_flags & SROCE_SEND_FLAGS;
	err = sroce_post_fill_wr(wr, slot);
	if (err)
		return err;
	if (sroce_qp_is_ud(qp)) {
		slot->wr.ud.ah_num = to_sah(ud_wr(wr)->ah)->ah_num;
		slot->wr.ud.remote_qpn = ud_wr(wr)->remote_qpn;
		slot->wr.ud.remote_qkey = ud_wr(wr)->remote_qkey;
	}

	if (sroce_opcode_local(wr->opcode)) {
		/* no data: whatever SGEs came along are ignored */
	} else if (wr->opcode == SROCE_WR_ATOMIC_WRITE) {
		err = sroce_post_fill_atomic_write(wr, slot);
		if (err)
			return err;
	} else if (wr->send_flags & IB_SEND_INLINE) {
		err = sroce_post_fill_inline(qp, wr, slot);
		if (err)
			return err;
	} else {
		slot->num_sge = wr->num_sge;
		sge = (struct sroce_sge *)((u8 *)slot + SROCE_SEND_WQE_HDR_SIZE);
		for (i = 0; i < wr->num_sge; i++) {
			sge[i].addr = wr->sg_list[i].addr;
			sge[i].length = wr->sg_list[i].length;
			sge[i].lkey = wr->sg_list[i].lkey;
		}
	}
	sq->kproducer++;
	return 0;
}

int sroce_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	enum ib_qp_state state;
	unsigned long flags;
	int err = 0;

	/* An XRC target QP has no send queue. */
	if (sroce_qp_is_xrc_tgt(qp)) {
		*bad_wr = wr;
		return -EINVAL;
	}
	/* A user QP's post_send without WRs is the provider's doorbell. */
	if (qp->is_user) {
		if (wr) {
			*bad_wr = wr;
			return -EINVAL;
		}
		sroce_net_count_sq(qp->sdev, 1, 0);
		sroce_req_run(qp);
		return 0;
	}

	state = sroce_qp_state(qp);
	if (state == IB_QPS_RESET || state == IB_QPS_INIT ||
	    state == IB_QPS_RTR) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&qp->sq_post_lock, flags);
	for (; wr; wr = wr->next) {
		err = sroce_post_one_send(qp, wr);
		if (err) {
			*bad_wr = wr;
			break;
		}
	}
	sroce_queue_publish_producer(&qp->sq.queue, qp->sq.kproducer);
	spin_unlock_irqrestore(&qp->sq_post_lock, flags);

	sroce_req_run(qp);
	return err;
}

/* ---- fetch: ring slot to validated shadow ---- */

static bool sroce_opcode_ok(const struct sroce_qp *qp, u32 opcode)
{
	switch (opcode) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
		return true;
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return !sroce_qp_is_ud(qp);
	case IB_WR_RDMA_READ:
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
	case IB_WR_SEND_WITH_INV:
		return sroce_qp_is_rc(qp);
	/* XRC has no opcodes for the placement extensions (wire.c) */
	case SROCE_WR_ATOMIC_WRITE:
		return qp->ibqp.qp_type == IB_QPT_RC;
	case SROCE_WR_FLUSH:
		/* kernel consumers have no WR that carries FLUSH's fields */
		return qp->ibqp.qp_type == IB_QPT_RC && qp->is_user;
	case IB_WR_LOCAL_INV:
		return !sroce_qp_is_ud(qp);
	case IB_WR_BIND_MW:
		/* kernel consumers have no memory windows */
		return qp->is_user && !sroce_qp_is_ud(qp);
	case IB_WR_REG_MR:
		/* the slot names a kernel MR: never from a user ring */
		return !qp->is_user && !sroce_qp_is_ud(qp);
	default:
		return false;
	}
}

/*
 * Requests answered by responses, which hold one of the responder's
 * resources (max_rd_atomic) until answered: READ, the atomics, and ATOMIC
 * WRITE and FLUSH (answered by a READ response without payload, A19).
 */
static bool sroce_opcode_rd_atomic(u32 opcode)
{
	return opcode == IB_WR_RDMA_READ ||
	       opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
	       opcode == IB_WR_ATOMIC_FETCH_AND_ADD ||
	       opcode == SROCE_WR_ATOMIC_WRITE || opcode == SROCE_WR_FLUSH;
}

/* ATOMIC WRITE and FLUSH: no SGEs; the fields are in the WQE itself. */
static enum ib_wc_status sroce_swqe_placement(struct sroce_swqe *wqe,
					      const struct sroce_send_wqe *hdr)
{
	if (wqe->opcode == SROCE_WR_ATOMIC_WRITE) {
		wqe->remote_addr = hdr->wr.atomic_write.remote_addr;
		wqe->rkey = hdr->wr.atomic_write.rkey;
		/* the bytes travel as they are: no byte order applies */
		memcpy(&wqe->swap, hdr->wr.atomic_write.value,
		       sizeof(wqe->swap));
		wqe->length = sizeof(wqe->swap);
		return IB_WC_SUCCESS;
	}
	if (hdr->wr.flush.length > U32_MAX)
		return IB_WC_LOC_LEN_ERR;
	if (!hdr->wr.flush.type ||
	    hdr->wr.flush.type & ~(SROCE_FLUSH_GLOBAL | SROCE_FLUSH_PERSISTENT) ||
	    hdr->wr.flush.level > SROCE_FLUSH_MR)
		return IB_WC_LOC_QP_OP_ERR;
	wqe->remote_addr = hdr->wr.flush.remote_addr;
	wqe->rkey = hdr->wr.flush.rkey;
	/* carried in the RETH's DMA length, not as payload */
	wqe->compare_add = hdr->wr.flush.length;
	wqe->access = hdr->wr.flush.type |
		      hdr->wr.flush.level << SROCE_FETH_SEL_SHIFT;
	wqe->length = 0;
	return IB_WC_SUCCESS;
}

/*
 * Every SGE must name a local MR of the QP's PD allowing this access.
 * Checked when the WQE starts, not when it is fetched: a REG_MR or
 * LOCAL_INV ahead of it in the same queue may make or kill its lkey, and
 * runs only when the requester reaches it (iSER posts a REG_MR and a SEND
 * of immediate data from that MR in one chain).
 */
static enum ib_wc_status sroce_swqe_check_sgl(struct sroce_qp *qp,
					      struct sroce_swqe *wqe)
{
	int access = wqe->flags & SROCE_SWQE_F_RD_ATOMIC ?
		     IB_ACCESS_LOCAL_WRITE : 0;
	struct sroce_sge *sgl = sroce_swqe_sgl(wqe);
	struct sroce_mr *mr;
	u32 i;

	for (i = 0; i < wqe->num_sge; i++) {
		if (!sgl[i].length)
			continue;
		mr = sroce_mr_get(qp->sdev, qp->ibqp.pd, sgl[i].lkey,
				  sgl[i].addr, sgl[i].length, access);
		if (!mr)
			return IB_WC_LOC_PROT_ERR;
		sroce_mr_put(mr);
	}
	return IB_WC_SUCCESS;
}

static enum ib_wc_status sroce_swqe_payload(struct sroce_qp *qp,
					    struct sroce_swqe *wqe,
					    const struct sroce_send_wqe *hdr,
					    const u8 *slot_data)
{
	s64 len;

	if (wqe->send_flags & IB_SEND_INLINE) {
		if (wqe->flags & SROCE_SWQE_F_RD_ATOMIC)
			return IB_WC_LOC_QP_OP_ERR;
		if (hdr->inline_len > qp->sq.max_inline)
			return IB_WC_LOC_LEN_ERR;
		memcpy(wqe->data, slot_data, hdr->inline_len);
		wqe->length = hdr->inline_len;
		wqe->flags |= SROCE_SWQE_F_INLINE;
		return IB_WC_SUCCESS;
	}
	if (hdr->num_sge > qp->sq.max_sge)
		return IB_WC_LOC_QP_OP_ERR;
	wqe->num_sge = hdr->num_sge;
	memcpy(wqe->data, slot_data, hdr->num_sge * sizeof(struct sroce_sge));
	len = sroce_sgl_length(sroce_swqe_sgl(wqe), wqe->num_sge);
	if (len < 0)
		return IB_WC_LOC_LEN_ERR;
	wqe->length = len;
	/* the lkeys are looked up when the WQE starts (sroce_req_one()) */
	return IB_WC_SUCCESS;
}

static enum ib_wc_status sroce_swqe_init(struct sroce_qp *qp,
					 struct sroce_swqe *wqe,
					 const struct sroce_send_wqe *hdr,
					 const u8 *slot_data)
{
	enum ib_wc_status status;

	if (!sroce_opcode_ok(qp, hdr->opcode))
		return IB_WC_LOC_QP_OP_ERR;
	wqe->opcode = hdr->opcode;
	if (sroce_opcode_rd_atomic(hdr->opcode))
		wqe->flags |= SROCE_SWQE_F_RD_ATOMIC;
	wqe->ex.imm_data = hdr->ex.imm_data;
	if (sroce_opcode_local(hdr->opcode)) {
		wqe->flags |= SROCE_SWQE_F_LOCAL;
		wqe->rkey = hdr->wr.bind_mw.rkey;
		wqe->access = hdr->wr.bind_mw.access;
		if (hdr->opcode == IB_WR_BIND_MW) {
			wqe->remote_addr = hdr->wr.bind_mw.addr;
			wqe->compare_add = hdr->wr.bind_mw.length;
			wqe->mw_rkey = hdr->wr.bind_mw.mw_rkey;
			wqe->mr_lkey = hdr->wr.bind_mw.mr_lkey;
		}
		return IB_WC_SUCCESS;
	}
	if (hdr->opcode == SROCE_WR_ATOMIC_WRITE || hdr->opcode == SROCE_WR_FLUSH)
		return sroce_swqe_placement(wqe, hdr);

	switch (hdr->opcode) {
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		wqe->remote_addr = hdr->wr.atomic.remote_addr;
		wqe->rkey = hdr->wr.atomic.rkey;
		wqe->compare_add = hdr->wr.atomic.compare_add;
		wqe->swap = hdr->wr.atomic.swap;
		break;
	default:
		wqe->remote_addr = hdr->wr.rdma.remote_addr;
		wqe->rkey = hdr->wr.rdma.rkey;
		break;
	}
	if (sroce_qp_is_ud(qp)) {
		wqe->ah_num = hdr->wr.ud.ah_num;
		wqe->remote_qpn = hdr->wr.ud.remote_qpn & SROCE_BTH_QPN_MASK;
		wqe->remote_qkey = hdr->wr.ud.remote_qkey;
	}
	/* any value: the target checks it against its own SRQs */
	if (qp->ibqp.qp_type == IB_QPT_XRC_INI)
		wqe->xrc_srqn = hdr->remote_srqn & SROCE_XRCETH_SRQN_MASK;

	status = sroce_swqe_payload(qp, wqe, hdr, slot_data);
	if (status != IB_WC_SUCCESS)
		return status;
	if ((wqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
	     wqe->opcode == IB_WR_ATOMIC_FETCH_AND_ADD) &&
	    wqe->length != sizeof(u64))
		return IB_WC_LOC_LEN_ERR;
	if (sroce_qp_is_ud(qp) && wqe->length > sroce_ud_mtu(qp))
		return IB_WC_LOC_LEN_ERR;
	return IB_WC_SUCCESS;
}

/*
 * Copy the slot once (user space may rewrite it at any time), then decode
 * and validate only the copy. A WQE that fails validation keeps its
 * status and completes with it when the requester reaches it.
 */
static void sroce_sq_fetch_one(struct sroce_qp *qp, u32 idx)
{
	const u8 *slot = sroce_queue_slot(&qp->sq.queue, idx);
	struct sroce_swqe *wqe = sroce_sq_shadow(qp, idx);
	struct sroce_send_wqe hdr;

	memcpy(&hdr, slot, sizeof(hdr));
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = hdr.wr_id;
	wqe->send_flags = hdr.send_flags & SROCE_SEND_FLAGS;
	wqe->state = SROCE_SWQE_QUEUED;
	wqe->status = sroce_swqe_init(qp, wqe, &hdr,
				      slot + SROCE_SEND_WQE_HDR_SIZE);
}

int sroce_sq_fetch(struct sroce_qp *qp)
{
	struct sroce_sq *sq = &qp->sq;
	u32 prod = sroce_queue_load_producer(&sq->queue);
	u32 ahead = prod - sq->tail;

	/*
	 * The kernel already took [tail, fetched): a producer more than a
	 * ring ahead of tail, or behind fetched, was not written by an honest
	 * provider, and the loop below would run up to 2^32 times with it.
	 */
	if (ahead > sq->queue.num_entries || ahead < sq->fetched - sq->tail)
		return -EIO;
	if (qp->is_user && sq->fetched != prod)
		sroce_net_count_sq(qp->sdev, 0, prod - sq->fetched);
	while (sq->fetched != prod) {
		sroce_sq_fetch_one(qp, sq->fetched);
		sq->fetched++;
	}
	return 0;
}

/* Only a user ring has a provider to tell; kernel posters always run us. */
void sroce_sq_set_draining(struct sroce_qp *qp, bool draining)
{
	if (!qp->is_user || qp->req.draining == draining)
		return;
	qp->req.draining = draining;
	sroce_queue_set_flags(&qp->sq.queue,
			      draining ? SROCE_RING_FLAG_SQ_DRAINING : 0);
}

/*
 * Every WQE taken is sent: from now on a post needs a doorbell. Is the
 * ring still where it was once the provider can see that? (sroce-abi.h)
 */
static bool sroce_sq_idle(struct sroce_qp *qp)
{
	if (!qp->is_user)
		return true;
	sroce_sq_set_draining(qp, false);
	smp_mb(); /* the flag is clear before producer is read again */
	return sroce_queue_load_producer(&qp->sq.queue) == qp->sq.fetched;
}

/* ---- packets ---- */

/* A packet's place in its message: the index of sroce_req_opcodes[][]. */
#define SROCE_PKT_FIRST	BIT(0)
#define SROCE_PKT_LAST	BIT(1)

/*
 * RC opcode of a request packet by the work request's opcode and the
 * packet's place (middle, first, last, only); READ and atomic requests
 * are single packets. Only the opcodes that send packets
 * (sroce_opcode_ok()) reach it: local WQEs never do.
 */
static const u8 sroce_req_opcodes[][4] = {
	[IB_WR_SEND] = {
		SROCE_OP_RC_SEND_MIDDLE, SROCE_OP_RC_SEND_FIRST,
		SROCE_OP_RC_SEND_LAST, SROCE_OP_RC_SEND_ONLY,
	},
	[IB_WR_SEND_WITH_IMM] = {
		SROCE_OP_RC_SEND_MIDDLE, SROCE_OP_RC_SEND_FIRST,
		SROCE_OP_RC_SEND_LAST_WITH_IMM, SROCE_OP_RC_SEND_ONLY_WITH_IMM,
	},
	[IB_WR_SEND_WITH_INV] = {
		SROCE_OP_RC_SEND_MIDDLE, SROCE_OP_RC_SEND_FIRST,
		SROCE_OP_RC_SEND_LAST_WITH_INV, SROCE_OP_RC_SEND_ONLY_WITH_INV,
	},
	[IB_WR_RDMA_WRITE] = {
		SROCE_OP_RC_RDMA_WRITE_MIDDLE, SROCE_OP_RC_RDMA_WRITE_FIRST,
		SROCE_OP_RC_RDMA_WRITE_LAST, SROCE_OP_RC_RDMA_WRITE_ONLY,
	},
	[IB_WR_RDMA_WRITE_WITH_IMM] = {
		SROCE_OP_RC_RDMA_WRITE_MIDDLE, SROCE_OP_RC_RDMA_WRITE_FIRST,
		SROCE_OP_RC_RDMA_WRITE_LAST_WITH_IMM,
		SROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMM,
	},
	[IB_WR_RDMA_READ] = { [0 ... 3] = SROCE_OP_RC_RDMA_READ_REQUEST },
	[IB_WR_ATOMIC_CMP_AND_SWP] = { [0 ... 3] = SROCE_OP_RC_COMPARE_SWAP },
	[IB_WR_ATOMIC_FETCH_AND_ADD] = { [0 ... 3] = SROCE_OP_RC_FETCH_ADD },
	[SROCE_WR_ATOMIC_WRITE] = { [0 ... 3] = SROCE_OP_RC_ATOMIC_WRITE },
	[SROCE_WR_FLUSH] = { [0 ... 3] = SROCE_OP_RC_FLUSH },
};

static u8 sroce_req_opcode(const struct sroce_swqe *wqe, bool first,
			   bool last)
{
	return sroce_req_opcodes[wqe->opcode][(first ? SROCE_PKT_FIRST : 0) |
					      (last ? SROCE_PKT_LAST : 0)];
}

/* Transport bits of the opcode for the QP type (RC opcodes are 0x00..). */
static u8 sroce_req_transport_opcode(const struct sroce_qp *qp, u8 rc_opcode)
{
	switch (qp->ibqp.qp_type) {
	case IB_QPT_UC:
		return rc_opcode | SROCE_OP_UC;
	case IB_QPT_XRC_INI:
		return rc_opcode | SROCE_OP_XRC;
	case IB_QPT_UD:
	case IB_QPT_GSI:
		return rc_opcode == SROCE_OP_RC_SEND_ONLY ?
		       SROCE_OP_UD_SEND_ONLY : SROCE_OP_UD_SEND_ONLY_WITH_IMM;
	default:
		return rc_opcode;
	}
}

/* Description of the packet being built. */
struct sroce_req_pkt {
	struct sroce_av *av;
	u8 opcode;
	bool ackreq;
	bool se;
	u32 psn;
	u32 offset;		/* of the payload in the message */
	u32 payload;
};

/*
 * Payload from the WQE's SGEs: by page reference when worthwhile. Each
 * lkey is looked up once for both the skb's size and its filling.
 */
static int sroce_req_fill_sgl(struct sroce_qp *qp, struct sroce_swqe *wqe,
			      struct sroce_req_pkt *p, struct sk_buff **skbp,
			      unsigned int hdr_len)
{
	struct sroce_sgl_mrs mrs;
	bool zcopy;
	int err;

	err = sroce_sgl_hold(&mrs, qp->sdev, qp->ibqp.pd, sroce_swqe_sgl(wqe),
			     wqe->num_sge, p->offset, p->payload);
	if (err)
		return err;
	zcopy = p->payload >= SROCE_ZCOPY_MIN && sroce_qp_is_rc(qp) &&
		sroce_net_zcopy(qp->sdev) &&
		sroce_sgl_frags(&mrs) < MAX_SKB_FRAGS;
	*skbp = sroce_net_alloc_skb(qp->sdev, p->av, hdr_len,
				    zcopy ? 0 : p->payload, GFP_ATOMIC);
	err = *skbp ? sroce_sgl_append_skb(&mrs, *skbp, zcopy) : -ENOMEM;
	sroce_sgl_release(&mrs);
	if (err) {
		kfree_skb(*skbp);
		*skbp = NULL;
	}
	return err;
}

static int sroce_req_alloc(struct sroce_qp *qp, struct sroce_swqe *wqe,
			   struct sroce_req_pkt *p, struct sk_buff **skbp)
{
	unsigned int hdr_len = sroce_opinfo(p->opcode)->hdr_len;

	if (p->opcode == SROCE_OP_RC_ATOMIC_WRITE) {
		*skbp = sroce_net_alloc_skb(qp->sdev, p->av, hdr_len,
					    sizeof(wqe->swap), GFP_ATOMIC);
		if (!*skbp)
			return -ENOMEM;
		memcpy(sroce_net_put_data(*skbp, sizeof(wqe->swap)), &wqe->swap,
		       sizeof(wqe->swap));
		return 0;
	}
	if (!(sroce_op_flags(p->opcode) & SROCE_OPF_PAYLOAD) ||
	    !(wqe->flags & SROCE_SWQE_F_INLINE))
		return sroce_req_fill_sgl(qp, wqe, p, skbp, hdr_len);

	*skbp = sroce_net_alloc_skb(qp->sdev, p->av, hdr_len, p->payload,
				    GFP_ATOMIC);
	if (!*skbp)
		return -ENOMEM;
	memcpy(sroce_net_put_data(*skbp, p->payload), wqe->data + p->offset,
	       p->payload);
	return 0;
}

static void sroce_req_headers(struct sroce_qp *qp, struct sroce_swqe *wqe,
			      const struct sroce_req_pkt *p, struct sk_buff *skb)
{
	const struct sroce_opcode_info *info = sroce_opinfo(p->opcode);
	struct sroce_bth *bth = (struct sroce_bth *)skb->data;
	void *h = skb->data;
	u32 dest_qpn = sroce_qp_is_ud(qp) ? wqe->remote_qpn :
					    READ_ONCE(qp->attr.dest_qpn);

	sroce_bth_init(bth, p->opcode, p->se, sroce_pad_len(p->payload),
		       SROCE_DEFAULT_PKEY, dest_qpn, p->ackreq, p->psn);

	if (info->flags & SROCE_OPF_XRCETH)
		sroce_xrceth_set(h + info->offset[SROCE_EXT_XRCETH],
				 wqe->xrc_srqn);
	if (info->flags & SROCE_OPF_RETH) {
		u32 len = wqe->opcode == IB_WR_RDMA_READ ?
			  wqe->length - p->offset : wqe->length;

		if (wqe->opcode == SROCE_WR_FLUSH)
			len = wqe->compare_add;

		sroce_reth_set(h + info->offset[SROCE_EXT_RETH],
			       wqe->remote_addr + p->offset, wqe->rkey, len);
	}
	if (info->flags & SROCE_OPF_ATMETH) {
		bool cas = wqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP;

		sroce_atmeth_set(h + info->offset[SROCE_EXT_ATMETH],
				 wqe->remote_addr, wqe->rkey,
				 cas ? wqe->swap : wqe->compare_add,
				 cas ? wqe->compare_add : 0);
	}
	if (info->flags & SROCE_OPF_FETH)
		sroce_feth_set(h + info->offset[SROCE_EXT_FETH],
			       wqe->access >> SROCE_FETH_SEL_SHIFT,
			       wqe->access & SROCE_FETH_PLT_MASK);
	if (info->flags & SROCE_OPF_IMMDT) {
		struct sroce_immdt *imm = h + info->offset[SROCE_EXT_IMMDT];

		imm->imm = wqe->ex.imm_data;
	}
	if (info->flags & SROCE_OPF_IETH)
		sroce_ieth_set(h + info->offset[SROCE_EXT_IETH],
			       wqe->ex.invalidate_rkey);
	if (info->flags & SROCE_OPF_DETH) {
		/* A Q_Key with the high bit set means the QP's own. */
		u32 qkey = (wqe->remote_qkey & BIT(31)) ?
			   READ_ONCE(qp->attr.qkey) : wqe->remote_qkey;

		sroce_deth_set(h + info->offset[SROCE_EXT_DETH], qkey,
			       qp->ibqp.qp_num);
	}
}

/*
 * PSNs of a WQE: one per packet; a READ takes one per response packet;
 * atomics, ATOMIC WRITE and FLUSH one.
 */
static u32 sroce_wqe_npkts(const struct sroce_swqe *wqe, u32 mtu)
{
	if (wqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
	    wqe->opcode == IB_WR_ATOMIC_FETCH_AND_ADD ||
	    wqe->opcode == SROCE_WR_ATOMIC_WRITE ||
	    wqe->opcode == SROCE_WR_FLUSH || !wqe->length)
		return 1;
	return DIV_ROUND_UP(wqe->length, mtu);
}

enum sroce_req_verdict {
	SROCE_REQ_STOP,		/* nothing (more) to send now */
	SROCE_REQ_PACKET,	/* *skbp is a packet to send */
	SROCE_REQ_LOCAL,	/* a local WQE ran: go on, no packet */
	SROCE_REQ_NOMEM,	/* no memory for the next packet: retry soon */
	SROCE_REQ_FAULT,	/* ODP pages being faulted in: retry soon */
};

/* May the WQE at req.cur start now? (RC ordering rules) */
static bool sroce_req_may_start(struct sroce_qp *qp, struct sroce_swqe *wqe)
{
	u8 max_rd = max_t(u8, READ_ONCE(qp->attr.max_rd_atomic), 1);

	if (sroce_qp_state(qp) != IB_QPS_RTS)
		return false;
	if (!sroce_qp_is_rc(qp))
		return true;
	if ((wqe->send_flags & IB_SEND_FENCE) && qp->req.rd_atomic)
		return false;
	if ((wqe->flags & SROCE_SWQE_F_RD_ATOMIC) &&
	    qp->req.rd_atomic >= max_rd)
		return false;
	return true;
}

/*
 * Is there room in the PSN window (SROCE_PSN_OUTSTANDING_MAX) for the RC
 * WQE at req.cur to start? A READ or atomic takes all its PSNs with its
 * request; a WRITE or SEND one per packet sent, and the congestion window
 * (far smaller) bounds those. -EAGAIN: not yet, what is outstanding must
 * be acknowledged first (progress runs the requester again); -EMSGSIZE:
 * never, a READ whose responses alone overflow the window (one of more
 * than 2^31 - 256 bytes at path MTU 256).
 */
static int sroce_req_psn_room(const struct sroce_qp *qp,
			      const struct sroce_swqe *wqe, u32 mtu)
{
	u32 npkts = sroce_wqe_npkts(wqe, mtu);

	if (!(wqe->flags & SROCE_SWQE_F_RD_ATOMIC) ||
	    sroce_psn_room(qp->comp.psn, qp->req.psn, npkts))
		return 0;
	return qp->comp.psn == qp->req.psn ? -EMSGSIZE : -EAGAIN;
}

static void sroce_req_start(struct sroce_qp *qp, struct sroce_swqe *wqe,
			    u32 mtu)
{
	struct sroce_req *req = &qp->req;

	wqe->first_psn = req->psn;
	wqe->last_psn = sroce_psn_add(req->psn, sroce_wqe_npkts(wqe, mtu) - 1);
	wqe->state = SROCE_SWQE_STARTED;
	req->offset = 0;
	if (wqe->flags & SROCE_SWQE_F_RD_ATOMIC) {
		req->rd_atomic++;
		/* its responses may come once the request is out */
		req->psn_max = sroce_psn_next(wqe->last_psn);
	}
}

/*
 * Are the ODP pages a READ or atomic will place its response in mapped?
 * Checked before it starts, so that the response rarely finds them
 * missing (the completer then drops it and the READ is sent again).
 */
static int sroce_req_ready(struct sroce_qp *qp, struct sroce_swqe *wqe)
{
	u32 len;

	if (wqe->opcode == IB_WR_RDMA_READ)
		len = wqe->length;
	else if (wqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
		 wqe->opcode == IB_WR_ATOMIC_FETCH_AND_ADD)
		len = sizeof(u64);
	else
		return 0;
	return sroce_sgl_ready(qp->sdev, qp->ibqp.pd, sroce_swqe_sgl(wqe),
			       wqe->num_sge, len, IB_ACCESS_LOCAL_WRITE);
}

/* A WQE failed while being sent: it completes with @status in order. */
static void sroce_req_fail(struct sroce_qp *qp, struct sroce_swqe *wqe,
			   enum ib_wc_status status,
			   struct sroce_comp_notify *n)
{
	wqe->status = status;
	if (wqe->flags & SROCE_SWQE_F_RD_ATOMIC &&
	    wqe->state != SROCE_SWQE_QUEUED)
		qp->req.rd_atomic--;
	wqe->state = SROCE_SWQE_DONE;
	sroce_comp_retire(qp, n);
}

/*
 * ODP pages the WQE needs are missing and a fault is queued: retry soon
 * (comp.c's allocation retry timer, a few ms), up to
 * SROCE_REQ_FAULT_RETRIES times in a row (seconds).
 * Memory that the application keeps unmapping faster than the faults map
 * it would have the WQE retried forever: it then completes with a local
 * protection error, like memory that cannot be faulted in.
 */
#define SROCE_REQ_FAULT_RETRIES	1000

static enum sroce_req_verdict sroce_req_fault(struct sroce_qp *qp,
					      struct sroce_swqe *wqe,
					      struct sroce_comp_notify *n)
{
	if (++wqe->fault_retries < SROCE_REQ_FAULT_RETRIES)
		return SROCE_REQ_FAULT;
	sroce_req_fail(qp, wqe, IB_WC_LOC_PROT_ERR, n);
	return SROCE_REQ_STOP;
}

/* Advance past the packet just built. */
static void sroce_req_advance(struct sroce_qp *qp, struct sroce_swqe *wqe,
			      const struct sroce_req_pkt *p, u32 mtu,
			      struct sroce_comp_notify *n)
{
	struct sroce_req *req = &qp->req;
	bool responses = wqe->flags & SROCE_SWQE_F_RD_ATOMIC;
	u32 npkts = responses ? sroce_wqe_npkts(wqe, mtu) -
				(p->offset / mtu) : 1;

	wqe->fault_retries = 0;
	req->psn = sroce_psn_add(req->psn, npkts);
	if (sroce_qp_is_rc(qp) && sroce_psn_after(req->psn, req->psn_max))
		req->psn_max = req->psn;
	if (sroce_qp_is_rc(qp) && sroce_psn_after(req->psn, req->psn_sent)) {
		/* a first transmission: may time the round trip */
		req->psn_sent = req->psn;
		if (!qp->comp.rtt_probe && (p->ackreq || responses)) {
			qp->comp.rtt_probe = true;
			qp->comp.rtt_psn = sroce_psn_add(req->psn, SROCE_PSN_MASK);
			qp->comp.rtt_start = jiffies;
		}
	} else if (sroce_qp_is_rc(qp)) {
		sroce_req_count(qp, SROCE_REQ_RETRANSMITS);
	}
	req->offset = responses ? wqe->length : p->offset + p->payload;
	if (p->ackreq)
		req->noack = 0;
	else
		req->noack++;
	if (req->offset < wqe->length)
		return;

	req->cur++;
	req->offset = 0;
	if (wqe->state != SROCE_SWQE_DONE)
		wqe->state = SROCE_SWQE_SENT;
	if (!sroce_qp_is_rc(qp)) {
		/* Unreliable: complete once the last packet is built. */
		wqe->state = SROCE_SWQE_DONE;
		sroce_comp_retire(qp, n);
	}
}

/*
 * A local WQE at req.cur (REG_MR, BIND_MW, LOCAL_INV) runs when the WQEs before it
 * have been sent, so a later SEND advertising the key leaves after it took
 * effect; it completes in order behind them. Going back for a resend
 * passes over it without running it again.
 */
static enum sroce_req_verdict sroce_req_local(struct sroce_qp *qp,
					      struct sroce_swqe *wqe,
					      struct sroce_comp_notify *n)
{
	struct ib_pd *pd = qp->ibqp.pd;

	if (wqe->state == SROCE_SWQE_QUEUED) {
		if (!sroce_req_may_start(qp, wqe))
			return SROCE_REQ_STOP;
		if (wqe->opcode == IB_WR_REG_MR)
			wqe->status = sroce_mr_fast_reg(qp->sdev, pd, wqe->rkey,
							wqe->access);
		else if (wqe->opcode == IB_WR_BIND_MW)
			wqe->status = sroce_mw_bind(qp->sdev, &qp->ibqp,
						    wqe->mw_rkey, wqe->rkey,
						    wqe->mr_lkey,
						    wqe->remote_addr,
						    wqe->compare_add,
						    wqe->access);
		else
			wqe->status = sroce_key_local_inv(qp->sdev, &qp->ibqp,
							  wqe->ex.invalidate_rkey);
		wqe->state = SROCE_SWQE_DONE;
	}
	qp->req.cur++;
	qp->req.offset = 0;
	sroce_comp_retire(qp, n);
	return wqe->status == IB_WC_SUCCESS ? SROCE_REQ_LOCAL : SROCE_REQ_STOP;
}

static enum sroce_req_verdict sroce_req_one(struct sroce_qp *qp,
					    struct sroce_av *ud_av,
					    struct sk_buff **skbp,
					    struct sroce_comp_notify *n)
{
	struct sroce_req *req = &qp->req;
	struct sroce_swqe *wqe = sroce_sq_shadow(qp, req->cur);
	u32 mtu = sroce_qp_is_ud(qp) ? sroce_ud_mtu(qp) : sroce_qp_mtu(qp);
	struct sroce_req_pkt p = { .av = sroce_qp_av(qp) };
	enum ib_wc_status status;
	bool first, last;
	int err;

	if (wqe->status != IB_WC_SUCCESS) {
		if (wqe->state != SROCE_SWQE_DONE)
			sroce_req_fail(qp, wqe, wqe->status, n);
		return SROCE_REQ_STOP;
	}
	if (wqe->flags & SROCE_SWQE_F_LOCAL)
		return sroce_req_local(qp, wqe, n);
	/* the congestion window (struct sroce_comp.cwnd) */
	if (sroce_qp_is_rc(qp) &&
	    sroce_psn_diff(req->psn, qp->comp.psn) >= (s32)qp->comp.cwnd)
		return SROCE_REQ_STOP;
	if (wqe->state == SROCE_SWQE_QUEUED) {
		if (!sroce_req_may_start(qp, wqe))
			return SROCE_REQ_STOP;
		status = sroce_swqe_check_sgl(qp, wqe);
		if (status != IB_WC_SUCCESS) {
			sroce_req_fail(qp, wqe, status, n);
			return SROCE_REQ_STOP;
		}
		err = sroce_qp_is_rc(qp) ? sroce_req_psn_room(qp, wqe, mtu) : 0;
		if (err == -EAGAIN)
			return SROCE_REQ_STOP;
		if (!err)
			err = sroce_req_ready(qp, wqe);
		if (err == -EAGAIN)
			return sroce_req_fault(qp, wqe, n);
		if (err) {
			sroce_req_fail(qp, wqe, err == -EMSGSIZE ?
				       IB_WC_LOC_LEN_ERR : IB_WC_LOC_PROT_ERR, n);
			return SROCE_REQ_STOP;
		}
		sroce_req_start(qp, wqe, mtu);
	}
	if (sroce_qp_is_ud(qp)) {
		memset(ud_av, 0, sizeof(*ud_av));
		if (sroce_ah_path(qp->sdev, qp->ibqp.pd, wqe->ah_num, ud_av)) {
			sroce_req_fail(qp, wqe, IB_WC_LOC_QP_OP_ERR, n);
			return SROCE_REQ_STOP;
		}
		p.av = ud_av;
	}

	p.psn = req->psn;
	p.offset = req->offset;
	if (wqe->flags & SROCE_SWQE_F_RD_ATOMIC) {
		p.payload = wqe->opcode == SROCE_WR_ATOMIC_WRITE ?
			    sizeof(wqe->swap) : 0;
		first = true;
		last = true;
	} else {
		p.payload = min(mtu, wqe->length - p.offset);
		first = !p.offset;
		last = p.offset + p.payload == wqe->length;
	}
	p.opcode = sroce_req_transport_opcode(qp,
					      sroce_req_opcode(wqe, first, last));
	/* ask for an ACK at the end of a message or of the window */
	p.ackreq = sroce_qp_is_rc(qp) && !(wqe->flags & SROCE_SWQE_F_RD_ATOMIC) &&
		   (last || req->noack + 1 >= SROCE_ACKREQ_INTERVAL ||
		    sroce_psn_diff(req->psn, qp->comp.psn) + 1 >=
		    (s32)qp->comp.cwnd);
	p.se = last && (wqe->send_flags & IB_SEND_SOLICITED) &&
	       (wqe->opcode == IB_WR_SEND || wqe->opcode == IB_WR_SEND_WITH_IMM ||
		wqe->opcode == IB_WR_SEND_WITH_INV ||
		wqe->opcode == IB_WR_RDMA_WRITE_WITH_IMM);

	err = sroce_req_alloc(qp, wqe, &p, skbp);
	if (err == -ENOMEM)
		return SROCE_REQ_NOMEM;
	if (err == -EAGAIN)
		return sroce_req_fault(qp, wqe, n);
	if (err) {
		sroce_req_fail(qp, wqe, err == -EMSGSIZE ? IB_WC_LOC_LEN_ERR :
			       IB_WC_LOC_PROT_ERR, n);
		return SROCE_REQ_STOP;
	}
	sroce_req_headers(qp, wqe, &p, *skbp);
	sroce_req_advance(qp, wqe, &p, mtu, n);
	return SROCE_REQ_PACKET;
}

/* ---- transmit credits (struct sroce_tx_acct) ---- */

static void sroce_tx_acct_put(struct sroce_tx_acct *acct)
{
	if (refcount_dec_and_test(&acct->ref))
		kfree(acct);
}

/*
 * Runs wherever the stack frees the packet, possibly under a transmit
 * queue's lock: never transmit from here, let req.work do it.
 *
 * A qdisc or a slow NIC may hold the packet after its QP, its device and
 * every verbs user are gone, so each charged packet holds a reference on
 * this module (sroce_req_charge()): rmmod is refused while one is held,
 * and this code stays mapped until the last of them returns here.
 */
static void sroce_req_skb_destructor(struct sk_buff *skb)
{
	struct sroce_tx_acct *acct = skb_shinfo(skb)->destructor_arg;
	struct sroce_qp *qp;

	if (atomic_dec_return(&acct->inflight) <= SROCE_TX_INFLIGHT_LOW &&
	    test_and_clear_bit(SROCE_TX_WAITING, &acct->flags)) {
		rcu_read_lock();
		qp = rcu_dereference(acct->qp);
		if (qp)
			queue_work(system_highpri_wq, &qp->req.work);
		rcu_read_unlock();
	}
	sroce_tx_acct_put(acct);
	module_put(THIS_MODULE);
}

/*
 * destructor_arg is free: only zero-copy skbs from sockets
 * (SKBFL_ZEROCOPY_ENABLE) use it, and clones, which share it, do not
 * inherit the destructor. Called from a verb or a QP's work, which the
 * device (and so the module) outlives: __module_get() cannot fail here.
 */
static void sroce_req_charge(struct sroce_qp *qp, struct sk_buff *skb)
{
	struct sroce_tx_acct *acct = qp->req.tx;

	__module_get(THIS_MODULE);
	refcount_inc(&acct->ref);
	atomic_inc(&acct->inflight);
	skb_shinfo(skb)->destructor_arg = acct;
	skb->destructor = sroce_req_skb_destructor;
}

static bool sroce_req_tx_full(struct sroce_qp *qp)
{
	struct sroce_tx_acct *acct = qp->req.tx;

	if (atomic_read(&acct->inflight) < SROCE_TX_INFLIGHT_HIGH)
		return false;
	set_bit(SROCE_TX_WAITING, &acct->flags);
	/* WAITING is visible before the count is read again: no lost wake */
	smp_mb__after_atomic();
	return atomic_read(&acct->inflight) > SROCE_TX_INFLIGHT_LOW;
}

/* Build up to @budget packets into @q (sq_lock held); how many. */
static int sroce_req_build(struct sroce_qp *qp, struct sk_buff_head *q,
			   int budget, struct sroce_av *ud_av,
			   struct sroce_comp_notify *n)
{
	enum ib_qp_state state = sroce_qp_state(qp);
	enum sroce_req_verdict v;
	struct sk_buff *skb;
	int built = 0;

	if (state == IB_QPS_ERR) {
		sroce_qp_error_locked(qp, n);
		return 0;
	}
	/* RNR wait: the RNR timer runs the requester again, which fetches */
	if ((state != IB_QPS_RTS && state != IB_QPS_SQD) || qp->comp.rnr_wait)
		return 0;
	sroce_sq_set_draining(qp, true);
	if (sroce_sq_fetch(qp)) {
		n->qp_fatal = true;
		sroce_qp_error_locked(qp, n);
		return 0;
	}
	while (built < budget && qp->req.cur != qp->sq.fetched &&
	       !sroce_req_tx_full(qp)) {
		v = sroce_req_one(qp, ud_av, &skb, n);
		if (v == SROCE_REQ_LOCAL)
			continue;
		if (v == SROCE_REQ_NOMEM)
			sroce_req_count(qp, SROCE_REQ_ALLOC_FAILURES);
		if (v == SROCE_REQ_NOMEM || v == SROCE_REQ_FAULT)
			sroce_comp_arm_alloc_retry(qp);
		if (v != SROCE_REQ_PACKET)
			break;
		sroce_req_charge(qp, skb);
		__skb_queue_tail(q, skb);
		built++;
	}
	if (built && sroce_qp_is_rc(qp))
		sroce_comp_arm_retrans(qp);
	/*
	 * Stopped with WQEs taken but not sent, the requester runs again on
	 * what stopped it (an ACK, a freed packet, a timer) and fetches then:
	 * posts need no doorbell till then. Caught up, it looks once more.
	 */
	if (built < budget && qp->req.cur == qp->sq.fetched &&
	    !sroce_sq_idle(qp))
		set_bit(SROCE_REQ_AGAIN, &qp->req.run_flags);
	return built;
}

/*
 * Packets one call of sroce_req_run() builds (a pass that builds none
 * counts as one) before it hands the rest to req.work. A poster's
 * doorbell system call holds ib_uverbs' SRCU read side, which device
 * removal waits for, and a completer may be in softirq; yet while the
 * queue has work, each batch can bring the wake-up for another (ACKs,
 * NAKs that rewind, freed packets, answered faults; on the loopback path
 * during the batch's own transmit). Unbounded, the caller that came first
 * ran the QP for as long as its peer answered: under ODP churn (odp.sh)
 * `rdma link delete` waited over 180 s for a doorbell to return.
 */
#define SROCE_REQ_RUN_QUOTA	1024

/*
 * Send what the queue, window and state allow now, up to about @quota
 * packets: how many were built. Stopped by @quota, it leaves AGAIN set.
 */
static int sroce_req_pass(struct sroce_qp *qp, int quota)
{
	/* UD packets each carry their own path: one per batch. */
	int budget = sroce_qp_is_ud(qp) ? 1 : SROCE_REQ_BATCH;
	struct sroce_comp_notify n;
	struct sk_buff_head q;
	struct sroce_av ud_av;
	struct sk_buff *skb;
	unsigned long flags;
	int built, sent = 0;

	__skb_queue_head_init(&q);
	for (;;) {
		memset(&n, 0, sizeof(n));
		/* the QP's path (sroce_qp_av()) for building and sending */
		rcu_read_lock();
		spin_lock_irqsave(&qp->sq_lock, flags);
		built = sroce_req_build(qp, &q, budget, &ud_av, &n);
		spin_unlock_irqrestore(&qp->sq_lock, flags);

		while ((skb = __skb_dequeue(&q)))
			sroce_net_xmit(qp->sdev, sroce_qp_is_ud(qp) ?
				       &ud_av : sroce_qp_av(qp), skb);
		rcu_read_unlock();
		sroce_comp_notify(qp, &n);
		sent += built;
		if (built < budget)
			return sent;
		if (sent >= quota) {
			/* more may be ready */
			set_bit(SROCE_REQ_AGAIN, &qp->req.run_flags);
			return sent;
		}
	}
}

void sroce_req_run(struct sroce_qp *qp)
{
	struct sroce_req *req = &qp->req;
	int quota = SROCE_REQ_RUN_QUOTA;

	/* Transmit needs interrupts on; kernel consumers may post without. */
	if (unlikely(irqs_disabled() || in_hardirq())) {
		queue_work(system_highpri_wq, &req->work);
		return;
	}

	set_bit(SROCE_REQ_AGAIN, &req->run_flags);
	/* AGAIN is visible before RUNNING is tested; see below */
	smp_mb__after_atomic();
	if (test_and_set_bit_lock(SROCE_REQ_RUNNING, &req->run_flags))
		return;	/* the running pass sees AGAIN */
	do {
		while (test_and_clear_bit(SROCE_REQ_AGAIN, &req->run_flags)) {
			if (quota <= 0) {
				/* RUNNING is clear before the work can test it */
				set_bit(SROCE_REQ_AGAIN, &req->run_flags);
				clear_bit_unlock(SROCE_REQ_RUNNING,
						 &req->run_flags);
				queue_work(system_highpri_wq, &req->work);
				return;
			}
			quota -= max(sroce_req_pass(qp, quota), 1);
		}
		clear_bit_unlock(SROCE_REQ_RUNNING, &req->run_flags);
		/* RUNNING is clear before AGAIN is tested: no request is lost */
		smp_mb__after_atomic();
	} while (test_bit(SROCE_REQ_AGAIN, &req->run_flags) &&
		 !test_and_set_bit_lock(SROCE_REQ_RUNNING, &req->run_flags));
}

static void sroce_req_work(struct work_struct *work)
{
	sroce_req_run(container_of(work, struct sroce_qp, req.work));
}

int sroce_req_init(struct sroce_qp *qp)
{
	struct sroce_tx_acct *acct = kzalloc(sizeof(*acct), GFP_KERNEL);

	if (!acct)
		return -ENOMEM;
	refcount_set(&acct->ref, 1);
	RCU_INIT_POINTER(acct->qp, qp);
	qp->req.tx = acct;
	INIT_WORK(&qp->req.work, sroce_req_work);
	return 0;
}

/* Packets freed from now on no longer wake the QP (RCU grace to follow). */
void sroce_req_detach(struct sroce_qp *qp)
{
	RCU_INIT_POINTER(qp->req.tx->qp, NULL);
}

/* After sroce_req_detach(), a grace period and the last run of req.work. */
void sroce_req_cleanup(struct sroce_qp *qp)
{
	sroce_tx_acct_put(qp->req.tx);
}
