/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Memory regions: user MRs pinned with ib_umem_get_va(), the DMA MR of
 * kernel consumers and their fast-registration MRs (addresses are kernel
 * virtual addresses: an sroce device has no DMA device, so ib_dma_map_*()
 * hands out virtual addresses).
 *
 * Keys: lkey == rkey == index << 8 | key byte. The index is drawn at random
 * from 24 bits and the key byte at random, so keys are neither sequential
 * nor guessable from one another. The per-device xarray is indexed by
 * index; a lookup also compares the full key with sroce_mr.key, never with
 * ibmr.lkey, which a consumer rewrites (ib_update_fast_reg_key()) before
 * the IB_WR_REG_MR that makes the new key valid has run.
 *
 * Fast-registration MRs (alloc_mr, IB_MR_TYPE_MEM_REG) start invalid:
 * map_mr_sg fills their page list, an IB_WR_REG_MR work request makes them
 * valid with the WR's key and access, IB_WR_LOCAL_INV or a peer's SEND with
 * Invalidate makes them invalid again. Lookups of an invalid MR fail.
 */
#ifndef SROCE_MR_H
#define SROCE_MR_H

#include <linux/bits.h>
#include <linux/refcount.h>
#include <linux/completion.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>
#include <rdma/sroce-abi.h>

#include "sroce.h"

struct sk_buff;
struct scatterlist;
struct sroce_dev;

#define SROCE_MAX_MR_SIZE	BIT_ULL(40)
/* Pages of one fast-registration MR (nvme-rdma asks for 256 + 1). */
#define SROCE_MAX_FAST_REG_PAGES	1024

enum sroce_mr_type {
	SROCE_MR_USER,		/* ib_umem pages */
	SROCE_MR_DMA,		/* all kernel memory, iova == kernel address */
	SROCE_MR_FAST,		/* page list of kernel addresses, REG_MR/INV */
	SROCE_MR_ODP,		/* ib_umem_odp: pages mapped on demand */
};

enum sroce_mr_state {
	SROCE_MR_VALID,
	SROCE_MR_INVALID,	/* a fast-registration MR not registered */
};

/* The state of an ODP MR (odp.c, odp.h). */
struct sroce_odp {
	/*
	 * Read side: copies, across the check that their pages are mapped
	 * and the copy. Write side: the MMU notifier, under umem_mutex too,
	 * while it unmaps pages. Faults map pages under umem_mutex alone:
	 * a page's bit in sroce's record (struct sroce_odp_pages, odp.c)
	 * changes from unmapped to mapped in one store, after its entry.
	 */
	rwlock_t lock;
	/*
	 * Under fault_lock: the user range copies found missing, for the
	 * fault work (empty when start == end; queued while it is waiting),
	 * and the range the last fault could not map (bad_*, empty when
	 * equal), which the next copy needing it consumes.
	 */
	u64 fault_start, fault_end;
	bool fault_write;
	bool fault_queued;
	u64 bad_start, bad_end;
	spinlock_t fault_lock;	/* the five fields above */
	/*
	 * holds an MR reference while queued or running; flushed before
	 * the MR is freed (sroce_odp_fini()), as it runs on after its put
	 */
	struct work_struct fault_work;

	/*
	 * Implicit ODP (the whole address space, odp.c): the MR's umem is
	 * an anchor; child umems of SROCE_ODP_CHUNK bytes, each with its
	 * own MMU notifier, are made by faults where the process has
	 * mappings. children is indexed by user address >> chunk shift:
	 * entries are added under children_mutex (faults and prefetches
	 * map under it too, of an explicit MR as well: one page walk at a
	 * time, odp.c) and removed only by dereg, once no copy or
	 * fault uses the MR; copies load them under the read side of lock.
	 * A child whose first fault fails is removed at once, under both.
	 * The mm_struct is held (mmgrab) for ib_umem_odp_alloc_child().
	 */
	bool implicit;
	u32 nchildren;		/* under children_mutex; odp_max_children */
	struct xarray children;
	/*
	 * Pages of range of the MR's page lists charged to the device
	 * (odp.c, odp_max_mb): set once for an explicit MR, under
	 * children_mutex for an implicit one's children.
	 */
	u64 pages;
	struct mutex children_mutex;	/* children, nchildren, pages */
};

struct sroce_mr {
	struct ib_mr ibmr;
	/* charged to (limits.h): its PD's; NULL: the kernel */
	struct sroce_user *user;
	enum sroce_mr_type type;
	int access;		/* IB_ACCESS_* */
	u64 iova;
	u64 length;
	struct ib_umem *umem;
	struct page **pages;	/* SROCE_MR_USER: pinned pages, in order */
	unsigned long npages;
	unsigned int page_offset; /* offset of iova in pages[0] */

	/*
	 * key, state and (for SROCE_MR_FAST) iova, length and access change
	 * under lock; state is written last with release semantics and read
	 * first with acquire by lookups, which then see the rest consistent.
	 */
	u32 key;
	u8 state;		/* enum sroce_mr_state */
	/*
	 * Memory windows (mw.c), under lock: num_mw windows are bound to
	 * the MR (each points at it without a reference); dereg fails while
	 * there are any, and once it passed that check, dereg is set and
	 * binds refuse the MR.
	 */
	u32 num_mw;
	bool dereg;
	spinlock_t lock;	/* the fields above */

	/* SROCE_MR_FAST: kernel addresses of page_size pages */
	u64 *fast_pages;
	u32 fast_max;		/* slots in fast_pages */
	u32 fast_npages;	/* mapped by the last map_mr_sg */
	u32 fast_offset;	/* of the first byte in fast_pages[0] */
	unsigned int fast_shift; /* log2 of the page size */

	struct sroce_odp odp;	/* SROCE_MR_ODP */

	/*
	 * Lifetime: the xarray holds the initial reference. A lookup under
	 * RCU takes one with refcount_inc_not_zero(); dereg removes the key,
	 * drops the initial reference and waits for the others (held only
	 * for the duration of a copy) before unpinning; the struct itself is
	 * freed after an RCU grace period. A reregistration hands the key's
	 * slot to a successor; the old MR keeps its initial reference until
	 * its own dereg, which leaves the slot alone. Either way the MR has
	 * left the slot before the count can reach zero, so a lookup that
	 * finds it at zero reads the slot again (the successor's, or empty).
	 */
	refcount_t ref;
	struct completion released;
	struct rcu_head rcu;
};

static inline struct sroce_mr *to_smr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct sroce_mr, ibmr);
}

/*
 * The key table (sdev->mr_xa) is shared by MRs and memory windows, so an
 * rkey names one or the other: a window's entry is its pointer tagged with
 * SROCE_KEY_MW (xa_tag_pointer()). Lookups of MRs ignore windows' entries
 * and the other way round.
 */
#define SROCE_KEY_MW	1

static inline struct sroce_mr *sroce_key_mr(void *entry)
{
	return xa_pointer_tag(entry) ? NULL : entry;
}

/* Insert @entry at a random free index of the key table. */
int sroce_key_insert(struct sroce_dev *sdev, void *entry, u32 *index);

enum sroce_mw_state {
	SROCE_MW_FREE,		/* type 2: not bound, no access */
	SROCE_MW_VALID,		/* type 1 always; type 2 once bound */
	SROCE_MW_DEAD,		/* being deallocated: binds fail */
};

/*
 * A memory window (IBTA 10.6.7). The core allocates and frees it
 * (INIT_RDMA_OBJ_SIZE), so ibmw comes first. Type 1 windows are always
 * valid and bound to [addr, addr + length) of mr, or to nothing (length
 * 0, mr NULL); ibv_bind_mw rebinds them at any time. Type 2 (2B) windows
 * are free until an IB_WR_BIND_MW binds them, associated with the QP that
 * ran it, and free again after a LOCAL_INV or a SEND with Invalidate.
 */
struct sroce_mw {
	struct ib_mw ibmw;
	struct sroce_user *user;	/* charged to (limits.h); NULL: kernel */
	/*
	 * Everything below up to lock changes under lock: a bind, an
	 * invalidation, dealloc or the destruction of the type 2 window's
	 * QP. Remote accesses read it under lock too and take their MR
	 * reference there; mr is valid while set (mr->num_mw counts it).
	 */
	u32 key;		/* current rkey: index << 8 | key byte */
	u8 state;		/* enum sroce_mw_state */
	int access;		/* IB_ACCESS_REMOTE_* granted by the bind */
	u64 addr;
	u64 length;
	struct sroce_mr *mr;
	/*
	 * Type 2: the QP it is bound through, on whose mw_list it is
	 * (qp_entry, changed under that QP's mw_lock as well).
	 */
	struct ib_qp *qp;
	struct list_head qp_entry;
	spinlock_t lock;	/* the fields above */

	/*
	 * Lifetime: the key table holds the initial reference; a lookup
	 * under RCU takes one with refcount_inc_not_zero(). dealloc removes
	 * the key, waits for an RCU grace period (the core frees the
	 * struct right after dealloc) and for the other references.
	 */
	refcount_t ref;
	struct completion released;
};

static inline struct sroce_mw *to_smw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct sroce_mw, ibmw);
}

/*
 * An rkey of a remote access through @qp: an MR of @pd (the QP's, or for
 * an XRC target QP the PD of the request's XRC SRQ), or a valid window of
 * @pd (for type 2, bound through @qp) whose range contains
 * [addr, addr + len) and whose access includes @access. Returns the MR to
 * access with a reference, or NULL. Any context.
 */
struct sroce_mr *sroce_rkey_get(struct sroce_dev *sdev, struct ib_pd *pd,
				struct ib_qp *qp, u32 rkey, u64 addr, u64 len,
				int access);

/* An IB_WR_BIND_MW (type 2) or ibv_bind_mw() (type 1) WQE of @qp. */
enum ib_wc_status sroce_mw_bind(struct sroce_dev *sdev, struct ib_qp *qp,
				u32 mw_rkey, u32 new_rkey, u32 mr_lkey,
				u64 addr, u64 length, int access);
/*
 * IB_WR_LOCAL_INV of a fast-registration MR or a type 2 window, and a
 * peer's SEND with Invalidate received by @qp (0 or -EINVAL).
 */
enum ib_wc_status sroce_key_local_inv(struct sroce_dev *sdev,
				      struct ib_qp *qp, u32 key);
int sroce_key_remote_inv(struct sroce_dev *sdev, struct ib_pd *pd,
			 struct ib_qp *qp, u32 key);
/* @qp is being destroyed: free the type 2 windows bound through it. */
void sroce_mw_qp_destroyed(struct ib_qp *qp);

int sroce_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int sroce_dealloc_mw(struct ib_mw *ibmw);

/*
 * Look a key up for an access of @len bytes at @addr. The MR must belong
 * to @pd, contain [addr, addr + len) and allow every IB_ACCESS_* bit of
 * @access (0 for a local read, which every MR allows). Returns the MR with
 * a reference (drop it with sroce_mr_put()) or NULL. Any context.
 */
struct sroce_mr *sroce_mr_get(struct sroce_dev *sdev, struct ib_pd *pd,
			      u32 key, u64 addr, u64 len, int access);
void sroce_mr_put(struct sroce_mr *mr);
/* The same for a use of the whole MR (FLUSH of the MR): no range check. */
struct sroce_mr *sroce_mr_get_whole(struct sroce_dev *sdev, struct ib_pd *pd,
				    u32 key, int access);

/*
 * Copy between a kernel buffer and [iova, iova + len) of a looked-up MR.
 * -EFAULT: a DMA MR address that maps no memory, or ODP memory that
 * could not be faulted in; -EAGAIN: ODP pages are being faulted in, retry
 * later (odp.h). The same two for every copy below.
 */
int sroce_mr_read(struct sroce_mr *mr, u64 iova, void *dst, u32 len);
int sroce_mr_write(struct sroce_mr *mr, u64 iova, const void *src, u32 len);

/* Copy @len bytes at @skb_off of @skb into the MR at @iova. */
int sroce_mr_write_skb(struct sroce_mr *mr, u64 iova,
		       const struct sk_buff *skb, int skb_off, u32 len);

/*
 * Append @len bytes of the MR at @iova to the payload of @skb: referenced
 * as page frags (zero copy) when the skb has frag slots left and @zcopy is
 * set, copied into its tail room otherwise. The caller sized the linear
 * part for the copy case; a copy finding no room there (or the skb holding
 * frags already) fails with -EMSGSIZE, as does running out of frag slots.
 */
int sroce_mr_append_skb(struct sroce_mr *mr, u64 iova, struct sk_buff *skb,
			u32 len, bool zcopy);

/*
 * 64-bit atomic on the MR at @iova (8-byte aligned, checked by the
 * caller): compare-and-swap when @cmp_swap, else fetch-and-add. Atomic
 * against the CPU and against every other sroce atomic. Stores the
 * original value in *@orig; returns 0, -EFAULT, -EAGAIN (ODP pages
 * missing, odp.h) or -EINVAL when the memory behind @iova is not 8-byte
 * aligned.
 */
int sroce_mr_atomic(struct sroce_mr *mr, u64 iova, bool cmp_swap,
		    u64 compare_add, u64 swap, u64 *orig);

/*
 * ATOMIC WRITE: store the 8 bytes of @value (as they came off the wire)
 * at @iova (8-byte aligned, checked by the caller) in one store that no
 * reader sees half done, ordered after every earlier placement. Returns
 * what sroce_mr_atomic() does.
 */
int sroce_mr_atomic_write(struct sroce_mr *mr, u64 iova, u64 value);

/*
 * Scatter/gather lists (validated kernel copies of WQE SGEs). Byte
 * @offset of the list is where the transfer starts. Each SGE's lkey is
 * looked up in @pd with @access. Return 0, -EACCES (bad lkey, wrong PD,
 * missing access or out of the MR: IB_WC_LOC_PROT_ERR), -EMSGSIZE (the
 * list is shorter than offset + len: IB_WC_LOC_LEN_ERR) or -EAGAIN (ODP
 * pages are being faulted in: nothing was copied from the SGE that needs
 * them on, retry later).
 */
int sroce_sgl_write_skb(struct sroce_dev *sdev, struct ib_pd *pd,
			const struct sroce_sge *sgl, u32 num_sge, u32 offset,
			const struct sk_buff *skb, int skb_off, u32 len);
int sroce_sgl_write(struct sroce_dev *sdev, struct ib_pd *pd,
		    const struct sroce_sge *sgl, u32 num_sge, u32 offset,
		    const void *src, u32 len);

/* [offset, offset + len) of an SGE list (a cursor while it is walked). */
struct sroce_sgl_range {
	const struct sroce_sge *sgl;
	u32 num_sge;
	u32 offset;
	u32 len;
};

/*
 * The MRs of one packet's payload, each looked up once and held while the
 * packet is sized and filled: a reregistration may put another MR behind
 * a key in between, and the MR's type decides zero copy, so the room the
 * skb needs (an skb sized for page frags has none for a copy). On the
 * caller's stack: no allocation per packet.
 */
struct sroce_sgl_mrs {
	struct sroce_sgl_range range;
	u32 n;				/* held: one per SGE the range spans */
	struct sroce_mr *mr[SROCE_MAX_SGE];
};

/*
 * Look up the MRs of [offset, offset + len) of an SGE list for a local
 * read into @m: 0, -EACCES or -EMSGSIZE as above (nothing held then).
 * sroce_sgl_release() drops them.
 */
int sroce_sgl_hold(struct sroce_sgl_mrs *m, struct sroce_dev *sdev,
		   struct ib_pd *pd, const struct sroce_sge *sgl, u32 num_sge,
		   u32 offset, u32 len);
void sroce_sgl_release(struct sroce_sgl_mrs *m);
/* Page references a zero-copy append of @m would take (an upper bound). */
unsigned int sroce_sgl_frags(const struct sroce_sgl_mrs *m);
/*
 * Append the payload @m holds to @skb (sroce_mr_append_skb()): @zcopy
 * only if sroce_sgl_frags() allows it, else the skb has linear room for
 * all of it. 0, -EACCES, -EMSGSIZE or -EAGAIN as above.
 */
int sroce_sgl_append_skb(const struct sroce_sgl_mrs *m, struct sk_buff *skb,
			 bool zcopy);

/*
 * Are the ODP pages at the start of [iova, iova + len) (a whole SGE list)
 * mapped for @write? 0, -EAGAIN (a fault of the whole range is queued) or
 * -EFAULT (-EACCES for a list); always 0 for other MRs. A check ahead of
 * an access that should rarely find them missing later (a READ, an
 * atomic's result); the copies still check each page (odp.h).
 */
int sroce_mr_ready(struct sroce_mr *mr, u64 iova, u64 len, bool write);
/* Process context: wait for the ODP fault a copy's -EAGAIN queued. */
void sroce_mr_wait_fault(struct sroce_mr *mr);
int sroce_sgl_ready(struct sroce_dev *sdev, struct ib_pd *pd,
		    const struct sroce_sge *sgl, u32 num_sge, u32 len,
		    int access);

/*
 * Sum of SGE lengths, or -EMSGSIZE beyond 2^31 (the IB message limit,
 * itself allowed: hence s64).
 */
s64 sroce_sgl_length(const struct sroce_sge *sgl, u32 num_sge);

/*
 * May a REG_MR grant @access? Not flags no fast-registration MR can have,
 * nor remote write or atomic without local write (the rule
 * ib_check_mr_access() applies to other registrations): post_send refuses
 * such a WR with -EINVAL instead of registering fewer rights.
 */
bool sroce_mr_fast_access_ok(int access);

/*
 * Work requests on fast-registration MRs, run by the requester in order.
 * Return an IB_WC_* status: IB_WC_LOC_QP_OP_ERR for a key that names no
 * such MR in @pd, or a REG_MR of a valid one or with another index.
 */
enum ib_wc_status sroce_mr_fast_reg(struct sroce_dev *sdev, struct ib_pd *pd,
				    u32 key, int access);
enum ib_wc_status sroce_mr_local_inv(struct sroce_dev *sdev, struct ib_pd *pd,
				     u32 key);
/* A peer's SEND with Invalidate: 0 or -EINVAL (IBTA 10.6.7.2). */
int sroce_mr_remote_inv(struct sroce_dev *sdev, struct ib_pd *pd, u32 rkey);

/* Verbs. */
struct ib_mr *sroce_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *sroce_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg);
int sroce_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset);
/* sroce_reg_user_mr() is declared in compat.h, which adapts it to each kernel. */
struct ib_mr *sroce_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *pd, struct ib_udata *udata);
int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);

void sroce_mr_table_init(struct sroce_dev *sdev);
void sroce_mr_table_fini(struct sroce_dev *sdev);

#endif /* SROCE_MR_H */
