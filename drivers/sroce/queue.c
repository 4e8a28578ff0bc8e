// SPDX-License-Identifier: GPL-2.0
/* Allocation of the shared rings (layout: queue.h and the uapi header). */

#include <linux/vmalloc.h>
#include <linux/mm.h>
#include <rdma/ib_verbs.h>

#include "sroce.h"
#include "queue.h"

/*
 * Zeroed vmalloc memory, so the same buffer serves the provider's mapping
 * (sroce_mmap() maps its pages) and kernel consumers. A process asks for
 * up to tens of megabytes per QP: the pages are charged to its memory
 * cgroup, and a charge or an allocation that fails makes the verb fail
 * with -ENOMEM instead of waking the OOM killer or warning.
 */
#define SROCE_RING_GFP (GFP_KERNEL_ACCOUNT | __GFP_ZERO | \
			__GFP_RETRY_MAYFAIL | __GFP_NOWARN)

int sroce_queue_init(struct sroce_queue *q, u32 num_entries, u32 stride)
{
	if (!is_power_of_2(num_entries) || !stride)
		return -EINVAL;
	q->num_entries = num_entries;
	q->stride = stride;
	q->buf_len = PAGE_ALIGN(sroce_queue_bytes(num_entries, stride));
	q->mmap_entry = NULL;
	q->ctrl = __vmalloc(q->buf_len, SROCE_RING_GFP);
	return q->ctrl ? 0 : -ENOMEM;
}

/*
 * Offer the ring to user space. From here on the mmap entry owns the
 * buffer (it outlives the object while mapped).
 */
int sroce_queue_mmap(struct sroce_queue *q, struct ib_udata *udata,
		     struct sroce_queue_info *info)
{
	struct sroce_ucontext *uctx = rdma_udata_to_drv_context(udata,
					struct sroce_ucontext, ibuc);
	struct sroce_mmap_entry *entry;
	u64 key;

	entry = sroce_mmap_insert(uctx, q->ctrl, q->buf_len, &key);
	if (IS_ERR(entry))
		return PTR_ERR(entry);
	q->mmap_entry = &entry->rdma;
	info->mmap_key = key;
	info->mmap_len = q->buf_len;
	info->num_entries = q->num_entries;
	info->stride = q->stride;
	info->reserved = 0;
	return 0;
}

void sroce_queue_free(struct sroce_queue *q)
{
	if (q->mmap_entry)
		sroce_mmap_remove(to_smmap(q->mmap_entry));
	else
		vfree(q->ctrl);
	q->ctrl = NULL;
	q->mmap_entry = NULL;
}
