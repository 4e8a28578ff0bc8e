/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared receive queues: a receive ring (same layout as a QP's RQ) that
 * the responders of several QPs take receive WQEs from.
 *
 * A QP takes a WQE from its SRQ for good when a message starts
 * (sroce_srq_take()); until that message completes the WQE is the QP's
 * (qp->rq.srq_held, under qp->rq_lock): a flush completes it with
 * IB_WC_WR_FLUSH_ERR, a dropped UD/UC message leaves it with the QP for
 * the next one. Whoever gets there first under qp->rq_lock wins, as for a
 * QP's own RQ.
 *
 * Locking: srq->lock (irqsave) protects the consumer side (rq.consumer)
 * and the armed limit; it nests inside qp->rq_lock. post_lock protects
 * rq.kproducer of kernel SRQs. The limit event is raised with no lock held.
 *
 * XRC SRQs (IB_SRQT_XRC) belong to an XRC domain and complete into their
 * own CQ (ibsrq.ext). No QP is attached to them: a request names one in
 * its XRCETH, and the XRC target QP it arrives on finds it by number in
 * sdev->srq_xa with sroce_srq_get() (a reference for the packet) and must
 * belong to the same domain. A target QP that takes a WQE for a message
 * keeps a reference while it holds it (qp->rq.xsrq); destroy_srq removes
 * the number, marks the SRQ dead (no more takes) and makes every target
 * QP drop a WQE it holds from it, then waits for the packet references:
 * it never waits for a peer.
 */
#ifndef SROCE_SRQ_H
#define SROCE_SRQ_H

#include <linux/completion.h>
#include <linux/refcount.h>
#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>

#include "qp.h"

struct sroce_srq {
	struct ib_srq ibsrq;
	struct sroce_dev *sdev;
	bool is_user;
	struct sroce_user *user;	/* charged to (limits.h); NULL: kernel */
	u32 srq_num;		/* immutable */
	spinlock_t lock;	/* rq.consumer, limit */
	struct sroce_rq rq;	/* rq.max_sge, rq.queue: immutable */
	u32 limit;		/* armed limit; 0: not armed */
	spinlock_t post_lock;	/* rq.kproducer */
	/* XRC: lookups' and holders' references; dead: under @lock */
	refcount_t ref;
	struct completion released;
	bool dead;
};

static inline bool sroce_srq_is_xrc(const struct sroce_srq *srq)
{
	return srq->ibsrq.srq_type == IB_SRQT_XRC;
}

static inline struct sroce_srq *to_ssrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct sroce_srq, ibsrq);
}

/*
 * Take the oldest posted WQE of @srq into @wqe (copied and validated):
 * 0, -EAGAIN when the SRQ is empty or -EIO when user space corrupted the
 * ring (the WQE is consumed then). Raises IB_EVENT_SRQ_LIMIT_REACHED when
 * the take leaves fewer WQEs than an armed limit (which it disarms). Any
 * context; call with qp->rq_lock held, so *limit_hit reports the event
 * to raise once the caller dropped its locks (sroce_srq_limit_event()).
 */
int sroce_srq_take(struct sroce_srq *srq, struct sroce_rwqe *wqe,
		   bool *limit_hit);
void sroce_srq_limit_event(struct sroce_srq *srq);

/*
 * The XRC SRQ numbered @srqn with a reference, or NULL. Any context.
 * While referenced, its PD, CQ and XRC domain stay valid.
 */
struct sroce_srq *sroce_srq_get(struct sroce_dev *sdev, u32 srqn);
void sroce_srq_put(struct sroce_srq *srq);

int sroce_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata);
int sroce_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata);
int sroce_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int sroce_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int sroce_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr);

#endif /* SROCE_SRQ_H */
