// SPDX-License-Identifier: GPL-2.0
/*
 * Memory windows (IBTA 10.6.7): type 1, bound by ibv_bind_mw() through
 * the send queue, and type 2B, bound by an IB_WR_BIND_MW work request and
 * associated with that QP. A remote access with a window's rkey is checked
 * against the window (PD, QP for type 2, range, access), then reaches the
 * memory of the MR it is bound to. Locking and lifetime: struct sroce_mw
 * and struct sroce_mr (mr.h); lock order: mw->lock, then mr->lock or the
 * mw_lock of the QP a type 2 window is bound through (struct sroce_qp).
 */

#include <linux/list.h>
#include <linux/random.h>
#include <linux/rcupdate.h>

#include "sroce.h"
#include "mr.h"
#include "qp.h"

/* Access rights a bind may grant. */
#define SROCE_MW_ACCESS \
	(IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE | \
	 IB_ACCESS_REMOTE_ATOMIC)
/*
 * A window grants remote access only, yet applications (rdma-core's own
 * tests among them) pass the local write right of the MR along: accepted,
 * and dropped, as other devices do.
 */
#define SROCE_MW_ACCESS_IGNORED IB_ACCESS_LOCAL_WRITE

static struct sroce_mw *sroce_key_mw(void *entry)
{
	if (xa_pointer_tag(entry) != SROCE_KEY_MW)
		return NULL;
	return xa_untag_pointer(entry);
}

/* The window whose index @key has, with a reference, or NULL. */
static struct sroce_mw *sroce_mw_get(struct sroce_dev *sdev, u32 key)
{
	struct sroce_mw *mw;

	rcu_read_lock();
	mw = sroce_key_mw(xa_load(&sdev->mr_xa, key >> 8));
	if (mw && !refcount_inc_not_zero(&mw->ref))
		mw = NULL;
	rcu_read_unlock();
	return mw;
}

static void sroce_mw_put(struct sroce_mw *mw)
{
	if (refcount_dec_and_test(&mw->ref))
		complete(&mw->released);
}

/* A type 2 window joins the list of the QP it is bound through (mw->lock). */
static void sroce_mw_link_qp(struct sroce_mw *mw, struct ib_qp *ibqp)
{
	struct sroce_qp *qp = to_sqp(ibqp);

	mw->qp = ibqp;
	spin_lock(&qp->mw_lock);
	list_add_tail(&mw->qp_entry, &qp->mw_list);
	spin_unlock(&qp->mw_lock);
}

/* Unbind (mw->lock held); the caller then releases the MR it returns. */
static struct sroce_mr *sroce_mw_unbind(struct sroce_mw *mw)
{
	struct sroce_mr *mr = mw->mr;
	struct sroce_qp *qp;

	if (mw->qp) {
		qp = to_sqp(mw->qp);
		spin_lock(&qp->mw_lock);
		list_del(&mw->qp_entry);
		spin_unlock(&qp->mw_lock);
	}
	mw->mr = NULL;
	mw->addr = 0;
	mw->length = 0;
	mw->access = 0;
	mw->qp = NULL;
	return mr;
}

static void sroce_mw_release_mr(struct sroce_mr *mr)
{
	unsigned long flags;

	if (!mr)
		return;
	spin_lock_irqsave(&mr->lock, flags);
	mr->num_mw--;
	spin_unlock_irqrestore(&mr->lock, flags);
}

int sroce_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibmw->device);
	struct sroce_mw *mw = to_smw(ibmw);
	u32 index;
	int err;

	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2)
		return -EINVAL;
	mw->user = sroce_udata_user(udata);
	err = sroce_obj_charge(&sdev->limits, mw->user, SROCE_OBJ_MW);
	if (err)
		return err;
	spin_lock_init(&mw->lock);
	refcount_set(&mw->ref, 1);
	init_completion(&mw->released);
	mw->state = ibmw->type == IB_MW_TYPE_1 ? SROCE_MW_VALID :
						 SROCE_MW_FREE;
	/* a lookup before the key is set compares with 0: no index has it */
	err = sroce_key_insert(sdev, xa_tag_pointer(mw, SROCE_KEY_MW), &index);
	if (err) {
		sroce_obj_uncharge(&sdev->limits, mw->user, SROCE_OBJ_MW);
		return err;
	}
	WRITE_ONCE(mw->key, index << 8 | get_random_u8());
	ibmw->rkey = mw->key;
	return 0;
}

int sroce_dealloc_mw(struct ib_mw *ibmw)
{
	struct sroce_dev *sdev = to_sdev(ibmw->device);
	struct sroce_mw *mw = to_smw(ibmw);
	struct sroce_mr *mr;
	unsigned long flags;

	xa_erase(&sdev->mr_xa, READ_ONCE(mw->key) >> 8);
	/*
	 * Unbound and dead before the initial reference goes: a window on a
	 * QP's list is referenced (sroce_mw_qp_destroyed() relies on it) and
	 * a bind that found it before the erase fails.
	 */
	spin_lock_irqsave(&mw->lock, flags);
	mr = sroce_mw_unbind(mw);
	mw->state = SROCE_MW_DEAD;
	spin_unlock_irqrestore(&mw->lock, flags);
	sroce_mw_release_mr(mr);
	/* the core frees ibmw when we return: no lookup may still see it */
	synchronize_rcu();
	sroce_mw_put(mw);
	wait_for_completion(&mw->released);
	sroce_obj_uncharge(&sdev->limits, mw->user, SROCE_OBJ_MW);
	return 0;
}

static bool sroce_range_within(u64 addr, u64 len, u64 start, u64 length)
{
	if (addr + len < addr)
		return false;
	return addr >= start && len <= length && addr - start <= length - len;
}

/*
 * IBTA 10.6.7.2: the window, the QP and the MR share a PD; the MR allows
 * binds (C10-73) and, for remote write or atomic access, local write
 * (C10-74); the window lies within the MR (C10-75). Zero-based windows are
 * not supported. A type 1 window with length 0 is unbound; a type 2 one
 * must be free and is bound to memory (o10-37.2.40).
 */
enum ib_wc_status sroce_mw_bind(struct sroce_dev *sdev, struct ib_qp *qp,
				u32 mw_rkey, u32 new_rkey, u32 mr_lkey,
				u64 addr, u64 length, int access)
{
	struct sroce_mw *mw = sroce_mw_get(sdev, mw_rkey);
	enum ib_wc_status status = IB_WC_MW_BIND_ERR;
	struct sroce_mr *mr = NULL, *old = NULL;
	unsigned long flags;
	bool type2;
	bool dead;

	if (!mw)
		return status;
	type2 = mw->ibmw.type == IB_MW_TYPE_2;
	if (mw->ibmw.pd != qp->pd || new_rkey >> 8 != mw_rkey >> 8 ||
	    (access & ~(SROCE_MW_ACCESS | SROCE_MW_ACCESS_IGNORED)))
		goto out;
	access &= SROCE_MW_ACCESS;
	if (length) {
		mr = sroce_mr_get(sdev, qp->pd, mr_lkey, addr, length, 0);
		if (!mr || !(mr->access & IB_ACCESS_MW_BIND) ||
		    mr->type != SROCE_MR_USER)
			goto out;
		if ((access & (IB_ACCESS_REMOTE_WRITE |
			       IB_ACCESS_REMOTE_ATOMIC)) &&
		    !(mr->access & IB_ACCESS_LOCAL_WRITE))
			goto out;
	} else if (type2) {
		goto out;
	}

	spin_lock_irqsave(&mw->lock, flags);
	if (mw->key != mw_rkey ||
	    mw->state != (type2 ? SROCE_MW_FREE : SROCE_MW_VALID))
		goto out_unlock;
	if (mr) {
		spin_lock(&mr->lock);
		dead = mr->dereg;
		if (!dead)
			mr->num_mw++;
		spin_unlock(&mr->lock);
		if (dead)
			goto out_unlock;
	}
	old = sroce_mw_unbind(mw);
	mw->mr = mr;
	mw->addr = addr;
	mw->length = length;
	mw->access = access;
	if (type2)
		sroce_mw_link_qp(mw, qp);
	mw->key = new_rkey;
	mw->state = SROCE_MW_VALID;
	status = IB_WC_SUCCESS;
	atomic64_inc(&sdev->rx_stats.c[SROCE_MW_BINDS]);
out_unlock:
	spin_unlock_irqrestore(&mw->lock, flags);
	sroce_mw_release_mr(old);
out:
	if (mr)
		sroce_mr_put(mr);
	sroce_mw_put(mw);
	return status;
}

/*
 * Invalidate the type 2 window @key names in @pd (and bound through @qp
 * when given). -ENOENT: the key names no window; -EINVAL: a window that
 * cannot be invalidated (type 1, free, another key, PD or QP).
 */
static int sroce_mw_invalidate(struct sroce_dev *sdev, struct ib_pd *pd,
			       struct ib_qp *qp, u32 key)
{
	struct sroce_mw *mw = sroce_mw_get(sdev, key);
	struct sroce_mr *mr = NULL;
	unsigned long flags;
	int err = -EINVAL;

	if (!mw)
		return -ENOENT;
	spin_lock_irqsave(&mw->lock, flags);
	if (mw->ibmw.type == IB_MW_TYPE_2 && mw->state == SROCE_MW_VALID &&
	    mw->key == key && mw->ibmw.pd == pd && (!qp || mw->qp == qp)) {
		mr = sroce_mw_unbind(mw);
		mw->state = SROCE_MW_FREE;
		err = 0;
	}
	spin_unlock_irqrestore(&mw->lock, flags);
	sroce_mw_release_mr(mr);
	sroce_mw_put(mw);
	return err;
}

enum ib_wc_status sroce_key_local_inv(struct sroce_dev *sdev,
				      struct ib_qp *qp, u32 key)
{
	int err = sroce_mw_invalidate(sdev, qp->pd, NULL, key);

	if (err == -ENOENT)
		return sroce_mr_local_inv(sdev, qp->pd, key);
	if (err)
		return IB_WC_LOC_QP_OP_ERR;
	atomic64_inc(&sdev->rx_stats.c[SROCE_MW_LOCAL_INVS]);
	return IB_WC_SUCCESS;
}

int sroce_key_remote_inv(struct sroce_dev *sdev, struct ib_pd *pd,
			 struct ib_qp *qp, u32 key)
{
	int err = sroce_mw_invalidate(sdev, pd, qp, key);

	if (err == -ENOENT)
		return sroce_mr_remote_inv(sdev, pd, key);
	if (!err)
		atomic64_inc(&sdev->rx_stats.c[SROCE_MW_REMOTE_INVS]);
	return err;
}

/*
 * The QP has no users left (sroce_destroy_qp), so no bind through it can
 * run any more and its list only shrinks: free the type 2 windows on it.
 * A window on the list holds its initial reference (dealloc unbinds
 * first), which keeps it while the QP's lock is dropped for its own.
 */
void sroce_mw_qp_destroyed(struct ib_qp *ibqp)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_mr *mr;
	struct sroce_mw *mw;
	unsigned long flags;

	for (;;) {
		spin_lock_irqsave(&qp->mw_lock, flags);
		mw = list_first_entry_or_null(&qp->mw_list, struct sroce_mw,
					      qp_entry);
		if (mw)
			refcount_inc(&mw->ref);
		spin_unlock_irqrestore(&qp->mw_lock, flags);
		if (!mw)
			return;
		spin_lock_irqsave(&mw->lock, flags);
		mr = NULL;
		/* or an invalidation or dealloc took it off meanwhile */
		if (mw->qp == ibqp) {
			mr = sroce_mw_unbind(mw);
			mw->state = SROCE_MW_FREE;
		}
		spin_unlock_irqrestore(&mw->lock, flags);
		sroce_mw_release_mr(mr);
		sroce_mw_put(mw);
	}
}

struct sroce_mr *sroce_rkey_get(struct sroce_dev *sdev, struct ib_pd *pd,
				struct ib_qp *qp, u32 rkey, u64 addr, u64 len,
				int access)
{
	struct sroce_mr *mr = NULL;
	struct sroce_mw *mw;
	unsigned long flags;

	mw = sroce_mw_get(sdev, rkey);
	if (!mw)
		return sroce_mr_get(sdev, pd, rkey, addr, len, access);

	spin_lock_irqsave(&mw->lock, flags);
	if (mw->state == SROCE_MW_VALID && mw->key == rkey && mw->mr &&
	    mw->ibmw.pd == pd &&
	    (mw->ibmw.type == IB_MW_TYPE_1 || mw->qp == qp) &&
	    (mw->access & access) == access &&
	    sroce_range_within(addr, len, mw->addr, mw->length)) {
		/* bound: dereg of the MR fails, its initial reference holds */
		mr = mw->mr;
		refcount_inc(&mr->ref);
	}
	spin_unlock_irqrestore(&mw->lock, flags);
	sroce_mw_put(mw);
	return mr;
}
