// SPDX-License-Identifier: GPL-2.0
/*
 * The responder's reply queue: transmit of the replies resp.c describes
 * under the responder lock (struct resp_reply, resp_tx.h), once that lock
 * is dropped, so no lock is held across the IP stack. ACKs, NAKs, atomic
 * ACKs and a burst of READ responses go out from softirq at once; the
 * rest of a long READ, and every reply behind it, waits in resp.tx_queue
 * for resp.tx_work, which sends them in order from process context at the
 * pace the transmit queue takes them, waiting while it is full or while an
 * ODP page a READ response needs is faulted in. The queue's fields and
 * their locking rules are in struct sroce_resp_state (resp.h).
 */
#include <linux/delay.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/minmax.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

#include "mr.h"
#include "net.h"
#include "psn.h"
#include "qp.h"
#include "resp.h"
#include "resp_tx.h"
#include "sroce.h"
#include "srq.h"
#include "wire.h"

/* READ response payloads from this size on reference user pages. */
#define SROCE_RESP_ZCOPY_MIN	512
/* READ response packets sent from softirq before the rest is deferred. */
#define SROCE_RESP_TX_BURST	64
/* Packets @tx_work sends before it lets others run. */
#define SROCE_RESP_TX_BATCH	64
/* How long @tx_work waits for a full transmit queue, in 100 us steps. */
#define SROCE_RESP_TX_RETRIES	200
/*
 * Faults @tx_work waits for at one READ response packet before it leaves
 * the READ to the requester's timer: memory the application keeps
 * unmapping as fast as it is faulted in must not hold the QP forever.
 */
#define SROCE_RESP_TX_FAULTS	16
/* Replies a QP queues for @tx_work: every responder resource, and room. */
#define SROCE_RESP_TX_QUEUE_MAX	(SROCE_MAX_RD_ATOMIC + 64)

enum resp_tx_status {
	RESP_TX_DONE,		/* everything sent */
	RESP_TX_MORE,		/* budget used up */
	RESP_TX_FULL,		/* the transmit queue is full: try again */
	RESP_TX_FAULT,		/* an ODP page is faulted in: wait, try again */
	RESP_TX_ABANDON,	/* cannot be sent: the requester will retry */
};

/* @r's last packet is about to leave, or @r is dropped. */
static void resp_reply_retire(struct sroce_qp *qp, struct resp_reply *r)
{
	if (r->holds_res) {
		r->holds_res = false;
		atomic_dec(&qp->resp.res_busy);
	}
}

static struct sk_buff *resp_alloc_skb(struct sroce_qp *qp, u8 opcode,
				      u32 linear, u32 payload, u32 psn)
{
	const struct sroce_opcode_info *oi = sroce_opinfo(opcode);
	struct sk_buff *skb;

	rcu_read_lock();
	skb = sroce_net_alloc_skb(qp->sdev, sroce_qp_av(qp), oi->hdr_len,
				  linear, GFP_ATOMIC);
	rcu_read_unlock();
	if (!skb)
		return NULL;
	sroce_bth_init((struct sroce_bth *)skb->data, opcode, false,
		       sroce_pad_len(payload), SROCE_DEFAULT_PKEY,
		       READ_ONCE(qp->attr.dest_qpn), false, psn);
	return skb;
}

/* The response opcode of the QP's transport for an RC one. */
static u8 resp_opcode(const struct sroce_qp *qp, u8 rc_opcode)
{
	return sroce_qp_is_xrc_tgt(qp) ? rc_opcode | SROCE_OP_XRC : rc_opcode;
}

static void *resp_hdr(struct sk_buff *skb, u8 opcode, enum sroce_ext ext)
{
	return skb->data + sroce_opinfo(opcode)->offset[ext];
}

static enum resp_tx_status resp_xmit_status(int err)
{
	if (!err)
		return RESP_TX_DONE;
	if (err == -ENOBUFS)
		return RESP_TX_FULL;
	return err == -EAGAIN ? RESP_TX_FAULT : RESP_TX_ABANDON;
}

static enum resp_tx_status resp_xmit_ack(struct sroce_qp *qp,
					 struct resp_reply *r)
{
	u8 opcode = resp_opcode(qp, r->kind == REPLY_ATOMIC_ACK ?
				SROCE_OP_RC_ATOMIC_ACKNOWLEDGE :
				SROCE_OP_RC_ACKNOWLEDGE);
	struct sk_buff *skb;

	resp_reply_retire(qp, r);
	skb = resp_alloc_skb(qp, opcode, 0, 0, r->psn);
	if (!skb)
		return RESP_TX_ABANDON;	/* the requester's timer recovers */
	sroce_aeth_set(resp_hdr(skb, opcode, SROCE_EXT_AETH),
		       r->kind == REPLY_ATOMIC_ACK ? sroce_resp_syn_ack() :
							   r->syndrome, r->msn);
	if (r->kind == REPLY_ATOMIC_ACK)
		sroce_atmack_set(resp_hdr(skb, opcode, SROCE_EXT_ATMACK),
				 r->orig);
	return resp_xmit_status(sroce_qp_xmit(qp, skb));
}

static u8 resp_read_opcode(bool first, bool last)
{
	if (first)
		return last ? SROCE_OP_RC_RDMA_READ_RESPONSE_ONLY :
			      SROCE_OP_RC_RDMA_READ_RESPONSE_FIRST;
	return last ? SROCE_OP_RC_RDMA_READ_RESPONSE_LAST :
		      SROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE;
}

/*
 * One READ response packet: the next min(left, MTU) bytes at r->va.
 * -EAGAIN: an ODP page of them is being faulted in, nothing went out.
 */
static int resp_xmit_read_one(struct sroce_qp *qp, struct sroce_mr *mr,
			      struct resp_reply *r, u32 n)
{
	bool zcopy = mr && mr->type == SROCE_MR_USER &&
		     n >= SROCE_RESP_ZCOPY_MIN && sroce_net_zcopy(qp->sdev);
	u8 opcode = resp_opcode(qp, resp_read_opcode(!r->started,
						     n == r->len));
	struct sk_buff *skb;
	int err;

	skb = resp_alloc_skb(qp, opcode, zcopy ? 0 : n, n, r->psn);
	if (!skb)
		return -ENOMEM;
	if (sroce_op_flags(opcode) & SROCE_OPF_AETH)
		sroce_aeth_set(resp_hdr(skb, opcode, SROCE_EXT_AETH),
			       sroce_resp_syn_ack(), r->msn);
	err = n ? sroce_mr_append_skb(mr, r->va, skb, n, zcopy) : 0;
	if (err) {
		kfree_skb(skb);
		return err == -EAGAIN ? err : -EFAULT;
	}
	/* the peer may start another READ once it has this one */
	if (n == r->len)
		resp_reply_retire(qp, r);
	return sroce_qp_xmit(qp, skb);
}

/*
 * The MR a READ reads, looked up again when its responses go out: with
 * the QP's PD, or an XRC target QP's with the PD of the request's SRQ if
 * it is still there and in the QP's domain.
 */
static struct sroce_mr *resp_read_mr(struct sroce_qp *qp,
				     const struct resp_reply *r)
{
	struct sroce_srq *srq;
	struct sroce_mr *mr;

	if (!sroce_qp_is_xrc_tgt(qp))
		return sroce_rkey_get(qp->sdev, qp->ibqp.pd, &qp->ibqp, r->rkey,
				      r->va, r->len, IB_ACCESS_REMOTE_READ);
	srq = sroce_srq_get(qp->sdev, r->srqn);
	if (!srq)
		return NULL;
	mr = NULL;
	if (srq->ibsrq.ext.xrc.xrcd == qp->xrcd)
		mr = sroce_rkey_get(qp->sdev, srq->ibsrq.pd, &qp->ibqp, r->rkey,
				    r->va, r->len, IB_ACCESS_REMOTE_READ);
	sroce_srq_put(srq);
	return mr;
}

/*
 * Send up to @budget READ responses of r, advancing r (va, len, psn) past
 * what went out. The MR is looked up again for each call, so a deferred
 * READ holds no MR reference while it waits.
 */
static enum resp_tx_status resp_xmit_read(struct sroce_qp *qp,
					  struct resp_reply *r,
					  unsigned int budget)
{
	u32 mtu = sroce_qp_mtu(qp), n, sent = 0;
	struct sroce_mr *mr = NULL;
	enum resp_tx_status st;
	int err;

	if (r->len) {
		mr = resp_read_mr(qp, r);
		if (!mr)
			return RESP_TX_ABANDON;
	}
	do {
		n = min(r->len, mtu);
		err = resp_xmit_read_one(qp, mr, r, n);
		st = resp_xmit_status(err);
		if (st == RESP_TX_FAULT && sent)
			st = RESP_TX_MORE;	/* progress: wait next time */
		if (st != RESP_TX_DONE)
			break;
		sent++;
		r->started = true;
		r->va += n;
		r->len -= n;
		r->psn = sroce_psn_next(r->psn);
		if (!r->len)
			break;
		st = RESP_TX_MORE;
	} while (--budget);
	if (mr)
		sroce_mr_put(mr);
	return st;
}

/*
 * Process context: wait for the ODP fault that stopped READ @r at its
 * next response packet (RESP_TX_FAULT).
 */
static void resp_wait_read_fault(struct sroce_qp *qp,
				 const struct resp_reply *r)
{
	struct sroce_mr *mr = resp_read_mr(qp, r);

	if (mr) {
		sroce_mr_wait_fault(mr);
		sroce_mr_put(mr);
	}
}

static enum resp_tx_status resp_xmit(struct sroce_qp *qp, struct resp_reply *r,
				     unsigned int budget)
{
	if (r->kind == REPLY_READ)
		return resp_xmit_read(qp, r, budget);
	return resp_xmit_ack(qp, r);
}

/* Is the QP still in a state whose replies are worth sending? */
static bool resp_tx_live(const struct sroce_qp *qp)
{
	enum ib_qp_state state = sroce_qp_state(qp);

	return state == IB_QPS_RTR || state == IB_QPS_RTS ||
	       state == IB_QPS_SQD;
}

/*
 * An ACKNOWLEDGE queued behind another one that @tx_work has not started
 * says everything that one says and more: take its place (under @tx_lock).
 */
static bool resp_defer_coalesce(struct sroce_resp_state *rs,
				const struct resp_reply *r)
{
	struct resp_tx *last;

	if (r->kind != REPLY_ACK || list_is_singular(&rs->tx_queue) ||
	    list_empty(&rs->tx_queue))
		return false;
	last = list_last_entry(&rs->tx_queue, struct resp_tx, node);
	if (last->r.kind != REPLY_ACK)
		return false;
	last->r = *r;
	return true;
}

/*
 * Queue @r behind the replies already waiting for @tx_work: true, or false
 * when it was dropped. A peer decides how many requests (duplicates
 * included) arrive while transmit is busy: beyond SROCE_RESP_TX_QUEUE_MAX
 * replies are dropped, as a lost reply would be (the requester retries).
 */
static bool resp_defer(struct sroce_qp *qp, struct resp_reply *r)
{
	struct sroce_resp_state *rs = &qp->resp;
	struct resp_tx *tx;
	unsigned long flags;

	tx = kmalloc(sizeof(*tx), GFP_ATOMIC);
	if (!tx)
		goto drop;	/* the requester retries */
	tx->r = *r;
	spin_lock_irqsave(&rs->tx_lock, flags);
	if (resp_defer_coalesce(rs, r)) {
		spin_unlock_irqrestore(&rs->tx_lock, flags);
		kfree(tx);
		return true;
	}
	if (rs->tx_len >= SROCE_RESP_TX_QUEUE_MAX) {
		spin_unlock_irqrestore(&rs->tx_lock, flags);
		kfree(tx);
		sroce_resp_count(qp, SROCE_RESP_DROPPED);
		goto drop;
	}
	list_add_tail(&tx->node, &rs->tx_queue);
	rs->tx_len++;
	if (!rs->tx_busy) {
		rs->tx_busy = true;
		refcount_inc(&qp->ref);	/* our caller holds one */
		queue_work(system_unbound_wq, &rs->tx_work);
	}
	spin_unlock_irqrestore(&rs->tx_lock, flags);
	return true;
drop:
	resp_reply_retire(qp, r);
	return false;
}

/*
 * Send a reply from softirq, or leave it (or its rest) to @tx_work: true
 * when @tx_work has it.
 */
bool sroce_resp_reply_send(struct sroce_qp *qp, struct resp_reply *r)
{
	struct sroce_resp_state *rs = &qp->resp;
	enum resp_tx_status st;
	unsigned long flags;
	bool busy;

	if (r->kind == REPLY_NONE)
		return false;
	spin_lock_irqsave(&rs->tx_lock, flags);
	busy = rs->tx_busy;
	spin_unlock_irqrestore(&rs->tx_lock, flags);
	if (!busy) {
		st = resp_xmit(qp, r, SROCE_RESP_TX_BURST);
		if (st == RESP_TX_DONE || st == RESP_TX_ABANDON) {
			resp_reply_retire(qp, r);
			return false;
		}
	}
	return resp_defer(qp, r);
}

static struct resp_tx *resp_tx_first(struct sroce_resp_state *rs)
{
	struct resp_tx *tx;
	unsigned long flags;

	spin_lock_irqsave(&rs->tx_lock, flags);
	tx = list_first_entry_or_null(&rs->tx_queue, struct resp_tx, node);
	if (!tx)
		rs->tx_busy = false;
	spin_unlock_irqrestore(&rs->tx_lock, flags);
	return tx;
}

static void resp_tx_pop(struct sroce_resp_state *rs, struct resp_tx *tx)
{
	unsigned long flags;

	spin_lock_irqsave(&rs->tx_lock, flags);
	list_del(&tx->node);
	rs->tx_len--;
	spin_unlock_irqrestore(&rs->tx_lock, flags);
	kfree(tx);
}

/*
 * A fatal NAK @tx_work sent (or could not send): the QP goes to the error
 * state, unless a RESET since the NAK was described made the QP another
 * connection's (resp.gen under resp.lock, taken before sq_lock).
 */
static void resp_tx_fatal(struct sroce_qp *qp, u32 gen)
{
	struct sroce_comp_notify n = {};
	unsigned long flags;

	spin_lock_irqsave(&qp->resp.lock, flags);
	if (gen == qp->resp.gen) {
		spin_lock(&qp->sq_lock);
		sroce_qp_error_locked(qp, &n);
		spin_unlock(&qp->sq_lock);
	}
	spin_unlock_irqrestore(&qp->resp.lock, flags);
	sroce_comp_notify(qp, &n);
}

/*
 * Process context: send the deferred replies in order, waiting while the
 * transmit queue is full or a READ's ODP page is faulted in. Replies of a
 * QP that left RTR/RTS/SQD, or that were described before a RESET, are
 * dropped: the READ responses of an old connection must not reach the
 * peer of a new one. A fatal NAK moves the QP to the error state once it
 * went out, after the answers queued before it. Drops the QP reference
 * taken by resp_defer() when the queue is empty.
 */
void sroce_resp_tx_work(struct work_struct *work)
{
	struct sroce_qp *qp = container_of(work, struct sroce_qp,
					   resp.tx_work);
	struct sroce_resp_state *rs = &qp->resp;
	unsigned int waited = 0;
	enum resp_tx_status st;
	struct resp_tx *tx;
	bool fatal;
	u32 gen;

	while ((tx = resp_tx_first(rs))) {
		st = RESP_TX_ABANDON;
		if (tx->r.gen == READ_ONCE(rs->gen) && resp_tx_live(qp))
			st = resp_xmit(qp, &tx->r, SROCE_RESP_TX_BATCH);
		if (st == RESP_TX_FULL && waited++ < SROCE_RESP_TX_RETRIES) {
			usleep_range(100, 200);
			continue;
		}
		if (st == RESP_TX_FAULT && waited++ < SROCE_RESP_TX_FAULTS) {
			resp_wait_read_fault(qp, &tx->r);
			continue;
		}
		waited = 0;
		if (st != RESP_TX_MORE) {
			fatal = tx->r.fatal;
			gen = tx->r.gen;
			resp_reply_retire(qp, &tx->r);
			resp_tx_pop(rs, tx);
			if (fatal)
				resp_tx_fatal(qp, gen);
		}
		cond_resched();
	}
	sroce_qp_put(qp);
}
