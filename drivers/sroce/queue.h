/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel side of the rings shared with the provider (layout and ordering
 * rules: include/uapi/rdma/sroce-abi.h).
 *
 * A ring is one vmalloc_user() buffer: struct sroce_ring_ctrl, then
 * num_entries slots of stride bytes at SROCE_RING_SLOTS_OFFSET. Kernel
 * consumers' QPs and CQs use the same layout in kernel memory, so the
 * transport has a single fetch path and a single completion path.
 *
 * The kernel never trusts the counter the other side writes: it reads it
 * once, bounds it against its own private copy of the counter it writes
 * (the shared copy of that one is write-only for the kernel) and copies a
 * slot out before validating it.
 */
#ifndef SROCE_QUEUE_H
#define SROCE_QUEUE_H

#include <linux/types.h>
#include <linux/log2.h>
#include <asm/barrier.h>
#include <rdma/sroce-abi.h>

struct rdma_user_mmap_entry;
struct ib_udata;

struct sroce_queue {
	struct sroce_ring_ctrl *ctrl;	/* start of the buffer */
	size_t buf_len;			/* bytes, page aligned (mmap_len) */
	u32 num_entries;		/* power of two */
	u32 stride;			/* bytes per slot */
	/*
	 * User rings: the mmap entry owns the buffer once inserted and frees
	 * it when the last mapping is gone (the device core's mmap_free), so
	 * a ring outlives its object while user space still maps it.
	 */
	struct rdma_user_mmap_entry *mmap_entry;
};

/* Bytes of a ring with @num_entries slots of @stride bytes. */
static inline size_t sroce_queue_bytes(u32 num_entries, u32 stride)
{
	return SROCE_RING_SLOTS_OFFSET + (size_t)num_entries * stride;
}

static inline void *sroce_queue_slot(const struct sroce_queue *q, u32 index)
{
	return (u8 *)q->ctrl + SROCE_RING_SLOTS_OFFSET +
	       (size_t)(index & (q->num_entries - 1)) * q->stride;
}

static inline u32 sroce_queue_load_producer(const struct sroce_queue *q)
{
	/* pairs with the producer's release: slots read after are filled */
	return smp_load_acquire(&q->ctrl->producer);
}

static inline u32 sroce_queue_load_consumer(const struct sroce_queue *q)
{
	/* pairs with the consumer's release: returned slots are done with */
	return smp_load_acquire(&q->ctrl->consumer);
}

static inline void sroce_queue_publish_producer(struct sroce_queue *q, u32 v)
{
	/* slot contents become visible before the counter that covers them */
	smp_store_release(&q->ctrl->producer, v);
}

static inline void sroce_queue_publish_consumer(struct sroce_queue *q, u32 v)
{
	/* reads of returned slots are complete before the slots are reused */
	smp_store_release(&q->ctrl->consumer, v);
}

/*
 * SROCE_RING_FLAG_* for the provider to see. The kernel never reads the
 * shared word back: user space may have written anything there. A queue
 * with no ring (the RQ of a QP on an SRQ) has no one to tell.
 */
static inline void sroce_queue_set_flags(struct sroce_queue *q, u32 flags)
{
	if (q->ctrl)
		WRITE_ONCE(q->ctrl->flags, flags);
}

int sroce_queue_init(struct sroce_queue *q, u32 num_entries, u32 stride);
/* Make a user ring mappable and describe it in @info (mmap_len == 0: none). */
int sroce_queue_mmap(struct sroce_queue *q, struct ib_udata *udata,
		     struct sroce_queue_info *info);
void sroce_queue_free(struct sroce_queue *q);

#endif /* SROCE_QUEUE_H */
