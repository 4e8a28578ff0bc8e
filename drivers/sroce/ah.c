// SPDX-License-Identifier: GPL-2.0
/*
 * Address handles. Every AH gets an ah_num in sdev->ah_xa (the xarray
 * locks itself; lookups under RCU): user send WQEs name AHs by it, and
 * kernel UD sends go through the same lookup, which checks the PD.
 */

#include <linux/slab.h>
#include <rdma/ib_verbs.h>
#include <rdma/sroce-abi.h>

#include "sroce.h"
#include "ah.h"

#define SROCE_AH_NUM_MAX	0xffffff

void sroce_ah_table_init(struct sroce_dev *sdev)
{
	xa_init_flags(&sdev->ah_xa, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
	sdev->ah_next = 1;
}

void sroce_ah_table_fini(struct sroce_dev *sdev)
{
	WARN_ON(!xa_empty(&sdev->ah_xa));
	xa_destroy(&sdev->ah_xa);
}

int sroce_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init_attr,
		    struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibah->device);
	gfp_t gfp = init_attr->flags & RDMA_CREATE_AH_SLEEPABLE ?
		    GFP_KERNEL : GFP_ATOMIC;
	struct sroce_ah *ah = to_sah(ibah);
	struct sroce_create_ah_resp resp = {};
	unsigned long flags;
	int err;

	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	ah->user = sroce_udata_user(udata);
	err = sroce_obj_charge(&sdev->limits, ah->user, SROCE_OBJ_AH);
	if (err)
		return err;
	err = -ENOMEM;
	ah->path = kzalloc(sizeof(*ah->path), gfp);
	if (!ah->path)
		goto err_uncharge;
	err = sroce_av_from_ah_attr(sdev, init_attr->ah_attr, &ah->path->av);
	if (err)
		goto err_free;
	ah->path->pd = ibah->pd;

	xa_lock_irqsave(&sdev->ah_xa, flags);
	err = __xa_alloc_cyclic(&sdev->ah_xa, &ah->ah_num, ah->path,
				XA_LIMIT(1, SROCE_AH_NUM_MAX), &sdev->ah_next,
				gfp);
	xa_unlock_irqrestore(&sdev->ah_xa, flags);
	if (err < 0)
		goto err_free;

	if (udata) {
		resp.ah_num = ah->ah_num;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_erase;
	}
	return 0;

err_erase:
	xa_erase_irq(&sdev->ah_xa, ah->ah_num);
err_free:
	kfree(ah->path);
err_uncharge:
	sroce_obj_uncharge(&sdev->limits, ah->user, SROCE_OBJ_AH);
	return err;
}

int sroce_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *ah_attr)
{
	struct sroce_ah *ah = to_sah(ibah);

	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->type = ibah->type;
	sroce_av_to_ah_attr(&ah->path->av, ah_attr);
	return 0;
}

int sroce_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct sroce_dev *sdev = to_sdev(ibah->device);
	struct sroce_ah *ah = to_sah(ibah);
	unsigned long irqflags;

	xa_lock_irqsave(&sdev->ah_xa, irqflags);
	__xa_erase(&sdev->ah_xa, ah->ah_num);
	xa_unlock_irqrestore(&sdev->ah_xa, irqflags);
	kfree_rcu(ah->path, rcu);
	sroce_obj_uncharge(&sdev->limits, ah->user, SROCE_OBJ_AH);
	return 0;
}

int sroce_ah_path(struct sroce_dev *sdev, struct ib_pd *pd, u32 ah_num,
		  struct sroce_av *av)
{
	struct sroce_ah_path *path;
	int err = -ENOENT;

	rcu_read_lock();
	path = xa_load(&sdev->ah_xa, ah_num);
	/* Another PD's AH does not exist for this QP: same answer. */
	if (path && path->pd == pd) {
		sroce_av_copy(av, &path->av);
		err = 0;
	}
	rcu_read_unlock();
	return err;
}
