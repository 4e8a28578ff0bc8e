/* SPDX-License-Identifier: GPL-2.0 */
/*
 * On-demand paging MRs (IB_ACCESS_ON_DEMAND): user memory that is not
 * pinned. ib_umem_odp keeps the pages mapped so far (dma_list; an sroce
 * device has no DMA device, so an entry is the page's kernel address with
 * the ODP_*_ALLOWED_BIT permission bits) and calls sroce back through an
 * MMU interval notifier when the application unmaps or changes them.
 * Copies trust only sroce's own record of the pages mapped (odp.c),
 * published once a fault's notifier sequence check passed.
 *
 * Copies run in softirq context or under spinlocks and cannot fault, so a
 * copy (one packet's worth) takes the MR's ODP lock for reading, checks
 * that every page it touches is mapped with the permission it needs, and
 * copies; the notifier unmaps under the same lock taken for writing, so a
 * page stays where it is until the copies using it are done. A copy finding a page missing
 * copies nothing: it queues a fault of its range on a work item, which
 * may sleep, and its caller retries later (the requester after a short
 * timer, the responder by an RNR NAK that makes the peer retry, its READ
 * responses once the fault was served, the completer by dropping the
 * response so that the READ is sent again). A
 * fault that cannot map the range (the memory is gone or read-only) is
 * remembered, and the next copy finding a page of it missing fails with
 * -EFAULT, which becomes the usual protection or remote access error.
 *
 * An implicit MR (the whole address space) maps its pages in child umems
 * of one chunk each, made by faults; each child's notifier unmaps its own
 * pages under the MR's ODP lock, and copies find each page's child under
 * that lock (struct sroce_odp).
 */
#ifndef SROCE_ODP_H
#define SROCE_ODP_H

#include <linux/types.h>
#include <rdma/ib_verbs.h>

struct sroce_mr;

/* At module load: the default of the odp_max_mb parameter. */
void sroce_odp_module_init(void);

/*
 * Pin nothing: attach an ODP umem of [start, start + length) to @mr.
 * -ENOMEM when its page lists would take the device past odp_max_mb.
 */
int sroce_odp_init(struct sroce_mr *mr, u64 start, u64 length, int access);
/*
 * Implicit ODP (ibv_reg_mr(pd, NULL, SIZE_MAX, ...)): @mr covers the
 * caller's whole address space, iova == user address; pages are mapped
 * in per-chunk child umems made by faults (struct sroce_odp).
 */
int sroce_odp_init_implicit(struct sroce_mr *mr, int access);
/*
 * Once nothing can queue a fault: waits for the fault work to return,
 * releases an implicit MR's children and the MR's umem.
 */
void sroce_odp_fini(struct sroce_mr *mr);

/*
 * Before a copy of [iova, iova + len) of an ODP MR: 0 with the ODP lock
 * held for reading (release it with sroce_odp_unlock()), -EAGAIN when a
 * page is missing (a fault is queued), -EFAULT when a fault of that page
 * failed. Any context.
 */
int sroce_odp_lock(struct sroce_mr *mr, u64 iova, u64 len, bool write,
		   unsigned long *flags);
void sroce_odp_unlock(struct sroce_mr *mr, unsigned long flags);

/*
 * Ahead of a long access of [iova, iova + len): 0 when its first pages
 * are mapped (a bounded check: the copies check the rest, page by page),
 * else sroce_odp_lock()'s -EAGAIN, with a fault of the whole range
 * queued, or -EFAULT. Any context.
 */
int sroce_odp_ready(struct sroce_mr *mr, u64 iova, u64 len, bool write);

/*
 * Process context, holding a reference on @mr: return once the fault a
 * copy queued (its -EAGAIN) was served, mapped or not. For a caller that
 * can wait instead of having the peer retry (READ responses, resp.c).
 */
void sroce_odp_wait(struct sroce_mr *mr);

/* The page holding @iova and the offset in it; ODP lock held. */
struct page *sroce_odp_page(const struct sroce_mr *mr, u64 iova,
			    unsigned int *off);

/* ibv_advise_mr(): prefetch (fault in) SGE ranges of ODP MRs. */
int sroce_advise_mr(struct ib_pd *pd, enum ib_uverbs_advise_mr_advice advice,
		    u32 flags, struct ib_sge *sg_list, u32 num_sge,
		    struct uverbs_attr_bundle *attrs);

#endif /* SROCE_ODP_H */
