// SPDX-License-Identifier: GPL-2.0
/*
 * Completion queues: one ring format for user CQs (the provider polls the
 * mapping) and kernel CQs (sroce_poll_cq). Locking: struct sroce_cq.
 */

#include <linux/if_vlan.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "sroce.h"
#include "cq.h"
#include "qp.h"

static u32 sroce_cq_entries(int cqe)
{
	return roundup_pow_of_two(max(cqe, 1));
}

/*
 * Unconsumed CQEs. The consumer of a user CQ is user-written: a value
 * behind the producer by more than the ring holds reads as a full ring.
 */
static u32 sroce_cq_used(struct sroce_cq *cq)
{
	u32 consumer = cq->is_user ? sroce_queue_load_consumer(&cq->queue) :
				     cq->consumer;
	u32 used = cq->producer - consumer;

	return min(used, cq->queue.num_entries);
}

int sroce_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct sroce_create_cq_arg *arg)
{
	struct ib_udata *udata = sroce_create_cq_udata(arg);
	struct sroce_dev *sdev = to_sdev(ibcq->device);
	struct sroce_cq *cq = to_scq(ibcq);
	struct sroce_create_cq_resp resp = {};
	int err;

	/* only user CQs have a place for timestamps: the mapped CQE */
	if (attr->flags & ~IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION ||
	    (attr->flags && !udata))
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > SROCE_MAX_CQE)
		return -EINVAL;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;

	cq->user = sroce_udata_user(udata);
	err = sroce_obj_charge(&sdev->limits, cq->user, SROCE_OBJ_CQ);
	if (err)
		return err;
	spin_lock_init(&cq->lock);
	cq->is_user = !!udata;
	cq->timestamps = attr->flags & IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION;
	err = sroce_queue_init(&cq->queue, sroce_cq_entries(attr->cqe),
			       sizeof(struct sroce_cqe));
	if (err)
		goto err_uncharge;

	if (udata) {
		err = sroce_queue_mmap(&cq->queue, udata, &resp.cq);
		if (err)
			goto err_free;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_free;
	}
	ibcq->cqe = cq->queue.num_entries;
	return 0;

err_free:
	sroce_queue_free(&cq->queue);
err_uncharge:
	sroce_obj_uncharge(&sdev->limits, cq->user, SROCE_OBJ_CQ);
	return err;
}

int sroce_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct sroce_cq *cq = to_scq(ibcq);

	sroce_queue_free(&cq->queue);
	sroce_obj_uncharge(&to_sdev(ibcq->device)->limits, cq->user,
			   SROCE_OBJ_CQ);
	return 0;
}

int sroce_cq_post_locked(struct sroce_cq *cq, const struct sroce_cqe *cqe,
			 bool solicited, bool *notify)
{
	struct sroce_cqe *slot;
	unsigned long flags;
	int err = 0;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->overflowed) {
		err = -ENOSPC;
		goto out;
	}
	if (sroce_cq_used(cq) >= cq->queue.num_entries) {
		cq->overflowed = true;
		cq->err_pending = true;
		*notify = true;
		err = -ENOSPC;
		goto out;
	}
	slot = sroce_queue_slot(&cq->queue, cq->producer);
	memcpy(slot, cqe, sizeof(*cqe));
	/* under the lock: a CQ's timestamps never go back */
	if (cq->timestamps) {
		slot->timestamp = ktime_get_raw_ns();
		slot->wallclock_ns = ktime_get_real_ns();
	}
	cq->producer++;
	sroce_queue_publish_producer(&cq->queue, cq->producer);

	if (cq->notify == IB_CQ_NEXT_COMP ||
	    (cq->notify == IB_CQ_SOLICITED &&
	     (solicited || cqe->status != IB_WC_SUCCESS))) {
		cq->notify = 0;
		cq->comp_pending = true;
		*notify = true;
	}
out:
	spin_unlock_irqrestore(&cq->lock, flags);
	return err;
}

void sroce_cq_notify(struct sroce_cq *cq)
{
	bool comp, err;
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	comp = cq->comp_pending;
	err = cq->err_pending;
	cq->comp_pending = false;
	cq->err_pending = false;
	spin_unlock_irqrestore(&cq->lock, flags);

	if (err && cq->ibcq.event_handler) {
		struct ib_event ev = {
			.device = cq->ibcq.device,
			.element.cq = &cq->ibcq,
			.event = IB_EVENT_CQ_ERR,
		};

		cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
	}
	if (comp && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
}

int sroce_cq_post(struct sroce_cq *cq, const struct sroce_cqe *cqe,
		  bool solicited)
{
	bool notify = false;
	int err;

	err = sroce_cq_post_locked(cq, cqe, solicited, &notify);
	if (notify)
		sroce_cq_notify(cq);
	return err;
}

int sroce_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct sroce_cq *cq = to_scq(ibcq);
	unsigned long irqflags;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	if ((flags & IB_CQ_SOLICITED_MASK) == IB_CQ_NEXT_COMP)
		cq->notify = IB_CQ_NEXT_COMP;
	else if (cq->notify != IB_CQ_NEXT_COMP)
		cq->notify = IB_CQ_SOLICITED;
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && sroce_cq_used(cq))
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

/* libibverbs' wc_flags bits back to enum ib_wc_flags. */
static int sroce_wc_flags(u8 flags)
{
	int wc_flags = 0;

	if (flags & SROCE_WC_F_GRH)
		wc_flags |= IB_WC_GRH;
	if (flags & SROCE_WC_F_WITH_IMM)
		wc_flags |= IB_WC_WITH_IMM;
	if (flags & SROCE_WC_F_WITH_INV)
		wc_flags |= IB_WC_WITH_INVALIDATE;
	return wc_flags;
}

static void sroce_cqe_to_wc(struct sroce_dev *sdev, const struct sroce_cqe *cqe,
			    struct ib_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = cqe->wr_id;
	wc->status = cqe->status;
	/* Send opcodes are equal; RECV (128) and RECV_RDMA_WITH_IMM too. */
	wc->opcode = cqe->opcode;
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = cqe->byte_len;
	wc->wc_flags = sroce_wc_flags(cqe->wc_flags);
	if (wc->wc_flags & IB_WC_WITH_INVALIDATE)
		wc->ex.invalidate_rkey = cqe->ex.invalidated_rkey;
	else
		wc->ex.imm_data = cqe->ex.imm_data;
	/* Kernel consumers destroy a QP only after reaping its CQEs. */
	wc->qp = sroce_qp_lookup_ib(sdev, cqe->qp_num);
	wc->src_qp = cqe->src_qp;
	wc->pkey_index = cqe->pkey_index;
	/* kernel consumers learn the packet type from its own field */
	if (wc->wc_flags & IB_WC_GRH) {
		wc->network_hdr_type =
			(cqe->sl & SROCE_CQE_SL_IPV4) ? RDMA_NETWORK_IPV4 :
							RDMA_NETWORK_IPV6;
		wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
	}
	if (cqe->vlan & SROCE_CQE_VLAN_VALID) {
		wc->vlan_id = cqe->vlan & VLAN_VID_MASK;
		wc->wc_flags |= IB_WC_WITH_VLAN;
	}
	wc->sl = 0;
	wc->port_num = SROCE_PORT;
}

int sroce_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct sroce_dev *sdev = to_sdev(ibcq->device);
	struct sroce_cq *cq = to_scq(ibcq);
	unsigned long flags;
	int n = 0;

	if (cq->is_user)
		return -EOPNOTSUPP;

	spin_lock_irqsave(&cq->lock, flags);
	while (n < num_entries && cq->consumer != cq->producer) {
		sroce_cqe_to_wc(sdev, sroce_queue_slot(&cq->queue, cq->consumer),
				&wc[n]);
		cq->consumer++;
		n++;
	}
	sroce_queue_publish_consumer(&cq->queue, cq->consumer);
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

/*
 * New ring of at least @cqe entries holding the unconsumed CQEs at its
 * start. User CQs: the provider holds its CQ lock across the command and
 * maps the new ring (consumer 0) before polling again.
 */
int sroce_resize_cq(struct ib_cq *ibcq, unsigned int cqe,
		    struct ib_udata *udata)
{
	struct sroce_cq *cq = to_scq(ibcq);
	struct sroce_resize_cq_resp resp = {};
	struct sroce_queue nq, oq;
	unsigned long flags;
	u32 used, consumer, i;
	int err;

	if (!cqe || cqe > SROCE_MAX_CQE)
		return -EINVAL;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;

	err = sroce_queue_init(&nq, sroce_cq_entries(cqe),
			       sizeof(struct sroce_cqe));
	if (err)
		return err;
	if (udata) {
		err = sroce_queue_mmap(&nq, udata, &resp.cq);
		if (!err)
			err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_free;
	}

	spin_lock_irqsave(&cq->lock, flags);
	consumer = cq->is_user ? sroce_queue_load_consumer(&cq->queue) :
				 cq->consumer;
	used = cq->producer - consumer;
	if (used > cq->queue.num_entries || used > nq.num_entries) {
		spin_unlock_irqrestore(&cq->lock, flags);
		err = -EINVAL;
		goto err_free;
	}
	for (i = 0; i < used; i++)
		memcpy(sroce_queue_slot(&nq, i),
		       sroce_queue_slot(&cq->queue, consumer + i),
		       sizeof(struct sroce_cqe));
	sroce_queue_publish_producer(&nq, used);
	oq = cq->queue;
	cq->queue = nq;
	cq->producer = used;
	cq->consumer = 0;
	spin_unlock_irqrestore(&cq->lock, flags);

	sroce_queue_free(&oq);
	ibcq->cqe = cq->queue.num_entries;
	return 0;

err_free:
	sroce_queue_free(&nq);
	return err;
}
