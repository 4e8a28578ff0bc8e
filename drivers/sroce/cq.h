/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Completion queues. One ring format (struct sroce_cqe, uapi header) for
 * user CQs (mapped by the provider) and kernel CQs (read by sroce_poll_cq).
 */
#ifndef SROCE_CQ_H
#define SROCE_CQ_H

#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>
#include "compat.h"
#include "queue.h"

/*
 * struct sroce_cqe speaks libibverbs' encoding. Status values are the
 * kernel's enum ib_wc_status (numerically equal to ibv_wc_status); opcodes
 * of send completions are enum ib_uverbs_wc_opcode; these complete it.
 */
#define SROCE_WC_RECV			128	/* IBV_WC_RECV */
#define SROCE_WC_RECV_RDMA_WITH_IMM	129	/* IBV_WC_RECV_RDMA_WITH_IMM */

/* wc_flags bits as libibverbs numbers them (not enum ib_wc_flags). */
#define SROCE_WC_F_GRH		BIT(0)	/* IBV_WC_GRH */
#define SROCE_WC_F_WITH_IMM	BIT(1)	/* IBV_WC_WITH_IMM */
#define SROCE_WC_F_WITH_INV	BIT(3)	/* IBV_WC_WITH_INV */

/*
 * The device clock of completion timestamps is CLOCK_MONOTONIC_RAW, which
 * counts nanoseconds: a 1 GHz clock, as ib_device_attr.hca_core_clock
 * (kHz) gives it.
 */
#define SROCE_CLOCK_KHZ		1000000

struct sroce_cq {
	struct ib_cq ibcq;

	/*
	 * lock protects everything below (producer side, arming and, for
	 * kernel CQs, the consumer side). Taken with irqsave: kernel consumers
	 * poll and post from any context. Never held while calling the
	 * completion or event handler (a handler may poll this CQ).
	 */
	spinlock_t lock;
	struct sroce_queue queue;
	u32 producer;		/* private copy of queue.ctrl->producer */
	u32 consumer;		/* kernel CQs: private consumer */
	u8 notify;		/* 0 or IB_CQ_NEXT_COMP / IB_CQ_SOLICITED */
	bool overflowed;	/* a CQE was lost: CQ is in error */
	bool comp_pending;	/* completion handler call owed */
	bool err_pending;	/* IB_EVENT_CQ_ERR owed */
	bool is_user;
	bool timestamps;	/* IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION */
	struct sroce_user *user;	/* charged to (limits.h); NULL: kernel */
};

static inline struct sroce_cq *to_scq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct sroce_cq, ibcq);
}

/*
 * Append one completion and fire the completion handler when the CQ is
 * armed for it (@solicited: the message had the SE bit; error completions
 * always satisfy a SOLICITED arming). Callable from any context with no
 * lock of this CQ held. Returns 0, or -ENOSPC when the ring is full: the
 * CQ then enters the error state and IB_EVENT_CQ_ERR is raised; the caller
 * moves its QP to the error state.
 */
int sroce_cq_post(struct sroce_cq *cq, const struct sroce_cqe *cqe,
		  bool solicited);

/*
 * The same in two steps, for callers that must post under a lock of their
 * own (to keep a queue's completions in order) but must not call handlers
 * under it: sroce_cq_post_locked() may set *notify; after dropping their
 * lock, callers pass each CQ with *notify set to sroce_cq_notify().
 */
int sroce_cq_post_locked(struct sroce_cq *cq, const struct sroce_cqe *cqe,
			 bool solicited, bool *notify);
void sroce_cq_notify(struct sroce_cq *cq);

/* Verbs. */
int sroce_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct sroce_create_cq_arg *arg);
int sroce_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
/* sroce_resize_cq() is declared in compat.h, which adapts it to each kernel. */
int sroce_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int sroce_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);

#endif /* SROCE_CQ_H */
