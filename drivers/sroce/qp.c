// SPDX-License-Identifier: GPL-2.0
/*
 * Queue pairs: creation with their rings, the state machine of modify_qp,
 * query, destroy, the receive queue (post_recv, the responder's peek and
 * complete, flush) and asynchronous events. Locking: struct sroce_qp.
 */

#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/vmalloc.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_verbs.h>

#include "sroce.h"
#include "qp.h"
#include "cq.h"
#include "mr.h"
#include "odp.h"
#include "ah.h"
#include "psn.h"
#include "srq.h"

#define SROCE_QPN_MIN		16
#define SROCE_QPN_MAX		0xffffff
#define SROCE_GSI_QPN		1

int sroce_transport_dev_init(struct sroce_dev *sdev)
{
	xa_init_flags(&sdev->qp_xa, XA_FLAGS_ALLOC);
	sdev->qpn_next = SROCE_QPN_MIN;
	sroce_mr_table_init(sdev);
	sroce_ah_table_init(sdev);
	sroce_mcast_dev_init(sdev);
	xa_init(&sdev->srq_xa);
	return 0;
}

void sroce_transport_dev_cleanup(struct sroce_dev *sdev)
{
	sroce_mcast_dev_cleanup(sdev);
	sroce_ah_table_fini(sdev);
	sroce_mr_table_fini(sdev);
	WARN_ON(!xa_empty(&sdev->srq_xa));
	xa_destroy(&sdev->srq_xa);
	WARN_ON(!xa_empty(&sdev->qp_xa));
	xa_destroy(&sdev->qp_xa);
}

struct sroce_qp *sroce_qp_get(struct sroce_dev *sdev, u32 qpn)
{
	struct sroce_qp *qp;

	rcu_read_lock();
	qp = xa_load(&sdev->qp_xa, qpn);
	if (qp && !refcount_inc_not_zero(&qp->ref))
		qp = NULL;
	rcu_read_unlock();
	return qp;
}

void sroce_qp_put(struct sroce_qp *qp)
{
	if (refcount_dec_and_test(&qp->ref))
		complete(&qp->released);
}

struct ib_qp *sroce_qp_lookup_ib(struct sroce_dev *sdev, u32 qpn)
{
	struct sroce_qp *qp;

	rcu_read_lock();
	qp = xa_load(&sdev->qp_xa, qpn);
	rcu_read_unlock();
	return qp ? &qp->ibqp : NULL;
}

void sroce_qp_event(struct sroce_qp *qp, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.element.qp = &qp->ibqp,
		.event = type,
	};

	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/* ---- creation ---- */

static int sroce_qp_check_caps(const struct ib_qp_init_attr *init)
{
	const struct ib_qp_cap *cap = &init->cap;

	if (cap->max_send_wr > SROCE_MAX_QP_WR ||
	    cap->max_recv_wr > SROCE_MAX_QP_WR ||
	    cap->max_send_sge > SROCE_MAX_SGE ||
	    cap->max_recv_sge > SROCE_MAX_SGE ||
	    cap->max_inline_data > SROCE_MAX_INLINE_DATA)
		return -EINVAL;
	return 0;
}

/*
 * SQ ring: a power of two of at least max_send_wr slots (at least one),
 * each a 64-byte header and room for max_send_sge SGEs or max_inline_data
 * bytes, rounded up to a 64-byte multiple. What the rounding gives for free
 * is reported back in the caps.
 */
static int sroce_qp_init_sq(struct sroce_qp *qp, struct ib_qp_cap *cap)
{
	struct sroce_sq *sq = &qp->sq;
	u32 entries, data, stride;
	int err;

	entries = roundup_pow_of_two(max(cap->max_send_wr, 1U));
	data = max3(cap->max_send_sge * (u32)sizeof(struct sroce_sge),
		    cap->max_inline_data, (u32)sizeof(struct sroce_sge));
	stride = ALIGN(SROCE_SEND_WQE_HDR_SIZE + data, 64);
	sq->max_sge = min_t(u32, (stride - SROCE_SEND_WQE_HDR_SIZE) /
			    sizeof(struct sroce_sge), SROCE_MAX_SGE);
	sq->max_inline = min_t(u32, stride - SROCE_SEND_WQE_HDR_SIZE,
			       SROCE_MAX_INLINE_DATA);

	err = sroce_queue_init(&sq->queue, entries, stride);
	if (err)
		return err;
	sq->shadow_stride = ALIGN(sizeof(struct sroce_swqe) +
				  max_t(u32, sq->max_sge *
					sizeof(struct sroce_sge),
					sq->max_inline), 8);
	sq->shadow = kvcalloc(entries, sq->shadow_stride, GFP_KERNEL_ACCOUNT);
	if (!sq->shadow) {
		sroce_queue_free(&sq->queue);
		return -ENOMEM;
	}
	cap->max_send_wr = entries;
	cap->max_send_sge = sq->max_sge;
	cap->max_inline_data = sq->max_inline;
	return 0;
}

static void sroce_qp_free_sq(struct sroce_qp *qp)
{
	kvfree(qp->sq.shadow);
	sroce_queue_free(&qp->sq.queue);
}

static int sroce_qp_init_rq(struct sroce_qp *qp, struct ib_qp_cap *cap)
{
	struct sroce_rq *rq = &qp->rq;
	u32 entries;
	int err;

	entries = roundup_pow_of_two(max(cap->max_recv_wr, 1U));
	rq->max_sge = max(cap->max_recv_sge, 1U);
	err = sroce_queue_init(&rq->queue, entries, SROCE_RECV_WQE_HDR_SIZE +
			       rq->max_sge * sizeof(struct sroce_sge));
	if (err)
		return err;
	cap->max_recv_wr = entries;
	cap->max_recv_sge = rq->max_sge;
	return 0;
}

static int sroce_qp_alloc_qpn(struct sroce_dev *sdev, struct sroce_qp *qp)
{
	u32 qpn;
	int err;

	if (qp->ibqp.qp_type == IB_QPT_GSI) {
		/* Reserved until the QP is ready, then published. */
		err = xa_insert(&sdev->qp_xa, SROCE_GSI_QPN, NULL, GFP_KERNEL);
		if (err)
			return err;
		qp->ibqp.qp_num = SROCE_GSI_QPN;
		return 0;
	}
	err = xa_alloc_cyclic(&sdev->qp_xa, &qpn, NULL,
			      XA_LIMIT(SROCE_QPN_MIN, SROCE_QPN_MAX),
			      &sdev->qpn_next, GFP_KERNEL);
	if (err < 0)
		return err;
	qp->ibqp.qp_num = qpn;
	return 0;
}

/*
 * Does the QP receive into its own RQ ring? Not with an SRQ, not the XRC
 * QPs: the send QP receives nothing, the target QP into XRC SRQs. Those
 * two still get a one-slot kernel RQ nobody posts to, so the ring code
 * needs no special case.
 */
static bool sroce_qp_own_rq(const struct sroce_qp *qp)
{
	return !qp->srq && qp->ibqp.qp_type != IB_QPT_XRC_INI &&
	       qp->ibqp.qp_type != IB_QPT_XRC_TGT;
}

/* QPs that take receive WQEs from an SRQ: their own or the packet's. */
static bool sroce_qp_srq_like(const struct sroce_qp *qp)
{
	return qp->srq || sroce_qp_is_xrc_tgt(qp);
}

static int sroce_qp_respond(struct sroce_qp *qp, struct ib_udata *udata)
{
	struct sroce_create_qp_resp resp = {};
	int err;

	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	err = sroce_queue_mmap(&qp->sq.queue, udata, &resp.sq);
	if (err)
		return err;
	if (sroce_qp_own_rq(qp)) {
		err = sroce_queue_mmap(&qp->rq.queue, udata, &resp.rq);
		if (err)
			return err;
	}
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

/* ---- the path (struct sroce_qp.path) ---- */

static struct sroce_qp_path *sroce_qp_path_alloc(void)
{
	struct sroce_qp_path *path = kzalloc(sizeof(*path), GFP_KERNEL);

	if (path && sroce_av_cache_init(&path->av, GFP_KERNEL)) {
		kfree(path);
		path = NULL;
	}
	return path;
}

static void sroce_qp_path_free(struct sroce_qp_path *path)
{
	sroce_av_cache_destroy(&path->av);
	kfree(path);
}

/* sroce_exit() waits for these with rcu_barrier(). */
static void sroce_qp_path_free_rcu(struct rcu_head *head)
{
	sroce_qp_path_free(container_of(head, struct sroce_qp_path, rcu));
}

static struct sroce_qp_path *sroce_qp_path_locked(struct sroce_qp *qp)
{
	return rcu_dereference_protected(qp->path,
					 lockdep_is_held(&qp->mutex));
}

int sroce_qp_xmit(struct sroce_qp *qp, struct sk_buff *skb)
{
	int err;

	rcu_read_lock();
	err = sroce_net_xmit(qp->sdev, sroce_qp_av(qp), skb);
	rcu_read_unlock();
	return err;
}

void sroce_qp_release_routes(struct sroce_dev *sdev)
{
	struct sroce_qp *qp;
	unsigned long qpn;
	void *entry;

	xa_for_each(&sdev->qp_xa, qpn, entry) {
		qp = sroce_qp_get(sdev, qpn);
		if (!qp)
			continue;
		mutex_lock(&qp->mutex);
		sroce_av_cache_release(&sroce_qp_path_locked(qp)->av);
		mutex_unlock(&qp->mutex);
		sroce_qp_put(qp);
	}
	/*
	 * A path replaced before the loop above reached its QP may still
	 * cache routes until its RCU callback runs; replaced later, it
	 * caches none (nothing transmits any more).
	 */
	rcu_barrier();
}

static int sroce_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
			   struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibqp->device);
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_qp_path *path;
	int err;

	switch (init->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
		break;
	case IB_QPT_GSI:
		if (udata || init->srq)
			return -EINVAL;
		break;
	case IB_QPT_XRC_INI:
		/* kernel WRs cannot name the remote SRQ */
		if (!udata || init->srq)
			return -EINVAL;
		init->cap.max_recv_wr = 0;
		init->cap.max_recv_sge = 0;
		break;
	case IB_QPT_XRC_TGT:
		/* ib_core creates it without udata: it has no ring to map */
		if (!init->xrcd || init->srq)
			return -EINVAL;
		init->cap = (struct ib_qp_cap) {};
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (init->create_flags)
		return -EOPNOTSUPP;
	if (udata && udata->inlen)
		return -EINVAL;
	err = sroce_qp_check_caps(init);
	if (err)
		return err;
	qp->user = udata ? sroce_udata_user(udata) :
		   init->xrcd ? to_sxrcd(init->xrcd)->user : NULL;
	err = sroce_obj_charge(&sdev->limits, qp->user, SROCE_OBJ_QP);
	if (err)
		return err;

	qp->sdev = sdev;
	qp->is_user = !!udata;
	qp->xrcd = init->xrcd;
	qp->sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->state = IB_QPS_RESET;
	qp->attr.path_mtu = IB_MTU_1024;
	qp->attr.mtu = ib_mtu_enum_to_int(IB_MTU_1024);
	refcount_set(&qp->ref, 1);
	init_completion(&qp->released);
	mutex_init(&qp->mutex);
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->sq_post_lock);
	spin_lock_init(&qp->rq_lock);
	spin_lock_init(&qp->rq_post_lock);
	spin_lock_init(&qp->mw_lock);
	INIT_LIST_HEAD(&qp->mw_list);
	err = sroce_req_init(qp);
	if (err)
		goto err_uncharge;
	sroce_comp_timers_init(qp);

	err = sroce_qp_init_sq(qp, &init->cap);
	if (err)
		goto err_req;
	if (init->srq) {
		qp->srq = to_ssrq(init->srq);
		init->cap.max_recv_wr = 0;
		init->cap.max_recv_sge = 0;
	} else {
		err = sroce_qp_init_rq(qp, &init->cap);
		if (err)
			goto err_sq;
		if (!sroce_qp_own_rq(qp)) {
			init->cap.max_recv_wr = 0;
			init->cap.max_recv_sge = 0;
		}
	}
	err = -ENOMEM;
	path = sroce_qp_path_alloc();
	if (!path)
		goto err_rq;
	RCU_INIT_POINTER(qp->path, path);
	err = sroce_resp_init(qp);
	if (err)
		goto err_av;
	err = sroce_qp_alloc_qpn(sdev, qp);
	if (err)
		goto err_resp;
	if (udata) {
		err = sroce_qp_respond(qp, udata);
		if (err)
			goto err_qpn;
	}
	/* Publish: packets can find the QP from here on (it is in RESET). */
	xa_store(&sdev->qp_xa, ibqp->qp_num, qp, GFP_KERNEL);
	return 0;

err_qpn:
	xa_erase(&sdev->qp_xa, ibqp->qp_num);
err_resp:
	sroce_resp_cleanup(qp);
err_av:
	sroce_qp_path_free(path);
err_rq:
	sroce_queue_free(&qp->rq.queue);
err_sq:
	sroce_qp_free_sq(qp);
err_req:
	sroce_req_cleanup(qp);
err_uncharge:
	sroce_obj_uncharge(&sdev->limits, qp->user, SROCE_OBJ_QP);
	return err;
}

/*
 * The SRQ WQE the QP holds is gone (completed, flushed, dropped); an XRC
 * target QP lets go of its SRQ. rq_lock held.
 */
static void sroce_rq_unbind(struct sroce_qp *qp)
{
	struct sroce_rq *rq = &qp->rq;

	rq->srq_held = false;
	if (rq->xsrq) {
		sroce_srq_put(rq->xsrq);
		rq->xsrq = NULL;
	}
}

void sroce_qp_srq_destroyed(struct sroce_dev *sdev, struct sroce_srq *srq)
{
	struct sroce_qp *qp;
	unsigned long qpn, flags;
	void *entry;

	xa_for_each(&sdev->qp_xa, qpn, entry) {
		qp = sroce_qp_get(sdev, qpn);
		if (!qp)
			continue;
		spin_lock_irqsave(&qp->rq_lock, flags);
		if (qp->rq.xsrq == srq)
			sroce_rq_unbind(qp);
		spin_unlock_irqrestore(&qp->rq_lock, flags);
		sroce_qp_put(qp);
	}
}

static int sroce_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibqp->device);
	struct sroce_qp *qp = to_sqp(ibqp);
	unsigned long flags;

	/* ib_core detaches first; a QP left attached leaves its groups here. */
	if (qp->mcast_num)
		sroce_mcast_qp_cleanup(qp);

	spin_lock_irqsave(&qp->sq_lock, flags);
	WRITE_ONCE(qp->state, IB_QPS_RESET);
	spin_unlock_irqrestore(&qp->sq_lock, flags);

	/*
	 * No new lookups or transmit wake-ups, then none still racing, then
	 * no holder.
	 */
	xa_erase(&sdev->qp_xa, ibqp->qp_num);
	sroce_req_detach(qp);
	synchronize_rcu();
	sroce_qp_put(qp);
	wait_for_completion(&qp->released);

	sroce_comp_timers_stop(qp, true);
	cancel_work_sync(&qp->req.work);
	spin_lock_irqsave(&qp->rq_lock, flags);
	sroce_rq_unbind(qp);
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	sroce_mw_qp_destroyed(ibqp);
	sroce_req_cleanup(qp);
	sroce_resp_cleanup(qp);
	/* nothing reads the path any more: see above */
	sroce_qp_path_free(rcu_dereference_protected(qp->path, true));
	sroce_queue_free(&qp->rq.queue);
	sroce_qp_free_sq(qp);
	sroce_obj_uncharge(&sdev->limits, qp->user, SROCE_OBJ_QP);
	return 0;
}

/* ---- modify and query ---- */

static u32 sroce_timeout_jiffies(u8 timeout)
{
	/* 4.096 us * 2^timeout; 0 means no timeout (IBTA 9.7.6.1.3). */
	if (!timeout)
		return 0;
	return max_t(unsigned long, nsecs_to_jiffies(4096ULL << timeout), 1);
}

/*
 * ib_cm (6.2 on) grants a QP both FLUSH bits whenever the device offers
 * any FLUSH: take both; no MR ever grants FLUSH_PERSISTENT (mr.c).
 * ON_DEMAND is an MR's property, meaningless on a QP; consumers that pass
 * their MRs' access flags to their QPs (rdma-core's ODP tests) get it
 * ignored, as on other devices offering ODP.
 */
#define SROCE_QP_ACCESS_MASK \
	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
	 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
	 IB_ACCESS_ON_DEMAND | \
	 (SROCE_HAVE_FLUSH_ACCESS ? SROCE_ACCESS_FLUSH_GLOBAL | \
	  SROCE_ACCESS_FLUSH_PERSISTENT : 0))

static int sroce_qp_check_attr(struct sroce_qp *qp,
			       const struct ib_qp_attr *attr, int mask)
{
	struct sroce_dev *sdev = qp->sdev;

	if ((mask & IB_QP_PORT) && attr->port_num != SROCE_PORT)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index != 0)
		return -EINVAL;
	if (mask & IB_QP_PATH_MTU) {
		enum ib_mtu max = iboe_get_mtu(READ_ONCE(sdev->ndev->mtu));

		if (attr->path_mtu < IB_MTU_256 || attr->path_mtu > max)
			return -EINVAL;
	}
	if ((mask & IB_QP_TIMEOUT) && attr->timeout > 31)
		return -EINVAL;
	if ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IB_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > SROCE_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > SROCE_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~SROCE_QP_ACCESS_MASK))
		return -EINVAL;
	if ((mask & IB_QP_DEST_QPN) && attr->dest_qp_num > SROCE_QPN_MAX)
		return -EINVAL;
	if ((mask & IB_QP_SQ_PSN) && attr->sq_psn > SROCE_PSN_MASK)
		return -EINVAL;
	if ((mask & IB_QP_RQ_PSN) && attr->rq_psn > SROCE_PSN_MASK)
		return -EINVAL;
	if (mask & (IB_QP_ALT_PATH | IB_QP_PATH_MIG_STATE))
		return -EOPNOTSUPP;
	return 0;
}

/* Attributes only the connection's own messages use (under qp->mutex). */
static void sroce_qp_apply_attr(struct sroce_qp *qp,
				const struct ib_qp_attr *attr, int mask)
{
	struct sroce_qp_attrs *a = &qp->attr;

	if (mask & IB_QP_QKEY)
		WRITE_ONCE(a->qkey, attr->qkey);
	if (mask & IB_QP_PATH_MTU) {
		a->path_mtu = attr->path_mtu;
		WRITE_ONCE(a->mtu, ib_mtu_enum_to_int(attr->path_mtu));
	}
	if (mask & IB_QP_ACCESS_FLAGS)
		WRITE_ONCE(a->access_flags, attr->qp_access_flags);
	if (mask & IB_QP_DEST_QPN)
		WRITE_ONCE(a->dest_qpn, attr->dest_qp_num);
	if (mask & IB_QP_TIMEOUT) {
		a->timeout = attr->timeout;
		WRITE_ONCE(qp->comp.timeout_jiffies,
			   sroce_timeout_jiffies(attr->timeout));
	}
	if (mask & IB_QP_RETRY_CNT)
		a->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		a->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_MIN_RNR_TIMER)
		WRITE_ONCE(a->min_rnr_timer, attr->min_rnr_timer);
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		WRITE_ONCE(a->max_rd_atomic, attr->max_rd_atomic);
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_RQ_PSN)
		a->rq_psn = attr->rq_psn;
	if (mask & IB_QP_SQ_PSN)
		a->sq_psn = attr->sq_psn;
	if (mask & IB_QP_PKEY_INDEX)
		a->pkey_index = attr->pkey_index;
}

/* Empty both rings as RESET requires (the provider's counters stay). */
static void sroce_qp_reset_rings(struct sroce_qp *qp)
{
	u32 prod;

	prod = sroce_queue_load_producer(&qp->sq.queue);
	qp->sq.tail = prod;
	qp->sq.fetched = prod;
	qp->sq.kproducer = prod;
	sroce_queue_publish_consumer(&qp->sq.queue, prod);
	sroce_comp_reset(qp);

	spin_lock(&qp->rq_lock);
	if (sroce_qp_srq_like(qp)) {
		/* a WQE taken from the SRQ is lost, as RESET allows */
		sroce_rq_unbind(qp);
		qp->rq.last_wqe_done = false;
	} else {
		prod = sroce_queue_load_producer(&qp->rq.queue);
		qp->rq.consumer = prod;
		qp->rq.kproducer = prod;
		sroce_queue_publish_consumer(&qp->rq.queue, prod);
	}
	spin_unlock(&qp->rq_lock);
}

/* The state change itself (sq_lock held). */
static void sroce_qp_set_state(struct sroce_qp *qp, enum ib_qp_state cur,
			       enum ib_qp_state new,
			       const struct ib_qp_attr *attr, int mask,
			       struct sroce_comp_notify *n)
{
	if (mask & IB_QP_SQ_PSN) {
		qp->req.psn = qp->attr.sq_psn;
		qp->req.psn_max = qp->attr.sq_psn;
		qp->req.psn_sent = qp->attr.sq_psn;
		qp->comp.psn = qp->attr.sq_psn;
	}
	if (new == IB_QPS_RTS && cur != IB_QPS_RTS) {
		qp->comp.retry_left = qp->attr.retry_cnt;
		qp->comp.rnr_left = qp->attr.rnr_retry;
		sroce_cc_reset(&qp->comp);
	}
	if (new == IB_QPS_SQD && cur != IB_QPS_SQD) {
		qp->attr.sq_draining = 1;
		qp->attr.sqd_notify = (mask & IB_QP_EN_SQD_ASYNC_NOTIFY) &&
				      attr->en_sqd_async_notify;
	}

	switch (new) {
	case IB_QPS_RESET:
		WRITE_ONCE(qp->state, new);
		sroce_queue_set_flags(&qp->rq.queue, 0);
		sroce_sq_set_draining(qp, false);
		sroce_qp_reset_rings(qp);
		break;
	case IB_QPS_ERR:
		sroce_qp_error_locked(qp, n);
		break;
	default:
		WRITE_ONCE(qp->state, new);
		sroce_comp_check_drained(qp, n);
		break;
	}
}

/*
 * The path modify_qp publishes when @mask changes it (the AV, or the
 * remote QPN that the UDP source port derives from), NULL when it does
 * not, or an ERR_PTR. Under qp->mutex.
 */
static struct sroce_qp_path *sroce_qp_new_path(struct sroce_qp *qp,
					       const struct ib_qp_attr *attr,
					       int mask)
{
	struct sroce_qp_path *path;
	u32 dest_qpn = qp->attr.dest_qpn;
	int err;

	if (!(mask & (IB_QP_AV | IB_QP_DEST_QPN)))
		return NULL;
	path = sroce_qp_path_alloc();
	if (!path)
		return ERR_PTR(-ENOMEM);
	if (mask & IB_QP_AV) {
		err = sroce_av_from_ah_attr(qp->sdev, &attr->ah_attr,
					    &path->av);
		if (err) {
			sroce_qp_path_free(path);
			return ERR_PTR(err);
		}
	} else {
		sroce_av_copy(&path->av, &sroce_qp_path_locked(qp)->av);
	}
	if (mask & IB_QP_DEST_QPN)
		dest_qpn = attr->dest_qp_num;
	sroce_av_set_qpns(&path->av, qp->ibqp.qp_num, dest_qpn);
	return path;
}

static int sroce_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
			   int mask, struct ib_udata *udata)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_comp_notify n = {};
	struct sroce_qp_path *path = NULL;
	enum ib_qp_state cur, new;
	unsigned long flags;
	int err;

	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;
	if (udata && udata->inlen)
		return -EINVAL;

	mutex_lock(&qp->mutex);
	cur = (mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : qp->state;
	new = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	err = -EINVAL;
	if (cur != qp->state && !(cur == IB_QPS_SQE && qp->state == IB_QPS_ERR))
		goto out;
	if (!ib_modify_qp_is_ok(cur, new, ibqp->qp_type, mask))
		goto out;
	err = sroce_qp_check_attr(qp, attr, mask);
	if (err)
		goto out;
	path = sroce_qp_new_path(qp, attr, mask);
	if (IS_ERR(path)) {
		err = PTR_ERR(path);
		path = NULL;
		goto out;
	}
	err = sroce_resp_modify(qp, attr, mask);
	if (err)
		goto out;

	sroce_qp_apply_attr(qp, attr, mask);
	if (path) {
		path = rcu_replace_pointer(qp->path, path,
					   lockdep_is_held(&qp->mutex));
		call_rcu(&path->rcu, sroce_qp_path_free_rcu);
		path = NULL;
	}

	spin_lock_irqsave(&qp->sq_lock, flags);
	sroce_qp_set_state(qp, cur, new, attr, mask, &n);
	spin_unlock_irqrestore(&qp->sq_lock, flags);

	if (new == IB_QPS_RESET) {
		sroce_comp_timers_stop(qp, false);
		sroce_resp_reset_sync(qp);
	}
out:
	mutex_unlock(&qp->mutex);
	if (path)
		sroce_qp_path_free(path);
	sroce_comp_notify(qp, &n);
	if (!err && (new == IB_QPS_RTS || new == IB_QPS_ERR))
		sroce_req_run(qp);
	return err;
}

static int sroce_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
			  int mask, struct ib_qp_init_attr *init)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	const struct sroce_qp_attrs *a = &qp->attr;

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));

	mutex_lock(&qp->mutex);
	attr->qp_state = sroce_qp_state(qp);
	attr->cur_qp_state = attr->qp_state;
	attr->path_mtu = a->path_mtu;
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->qkey = a->qkey;
	attr->rq_psn = a->rq_psn;
	attr->sq_psn = a->sq_psn;
	attr->dest_qp_num = a->dest_qpn;
	attr->qp_access_flags = a->access_flags;
	attr->pkey_index = a->pkey_index;
	attr->port_num = SROCE_PORT;
	attr->timeout = a->timeout;
	attr->retry_cnt = a->retry_cnt;
	attr->rnr_retry = a->rnr_retry;
	attr->min_rnr_timer = a->min_rnr_timer;
	attr->max_rd_atomic = a->max_rd_atomic;
	attr->max_dest_rd_atomic = a->max_dest_rd_atomic;
	attr->sq_draining = attr->qp_state == IB_QPS_SQD && a->sq_draining;
	if (ibqp->qp_type == IB_QPT_RC || ibqp->qp_type == IB_QPT_UC ||
	    ibqp->qp_type == IB_QPT_XRC_INI || ibqp->qp_type == IB_QPT_XRC_TGT)
		sroce_av_to_ah_attr(&sroce_qp_path_locked(qp)->av,
				    &attr->ah_attr);
	mutex_unlock(&qp->mutex);

	/* no caps for rings nobody posts to (SRQ, XRC placeholders) */
	if (!sroce_qp_is_xrc_tgt(qp)) {
		attr->cap.max_send_wr = qp->sq.queue.num_entries;
		attr->cap.max_send_sge = qp->sq.max_sge;
		attr->cap.max_inline_data = qp->sq.max_inline;
	}
	if (sroce_qp_own_rq(qp)) {
		attr->cap.max_recv_wr = qp->rq.queue.num_entries;
		attr->cap.max_recv_sge = qp->rq.max_sge;
	}

	init->event_handler = ibqp->event_handler;
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	init->qp_type = ibqp->qp_type;
	init->port_num = SROCE_PORT;
	return 0;
}

/* ---- error ---- */

void sroce_qp_error(struct sroce_qp *qp)
{
	struct sroce_comp_notify n = {};
	unsigned long flags;

	spin_lock_irqsave(&qp->sq_lock, flags);
	sroce_qp_error_locked(qp, &n);
	spin_unlock_irqrestore(&qp->sq_lock, flags);
	sroce_comp_notify(qp, &n);
}

/* ---- receive queue ---- */

/*
 * The CQ receive completions of @qp go to: an XRC target QP's are its
 * held WQE's SRQ's, whose reference @n then keeps for the handler call
 * (sroce_comp_notify()). rq_lock held.
 */
static struct sroce_cq *sroce_rq_cq(struct sroce_qp *qp,
				    struct sroce_comp_notify *n)
{
	struct sroce_srq *srq = qp->rq.xsrq;

	if (!srq)
		return to_scq(qp->ibqp.recv_cq);
	if (!n->recv_srq) {
		refcount_inc(&srq->ref);
		n->recv_srq = srq;
	}
	return to_scq(srq->ibsrq.ext.cq);
}

/* Flushed receive completion, with rq_lock held. */
static void sroce_rq_flush_one(struct sroce_qp *qp, u64 wr_id,
			       struct sroce_comp_notify *n)
{
	struct sroce_cqe cqe = {
		.wr_id = wr_id,
		.status = IB_WC_WR_FLUSH_ERR,
		.opcode = SROCE_WC_RECV,
		.qp_num = qp->ibqp.qp_num,
	};

	sroce_cq_post_locked(sroce_rq_cq(qp, n), &cqe, false, &n->recv_cq);
}

void sroce_rq_flush(struct sroce_qp *qp, struct sroce_comp_notify *n)
{
	struct sroce_rq *rq = &qp->rq;
	const struct sroce_recv_wqe *slot;
	unsigned long flags;
	u32 prod;

	spin_lock_irqsave(&qp->rq_lock, flags);
	if (sroce_qp_state(qp) != IB_QPS_ERR)
		goto out;
	if (sroce_qp_srq_like(qp)) {
		/* the SRQ's WQEs stay for the other QPs: only the held one */
		if (rq->srq_held) {
			sroce_rq_flush_one(qp, rq->srq_wr_id, n);
			sroce_rq_unbind(qp);
		}
		if (qp->srq && !rq->last_wqe_done) {
			rq->last_wqe_done = true;
			n->last_wqe = true;
		}
		goto out;
	}
	/*
	 * The error state (and its ring flag) is stored before producer is
	 * read; a poster stores producer before it reads them (provider:
	 * sroce-abi.h; kernel consumers: sroce_post_recv()). With a full
	 * barrier on both sides, either this sees its WQEs or it sees the
	 * error and asks for this flush again: none is left in the ring.
	 */
	smp_mb();
	prod = sroce_queue_load_producer(&rq->queue);
	if (prod - rq->consumer > rq->queue.num_entries) {
		/* Corrupted by user space: nothing trustworthy to flush. */
		rq->consumer = prod;
	}
	while (rq->consumer != prod) {
		slot = sroce_queue_slot(&rq->queue, rq->consumer);
		sroce_rq_flush_one(qp, READ_ONCE(slot->wr_id), n);
		rq->consumer++;
	}
	sroce_queue_publish_consumer(&rq->queue, rq->consumer);
out:
	spin_unlock_irqrestore(&qp->rq_lock, flags);
}

/* sroce_rq_peek() of a QP with an SRQ, or an XRC target QP */
static int sroce_rq_peek_srq(struct sroce_qp *qp, struct sroce_rwqe *wqe,
			     struct sroce_comp_notify *n)
{
	struct sroce_srq *srq = qp->srq ?: qp->resp.xrc_srq;
	struct sroce_rq *rq = &qp->rq;
	bool limit_hit = false;
	unsigned long flags;
	int err = 0;

	if (WARN_ON_ONCE(!srq))
		return -EIO;	/* resp.c checks the packet's SRQ first */

	spin_lock_irqsave(&qp->rq_lock, flags);
	if (rq->srq_held)
		goto out;	/* @wqe still is the copy of the held WQE */
	if (sroce_qp_state(qp) == IB_QPS_ERR) {
		/* flushed or about to be: nothing more is taken */
		err = -EAGAIN;
		goto out;
	}
	err = sroce_srq_take(srq, wqe, &limit_hit);
	if (!err) {
		rq->srq_held = true;
		rq->srq_wr_id = wqe->wr_id;
		if (!qp->srq) {
			/* the packet's reference keeps it until here */
			refcount_inc(&srq->ref);
			rq->xsrq = srq;
		}
	}
out:
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	if (limit_hit)
		n->srq_limit = srq;
	return err;
}

int sroce_rwqe_copy(const struct sroce_rq *rq, u32 index,
		    struct sroce_rwqe *wqe)
{
	const struct sroce_recv_wqe *slot = sroce_queue_slot(&rq->queue, index);
	u32 num_sge;
	s64 len;

	wqe->wr_id = READ_ONCE(slot->wr_id);
	num_sge = READ_ONCE(slot->num_sge);
	if (num_sge > rq->max_sge)
		return -EIO;
	memcpy(wqe->sge, (const u8 *)slot + SROCE_RECV_WQE_HDR_SIZE,
	       num_sge * sizeof(struct sroce_sge));
	len = sroce_sgl_length(wqe->sge, num_sge);
	if (len < 0)
		return -EIO;
	wqe->num_sge = num_sge;
	wqe->length = len;
	wqe->index = index;
	return 0;
}

int sroce_rq_peek(struct sroce_qp *qp, struct sroce_rwqe *wqe,
		  struct sroce_comp_notify *n)
{
	struct sroce_rq *rq = &qp->rq;
	unsigned long flags;
	int err = 0;
	u32 prod;

	if (sroce_qp_srq_like(qp))
		return sroce_rq_peek_srq(qp, wqe, n);
	spin_lock_irqsave(&qp->rq_lock, flags);
	prod = sroce_queue_load_producer(&rq->queue);
	if (prod == rq->consumer) {
		err = -EAGAIN;
		goto out;
	}
	if (prod - rq->consumer > rq->queue.num_entries) {
		err = -EIO;
		goto out;
	}
	err = sroce_rwqe_copy(rq, rq->consumer, wqe);
out:
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	return err;
}

bool sroce_rq_complete(struct sroce_qp *qp, const struct sroce_rwqe *wqe,
		       const struct sroce_cqe *cqe, bool solicited,
		       struct sroce_comp_notify *n)
{
	bool notify = false, done = false;
	unsigned long flags;
	int err = 0;

	spin_lock_irqsave(&qp->rq_lock, flags);
	if (sroce_qp_srq_like(qp)) {
		if (qp->rq.srq_held) {
			err = sroce_cq_post_locked(sroce_rq_cq(qp, n), cqe,
						   solicited, &notify);
			sroce_rq_unbind(qp);
			done = true;
		}
	} else if (qp->rq.consumer == wqe->index) {
		qp->rq.consumer++;
		sroce_queue_publish_consumer(&qp->rq.queue, qp->rq.consumer);
		err = sroce_cq_post_locked(to_scq(qp->ibqp.recv_cq), cqe,
					   solicited, &notify);
		done = true;
	}
	spin_unlock_irqrestore(&qp->rq_lock, flags);

	n->recv_cq |= notify;
	n->enter_error |= !!err;	/* the CQ overflowed */
	return done;
}

/* One kernel consumer's receive WQE into @rq's ring, not published yet. */
static int sroce_rq_post_one(struct sroce_rq *rq, const struct ib_recv_wr *wr)
{
	struct sroce_recv_wqe *slot;
	struct sroce_sge *sge;
	int i;

	if (wr->num_sge > rq->max_sge)
		return -EINVAL;
	if (rq->kproducer - sroce_queue_load_consumer(&rq->queue) >=
	    rq->queue.num_entries)
		return -ENOMEM;
	slot = sroce_queue_slot(&rq->queue, rq->kproducer);
	slot->wr_id = wr->wr_id;
	slot->num_sge = wr->num_sge;
	sge = (struct sroce_sge *)((u8 *)slot + SROCE_RECV_WQE_HDR_SIZE);
	for (i = 0; i < wr->num_sge; i++) {
		sge[i].addr = wr->sg_list[i].addr;
		sge[i].length = wr->sg_list[i].length;
		sge[i].lkey = wr->sg_list[i].lkey;
	}
	rq->kproducer++;
	return 0;
}

int sroce_rq_post_kernel(struct sroce_rq *rq, const struct ib_recv_wr *wr,
			 const struct ib_recv_wr **bad_wr)
{
	int err = 0;

	for (; wr; wr = wr->next) {
		err = sroce_rq_post_one(rq, wr);
		if (err) {
			*bad_wr = wr;
			break;
		}
	}
	sroce_queue_publish_producer(&rq->queue, rq->kproducer);
	return err;
}

int sroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_comp_notify n = {};
	unsigned long flags;
	int err = 0;

	if (qp->is_user || !sroce_qp_own_rq(qp)) {
		*bad_wr = wr;
		return -EINVAL;
	}
	if (sroce_qp_state(qp) == IB_QPS_RESET) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&qp->rq_post_lock, flags);
	err = sroce_rq_post_kernel(&qp->rq, wr, bad_wr);
	spin_unlock_irqrestore(&qp->rq_post_lock, flags);

	/* the WQEs are published before the state is read: sroce_rq_flush() */
	smp_mb();
	if (sroce_qp_state(qp) == IB_QPS_ERR) {
		sroce_rq_flush(qp, &n);
		sroce_comp_notify(qp, &n);
	}
	return err;
}

/* ---- the verbs of the transport objects ---- */

const struct ib_device_ops sroce_transport_ops = {
	.create_qp = sroce_create_qp,
	.modify_qp = sroce_modify_qp,
	.query_qp = sroce_query_qp,
	.destroy_qp = sroce_destroy_qp,
	.post_send = sroce_post_send,
	.post_recv = sroce_post_recv,

	.create_cq = sroce_create_cq,
	.destroy_cq = sroce_destroy_cq,
	SROCE_OPS_RESIZE_CQ,
	.poll_cq = sroce_poll_cq,
	.req_notify_cq = sroce_req_notify_cq,

	.get_dma_mr = sroce_get_dma_mr,
	SROCE_OPS_REG_USER_MR,
	.rereg_user_mr = sroce_rereg_user_mr,
	.dereg_mr = sroce_dereg_mr,
	.alloc_mw = sroce_alloc_mw,
	.dealloc_mw = sroce_dealloc_mw,
	.alloc_mr = sroce_alloc_mr,
	.map_mr_sg = sroce_map_mr_sg,
	.advise_mr = sroce_advise_mr,

	.create_srq = sroce_create_srq,
	.modify_srq = sroce_modify_srq,
	.query_srq = sroce_query_srq,
	.destroy_srq = sroce_destroy_srq,
	.post_srq_recv = sroce_post_srq_recv,

	.create_ah = sroce_create_ah,
	.create_user_ah = sroce_create_ah,
	.query_ah = sroce_query_ah,
	.destroy_ah = sroce_destroy_ah,

	.attach_mcast = sroce_attach_mcast,
	.detach_mcast = sroce_detach_mcast,

	INIT_RDMA_OBJ_SIZE(ib_qp, sroce_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_cq, sroce_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_ah, sroce_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_srq, sroce_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_mw, sroce_mw, ibmw),
};
