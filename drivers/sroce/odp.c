// SPDX-License-Identifier: GPL-2.0
/*
 * On-demand paging MRs: registration, the MMU notifier, the checks around
 * copies, faults on a work item and ibv_advise_mr(). Design and locking:
 * odp.h and struct sroce_odp (mr.h).
 */

#include <linux/mmu_notifier.h>
#include <linux/workqueue.h>
#include <rdma/ib_umem_odp.h>

#include "sroce.h"
#include "mr.h"
#include "odp.h"

static struct ib_umem_odp *sroce_mr_odp(const struct sroce_mr *mr)
{
	return to_ib_umem_odp(mr->umem);
}

/* The user virtual address of @iova. */
static u64 sroce_odp_va(const struct sroce_mr *mr, u64 iova)
{
	return mr->umem->address + (iova - mr->iova);
}

/*
 * The application unmapped or changed [range->start, range->end): unmap
 * those pages under the ODP lock, after every copy that uses them.
 */
static bool sroce_odp_invalidate(struct mmu_interval_notifier *mni,
				 const struct mmu_notifier_range *range,
				 unsigned long cur_seq)
{
	struct ib_umem_odp *odp = container_of(mni, struct ib_umem_odp,
					       notifier);
	struct sroce_mr *mr;
	unsigned long flags;

	if (!mmu_notifier_range_blockable(range))
		return false;
	mutex_lock(&odp->umem_mutex);
	mmu_interval_set_seq(mni, cur_seq);
	mr = odp->private;	/* NULL: nothing mapped yet */
	if (mr) {
		write_lock_irqsave(&mr->odp.lock, flags);
		ib_umem_odp_unmap_dma_pages(odp, range->start, range->end);
		write_unlock_irqrestore(&mr->odp.lock, flags);
	}
	mutex_unlock(&odp->umem_mutex);
	return true;
}

static const struct mmu_interval_notifier_ops sroce_odp_ops = {
	.invalidate = sroce_odp_invalidate,
};

/*
 * Map [va, va + len) (user addresses of the MR), faulting pages in when
 * @fault; sleeps. 0 or a negative errno.
 */
static int sroce_odp_map(struct sroce_mr *mr, u64 va, u64 len, bool write,
			 bool fault)
{
	struct ib_umem_odp *odp = sroce_mr_odp(mr);
	int ret;

	ret = ib_umem_odp_map_dma_and_lock(odp, va, len,
					   sroce_odp_access_mask(write), fault);
	if (ret < 0)
		return ret;
	mutex_unlock(&odp->umem_mutex);
	return 0;
}

static void sroce_odp_fault_work(struct work_struct *work)
{
	struct sroce_mr *mr = container_of(work, struct sroce_mr,
					   odp.fault_work);
	struct sroce_odp *o = &mr->odp;
	u64 start, end;
	bool write;

	spin_lock_irq(&o->fault_lock);
	start = o->fault_start;
	end = o->fault_end;
	write = o->fault_write;
	o->fault_start = 0;
	o->fault_end = 0;
	o->fault_write = false;
	o->fault_queued = false;
	spin_unlock_irq(&o->fault_lock);

	if (start < end && sroce_odp_map(mr, start, end - start, write, true)) {
		spin_lock_irq(&o->fault_lock);
		o->bad_start = start;
		o->bad_end = end;
		spin_unlock_irq(&o->fault_lock);
	}
	sroce_mr_put(mr);	/* taken by sroce_odp_want() */
}

/*
 * A copy needs [va, va + len) and found a page missing: -EFAULT when the
 * last fault failed there (consumed), else -EAGAIN with a fault queued.
 * The caller holds a reference on @mr; the queued work holds another.
 */
static int sroce_odp_want(struct sroce_mr *mr, u64 va, u64 len, bool write)
{
	struct sroce_odp *o = &mr->odp;
	unsigned long flags;
	int ret = -EAGAIN;

	spin_lock_irqsave(&o->fault_lock, flags);
	if (va < o->bad_end && va + len > o->bad_start) {
		o->bad_start = 0;
		o->bad_end = 0;
		ret = -EFAULT;
		goto out;
	}
	if (o->fault_start == o->fault_end) {
		o->fault_start = va;
		o->fault_end = va + len;
	} else {
		o->fault_start = min(o->fault_start, va);
		o->fault_end = max(o->fault_end, va + len);
	}
	o->fault_write |= write;
	if (!o->fault_queued) {
		o->fault_queued = true;
		refcount_inc(&mr->ref);
		queue_work(system_unbound_wq, &o->fault_work);
	}
out:
	spin_unlock_irqrestore(&o->fault_lock, flags);
	return ret;
}

/* Is every page of [va, va + len) mapped with the permission needed? */
static bool sroce_odp_mapped(struct ib_umem_odp *odp, u64 va, u64 len,
			     bool write)
{
	u64 start = ib_umem_start(odp), addr;

	for (addr = va & ~(BIT_ULL(odp->page_shift) - 1); addr < va + len;
	     addr += BIT_ULL(odp->page_shift))
		if (!sroce_odp_byte_mapped(odp, addr - start, write))
			return false;
	return true;
}

int sroce_odp_lock(struct sroce_mr *mr, u64 iova, u64 len, bool write,
		   unsigned long *flags)
{
	u64 va = sroce_odp_va(mr, iova);

	read_lock_irqsave(&mr->odp.lock, *flags);
	if (sroce_odp_mapped(sroce_mr_odp(mr), va, len, write))
		return 0;
	read_unlock_irqrestore(&mr->odp.lock, *flags);
	return sroce_odp_want(mr, va, len, write);
}

void sroce_odp_unlock(struct sroce_mr *mr, unsigned long flags)
{
	read_unlock_irqrestore(&mr->odp.lock, flags);
}

struct page *sroce_odp_page(const struct sroce_mr *mr, u64 iova,
			    unsigned int *off)
{
	struct ib_umem_odp *odp = sroce_mr_odp(mr);
	u64 byte = sroce_odp_va(mr, iova) - ib_umem_start(odp);
	void *kva = sroce_odp_byte_kva(odp, byte);

	*off = offset_in_page(kva);
	return virt_to_page(kva);
}

int sroce_odp_init(struct sroce_mr *mr, u64 start, u64 length, int access)
{
	struct ib_umem_odp *odp;

	rwlock_init(&mr->odp.lock);
	spin_lock_init(&mr->odp.fault_lock);
	INIT_WORK(&mr->odp.fault_work, sroce_odp_fault_work);
	odp = ib_umem_odp_get(mr->ibmr.pd->device, start, length,
			      sroce_odp_umem_access(access), &sroce_odp_ops);
	if (IS_ERR(odp))
		return PTR_ERR(odp);
	mr->umem = &odp->umem;
	mutex_lock(&odp->umem_mutex);
	odp->private = mr;
	mutex_unlock(&odp->umem_mutex);
	return 0;
}

int sroce_advise_mr(struct ib_pd *pd, enum ib_uverbs_advise_mr_advice advice,
		    u32 flags, struct ib_sge *sg_list, u32 num_sge,
		    struct uverbs_attr_bundle *attrs)
{
	bool write = advice == IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE;
	bool fault = advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT;
	struct sroce_dev *sdev = to_sdev(pd->device);
	struct sroce_mr *mr;
	int err = 0;
	u32 i;

	if (advice > IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT ||
	    flags & ~IB_UVERBS_ADVISE_MR_FLAG_FLUSH)
		return -EOPNOTSUPP;
	/* Done at once either way: without FLUSH the caller may not wait. */
	for (i = 0; i < num_sge && !err; i++) {
		mr = sroce_mr_get(sdev, pd, sg_list[i].lkey, sg_list[i].addr,
				  sg_list[i].length,
				  write ? IB_ACCESS_LOCAL_WRITE : 0);
		if (!mr)
			return -ENOENT;
		if (mr->type != SROCE_MR_ODP)
			err = -EINVAL;
		else if (sg_list[i].length)
			err = sroce_odp_map(mr, sroce_odp_va(mr, sg_list[i].addr),
					    sg_list[i].length, write, fault);
		sroce_mr_put(mr);
	}
	return err;
}
