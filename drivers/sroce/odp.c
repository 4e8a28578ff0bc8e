// SPDX-License-Identifier: GPL-2.0
/*
 * On-demand paging MRs: registration (of a range, or implicit: of the whole
 * address space), the MMU notifier, the checks around copies, faults on a
 * work item and ibv_advise_mr(). Design and locking: odp.h and struct
 * sroce_odp (mr.h).
 */

#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/moduleparam.h>
#include <linux/sizes.h>
#include <linux/sched/mm.h>
#include <linux/workqueue.h>
#include <rdma/ib_umem_odp.h>

#include "sroce.h"
#include "mr.h"
#include "odp.h"

/* An implicit MR maps user memory in children of this size. */
#define SROCE_ODP_CHUNK_SHIFT	21
#define SROCE_ODP_CHUNK		BIT_ULL(SROCE_ODP_CHUNK_SHIFT)
/* The children of one implicit MR cover at most max_mr_size. */
#define SROCE_ODP_MAX_CHILDREN	(SROCE_MAX_MR_SIZE >> SROCE_ODP_CHUNK_SHIFT)

/*
 * What ODP MRs may cost the kernel (security.md). ib_core allocates each
 * umem's page lists, 16 bytes per 4 KiB page of its range (8 on 7.2),
 * mapped or not, with GFP_KERNEL: no memory cgroup is charged for them
 * and a driver cannot make it charge one. So sroce counts them per device
 * (rx_stats SROCE_ODP_PAGES, in pages of range) and refuses a
 * registration or an implicit MR's new child that would take them past
 * odp_max_mb with -ENOMEM. Both parameters are read at each charge: an
 * administrator may change them at any time, and lowering one below what
 * is held only refuses what comes next.
 */
#define SROCE_ODP_PAGE_COST_SHIFT	4	/* 16 bytes per page */
#define SROCE_ODP_MAX_MB_UNSET		UINT_MAX
static unsigned int sroce_odp_max_mb = SROCE_ODP_MAX_MB_UNSET;
module_param_named(odp_max_mb, sroce_odp_max_mb, uint, 0644);
MODULE_PARM_DESC(odp_max_mb,
		 "MiB of ODP page lists one device may hold (default 1/32 of RAM)");

/*
 * Children one implicit MR may hold. Each costs about 8.5 KiB and lives
 * until dereg, and a peer holding the rkey makes one per 2 MiB chunk it
 * names where the process maps anything: past the cap, faults of new
 * chunks fail (a remote access error for the peer). 4096 children cover
 * 8 GiB, any message (2 GiB: 1025 chunks) several times over.
 */
static unsigned int sroce_odp_max_children = 4096;

static int sroce_odp_max_children_set(const char *val,
				      const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, SROCE_ODP_MAX_CHILDREN);
}

static const struct kernel_param_ops sroce_odp_max_children_ops = {
	.set = sroce_odp_max_children_set,
	.get = param_get_uint,
};

module_param_cb(odp_max_children, &sroce_odp_max_children_ops,
		&sroce_odp_max_children, 0644);
MODULE_PARM_DESC(odp_max_children,
		 "2 MiB chunks one implicit ODP MR may map (default 4096)");

void sroce_odp_module_init(void)
{
	if (sroce_odp_max_mb == SROCE_ODP_MAX_MB_UNSET)
		sroce_odp_max_mb =
			max((totalram_pages() >> (20 - PAGE_SHIFT)) / 32, 1UL);
}

/*
 * Pages of range of the user addresses [start, start + len), @len at most
 * 2^40 (an overflowing range is ib_core's to refuse).
 */
static u64 sroce_odp_range_pages(u64 start, u64 len)
{
	return DIV_ROUND_UP(offset_in_page(start) + len, PAGE_SIZE);
}

/* One of the device's ODP gauges. */
static atomic64_t *sroce_odp_stat(struct sroce_mr *mr, enum sroce_rx_stat stat)
{
	return &to_sdev(mr->ibmr.pd->device)->rx_stats.c[stat];
}

/* Charge @pages of page lists to @mr's device: 0 or -ENOMEM. */
static int sroce_odp_charge(struct sroce_mr *mr, u64 pages)
{
	u64 max = (u64)READ_ONCE(sroce_odp_max_mb)
		  << (20 - SROCE_ODP_PAGE_COST_SHIFT);
	atomic64_t *held = sroce_odp_stat(mr, SROCE_ODP_PAGES);

	if (atomic64_add_return(pages, held) <= max)
		return 0;
	atomic64_sub(pages, held);
	return -ENOMEM;
}

static void sroce_odp_uncharge(struct sroce_mr *mr, u64 pages)
{
	atomic64_sub(pages, sroce_odp_stat(mr, SROCE_ODP_PAGES));
}

/*
 * sroce's own record of which pages of one umem copies may use
 * (odp->private, set before any page is mapped). 7.2's
 * ib_umem_odp_map_dma_and_lock() has hmm_range_fault() write its page
 * list before the notifier sequence is checked, so an entry there may
 * name a page an invalidation already freed; only these bits, set under
 * umem_mutex once the check passed, say that an entry is current.
 * Unit i (1 << page_shift bytes) is mapped when bit i is set, writable
 * when bit n + i is too. Bits are set under umem_mutex and cleared under
 * it and the MR's ODP lock for writing; copies test them under that lock
 * for reading.
 */
struct sroce_odp_pages {
	struct sroce_mr *mr;
	size_t n;
	unsigned long bits[];
};

static int sroce_odp_attach(struct ib_umem_odp *odp, struct sroce_mr *mr)
{
	size_t n = ib_umem_odp_num_pages(odp);
	struct sroce_odp_pages *pages;

	pages = kvzalloc(struct_size(pages, bits, BITS_TO_LONGS(2 * n)),
			 GFP_KERNEL_ACCOUNT);
	if (!pages)
		return -ENOMEM;
	pages->mr = mr;
	pages->n = n;
	mutex_lock(&odp->umem_mutex);
	odp->private = pages;
	mutex_unlock(&odp->umem_mutex);
	return 0;
}

/* Release a umem sroce_odp_attach() (or nothing) gave a record to. */
static void sroce_odp_release(struct ib_umem_odp *odp)
{
	struct sroce_odp_pages *pages = odp->private;

	/* removes the notifier first: none runs after this */
	ib_umem_odp_release(odp);
	kvfree(pages);
}

/* The units of @odp that [start, end) overlaps: *first, and how many. */
static size_t sroce_odp_units(struct ib_umem_odp *odp, u64 start, u64 end,
			      size_t *first)
{
	u64 s = max_t(u64, start, ib_umem_start(odp));
	u64 e = min_t(u64, end, ib_umem_end(odp));

	*first = 0;
	if (s >= e)
		return 0;
	*first = (s - ib_umem_start(odp)) >> odp->page_shift;
	return ((e - 1 - ib_umem_start(odp)) >> odp->page_shift) - *first + 1;
}

/*
 * After ib_umem_odp_map_dma_and_lock() of [va, va + len) passed its
 * sequence check (umem_mutex held): its entries are current, publish them.
 */
static void sroce_odp_publish(struct ib_umem_odp *odp, u64 va, u64 len)
{
	struct sroce_odp_pages *pages = odp->private;
	size_t i, first, cnt = sroce_odp_units(odp, va, va + len, &first);

	lockdep_assert_held(&odp->umem_mutex);
	smp_wmb();	/* the entries before the bits: sroce_odp_mapped() */
	for (i = first; i < first + cnt; i++) {
		if (sroce_odp_unit_mapped(odp, i, false))
			set_bit(i, pages->bits);
		if (sroce_odp_unit_mapped(odp, i, true))
			set_bit(pages->n + i, pages->bits);
	}
}

/* Is the unit holding byte @byte of @odp mapped (and writable)? */
static bool sroce_odp_byte_ok(struct ib_umem_odp *odp, u64 byte, bool write)
{
	const struct sroce_odp_pages *pages = odp->private;
	size_t i = byte >> odp->page_shift;

	return test_bit(write ? pages->n + i : i, pages->bits);
}

/*
 * The umem holding user address @va: an explicit MR's own, an implicit
 * MR's child for @va (NULL while there is none). Copies: ODP lock held.
 */
static struct ib_umem_odp *sroce_odp_umem(const struct sroce_mr *mr, u64 va)
{
	/* xa_load() only reads the xarray, which it does not take const */
	struct xarray *children = (struct xarray *)&mr->odp.children;

	if (!mr->odp.implicit)
		return to_ib_umem_odp(mr->umem);
	return xa_load(children, va >> SROCE_ODP_CHUNK_SHIFT);
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
	struct sroce_odp_pages *pages;
	unsigned long flags;
	size_t first, cnt;

	if (!mmu_notifier_range_blockable(range))
		return false;
	mutex_lock(&odp->umem_mutex);
	mmu_interval_set_seq(mni, cur_seq);
	pages = odp->private;	/* NULL: nothing mapped yet */
	if (pages) {
		cnt = sroce_odp_units(odp, range->start, range->end, &first);
		write_lock_irqsave(&pages->mr->odp.lock, flags);
		bitmap_clear(pages->bits, first, cnt);
		bitmap_clear(pages->bits, pages->n + first, cnt);
		ib_umem_odp_unmap_dma_pages(odp, range->start, range->end);
		write_unlock_irqrestore(&pages->mr->odp.lock, flags);
	}
	mutex_unlock(&odp->umem_mutex);
	return true;
}

static const struct mmu_interval_notifier_ops sroce_odp_ops = {
	.invalidate = sroce_odp_invalidate,
};

/*
 * Map [va, va + len) (user addresses within @odp), faulting pages in when
 * @fault; sleeps. 0 or a negative errno. One at a time per umem (under
 * children_mutex): another walk writing the page list while this one
 * publishes it could leave an entry for a page that is gone.
 */
static int sroce_odp_map_umem(struct ib_umem_odp *odp, u64 va, u64 len,
			      bool write, bool fault)
{
	int ret;

	ret = ib_umem_odp_map_dma_and_lock(odp, va, len,
					   sroce_odp_access_mask(write), fault);
	if (ret < 0)
		return ret;
	sroce_odp_publish(odp, va, len);
	mutex_unlock(&odp->umem_mutex);
	return 0;
}

/* Does the process map anything in [va, va + len)? Sleeps. */
static bool sroce_odp_mapping_at(struct mm_struct *mm, u64 va, u64 len)
{
	bool found;

	if (!mmget_not_zero(mm))
		return false;
	mmap_read_lock(mm);
	found = !!find_vma_intersection(mm, va, va + len);
	mmap_read_unlock(mm);
	mmput(mm);
	return found;
}

/*
 * Release a child that no copy can find any more: under children_mutex,
 * or at dereg.
 */
static void sroce_odp_release_child(struct sroce_mr *mr,
				    struct ib_umem_odp *child)
{
	u64 pages = sroce_odp_range_pages(child->umem.address,
					  child->umem.length);

	mr->odp.nchildren--;
	mr->odp.pages -= pages;
	sroce_odp_uncharge(mr, pages);
	atomic64_dec(sroce_odp_stat(mr, SROCE_ODP_CHILDREN));
	sroce_odp_release(child);
}

/*
 * A new child of @mr for [start, start + len), charged to the device;
 * not yet in the children xarray. Under children_mutex.
 */
static struct ib_umem_odp *sroce_odp_new_child(struct sroce_mr *mr, u64 start,
					       u64 len)
{
	u64 pages = sroce_odp_range_pages(start, len);
	struct sroce_odp *o = &mr->odp;
	struct ib_umem_odp *child;

	if (o->nchildren >= READ_ONCE(sroce_odp_max_children) ||
	    sroce_odp_charge(mr, pages))
		return ERR_PTR(-ENOMEM);
	child = ib_umem_odp_alloc_child(to_ib_umem_odp(mr->umem), start, len,
					&sroce_odp_ops);
	if (IS_ERR(child)) {
		sroce_odp_uncharge(mr, pages);
		return child;
	}
	o->nchildren++;
	o->pages += pages;
	atomic64_inc(sroce_odp_stat(mr, SROCE_ODP_CHILDREN));
	return child;
}

/*
 * The child of implicit MR @mr covering @va, made if the process maps
 * something in its chunk (so the children, and their page lists, are
 * bounded by what it maps, by odp_max_children and by odp_max_mb); *@made
 * says whether it is new. Under children_mutex.
 */
static struct ib_umem_odp *sroce_odp_child(struct sroce_mr *mr, u64 va,
					   bool *made)
{
	struct sroce_odp *o = &mr->odp;
	unsigned long idx = va >> SROCE_ODP_CHUNK_SHIFT;
	u64 start = (u64)idx << SROCE_ODP_CHUNK_SHIFT;
	u64 len = min(start + SROCE_ODP_CHUNK, mr->length) - start;
	struct ib_umem_odp *child;
	int err;

	lockdep_assert_held(&o->children_mutex);
	*made = false;
	child = xa_load(&o->children, idx);
	if (child)
		return child;
	if (!sroce_odp_mapping_at(mr->umem->owning_mm, start, len))
		return ERR_PTR(-EFAULT);
	child = sroce_odp_new_child(mr, start, len);
	if (IS_ERR(child))
		return child;
	err = sroce_odp_attach(child, mr);
	if (!err)
		err = xa_err(xa_store(&o->children, idx, child,
				      GFP_KERNEL_ACCOUNT));
	if (err) {
		sroce_odp_release_child(mr, child);
		return ERR_PTR(err);
	}
	*made = true;
	return child;
}

/*
 * The first fault of a new child failed (PROT_NONE, MAP_NORESERVE
 * reservations, memory going away): remove it, so that faults naming
 * ever new addresses there leave nothing behind. Copies find children
 * under the read side of the ODP lock: once the write side was taken
 * after the erase, none holds this one. (Not erased under it: the
 * xarray's lock is taken with softirqs on, the ODP lock in softirqs.)
 * Under children_mutex.
 */
static void sroce_odp_drop_child(struct sroce_mr *mr, u64 va)
{
	struct ib_umem_odp *child;
	unsigned long flags;

	child = xa_erase(&mr->odp.children, va >> SROCE_ODP_CHUNK_SHIFT);
	write_lock_irqsave(&mr->odp.lock, flags);
	write_unlock_irqrestore(&mr->odp.lock, flags);
	sroce_odp_release_child(mr, child);
}

/* Map [va, va + len) of an implicit MR chunk by chunk; sleeps. */
static int sroce_odp_map_implicit(struct sroce_mr *mr, u64 va, u64 len,
				  bool write, bool fault)
{
	struct ib_umem_odp *child;
	u64 end = va + len, n;
	bool made;
	int err = 0;

	mutex_lock(&mr->odp.children_mutex);
	for (; va < end && !err; va += n) {
		n = min(end, round_down(va, SROCE_ODP_CHUNK) + SROCE_ODP_CHUNK) -
		    va;
		child = sroce_odp_child(mr, va, &made);
		if (IS_ERR(child))
			err = PTR_ERR(child);
		else
			err = sroce_odp_map_umem(child, va, n, write, fault);
		if (err && made)
			sroce_odp_drop_child(mr, va);
	}
	mutex_unlock(&mr->odp.children_mutex);
	return err;
}

/* Map [va, va + len) (user addresses of the MR); sleeps. */
static int sroce_odp_map(struct sroce_mr *mr, u64 va, u64 len, bool write,
			 bool fault)
{
	int err;

	if (mr->odp.implicit)
		return sroce_odp_map_implicit(mr, va, len, write, fault);
	mutex_lock(&mr->odp.children_mutex);
	err = sroce_odp_map_umem(to_ib_umem_odp(mr->umem), va, len, write,
				 fault);
	mutex_unlock(&mr->odp.children_mutex);
	return err;
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
 * A range apart from the one already pending is not merged with it (the
 * gap may be memory nobody asked for, or not mapped at all): its copy
 * finds it missing again when it retries and queues it then. The caller
 * holds a reference on @mr; the queued work holds another.
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
	} else if (va <= o->fault_end && va + len >= o->fault_start) {
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
static bool sroce_odp_mapped(const struct sroce_mr *mr, u64 va, u64 len,
			     bool write)
{
	struct ib_umem_odp *odp;
	u64 addr, step;

	for (addr = va; addr < va + len; addr = round_down(addr, step) + step) {
		odp = sroce_odp_umem(mr, addr);
		if (!odp)
			return false;
		step = BIT_ULL(odp->page_shift);
		if (!sroce_odp_byte_ok(odp, addr - ib_umem_start(odp), write))
			return false;
	}
	smp_rmb();	/* the bits before the entries: sroce_odp_publish() */
	return true;
}

int sroce_odp_lock(struct sroce_mr *mr, u64 iova, u64 len, bool write,
		   unsigned long *flags)
{
	u64 va = sroce_odp_va(mr, iova);

	read_lock_irqsave(&mr->odp.lock, *flags);
	if (sroce_odp_mapped(mr, va, len, write))
		return 0;
	read_unlock_irqrestore(&mr->odp.lock, *flags);
	return sroce_odp_want(mr, va, len, write);
}

void sroce_odp_unlock(struct sroce_mr *mr, unsigned long flags)
{
	read_unlock_irqrestore(&mr->odp.lock, flags);
}

/*
 * How much of a range sroce_odp_ready() checks. Its callers hold a
 * spinlock with interrupts off or run in softirq, and a READ may be 2 GiB
 * (512K pages, an xa_load() each for an implicit MR): the whole range
 * would keep interrupts off for milliseconds.
 */
#define SROCE_ODP_READY_MAX	SZ_64K

int sroce_odp_ready(struct sroce_mr *mr, u64 iova, u64 len, bool write)
{
	u64 va = sroce_odp_va(mr, iova);
	unsigned long flags;
	bool mapped;

	read_lock_irqsave(&mr->odp.lock, flags);
	mapped = sroce_odp_mapped(mr, va, min_t(u64, len, SROCE_ODP_READY_MAX),
				  write);
	read_unlock_irqrestore(&mr->odp.lock, flags);
	return mapped ? 0 : sroce_odp_want(mr, va, len, write);
}

void sroce_odp_wait(struct sroce_mr *mr)
{
	flush_work(&mr->odp.fault_work);
}

struct page *sroce_odp_page(const struct sroce_mr *mr, u64 iova,
			    unsigned int *off)
{
	u64 va = sroce_odp_va(mr, iova);
	struct ib_umem_odp *odp = sroce_odp_umem(mr, va);
	void *kva = sroce_odp_byte_kva(odp, va - ib_umem_start(odp));

	*off = offset_in_page(kva);
	return virt_to_page(kva);
}

static void sroce_odp_init_state(struct sroce_odp *o)
{
	rwlock_init(&o->lock);
	spin_lock_init(&o->fault_lock);
	INIT_WORK(&o->fault_work, sroce_odp_fault_work);
	xa_init(&o->children);
	mutex_init(&o->children_mutex);
}

int sroce_odp_init(struct sroce_mr *mr, u64 start, u64 length, int access)
{
	u64 pages = sroce_odp_range_pages(start, length);
	struct ib_umem_odp *odp;

	sroce_odp_init_state(&mr->odp);
	if (sroce_odp_charge(mr, pages))
		return -ENOMEM;
	odp = ib_umem_odp_get(mr->ibmr.pd->device, start, length,
			      sroce_odp_umem_access(access), &sroce_odp_ops);
	if (IS_ERR(odp)) {
		sroce_odp_uncharge(mr, pages);
		return PTR_ERR(odp);
	}
	mr->odp.pages = pages;
	mr->umem = &odp->umem;
	return sroce_odp_attach(odp, mr);
}

/*
 * The root umem holds no mm reference of its own (its children's
 * notifiers do): hold the mm_struct for ib_umem_odp_alloc_child().
 * Addresses beyond the process's task_size are outside the MR.
 */
int sroce_odp_init_implicit(struct sroce_mr *mr, int access)
{
	struct ib_umem_odp *root;

	sroce_odp_init_state(&mr->odp);
	root = ib_umem_odp_alloc_implicit(mr->ibmr.pd->device, access);
	if (IS_ERR(root))
		return PTR_ERR(root);
	mr->umem = &root->umem;
	mmgrab(root->umem.owning_mm);
	mr->odp.implicit = true;
	mr->iova = 0;
	mr->length = root->umem.owning_mm->task_size;
	return 0;
}

void sroce_odp_fini(struct sroce_mr *mr)
{
	struct ib_umem_odp *child;
	unsigned long idx;

	/*
	 * No fault can be queued any more (queuing takes a reference, and
	 * the last is gone), but the last one may still be returning from
	 * sroce_odp_fault_work() after its sroce_mr_put(): wait for it, so
	 * that neither the MR nor the module's code goes away under it.
	 */
	flush_work(&mr->odp.fault_work);
	if (mr->odp.implicit) {
		/* no copy nor fault uses the MR any more: no lock needed */
		xa_for_each(&mr->odp.children, idx, child)
			sroce_odp_release_child(mr, child);
		xa_destroy(&mr->odp.children);
		mmdrop(mr->umem->owning_mm);
	} else {
		sroce_odp_uncharge(mr, mr->odp.pages);
	}
	if (mr->umem)
		sroce_odp_release(to_ib_umem_odp(mr->umem));
	mr->umem = NULL;
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
