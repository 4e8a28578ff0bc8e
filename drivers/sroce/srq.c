// SPDX-License-Identifier: GPL-2.0
/*
 * Shared receive queues: creation with a user (or kernel) ring, the limit
 * and its event, kernel consumers' post_srq_recv, and the take used by the
 * responders of the QPs attached (see srq.h for the rules).
 */

#include <linux/idr.h>
#include <linux/log2.h>
#include <rdma/ib_verbs.h>

#include "sroce.h"
#include "qp.h"
#include "mr.h"
#include "srq.h"

/* SRQ numbers are only reported to user space; unique per module. */
static DEFINE_IDA(sroce_srqn_ida);

int sroce_srq_take(struct sroce_srq *srq, struct sroce_rwqe *wqe,
		   bool *limit_hit)
{
	struct sroce_rq *rq = &srq->rq;
	unsigned long flags;
	int err = 0;
	u32 prod;

	spin_lock_irqsave(&srq->lock, flags);
	prod = sroce_queue_load_producer(&rq->queue);
	if (prod == rq->consumer || srq->dead) {
		err = -EAGAIN;
		goto out;
	}
	if (prod - rq->consumer > rq->queue.num_entries) {
		err = -EIO;
		goto out;
	}
	err = sroce_rwqe_copy(rq, rq->consumer, wqe);
	/*
	 * Consumed once copied (the producer may reuse the slot from here),
	 * a bad WQE too: it would stop every QP of the SRQ.
	 */
	rq->consumer++;
	sroce_queue_publish_consumer(&rq->queue, rq->consumer);
	if (err)
		goto out;
	if (srq->limit && prod - rq->consumer < srq->limit) {
		srq->limit = 0;
		*limit_hit = true;
	}
out:
	spin_unlock_irqrestore(&srq->lock, flags);
	return err;
}

void sroce_srq_limit_event(struct sroce_srq *srq)
{
	struct ib_event ev = {
		.device = srq->ibsrq.device,
		.element.srq = &srq->ibsrq,
		.event = IB_EVENT_SRQ_LIMIT_REACHED,
	};

	if (srq->ibsrq.event_handler)
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
}

struct sroce_srq *sroce_srq_get(struct sroce_dev *sdev, u32 srqn)
{
	struct sroce_srq *srq;

	rcu_read_lock();
	srq = xa_load(&sdev->srq_xa, srqn);
	if (srq && !refcount_inc_not_zero(&srq->ref))
		srq = NULL;
	rcu_read_unlock();
	return srq;
}

void sroce_srq_put(struct sroce_srq *srq)
{
	if (refcount_dec_and_test(&srq->ref))
		complete(&srq->released);
}

/* An XRC SRQ needs its domain and CQ; ib_core holds both while it lives. */
static int sroce_srq_check_type(const struct ib_srq_init_attr *init)
{
	switch (init->srq_type) {
	case IB_SRQT_BASIC:
		return 0;
	case IB_SRQT_XRC:
		return init->ext.xrc.xrcd && init->ext.cq ? 0 : -EINVAL;
	default:
		return -EOPNOTSUPP;
	}
}

int sroce_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);
	struct sroce_create_srq_resp resp = {};
	struct ib_srq_attr *attr = &init->attr;
	u32 entries;
	int err;

	err = sroce_srq_check_type(init);
	if (err)
		return err;
	if (attr->max_wr > SROCE_MAX_SRQ_WR || attr->max_sge > SROCE_MAX_SGE)
		return -EINVAL;
	if (udata) {
		if (udata->inlen)
			return -EINVAL;
		if (udata->outlen < sizeof(resp))
			return -EINVAL;
	}

	srq->sdev = to_sdev(ibsrq->device);
	srq->is_user = !!udata;
	srq->limit = 0;
	refcount_set(&srq->ref, 1);
	init_completion(&srq->released);
	spin_lock_init(&srq->lock);
	spin_lock_init(&srq->post_lock);
	srq->user = sroce_udata_user(udata);
	err = sroce_obj_charge(&srq->sdev->limits, srq->user, SROCE_OBJ_SRQ);
	if (err)
		return err;
	err = ida_alloc_range(&sroce_srqn_ida, 1, SROCE_MAX_SRQ, GFP_KERNEL);
	if (err < 0) {
		err = err == -ENOSPC ? -ENOMEM : err;
		goto err_uncharge;
	}
	srq->srq_num = err;
	ibsrq->ext.xrc.srq_num = srq->srq_num;

	entries = roundup_pow_of_two(max(attr->max_wr, 1U));
	srq->rq.max_sge = max(attr->max_sge, 1U);
	err = sroce_queue_init(&srq->rq.queue, entries,
			       SROCE_RECV_WQE_HDR_SIZE +
			       srq->rq.max_sge * sizeof(struct sroce_sge));
	if (err)
		goto err_ida;
	srq->rq.consumer = 0;
	srq->rq.kproducer = 0;
	if (udata) {
		err = sroce_queue_mmap(&srq->rq.queue, udata, &resp.rq);
		if (err)
			goto err_queue;
		resp.srq_num = srq->srq_num;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_queue;
	}
	/* Publish: XRC requests can find it from here on. */
	if (sroce_srq_is_xrc(srq)) {
		err = xa_insert(&srq->sdev->srq_xa, srq->srq_num, srq,
				GFP_KERNEL);
		if (err)
			goto err_queue;
	}
	attr->max_wr = entries;
	attr->max_sge = srq->rq.max_sge;
	return 0;

err_queue:
	sroce_queue_free(&srq->rq.queue);
err_ida:
	ida_free(&sroce_srqn_ida, srq->srq_num);
err_uncharge:
	sroce_obj_uncharge(&srq->sdev->limits, srq->user, SROCE_OBJ_SRQ);
	return err;
}

int sroce_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);
	unsigned long flags;

	if (udata && udata->inlen)
		return -EINVAL;
	/* the ring is sized at creation: no resize */
	if (mask & ~IB_SRQ_LIMIT)
		return -EINVAL;
	if (!(mask & IB_SRQ_LIMIT))
		return 0;
	if (attr->srq_limit > srq->rq.queue.num_entries)
		return -EINVAL;
	spin_lock_irqsave(&srq->lock, flags);
	srq->limit = attr->srq_limit;
	spin_unlock_irqrestore(&srq->lock, flags);
	return 0;
}

int sroce_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);

	attr->max_wr = srq->rq.queue.num_entries;
	attr->max_sge = srq->rq.max_sge;
	attr->srq_limit = READ_ONCE(srq->limit);
	return 0;
}

/*
 * No new lookups, no new takes, no WQE held by a target QP; then no
 * packet still using it. Process context.
 */
static void sroce_srq_unpublish(struct sroce_srq *srq)
{
	unsigned long flags;

	xa_erase(&srq->sdev->srq_xa, srq->srq_num);
	spin_lock_irqsave(&srq->lock, flags);
	srq->dead = true;
	spin_unlock_irqrestore(&srq->lock, flags);
	synchronize_rcu();
	sroce_qp_srq_destroyed(srq->sdev, srq);
	sroce_srq_put(srq);
	wait_for_completion(&srq->released);
}

/*
 * ib_core destroys an SRQ only once no QP is attached to it; XRC target
 * QPs are not attached (see srq.h).
 */
int sroce_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);

	if (sroce_srq_is_xrc(srq))
		sroce_srq_unpublish(srq);

	sroce_queue_free(&srq->rq.queue);
	ida_free(&sroce_srqn_ida, srq->srq_num);
	sroce_obj_uncharge(&srq->sdev->limits, srq->user, SROCE_OBJ_SRQ);
	return 0;
}

int sroce_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);
	unsigned long flags;
	int err;

	if (srq->is_user) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&srq->post_lock, flags);
	err = sroce_rq_post_kernel(&srq->rq, wr, bad_wr);
	spin_unlock_irqrestore(&srq->post_lock, flags);
	return err;
}
