// SPDX-License-Identifier: GPL-2.0
/*
 * Completer: the requester's half of reliability (IBTA 9.7.5.1). It takes
 * ACKs, NAKs, READ responses and atomic ACKs, retires send WQEs in order
 * and completes them, runs the retransmit and RNR timers, goes back N on
 * sequence errors, and moves the QP to the error state with the right
 * completion status, flushing what is left. Everything here runs under
 * qp->sq_lock; completion and event handlers run after it is dropped
 * (struct sroce_comp_notify).
 */

#include <linux/jiffies.h>
#include <linux/skbuff.h>
#include <linux/timer.h>
#include <rdma/ib_verbs.h>

#include "sroce.h"
#include "qp.h"
#include "cq.h"
#include "mr.h"
#include "psn.h"
#include "srq.h"
#include "wire.h"

#define SROCE_RNR_RETRY_INFINITE	7
/*
 * Consecutive retransmit timeouts double the timer, up to this shift. The
 * QP's timeout is a minimum (IBTA 9.7.6.1.3); backing off keeps a path whose
 * round trip grew past it (a slow or congested host) from resending its
 * window faster than the window drains.
 */
#define SROCE_MAX_BACKOFF		6

void sroce_req_count(struct sroce_qp *qp, enum sroce_rx_stat stat)
{
	atomic64_inc(&qp->sdev->rx_stats.c[stat]);
}

static u8 sroce_wc_opcode(u32 wr_opcode)
{
	switch (wr_opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return IB_UVERBS_WC_RDMA_WRITE;
	case IB_WR_RDMA_READ:
		return IB_UVERBS_WC_RDMA_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return IB_UVERBS_WC_COMP_SWAP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return IB_UVERBS_WC_FETCH_ADD;
	case IB_WR_LOCAL_INV:
		return IB_UVERBS_WC_LOCAL_INV;
	case IB_WR_BIND_MW:
		return IB_UVERBS_WC_BIND_MW;
	case IB_WR_REG_MR:
		return IB_WC_REG_MR;	/* kernel QPs only */
	case SROCE_WR_ATOMIC_WRITE:
		return SROCE_UVERBS_WC_ATOMIC_WRITE;
	case SROCE_WR_FLUSH:
		return SROCE_UVERBS_WC_FLUSH;
	default:
		return IB_UVERBS_WC_SEND;
	}
}

/* @opcode: an enum ib_wr_opcode; from a ring slot, whatever user space wrote */
static int sroce_comp_post_cqe(struct sroce_qp *qp, u64 wr_id, u32 opcode,
			       u32 byte_len, enum ib_wc_status status,
			       struct sroce_comp_notify *n)
{
	struct sroce_cqe cqe = {
		.wr_id = wr_id,
		.status = status,
		.opcode = sroce_wc_opcode(opcode),
		.byte_len = byte_len,
		.qp_num = qp->ibqp.qp_num,
	};

	return sroce_cq_post_locked(to_scq(qp->ibqp.send_cq), &cqe, false,
				    &n->send_cq);
}

int sroce_comp_post(struct sroce_qp *qp, struct sroce_swqe *wqe,
		    enum ib_wc_status status, struct sroce_comp_notify *n)
{
	return sroce_comp_post_cqe(qp, wqe->wr_id, wqe->opcode, wqe->length,
				   status, n);
}

void sroce_comp_notify(struct sroce_qp *qp, struct sroce_comp_notify *n)
{
	if (n->enter_error) {
		n->enter_error = false;
		sroce_qp_error(qp);	/* flushes and notifies on its own */
	}
	if (n->flush_rq) {
		n->flush_rq = false;
		sroce_rq_flush(qp, n);
	}
	if (n->send_cq)
		sroce_cq_notify(to_scq(qp->ibqp.send_cq));
	if (n->recv_cq)
		sroce_cq_notify(to_scq(n->recv_srq ? n->recv_srq->ibsrq.ext.cq :
					     qp->ibqp.recv_cq));
	if (n->recv_srq)
		sroce_srq_put(n->recv_srq);
	if (n->qp_fatal)
		sroce_qp_event(qp, IB_EVENT_QP_FATAL);
	if (n->sq_drained)
		sroce_qp_event(qp, IB_EVENT_SQ_DRAINED);
	if (n->last_wqe)
		sroce_qp_event(qp, IB_EVENT_QP_LAST_WQE_REACHED);
	if (n->srq_limit)
		sroce_srq_limit_event(n->srq_limit);
	memset(n, 0, sizeof(*n));
}

/* Flush every send WQE, validated or still only in the ring. */
static void sroce_sq_flush(struct sroce_qp *qp, struct sroce_comp_notify *n)
{
	struct sroce_sq *sq = &qp->sq;
	const struct sroce_send_wqe *slot;
	u32 prod;

	while (sq->tail != sq->fetched) {
		sroce_comp_post(qp, sroce_sq_shadow(qp, sq->tail),
				IB_WC_WR_FLUSH_ERR, n);
		sq->tail++;
	}
	prod = sroce_queue_load_producer(&sq->queue);
	if (prod - sq->tail > sq->queue.num_entries)
		prod = sq->tail;	/* corrupted by user space */
	while (sq->tail != prod) {
		slot = sroce_queue_slot(&sq->queue, sq->tail);
		sroce_comp_post_cqe(qp, READ_ONCE(slot->wr_id),
				    READ_ONCE(slot->opcode), 0,
				    IB_WC_WR_FLUSH_ERR, n);
		sq->tail++;
	}
	sq->fetched = sq->tail;
	qp->req.cur = sq->tail;
	qp->req.offset = 0;
	qp->req.rd_atomic = 0;
	sroce_queue_publish_consumer(&sq->queue, sq->tail);
}

void sroce_qp_error_locked(struct sroce_qp *qp, struct sroce_comp_notify *n)
{
	if (qp->state != IB_QPS_ERR) {
		WRITE_ONCE(qp->state, IB_QPS_ERR);
		/* receives posted from now on need a doorbell: sroce_rq_flush() */
		sroce_queue_set_flags(&qp->rq.queue, SROCE_RING_FLAG_QP_ERR);
		timer_delete(&qp->comp.retrans_timer);
		timer_delete(&qp->comp.rnr_timer);
		qp->comp.rnr_wait = false;
	}
	n->flush_rq = true;
	/* sends posted from now on ring the doorbell that flushes them */
	sroce_sq_set_draining(qp, false);
	smp_mb(); /* the flag is clear before producer is read: sroce-abi.h */
	sroce_sq_flush(qp, n);
}

static bool sroce_sq_drained(struct sroce_qp *qp)
{
	struct sroce_sq *sq = &qp->sq;

	return sq->tail == sq->fetched ||
	       sroce_sq_shadow(qp, sq->tail)->state == SROCE_SWQE_QUEUED;
}

void sroce_comp_check_drained(struct sroce_qp *qp, struct sroce_comp_notify *n)
{
	if (qp->state == IB_QPS_SQD && qp->attr.sq_draining &&
	    sroce_sq_drained(qp)) {
		qp->attr.sq_draining = 0;
		n->sq_drained = qp->attr.sqd_notify;
	}
}

void sroce_comp_retire(struct sroce_qp *qp, struct sroce_comp_notify *n)
{
	struct sroce_sq *sq = &qp->sq;
	struct sroce_swqe *wqe;

	while (sq->tail != sq->fetched) {
		wqe = sroce_sq_shadow(qp, sq->tail);
		if (wqe->state != SROCE_SWQE_DONE)
			break;
		if (wqe->status != IB_WC_SUCCESS) {
			sroce_comp_post(qp, wqe, wqe->status, n);
			sq->tail++;
			sroce_qp_error_locked(qp, n);
			return;
		}
		if ((qp->sig_all || (wqe->send_flags & IB_SEND_SIGNALED)) &&
		    sroce_comp_post(qp, wqe, IB_WC_SUCCESS, n)) {
			/* Send CQ overrun: the CQ is in error, so is the QP. */
			sq->tail++;
			n->qp_fatal = true;
			sroce_qp_error_locked(qp, n);
			return;
		}
		sq->tail++;
	}
	sroce_queue_publish_consumer(&sq->queue, sq->tail);
	sroce_comp_check_drained(qp, n);
}

/* Packets of the request of @wqe that carry PSNs (responses for READ). */
static u32 sroce_comp_npsn(const struct sroce_swqe *wqe)
{
	return sroce_psn_diff(wqe->last_psn, wqe->first_psn) + 1;
}

/* The started, unretired WQE whose PSNs include @psn; its index. */
static struct sroce_swqe *sroce_comp_find(struct sroce_qp *qp, u32 psn,
					  u32 *index)
{
	struct sroce_swqe *wqe;
	u32 i;

	for (i = qp->sq.tail; i != qp->sq.fetched; i++) {
		wqe = sroce_sq_shadow(qp, i);
		if (wqe->state == SROCE_SWQE_QUEUED)
			break;
		if (wqe->flags & SROCE_SWQE_F_LOCAL)
			continue;	/* has no PSN */
		if (sroce_psn_in_window(psn, wqe->first_psn,
					sroce_comp_npsn(wqe))) {
			if (index)
				*index = i;
			return wqe;
		}
	}
	return NULL;
}

void sroce_req_go_back(struct sroce_qp *qp, u32 psn)
{
	struct sroce_req *req = &qp->req;
	struct sroce_swqe *wqe;
	u32 i;

	req->noack = 0;
	qp->comp.rtt_probe = false;	/* Karn: retransmissions are not timed */
	wqe = sroce_comp_find(qp, psn, &i);
	if (!wqe) {
		/* Nothing started at or after @psn: resume with new WQEs. */
		for (i = qp->sq.tail; i != qp->sq.fetched; i++)
			if (sroce_sq_shadow(qp, i)->state == SROCE_SWQE_QUEUED)
				break;
		req->cur = i;
		req->offset = 0;
		req->psn = psn;
		return;
	}
	req->cur = i;
	req->psn = psn;
	req->offset = (u32)sroce_psn_diff(psn, wqe->first_psn) *
		      sroce_qp_mtu(qp);
	if (wqe->state == SROCE_SWQE_SENT)
		wqe->state = SROCE_SWQE_STARTED;
}

static bool sroce_comp_outstanding(const struct sroce_qp *qp)
{
	return qp->comp.psn != qp->req.psn_max;
}

/* The measured part of the timeout never exceeds this (before backoff). */
#define SROCE_MAX_RTO	(2 * HZ)

static unsigned long sroce_comp_timeout(const struct sroce_qp *qp)
{
	const struct sroce_comp *comp = &qp->comp;
	unsigned long t = READ_ONCE(comp->timeout_jiffies), rto;

	if (!t)
		return 0;	/* timeout 0: wait forever */
	rto = min_t(unsigned long, comp->srtt8 / 8 + comp->rttvar4,
		    SROCE_MAX_RTO);
	return max(t, rto) << comp->backoff;
}

/* Everything through @acked was acknowledged: end a probe it covers. */
static void sroce_comp_rtt_sample(struct sroce_qp *qp, u32 acked)
{
	struct sroce_comp *comp = &qp->comp;
	long m, delta;

	if (!comp->rtt_probe || sroce_psn_before(acked, comp->rtt_psn))
		return;
	comp->rtt_probe = false;
	m = max_t(long, (long)(jiffies - comp->rtt_start), 1);
	if (!comp->srtt8) {
		comp->srtt8 = m << 3;
		comp->rttvar4 = m << 1;
		return;
	}
	delta = m - (long)(comp->srtt8 >> 3);
	comp->srtt8 += delta;
	comp->rttvar4 += abs(delta) - (comp->rttvar4 >> 2);
}

void sroce_comp_arm_retrans(struct sroce_qp *qp)
{
	unsigned long t = sroce_comp_timeout(qp);

	if (t && !timer_pending(&qp->comp.retrans_timer))
		mod_timer(&qp->comp.retrans_timer, jiffies + t);
}

/*
 * Soon, not at once: the allocation failed in atomic context, and the
 * memory a retry needs comes back on its own time.
 */
#define SROCE_ALLOC_RETRY_MS	2

void sroce_comp_arm_alloc_retry(struct sroce_qp *qp)
{
	if (!timer_pending(&qp->comp.alloc_retry_timer))
		mod_timer(&qp->comp.alloc_retry_timer,
			  jiffies + msecs_to_jiffies(SROCE_ALLOC_RETRY_MS));
}

/* Forward progress from @old: fresh retry budgets and a fresh timeout. */
static void sroce_comp_progress(struct sroce_qp *qp, u32 old)
{
	struct sroce_comp *comp = &qp->comp;
	unsigned long t;

	sroce_cc_grow(comp, sroce_psn_diff(comp->psn, old), qp->req.psn);
	if (comp->timeout_suspect) {
		comp->timeout_suspect = false;
		sroce_req_count(qp, SROCE_REQ_TIMEOUTS_AVERTED);
	}

	sroce_comp_rtt_sample(qp, sroce_psn_add(qp->comp.psn, SROCE_PSN_MASK));
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_left = qp->attr.rnr_retry;
	qp->comp.read_retried = false;
	qp->comp.backoff = 0;
	qp->comp.stale_armed = false;
	t = sroce_comp_timeout(qp);
	if (!sroce_comp_outstanding(qp))
		timer_delete(&qp->comp.retrans_timer);
	else if (t)
		mod_timer(&qp->comp.retrans_timer, jiffies + t);
}

/*
 * Every request packet up to and including @psn is acknowledged
 * (explicitly, or implicitly by a later response or NAK). A READ or
 * atomic this passes without its response lost the response: go back to
 * it (IBTA 9.7.5.1.4). Returns true when the requester must resend.
 */
static bool sroce_comp_ack_through(struct sroce_qp *qp, u32 psn,
				   struct sroce_comp_notify *n)
{
	struct sroce_comp *comp = &qp->comp;
	struct sroce_swqe *wqe;
	bool resend = false;
	u32 i, acked = sroce_psn_next(psn);

	for (i = qp->sq.tail; i != qp->sq.fetched; i++) {
		wqe = sroce_sq_shadow(qp, i);
		if (wqe->state == SROCE_SWQE_QUEUED)
			break;
		if (wqe->state == SROCE_SWQE_DONE)
			continue;
		if (wqe->flags & SROCE_SWQE_F_RD_ATOMIC) {
			/* Responses, not ACKs, acknowledge it. */
			if (sroce_psn_after(acked, wqe->first_psn))
				resend = true;
			if (sroce_psn_before(wqe->first_psn, acked))
				acked = sroce_psn_after(comp->psn, wqe->first_psn) ?
					comp->psn : wqe->first_psn;
			break;
		}
		if (sroce_psn_before(psn, wqe->last_psn))
			break;
		wqe->state = SROCE_SWQE_DONE;
	}
	if (sroce_psn_after(acked, comp->psn))
		comp->psn = acked;
	sroce_comp_retire(qp, n);
	if (resend)
		sroce_req_go_back(qp, comp->psn);
	return resend;
}

/* Keep the requester at or after what is acknowledged. */
static void sroce_comp_fix_req(struct sroce_qp *qp)
{
	struct sroce_req *req = &qp->req;

	if ((s32)(req->cur - qp->sq.tail) < 0 ||
	    sroce_psn_before(req->psn, qp->comp.psn))
		sroce_req_go_back(qp, qp->comp.psn);
}

/* The WQE containing @psn completes with @status; the QP errors. */
/* Completes the WQE holding @psn with @status: false if none holds it. */
static bool sroce_comp_fail(struct sroce_qp *qp, u32 psn,
			    enum ib_wc_status status,
			    struct sroce_comp_notify *n)
{
	struct sroce_swqe *wqe = sroce_comp_find(qp, psn, NULL);

	if (!wqe)
		return false;
	if ((wqe->flags & SROCE_SWQE_F_RD_ATOMIC) &&
	    wqe->state != SROCE_SWQE_DONE)
		qp->req.rd_atomic--;
	wqe->state = SROCE_SWQE_DONE;
	wqe->status = status;
	sroce_comp_retire(qp, n);
	return true;
}

/*
 * An RNR NAK for @psn acknowledges every PSN before it. When that moved
 * comp.psn it is progress as an ACK's is: the budgets reload before this
 * NAK spends one, so rnr_retry counts the RNR NAKs of one message, not of
 * a run of messages NAKed once each (whose ACKs were lost, or replaced in
 * the responder's queue by the next message's RNR NAK).
 */
static bool sroce_comp_rnr(struct sroce_qp *qp, u32 psn, u8 timer_code,
			   struct sroce_comp_notify *n)
{
	struct sroce_comp *comp = &qp->comp;
	u32 usec = sroce_rnr_timer_usec(timer_code), old = comp->psn;

	sroce_req_count(qp, SROCE_REQ_RNR_NAKS);
	sroce_comp_ack_through(qp, sroce_psn_add(psn, SROCE_PSN_MASK), n);
	if (qp->state == IB_QPS_ERR)
		return false;
	if (comp->psn != old)
		sroce_comp_progress(qp, old);
	if (!comp->rnr_left) {
		sroce_comp_fail(qp, psn, IB_WC_RNR_RETRY_EXC_ERR, n);
		return false;
	}
	if (comp->rnr_left != SROCE_RNR_RETRY_INFINITE)
		comp->rnr_left--;
	sroce_req_go_back(qp, comp->psn);
	comp->rnr_wait = true;
	comp->timeout_suspect = false;
	timer_delete(&comp->retrans_timer);
	mod_timer(&comp->rnr_timer, jiffies + max(usecs_to_jiffies(usec), 1UL));
	return false;
}

static bool sroce_comp_seq_nak(struct sroce_qp *qp, u32 psn,
			       struct sroce_comp_notify *n)
{
	struct sroce_comp *comp = &qp->comp;
	u32 old = comp->psn;

	sroce_req_count(qp, SROCE_REQ_SEQ_NAKS);
	sroce_comp_ack_through(qp, sroce_psn_add(psn, SROCE_PSN_MASK), n);
	if (qp->state == IB_QPS_ERR)
		return false;
	if (comp->psn == old && !comp->retry_left) {
		sroce_comp_fail(qp, psn, IB_WC_RETRY_EXC_ERR, n);
		return false;
	}
	if (comp->psn != old)
		sroce_comp_progress(qp, old);
	else
		comp->retry_left--;
	/* a loss: halve what may be resent after the next one */
	comp->cwnd = max_t(u32, comp->cwnd / 2, SROCE_CWND_MIN);
	sroce_req_go_back(qp, comp->psn);
	return true;
}

static enum ib_wc_status sroce_nak_status(u8 code)
{
	switch (code) {
	case SROCE_NAK_INV_REQ:
		return IB_WC_REM_INV_REQ_ERR;
	case SROCE_NAK_REM_ACCESS:
		return IB_WC_REM_ACCESS_ERR;
	case SROCE_NAK_INV_RD_REQ:
		return IB_WC_REM_INV_RD_REQ_ERR;
	default:
		return IB_WC_REM_OP_ERR;
	}
}

static bool sroce_comp_ack(struct sroce_qp *qp, struct sk_buff *skb,
			   struct sroce_comp_notify *n)
{
	u32 psn = sroce_pkt(skb)->psn, old = qp->comp.psn;
	struct sroce_aeth *aeth = sroce_pkt_aeth(skb);
	u8 syn = sroce_aeth_syn(aeth);

	switch (sroce_aeth_syn_type(syn)) {
	case SROCE_AETH_TYPE_ACK:
		sroce_comp_ack_through(qp, psn, n);
		if (qp->comp.psn != old)
			sroce_comp_progress(qp, old);
		sroce_comp_fix_req(qp);
		return true;
	case SROCE_AETH_TYPE_RNR:
		return sroce_comp_rnr(qp, psn, sroce_aeth_syn_value(syn), n);
	case SROCE_AETH_TYPE_NAK:
		if (sroce_aeth_syn_value(syn) == SROCE_NAK_PSN_SEQ_ERR)
			return sroce_comp_seq_nak(qp, psn, n);
		sroce_comp_ack_through(qp, sroce_psn_add(psn, SROCE_PSN_MASK),
				       n);
		sroce_comp_fail(qp, psn,
				sroce_nak_status(sroce_aeth_syn_value(syn)), n);
		return false;
	default:
		return false;	/* reserved syndrome */
	}
}

/*
 * A response (READ data or atomic ACK) for the READ/atomic @wqe. Earlier
 * requests are implicitly acknowledged; a gap means responses or the
 * request were lost: ask again once, from the first missing PSN.
 */
static bool sroce_comp_response_in_order(struct sroce_qp *qp,
					 struct sroce_swqe *wqe, u32 psn,
					 bool *run,
					 struct sroce_comp_notify *n)
{
	struct sroce_comp *comp = &qp->comp;

	if (sroce_psn_after(wqe->first_psn, comp->psn))
		sroce_comp_ack_through(qp, sroce_psn_add(wqe->first_psn,
							 SROCE_PSN_MASK), n);
	if (psn == comp->psn)
		return true;
	if (sroce_psn_after(psn, comp->psn) && !comp->read_retried) {
		comp->read_retried = true;
		sroce_req_go_back(qp, comp->psn);
		*run = true;
	}
	return false;
}

static void sroce_comp_response_done(struct sroce_qp *qp,
				     struct sroce_swqe *wqe, u32 psn, bool last,
				     struct sroce_comp_notify *n)
{
	u32 old = qp->comp.psn;

	qp->comp.psn = sroce_psn_next(psn);
	if (last) {
		wqe->state = SROCE_SWQE_DONE;
		qp->req.rd_atomic--;
	}
	sroce_comp_progress(qp, old);
	sroce_comp_retire(qp, n);
	sroce_comp_fix_req(qp);
}

/* Is @opcode the right READ response for @psn of @wqe? */
static bool sroce_read_resp_opcode_ok(const struct sroce_swqe *wqe, u32 psn,
				      u8 opcode)
{
	bool first = psn == wqe->first_psn, last = psn == wqe->last_psn;

	switch (sroce_op_base(opcode)) {
	case SROCE_OP_RC_RDMA_READ_RESPONSE_ONLY:
		return last;
	case SROCE_OP_RC_RDMA_READ_RESPONSE_FIRST:
		return !last;
	case SROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE:
		return !first && !last;
	default:
		return !first && last;
	}
}

/*
 * ATOMIC WRITE and FLUSH are answered by one READ RESPONSE ONLY without
 * payload (IBTA A19): that response, and only it, completes them.
 */
static bool sroce_comp_placement_resp(struct sroce_qp *qp,
				      struct sroce_swqe *wqe,
				      struct sk_buff *skb,
				      struct sroce_comp_notify *n)
{
	const struct sroce_pkt *pkt = sroce_pkt(skb);
	bool run = false;

	if (!sroce_comp_response_in_order(qp, wqe, pkt->psn, &run, n))
		return run;
	if (sroce_op_base(pkt->opcode) != SROCE_OP_RC_RDMA_READ_RESPONSE_ONLY ||
	    pkt->payload_len) {
		sroce_comp_fail(qp, pkt->psn, IB_WC_BAD_RESP_ERR, n);
		return false;
	}
	sroce_comp_response_done(qp, wqe, pkt->psn, true, n);
	return true;
}

static bool sroce_comp_read_resp(struct sroce_qp *qp, struct sk_buff *skb,
				 struct sroce_comp_notify *n)
{
	const struct sroce_pkt *pkt = sroce_pkt(skb);
	u32 psn = pkt->psn, mtu = sroce_qp_mtu(qp), offset, expect;
	struct sroce_swqe *wqe = sroce_comp_find(qp, psn, NULL);
	bool run = false;
	int err;

	if (!wqe || wqe->state == SROCE_SWQE_DONE)
		return false;
	if (wqe->opcode == SROCE_WR_ATOMIC_WRITE ||
	    wqe->opcode == SROCE_WR_FLUSH)
		return sroce_comp_placement_resp(qp, wqe, skb, n);
	if (wqe->opcode != IB_WR_RDMA_READ)
		return false;
	if (!sroce_comp_response_in_order(qp, wqe, psn, &run, n))
		return run;

	/* A READ resent from its middle answers with FIRST again. */
	offset = (u32)sroce_psn_diff(psn, wqe->first_psn) * mtu;
	expect = min(mtu, wqe->length - offset);
	if (pkt->payload_len != expect ||
	    (offset == 0 &&
	     !sroce_read_resp_opcode_ok(wqe, psn, pkt->opcode))) {
		sroce_comp_fail(qp, psn, IB_WC_BAD_RESP_ERR, n);
		return false;
	}
	err = sroce_sgl_write_skb(qp->sdev, qp->ibqp.pd, sroce_swqe_sgl(wqe),
				  wqe->num_sge, offset, skb,
				  sroce_pkt_payload_offset(skb), expect);
	if (err == -EAGAIN)
		return false;	/* ODP fault queued: the READ is sent again */
	if (err) {
		sroce_comp_fail(qp, psn, err == -EMSGSIZE ? IB_WC_LOC_LEN_ERR :
				IB_WC_LOC_PROT_ERR, n);
		return false;
	}
	sroce_comp_response_done(qp, wqe, psn, psn == wqe->last_psn, n);
	return true;
}

static bool sroce_comp_atomic_ack(struct sroce_qp *qp, struct sk_buff *skb,
				  struct sroce_comp_notify *n)
{
	u32 psn = sroce_pkt(skb)->psn;
	struct sroce_swqe *wqe = sroce_comp_find(qp, psn, NULL);
	bool run = false;
	u64 orig;
	int err;

	if (!wqe || wqe->state == SROCE_SWQE_DONE ||
	    (wqe->opcode != IB_WR_ATOMIC_CMP_AND_SWP &&
	     wqe->opcode != IB_WR_ATOMIC_FETCH_AND_ADD))
		return false;
	if (!sroce_comp_response_in_order(qp, wqe, psn, &run, n))
		return run;

	/* The original value lands in host order, like a local atomic. */
	orig = sroce_atmack_orig(sroce_pkt_atmack(skb));
	err = sroce_sgl_write(qp->sdev, qp->ibqp.pd, sroce_swqe_sgl(wqe),
			      wqe->num_sge, 0, &orig, sizeof(orig));
	if (err == -EAGAIN)
		return false;	/* ODP fault queued: answered again later */
	if (err) {
		sroce_comp_fail(qp, psn, err == -EMSGSIZE ? IB_WC_LOC_LEN_ERR :
				IB_WC_LOC_PROT_ERR, n);
		return false;
	}
	sroce_comp_response_done(qp, wqe, psn, true, n);
	return true;
}

/*
 * A READ response older than every request in flight: the responder is
 * answering again a READ we resent after a timeout, in full (rdma_rxe
 * does), and our newer requests wait behind it. Going back again would
 * queue one more full answer each time the timer expires, until the
 * requester runs out of retries waiting behind its own duplicates; the
 * responder is alive, so the timer starts over instead. But only for a
 * while: anyone can send a stale READ response (a buggy or forged peer,
 * over and over), and only progress proves the peer alive. From the
 * first one since the last progress, stale responses postpone the
 * timeout by at most SROCE_STALE_GRACE timeouts, long enough for the
 * replay of a large READ; the retry budget then runs out as it would
 * without them. Retries and backoff are renewed by progress only.
 */
#define SROCE_STALE_GRACE	8

static void sroce_comp_stale_read_resp(struct sroce_qp *qp,
				       const struct sroce_pkt *pkt)
{
	const u32 read_resp = SROCE_OPF_READ | SROCE_OPF_RESP;
	struct sroce_comp *comp = &qp->comp;
	unsigned long t;

	if ((pkt->flags & read_resp) != read_resp ||
	    !sroce_psn_before(pkt->psn, comp->psn) ||
	    !timer_pending(&comp->retrans_timer))
		return;
	t = sroce_comp_timeout(qp);
	if (!t)
		return;
	if (!comp->stale_armed) {
		comp->stale_armed = true;
		comp->stale_until = jiffies + SROCE_STALE_GRACE * t;
	}
	if (time_after(jiffies + t, comp->stale_until))
		return;
	comp->timeout_suspect = false;
	mod_timer(&comp->retrans_timer, jiffies + t);
}

/* One response packet (sq_lock held); true to run the requester. */
static bool sroce_comp_packet(struct sroce_qp *qp, struct sk_buff *skb,
			      struct sroce_comp_notify *n)
{
	const struct sroce_pkt *pkt = sroce_pkt(skb);
	struct sroce_comp *comp = &qp->comp;

	/* Only PSNs of requests in flight mean anything. */
	if (!sroce_psn_in_window(pkt->psn, comp->psn,
				 sroce_psn_diff(qp->req.psn_max, comp->psn))) {
		sroce_comp_stale_read_resp(qp, pkt);
		return false;
	}

	/* rx.c took only responses of the QP's transport: RC's or XRC's */
	switch (sroce_op_base(pkt->opcode)) {
	case SROCE_OP_RC_ACKNOWLEDGE:
		return sroce_comp_ack(qp, skb, n);
	case SROCE_OP_RC_ATOMIC_ACKNOWLEDGE:
		return sroce_comp_atomic_ack(qp, skb, n);
	case SROCE_OP_RC_RDMA_READ_RESPONSE_FIRST:
	case SROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE:
	case SROCE_OP_RC_RDMA_READ_RESPONSE_LAST:
	case SROCE_OP_RC_RDMA_READ_RESPONSE_ONLY:
		return sroce_comp_read_resp(qp, skb, n);
	default:
		return false;
	}
}

void sroce_comp_rcv(struct sroce_qp *qp, struct sk_buff *skb)
{
	struct sroce_comp_notify n = {};
	enum ib_qp_state state;
	unsigned long flags;
	bool run = false;

	spin_lock_irqsave(&qp->sq_lock, flags);
	state = qp->state;
	if (sroce_qp_is_rc(qp) && (state == IB_QPS_RTS || state == IB_QPS_SQD))
		run = sroce_comp_packet(qp, skb, &n);
	spin_unlock_irqrestore(&qp->sq_lock, flags);

	consume_skb(skb);
	sroce_comp_notify(qp, &n);
	if (run)
		sroce_req_run(qp);
}

/* ---- timers ---- */

static void sroce_comp_retrans_timeout(struct timer_list *t)
{
	struct sroce_qp *qp = timer_container_of(qp, t, comp.retrans_timer);
	struct sroce_comp *comp = &qp->comp;
	struct sroce_comp_notify n = {};
	unsigned long flags;
	bool run = false;

	spin_lock_irqsave(&qp->sq_lock, flags);
	if ((qp->state != IB_QPS_RTS && qp->state != IB_QPS_SQD) ||
	    comp->rnr_wait) {
		/* stopped */
	} else if (!sroce_comp_outstanding(qp)) {
		run = true;	/* a packet could not be built: try again */
	} else if (!comp->timeout_suspect) {
		/* let the receive softirq see what already arrived */
		comp->timeout_suspect = true;
		mod_timer(&comp->retrans_timer, jiffies + 1);
	} else if (!comp->retry_left) {
		comp->timeout_suspect = false;
		/*
		 * Work is outstanding, so a WQE holds comp.psn; were none to,
		 * the QP fails whole rather than wait for nothing, unarmed.
		 */
		if (!sroce_comp_fail(qp, comp->psn, IB_WC_RETRY_EXC_ERR, &n))
			sroce_qp_error_locked(qp, &n);
	} else {
		comp->timeout_suspect = false;
		sroce_req_count(qp, SROCE_REQ_TIMEOUTS);
		comp->cwnd = max_t(u32, comp->cwnd / 2, SROCE_CWND_MIN);
		comp->retry_left--;
		if (comp->backoff < SROCE_MAX_BACKOFF)
			comp->backoff++;
		sroce_req_go_back(qp, comp->psn);
		run = true;
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);

	sroce_comp_notify(qp, &n);
	if (run)
		sroce_req_run(qp);
}

static void sroce_comp_rnr_timeout(struct timer_list *t)
{
	struct sroce_qp *qp = timer_container_of(qp, t, comp.rnr_timer);
	unsigned long flags;

	spin_lock_irqsave(&qp->sq_lock, flags);
	qp->comp.rnr_wait = false;
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	sroce_req_run(qp);
}

static void sroce_comp_alloc_retry(struct timer_list *t)
{
	struct sroce_qp *qp = timer_container_of(qp, t, comp.alloc_retry_timer);

	sroce_req_run(qp);
}

void sroce_comp_timers_init(struct sroce_qp *qp)
{
	timer_setup(&qp->comp.retrans_timer, sroce_comp_retrans_timeout, 0);
	timer_setup(&qp->comp.rnr_timer, sroce_comp_rnr_timeout, 0);
	timer_setup(&qp->comp.alloc_retry_timer, sroce_comp_alloc_retry, 0);
}

void sroce_comp_timers_stop(struct sroce_qp *qp, bool final)
{
	if (final) {
		timer_shutdown_sync(&qp->comp.retrans_timer);
		timer_shutdown_sync(&qp->comp.rnr_timer);
		timer_shutdown_sync(&qp->comp.alloc_retry_timer);
	} else {
		timer_delete_sync(&qp->comp.retrans_timer);
		timer_delete_sync(&qp->comp.rnr_timer);
		timer_delete_sync(&qp->comp.alloc_retry_timer);
	}
}

/* Back to RESET (sq_lock held); the rings were emptied already. */
void sroce_comp_reset(struct sroce_qp *qp)
{
	struct sroce_req *req = &qp->req;
	struct sroce_comp *comp = &qp->comp;

	req->cur = qp->sq.tail;
	req->offset = 0;
	req->psn = 0;
	req->psn_max = 0;
	req->psn_sent = 0;
	req->noack = 0;
	req->rd_atomic = 0;
	comp->psn = 0;
	comp->retry_left = 0;
	comp->rnr_left = 0;
	comp->rnr_wait = false;
	comp->read_retried = false;
	comp->backoff = 0;
	sroce_cc_reset(comp);
	comp->srtt8 = 0;
	comp->rttvar4 = 0;
	comp->timeout_suspect = false;
	comp->stale_armed = false;
	comp->rtt_probe = false;
	timer_delete(&comp->retrans_timer);
	timer_delete(&comp->rnr_timer);
}
