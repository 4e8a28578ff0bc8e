/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Memory regions: user MRs pinned with ib_umem_get(), the DMA MR of
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
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>
#include <rdma/sroce-abi.h>

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
};

enum sroce_mr_state {
	SROCE_MR_VALID,
	SROCE_MR_INVALID,	/* a fast-registration MR not registered */
};

struct sroce_mr {
	struct ib_mr ibmr;
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
	spinlock_t lock;

	/* SROCE_MR_FAST: kernel addresses of page_size pages */
	u64 *fast_pages;
	u32 fast_max;		/* slots in fast_pages */
	u32 fast_npages;	/* mapped by the last map_mr_sg */
	u32 fast_offset;	/* of the first byte in fast_pages[0] */
	unsigned int fast_shift; /* log2 of the page size */

	/*
	 * Lifetime: the xarray holds the initial reference. A lookup under
	 * RCU takes one with refcount_inc_not_zero(); dereg removes the key,
	 * drops the initial reference and waits for the others (held only
	 * for the duration of a copy) before unpinning; the struct itself is
	 * freed after an RCU grace period.
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
 * -EFAULT: a DMA MR address that maps no memory.
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
 * part for the copy case.
 */
int sroce_mr_append_skb(struct sroce_mr *mr, u64 iova, struct sk_buff *skb,
			u32 len, bool zcopy);

/*
 * 64-bit atomic on the MR at @iova (8-byte aligned, checked by the
 * caller): compare-and-swap when @cmp_swap, else fetch-and-add. Atomic
 * against the CPU and against every other sroce atomic. Stores the
 * original value in *@orig; returns 0 or -EFAULT.
 */
int sroce_mr_atomic(struct sroce_mr *mr, u64 iova, bool cmp_swap,
		    u64 compare_add, u64 swap, u64 *orig);

/*
 * ATOMIC WRITE: store the 8 bytes of @value (as they came off the wire)
 * at @iova (8-byte aligned, checked by the caller) in one store that no
 * reader sees half done, ordered after every earlier placement. Returns
 * 0 or -EFAULT.
 */
int sroce_mr_atomic_write(struct sroce_mr *mr, u64 iova, u64 value);

/*
 * Scatter/gather lists (validated kernel copies of WQE SGEs). Byte
 * @offset of the list is where the transfer starts. Each SGE's lkey is
 * looked up in @pd with @access. Return 0, -EACCES (bad lkey, wrong PD,
 * missing access or out of the MR: IB_WC_LOC_PROT_ERR) or -EMSGSIZE (the
 * list is shorter than offset + len: IB_WC_LOC_LEN_ERR).
 */
int sroce_sgl_write_skb(struct sroce_dev *sdev, struct ib_pd *pd,
			const struct sroce_sge *sgl, u32 num_sge, u32 offset,
			const struct sk_buff *skb, int skb_off, u32 len);
int sroce_sgl_write(struct sroce_dev *sdev, struct ib_pd *pd,
		    const struct sroce_sge *sgl, u32 num_sge, u32 offset,
		    const void *src, u32 len);
int sroce_sgl_append_skb(struct sroce_dev *sdev, struct ib_pd *pd,
			 const struct sroce_sge *sgl, u32 num_sge, u32 offset,
			 struct sk_buff *skb, u32 len, bool zcopy);

/*
 * Page references a zero-copy append of [offset, offset + len) would take
 * (an upper bound), or a negative errno as above.
 */
int sroce_sgl_frags(struct sroce_dev *sdev, struct ib_pd *pd,
		    const struct sroce_sge *sgl, u32 num_sge, u32 offset,
		    u32 len);

/* Sum of SGE lengths, or -EMSGSIZE beyond 2^31 (the IB message limit). */
int sroce_sgl_length(const struct sroce_sge *sgl, u32 num_sge);

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
struct ib_mr *sroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata);
int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);

void sroce_mr_table_init(struct sroce_dev *sdev);
void sroce_mr_table_fini(struct sroce_dev *sdev);

#endif /* SROCE_MR_H */
