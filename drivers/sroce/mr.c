// SPDX-License-Identifier: GPL-2.0
/*
 * Memory regions, their keys, and every copy between MR memory and
 * buffers or packets. Locking and lifetime: struct sroce_mr (mr.h). The
 * key table (sdev->mr_xa) locks itself; lookups run under RCU.
 */

#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <linux/skbuff.h>
#include <linux/net.h>
#include <linux/vmalloc.h>
#include <rdma/ib_umem.h>

#include "sroce.h"
#include "net.h"
#include "mr.h"
#include "odp.h"

#define SROCE_MR_INDEX_BITS	24
#define SROCE_MR_INDEX_MAX	(BIT(SROCE_MR_INDEX_BITS) - 1)
#define SROCE_MR_RANDOM_TRIES	8

/*
 * Access flags a registration may ask for; the rest are refused. FLUSH
 * to global visibility where the core lets MRs ask for it (compat.h);
 * never persistence: sroce's memory is ordinary RAM. On-demand paging
 * (odp.c), with huge pages when the memory is hugetlbfs (not for an
 * implicit MR, which ib_umem_odp_alloc_implicit() refuses them).
 */
#define SROCE_MR_ACCESS_SUPPORTED \
	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
	 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
	 IB_ACCESS_MW_BIND | IB_ACCESS_RELAXED_ORDERING | \
	 IB_ACCESS_ON_DEMAND | IB_ACCESS_HUGETLB | \
	 (SROCE_HAVE_FLUSH_ACCESS ? SROCE_ACCESS_FLUSH_GLOBAL : 0))

void sroce_mr_table_init(struct sroce_dev *sdev)
{
	xa_init_flags(&sdev->mr_xa, XA_FLAGS_ALLOC1);
}

SROCE_EXPORT_FOR_KUNIT(sroce_mr_table_init);

void sroce_mr_table_fini(struct sroce_dev *sdev)
{
	WARN_ON(!xa_empty(&sdev->mr_xa));
	xa_destroy(&sdev->mr_xa);
}

SROCE_EXPORT_FOR_KUNIT(sroce_mr_table_fini);

/*
 * A random free index for @entry (an MR or a tagged window); a sequential
 * fallback only when the table is nearly full.
 */
int sroce_key_insert(struct sroce_dev *sdev, void *entry, u32 *index)
{
	int i, err;

	for (i = 0; i < SROCE_MR_RANDOM_TRIES; i++) {
		*index = get_random_u32_below(SROCE_MR_INDEX_MAX) + 1;
		err = xa_insert(&sdev->mr_xa, *index, entry, GFP_KERNEL);
		if (err != -EBUSY)
			break;
	}
	if (err == -EBUSY)
		err = xa_alloc(&sdev->mr_xa, index, entry,
			       XA_LIMIT(1, SROCE_MR_INDEX_MAX), GFP_KERNEL);
	return err;
}

SROCE_EXPORT_FOR_KUNIT(sroce_key_insert);

/* Give @mr a key: a random free index and a random key byte. */
static int sroce_mr_insert(struct sroce_dev *sdev, struct sroce_mr *mr)
{
	u32 index;
	int err;

	err = sroce_key_insert(sdev, mr, &index);
	if (err)
		return err;
	mr->key = index << 8 | get_random_u8();
	mr->ibmr.lkey = mr->key;
	mr->ibmr.rkey = mr->key;
	return 0;
}

/* NULL when out of memory or when the device holds max_mr MRs already. */
static struct sroce_mr *sroce_mr_alloc(struct ib_pd *ibpd, int access)
{
	struct sroce_limits *limits = &to_sdev(ibpd->device)->limits;
	struct sroce_user *user = to_spd(ibpd)->user;
	struct sroce_mr *mr;

	if (sroce_obj_charge(limits, user, SROCE_OBJ_MR))
		return NULL;
	mr = kzalloc(sizeof(*mr), GFP_KERNEL_ACCOUNT);
	if (!mr) {
		sroce_obj_uncharge(limits, user, SROCE_OBJ_MR);
		return NULL;
	}
	mr->user = user;
	mr->ibmr.pd = ibpd;
	mr->access = access;
	mr->state = SROCE_MR_VALID;
	spin_lock_init(&mr->lock);
	refcount_set(&mr->ref, 1);
	init_completion(&mr->released);
	return mr;
}

static void sroce_mr_free(struct sroce_mr *mr)
{
	if (mr->type == SROCE_MR_ODP)
		sroce_odp_fini(mr);
	if (mr->umem)
		ib_umem_release(mr->umem);
	kvfree(mr->pages);
	kvfree(mr->fast_pages);
	sroce_obj_uncharge(&to_sdev(mr->ibmr.pd->device)->limits, mr->user,
			   SROCE_OBJ_MR);
	kfree_rcu(mr, rcu);
}

struct ib_mr *sroce_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct sroce_dev *sdev = to_sdev(ibpd->device);
	struct sroce_mr *mr;
	int err;

	if (access & ~SROCE_MR_ACCESS_SUPPORTED)
		return ERR_PTR(-EOPNOTSUPP);
	mr = sroce_mr_alloc(ibpd, access);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->type = SROCE_MR_DMA;
	mr->length = U64_MAX;
	err = sroce_mr_insert(sdev, mr);
	if (err) {
		sroce_mr_free(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

struct ib_mr *sroce_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg)
{
	struct sroce_dev *sdev = to_sdev(ibpd->device);
	struct sroce_mr *mr;
	int err;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > SROCE_MAX_FAST_REG_PAGES)
		return ERR_PTR(-EINVAL);
	mr = sroce_mr_alloc(ibpd, 0);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->type = SROCE_MR_FAST;
	mr->state = SROCE_MR_INVALID;
	mr->fast_max = max_num_sg;
	mr->fast_pages = kvcalloc(max_num_sg, sizeof(u64), GFP_KERNEL_ACCOUNT);
	if (!mr->fast_pages) {
		err = -ENOMEM;
		goto err_free;
	}
	err = sroce_mr_insert(sdev, mr);
	if (err)
		goto err_free;
	return &mr->ibmr;

err_free:
	sroce_mr_free(mr);
	return ERR_PTR(err);
}

static int sroce_mr_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct sroce_mr *mr = to_smr(ibmr);

	if (mr->fast_npages == mr->fast_max)
		return -ENOMEM;
	mr->fast_pages[mr->fast_npages++] = addr;
	return 0;
}

/*
 * The consumer maps an invalid MR (IBTA: only a free region may be
 * registered); the page list is read by lookups only once REG_MR made the
 * MR valid, and every read of it is bounded by fast_max.
 */
int sroce_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset)
{
	struct sroce_mr *mr = to_smr(ibmr);
	int n;

	if (!ibmr->page_size || !is_power_of_2(ibmr->page_size))
		return -EINVAL;
	mr->fast_npages = 0;
	n = ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, sroce_mr_set_page);
	mr->fast_shift = ilog2(ibmr->page_size);
	mr->fast_offset = mr->fast_npages ?
			  ibmr->iova - mr->fast_pages[0] : 0;
	return n;
}

/*
 * Reads of a key's slot that find an MR whose last reference is gone. Each
 * one means the slot changed since the read before (below), so this bounds
 * how many reregistrations of the key one lookup keeps up with.
 */
#define SROCE_MR_SLOT_TRIES	4

/*
 * The MR in @key's slot, with a reference, or NULL. An MR leaves its slot
 * before its initial reference is dropped: dereg erases the slot first,
 * and rereg puts the successor there before ib_core deregisters the old
 * MR. So an MR found with no references left is no longer there: read the
 * slot again rather than fail, and a key that stays valid across a
 * reregistration finds the MR that took it over.
 */
static struct sroce_mr *sroce_mr_slot_get(struct sroce_dev *sdev, u32 key)
{
	unsigned int tries = SROCE_MR_SLOT_TRIES;
	struct sroce_mr *mr;

	rcu_read_lock();
	do {
		mr = sroce_key_mr(xa_load(&sdev->mr_xa, key >> 8));
		if (!mr || refcount_inc_not_zero(&mr->ref))
			break;
		/*
		 * Read the slot after that zero: refcount_dec_and_test()
		 * orders the slot's update before the count reached it.
		 */
		smp_rmb();
		mr = NULL;
	} while (--tries);
	rcu_read_unlock();
	return mr;
}

/* The fast-registration MR @key names by its index, with a reference. */
static struct sroce_mr *sroce_mr_get_fast(struct sroce_dev *sdev,
					  struct ib_pd *pd, u32 key)
{
	struct sroce_mr *mr = sroce_mr_slot_get(sdev, key);

	if (!mr)
		return NULL;
	if (mr->type != SROCE_MR_FAST || mr->ibmr.pd != pd) {
		sroce_mr_put(mr);
		return NULL;
	}
	return mr;
}

#define SROCE_MR_FAST_ACCESS \
	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
	 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC)

bool sroce_mr_fast_access_ok(int access)
{
	/* MW_BIND and relaxed ordering are accepted, and grant nothing here */
	if (access & ~(SROCE_MR_FAST_ACCESS | IB_ACCESS_MW_BIND |
		       IB_ACCESS_RELAXED_ORDERING))
		return false;
	/* remote write or atomic needs local write (as ib_check_mr_access) */
	return !(access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) ||
	       (access & IB_ACCESS_LOCAL_WRITE);
}

enum ib_wc_status sroce_mr_fast_reg(struct sroce_dev *sdev, struct ib_pd *pd,
				    u32 key, int access)
{
	enum ib_wc_status status = IB_WC_LOC_QP_OP_ERR;
	struct sroce_mr *mr = sroce_mr_get_fast(sdev, pd, key);
	unsigned long flags;

	if (!mr)
		return status;
	spin_lock_irqsave(&mr->lock, flags);
	if (mr->state == SROCE_MR_INVALID && mr->fast_npages &&
	    mr->ibmr.length && mr->ibmr.length <= SROCE_MAX_MR_SIZE &&
	    mr->fast_offset + mr->ibmr.length <=
	    (u64)mr->fast_npages << mr->fast_shift &&
	    mr->ibmr.iova + mr->ibmr.length > mr->ibmr.iova) {
		mr->iova = mr->ibmr.iova;
		mr->length = mr->ibmr.length;
		mr->access = access & SROCE_MR_FAST_ACCESS;
		mr->key = key;
		/* the fields above are visible before the MR is valid */
		smp_store_release(&mr->state, SROCE_MR_VALID);
		status = IB_WC_SUCCESS;
		atomic64_inc(&sdev->rx_stats.c[SROCE_MR_FAST_REGS]);
	}
	spin_unlock_irqrestore(&mr->lock, flags);
	sroce_mr_put(mr);
	return status;
}

static int sroce_mr_invalidate(struct sroce_dev *sdev, struct ib_pd *pd,
			       u32 key)
{
	struct sroce_mr *mr = sroce_mr_get_fast(sdev, pd, key);
	unsigned long flags;
	int err = -EINVAL;

	if (!mr)
		return err;
	spin_lock_irqsave(&mr->lock, flags);
	if (mr->state == SROCE_MR_VALID && mr->key == key) {
		WRITE_ONCE(mr->state, SROCE_MR_INVALID);
		err = 0;
	}
	spin_unlock_irqrestore(&mr->lock, flags);
	sroce_mr_put(mr);
	return err;
}

enum ib_wc_status sroce_mr_local_inv(struct sroce_dev *sdev, struct ib_pd *pd,
				     u32 key)
{
	if (sroce_mr_invalidate(sdev, pd, key))
		return IB_WC_LOC_QP_OP_ERR;
	atomic64_inc(&sdev->rx_stats.c[SROCE_MR_LOCAL_INVS]);
	return IB_WC_SUCCESS;
}

int sroce_mr_remote_inv(struct sroce_dev *sdev, struct ib_pd *pd, u32 rkey)
{
	int err = sroce_mr_invalidate(sdev, pd, rkey);

	if (!err)
		atomic64_inc(&sdev->rx_stats.c[SROCE_MR_REMOTE_INVS]);
	return err;
}

/* The pinned pages in address order, for O(1) iova lookups. */
static int sroce_mr_collect_pages(struct sroce_mr *mr)
{
	struct sg_table *sgt = &mr->umem->sgt_append.sgt;
	struct sg_page_iter iter;
	unsigned long n = 0, max;

	max = (ib_umem_offset(mr->umem) + mr->length + PAGE_SIZE - 1) >>
	      PAGE_SHIFT;
	mr->pages = kvmalloc_array(max, sizeof(*mr->pages), GFP_KERNEL_ACCOUNT);
	if (!mr->pages)
		return -ENOMEM;
	for_each_sgtable_page(sgt, &iter, 0) {
		if (n == max)
			break;
		mr->pages[n++] = sg_page_iter_page(&iter);
	}
	if (n != max)
		return -EFAULT;
	mr->npages = n;
	mr->page_offset = ib_umem_offset(mr->umem);
	return 0;
}

/* ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND | ...) */
static bool sroce_mr_implicit(u64 start, u64 length, int access)
{
	return access & IB_ACCESS_ON_DEMAND && !start && length == U64_MAX;
}

/*
 * A user MR with its pages pinned (or, on demand, an ODP MR with none
 * mapped yet), not yet in the key table.
 */
static struct sroce_mr *sroce_mr_pin(struct ib_pd *ibpd, u64 start,
				     u64 length, u64 iova, int access)
{
	bool implicit = sroce_mr_implicit(start, length, access);
	struct sroce_mr *mr;
	int err;

	if (access & ~SROCE_MR_ACCESS_SUPPORTED ||
	    (access & IB_ACCESS_HUGETLB && !(access & IB_ACCESS_ON_DEMAND)))
		return ERR_PTR(-EOPNOTSUPP);
	if (implicit ? iova : (!length || length > SROCE_MAX_MR_SIZE))
		return ERR_PTR(-EINVAL);
	mr = sroce_mr_alloc(ibpd, access);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->type = SROCE_MR_USER;
	mr->iova = iova;
	mr->length = length;

	if (access & IB_ACCESS_ON_DEMAND) {
		mr->type = SROCE_MR_ODP;
		if (implicit)
			err = sroce_odp_init_implicit(mr, access);
		else
			err = sroce_odp_init(mr, start, length, access);
		if (err)
			goto err_free;
		return mr;
	}
	/* Pins and charges RLIMIT_MEMLOCK (pinned_vm) for us. */
	mr->umem = sroce_umem_get(ibpd->device, start, length, access);
	if (IS_ERR(mr->umem)) {
		err = PTR_ERR(mr->umem);
		mr->umem = NULL;
		goto err_free;
	}
	err = sroce_mr_collect_pages(mr);
	if (err)
		goto err_free;
	return mr;

err_free:
	sroce_mr_free(mr);
	return ERR_PTR(err);
}

struct ib_mr *sroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_dmah *dmah,
				struct ib_udata *udata)
{
	struct sroce_mr *mr;
	int err;

	/* No alloc_dmah: a handle cannot name this device; refuse anyway. */
	if (dmah)
		return ERR_PTR(-EOPNOTSUPP);
	mr = sroce_mr_pin(ibpd, start, length, iova, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	err = sroce_mr_insert(to_sdev(ibpd->device), mr);
	if (err) {
		sroce_mr_free(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

static void sroce_mr_set_dereg(struct sroce_mr *mr, bool dereg)
{
	unsigned long flags;

	spin_lock_irqsave(&mr->lock, flags);
	mr->dereg = dereg;
	spin_unlock_irqrestore(&mr->lock, flags);
}

/*
 * Reregistration builds a new MR under the old one's keys (applications
 * and their peers keep using the keys they have, as with hardware) and
 * swaps it into the key table; ib_core then destroys the old MR, whose
 * dereg leaves the slot to its successor. Changing a live MR in place would
 * race with the accesses that already looked it up: those finish on the
 * old pages, which stay pinned until they are done. The old MR must be free
 * to go: no window bound to it, and from here on binds refuse it. ib_core
 * holds the MR's uobject exclusively, so no dereg runs meanwhile.
 */
struct ib_mr *sroce_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *pd, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibmr->device);
	struct sroce_mr *old = to_smr(ibmr), *new;
	unsigned long irqflags;
	void *prev;

	if (old->type != SROCE_MR_USER && old->type != SROCE_MR_ODP)
		return ERR_PTR(-EINVAL);
	/* keys over the whole address space: nothing to change but access */
	if (old->odp.implicit)
		return ERR_PTR(-EOPNOTSUPP);
	if (!(flags & IB_MR_REREG_TRANS)) {
		start = old->umem->address;
		length = old->length;
		iova = old->iova;
	}
	if (!(flags & IB_MR_REREG_PD))
		pd = ibmr->pd;
	if (!(flags & IB_MR_REREG_ACCESS))
		access = old->access;

	spin_lock_irqsave(&old->lock, irqflags);
	if (old->num_mw) {
		spin_unlock_irqrestore(&old->lock, irqflags);
		return ERR_PTR(-EBUSY);
	}
	old->dereg = true;
	spin_unlock_irqrestore(&old->lock, irqflags);

	new = sroce_mr_pin(pd, start, length, iova, access);
	if (IS_ERR(new))
		goto err_undo;
	new->key = old->key;
	new->ibmr.lkey = old->key;
	new->ibmr.rkey = old->key;
	prev = xa_store(&sdev->mr_xa, old->key >> 8, new, GFP_KERNEL);
	if (xa_is_err(prev)) {
		sroce_mr_free(new);
		new = ERR_PTR(xa_err(prev));
		goto err_undo;
	}
	return &new->ibmr;

err_undo:
	sroce_mr_set_dereg(old, false);
	return ERR_CAST(new);
}

int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibmr->device);
	struct sroce_mr *mr = to_smr(ibmr);
	unsigned long flags;

	/* IBTA: an MR with bound windows cannot be deregistered */
	spin_lock_irqsave(&mr->lock, flags);
	if (mr->num_mw) {
		spin_unlock_irqrestore(&mr->lock, flags);
		return -EBUSY;
	}
	mr->dereg = true;
	spin_unlock_irqrestore(&mr->lock, flags);

	/* unless a reregistration gave the slot to a successor */
	xa_cmpxchg(&sdev->mr_xa, mr->key >> 8, mr, NULL, 0);
	/* Copies in flight hold references; they are short. */
	sroce_mr_put(mr);
	wait_for_completion(&mr->released);
	sroce_mr_free(mr);
	return 0;
}

void sroce_mr_put(struct sroce_mr *mr)
{
	if (refcount_dec_and_test(&mr->ref))
		complete(&mr->released);
}

SROCE_EXPORT_FOR_KUNIT(sroce_mr_put);

static bool sroce_mr_contains(const struct sroce_mr *mr, u64 addr, u64 len)
{
	if (addr + len < addr)
		return false;
	return addr >= mr->iova && len <= mr->length &&
	       addr - mr->iova <= mr->length - len;
}

static struct sroce_mr *sroce_mr_lookup(struct sroce_dev *sdev,
					struct ib_pd *pd, u32 key, u64 addr,
					u64 len, int access, bool whole)
{
	struct sroce_mr *mr = sroce_mr_slot_get(sdev, key);

	if (!mr)
		return NULL;

	/* state first: the fields a registration set are then consistent */
	if (smp_load_acquire(&mr->state) != SROCE_MR_VALID ||
	    READ_ONCE(mr->key) != key || mr->ibmr.pd != pd || (mr->access & access) != access ||
	    (!whole && !sroce_mr_contains(mr, addr, len))) {
		sroce_mr_put(mr);
		return NULL;
	}
	return mr;
}

struct sroce_mr *sroce_mr_get(struct sroce_dev *sdev, struct ib_pd *pd,
			      u32 key, u64 addr, u64 len, int access)
{
	return sroce_mr_lookup(sdev, pd, key, addr, len, access, false);
}

SROCE_EXPORT_FOR_KUNIT(sroce_mr_get);

struct sroce_mr *sroce_mr_get_whole(struct sroce_dev *sdev, struct ib_pd *pd,
				    u32 key, int access)
{
	return sroce_mr_lookup(sdev, pd, key, 0, 0, access, true);
}

/*
 * The page holding @iova and the offset in it; NULL for a kernel address
 * that maps no page (a bad address from a DMA MR user).
 */
static struct page *sroce_mr_page(const struct sroce_mr *mr, u64 iova,
				  unsigned int *off)
{
	if (mr->type == SROCE_MR_ODP)
		return sroce_odp_page(mr, iova, off);
	if (mr->type == SROCE_MR_USER) {
		u64 byte = iova - mr->iova + mr->page_offset;

		*off = byte & ~PAGE_MASK;
		return mr->pages[byte >> PAGE_SHIFT];
	}
	if (mr->type == SROCE_MR_FAST) {
		u64 byte = iova - mr->iova + mr->fast_offset;
		u64 idx = byte >> mr->fast_shift;

		if (idx >= min(mr->fast_npages, mr->fast_max))
			return NULL;
		iova = mr->fast_pages[idx] +
		       (byte & (BIT_ULL(mr->fast_shift) - 1));
	}

	*off = offset_in_page(iova);
	if (is_vmalloc_addr((void *)(uintptr_t)iova))
		return vmalloc_to_page((void *)(uintptr_t)iova);
	if (virt_addr_valid((void *)(uintptr_t)iova))
		return virt_to_page((void *)(uintptr_t)iova);
	return NULL;
}

/* One contiguous piece of MR memory within a page. */
struct sroce_mr_chunk {
	struct page *page;
	unsigned int off;
	unsigned int len;
};

static int sroce_mr_chunk(const struct sroce_mr *mr, u64 iova, u32 len,
			  struct sroce_mr_chunk *c)
{
	c->page = sroce_mr_page(mr, iova, &c->off);
	if (!c->page)
		return -EFAULT;
	c->len = min_t(u32, len, PAGE_SIZE - c->off);
	/* fast-registration pages end at their page_size boundary */
	if (mr->type == SROCE_MR_FAST) {
		u64 byte = iova - mr->iova + mr->fast_offset;
		u64 size = BIT_ULL(mr->fast_shift);

		c->len = min_t(u64, c->len, size - (byte & (size - 1)));
	}
	return 0;
}

static int sroce_mr_read_locked(struct sroce_mr *mr, u64 iova, void *dst,
				u32 len)
{
	struct sroce_mr_chunk c;
	void *va;

	while (len) {
		if (sroce_mr_chunk(mr, iova, len, &c))
			return -EFAULT;
		va = kmap_local_page(c.page);
		memcpy(dst, va + c.off, c.len);
		kunmap_local(va);
		dst += c.len;
		iova += c.len;
		len -= c.len;
	}
	return 0;
}

static int sroce_mr_write_locked(struct sroce_mr *mr, u64 iova,
				 const void *src, u32 len)
{
	struct sroce_mr_chunk c;
	void *va;

	while (len) {
		if (sroce_mr_chunk(mr, iova, len, &c))
			return -EFAULT;
		va = kmap_local_page(c.page);
		memcpy(va + c.off, src, c.len);
		kunmap_local(va);
		src += c.len;
		iova += c.len;
		len -= c.len;
	}
	return 0;
}

static int sroce_mr_write_skb_locked(struct sroce_mr *mr, u64 iova,
				     const struct sk_buff *skb, int skb_off,
				     u32 len)
{
	struct sroce_mr_chunk c;
	void *va;
	int err;

	while (len) {
		err = sroce_mr_chunk(mr, iova, len, &c);
		if (err)
			return err;
		va = kmap_local_page(c.page);
		err = skb_copy_bits(skb, skb_off, va + c.off, c.len);
		kunmap_local(va);
		if (err)
			return err;
		skb_off += c.len;
		iova += c.len;
		len -= c.len;
	}
	return 0;
}

/*
 * Page references the zero-copy path of @len bytes at @iova would need;
 * MAX_SKB_FRAGS (too many: copy) when a kernel MR's memory has a page the
 * network stack may not reference (slab, no page): sroce_mr_append_skb()
 * copies those, into linear room the caller only sizes for a copy.
 */
static unsigned int sroce_mr_frags(const struct sroce_mr *mr, u64 iova,
				   u32 len)
{
	u64 start = iova - mr->iova + mr->page_offset;
	struct sroce_mr_chunk c;
	unsigned int n = 0;

	if (!len)
		return 0;
	if (mr->type == SROCE_MR_ODP)
		return MAX_SKB_FRAGS;	/* copied: see sroce_mr_append_skb() */
	if (mr->type == SROCE_MR_USER)
		return ((start + len - 1) >> PAGE_SHIFT) -
		       (start >> PAGE_SHIFT) + 1;
	while (len) {
		if (sroce_mr_chunk(mr, iova, len, &c) || !sendpage_ok(c.page) ||
		    ++n >= MAX_SKB_FRAGS)
			return MAX_SKB_FRAGS;
		iova += c.len;
		len -= c.len;
	}
	return n;
}

static int sroce_mr_append_skb_locked(struct sroce_mr *mr, u64 iova,
				      struct sk_buff *skb, u32 len, bool zcopy)
{
	struct sroce_mr_chunk c;
	void *va;
	int err;

	while (len) {
		err = sroce_mr_chunk(mr, iova, len, &c);
		if (err)
			return err;
		if (zcopy && sendpage_ok(c.page)) {
			err = sroce_net_add_page(skb, c.page, c.off, c.len);
			if (err)
				return err;
		} else {
			/* only into room the caller made (skb_put() would BUG) */
			if (skb_is_nonlinear(skb) || skb_tailroom(skb) < c.len)
				return -EMSGSIZE;
			va = kmap_local_page(c.page);
			memcpy(sroce_net_put_data(skb, c.len), va + c.off,
			       c.len);
			kunmap_local(va);
		}
		iova += c.len;
		len -= c.len;
	}
	return 0;
}

/*
 * The 8 bytes an atomic works on. The CPU needs the kernel address they
 * are at aligned (else a split lock, or a trap where split-lock detection
 * is on), and an aligned iova does not make it so: a user MR, an ODP MR
 * registered with another iova, and a fast-registration MR (zero-based,
 * say) can each start anywhere in their first page. Pages are aligned,
 * so the offset in the page decides, and an aligned word never straddles
 * a page or a fast-registration page.
 */
static int sroce_mr_word(const struct sroce_mr *mr, u64 iova,
			 struct sroce_mr_chunk *c)
{
	if (sroce_mr_chunk(mr, iova, sizeof(u64), c))
		return -EFAULT;
	return IS_ALIGNED(c->off, sizeof(u64)) ? 0 : -EINVAL;
}

static int sroce_mr_atomic_locked(struct sroce_mr *mr, u64 iova,
				  bool cmp_swap, u64 compare_add, u64 swap,
				  u64 *orig)
{
	struct sroce_mr_chunk c;
	atomic64_t *p;
	void *va;
	int err = sroce_mr_word(mr, iova, &c);

	if (err)
		return err;
	va = kmap_local_page(c.page);
	p = va + c.off;
	if (cmp_swap)
		*orig = atomic64_cmpxchg(p, compare_add, swap);
	else
		*orig = atomic64_fetch_add(compare_add, p);
	kunmap_local(va);
	return 0;
}

static int sroce_mr_atomic_write_locked(struct sroce_mr *mr, u64 iova,
					u64 value)
{
	struct sroce_mr_chunk c;
	void *va;
	int err = sroce_mr_word(mr, iova, &c);

	if (err)
		return err;
	va = kmap_local_page(c.page);
	/* one aligned 64-bit store, after everything placed before it */
	smp_store_release((u64 *)(va + c.off), value);
	kunmap_local(va);
	return 0;
}

/*
 * Around every copy: an ODP MR's pages must be mapped before and stay
 * mapped until the copy is done (odp.h).
 */
static int sroce_mr_begin(struct sroce_mr *mr, u64 iova, u32 len, bool write,
			  unsigned long *flags)
{
	if (mr->type != SROCE_MR_ODP)
		return 0;
	return sroce_odp_lock(mr, iova, len, write, flags);
}

static void sroce_mr_end(struct sroce_mr *mr, unsigned long flags)
{
	if (mr->type == SROCE_MR_ODP)
		sroce_odp_unlock(mr, flags);
}

int sroce_mr_ready(struct sroce_mr *mr, u64 iova, u64 len, bool write)
{
	if (mr->type != SROCE_MR_ODP)
		return 0;
	return sroce_odp_ready(mr, iova, len, write);
}

void sroce_mr_wait_fault(struct sroce_mr *mr)
{
	if (mr->type == SROCE_MR_ODP)
		sroce_odp_wait(mr);
}

int sroce_mr_read(struct sroce_mr *mr, u64 iova, void *dst, u32 len)
{
	unsigned long flags;
	int err = sroce_mr_begin(mr, iova, len, false, &flags);

	if (err)
		return err;
	err = sroce_mr_read_locked(mr, iova, dst, len);
	sroce_mr_end(mr, flags);
	return err;
}

int sroce_mr_write(struct sroce_mr *mr, u64 iova, const void *src, u32 len)
{
	unsigned long flags;
	int err = sroce_mr_begin(mr, iova, len, true, &flags);

	if (err)
		return err;
	err = sroce_mr_write_locked(mr, iova, src, len);
	sroce_mr_end(mr, flags);
	return err;
}

int sroce_mr_write_skb(struct sroce_mr *mr, u64 iova,
		       const struct sk_buff *skb, int skb_off, u32 len)
{
	unsigned long flags;
	int err = sroce_mr_begin(mr, iova, len, true, &flags);

	if (err)
		return err;
	err = sroce_mr_write_skb_locked(mr, iova, skb, skb_off, len);
	sroce_mr_end(mr, flags);
	return err;
}

/* ODP pages are copied: a page reference would outlive its mapping. */
int sroce_mr_append_skb(struct sroce_mr *mr, u64 iova, struct sk_buff *skb,
			u32 len, bool zcopy)
{
	unsigned long flags;
	int err = sroce_mr_begin(mr, iova, len, false, &flags);

	if (err)
		return err;
	err = sroce_mr_append_skb_locked(mr, iova, skb, len,
					 zcopy && mr->type != SROCE_MR_ODP);
	sroce_mr_end(mr, flags);
	return err;
}

int sroce_mr_atomic(struct sroce_mr *mr, u64 iova, bool cmp_swap,
		    u64 compare_add, u64 swap, u64 *orig)
{
	unsigned long flags;
	int err = sroce_mr_begin(mr, iova, sizeof(u64), true, &flags);

	if (err)
		return err;
	err = sroce_mr_atomic_locked(mr, iova, cmp_swap, compare_add, swap,
				     orig);
	sroce_mr_end(mr, flags);
	return err;
}

int sroce_mr_atomic_write(struct sroce_mr *mr, u64 iova, u64 value)
{
	unsigned long flags;
	int err = sroce_mr_begin(mr, iova, sizeof(u64), true, &flags);

	if (err)
		return err;
	err = sroce_mr_atomic_write_locked(mr, iova, value);
	sroce_mr_end(mr, flags);
	return err;
}

s64 sroce_sgl_length(const struct sroce_sge *sgl, u32 num_sge)
{
	u64 total = 0;
	u32 i;

	for (i = 0; i < num_sge; i++)
		total += sgl[i].length;
	return total > SROCE_MAX_MSG_SIZE ? -EMSGSIZE : (s64)total;
}

/*
 * The next piece of the range @it walks, one per SGE it spans (SGEs before
 * the range and empty ones are passed over): the SGE, with the address in
 * its MR and the length in *@addr and *@len; NULL past the list or range.
 */
static const struct sroce_sge *sroce_sgl_next(struct sroce_sgl_range *it,
					      u64 *addr, u32 *len)
{
	const struct sroce_sge *sge;

	while (it->len && it->num_sge) {
		sge = it->sgl++;
		it->num_sge--;
		if (it->offset >= sge->length) {
			it->offset -= sge->length;
			continue;
		}
		*addr = sge->addr + it->offset;
		*len = min(it->len, sge->length - it->offset);
		it->len -= *len;
		it->offset = 0;
		return sge;
	}
	return NULL;
}

/*
 * Walk [offset, offset + len) of an SGE list, one MR-contiguous piece at a
 * time: @fn gets the referenced MR, the address in it and the length.
 */
typedef int (*sroce_sgl_fn)(struct sroce_mr *mr, u64 addr, u32 len,
			    void *ctx);

static int sroce_sgl_walk(struct sroce_dev *sdev, struct ib_pd *pd,
			  const struct sroce_sge *sgl, u32 num_sge,
			  u32 offset, u32 len, int access, sroce_sgl_fn fn,
			  void *ctx)
{
	struct sroce_sgl_range it = { sgl, num_sge, offset, len };
	const struct sroce_sge *sge;
	struct sroce_mr *mr;
	u64 addr;
	u32 n;
	int err;

	while ((sge = sroce_sgl_next(&it, &addr, &n))) {
		mr = sroce_mr_get(sdev, pd, sge->lkey, addr, n, access);
		if (!mr)
			return -EACCES;
		err = fn(mr, addr, n, ctx);
		sroce_mr_put(mr);
		if (err)
			return err;
	}
	return it.len ? -EMSGSIZE : 0;
}

int sroce_sgl_hold(struct sroce_sgl_mrs *m, struct sroce_dev *sdev,
		   struct ib_pd *pd, const struct sroce_sge *sgl, u32 num_sge,
		   u32 offset, u32 len)
{
	struct sroce_sgl_range it = { sgl, num_sge, offset, len };
	const struct sroce_sge *sge;
	struct sroce_mr *mr;
	u64 addr;
	u32 n;

	m->range = it;
	m->n = 0;
	while ((sge = sroce_sgl_next(&it, &addr, &n))) {
		/* never more pieces than SGEs: post_send checked max_sge */
		mr = m->n < ARRAY_SIZE(m->mr) ?
		     sroce_mr_get(sdev, pd, sge->lkey, addr, n, 0) : NULL;
		if (!mr) {
			sroce_sgl_release(m);
			return -EACCES;
		}
		m->mr[m->n++] = mr;
	}
	if (it.len) {
		sroce_sgl_release(m);
		return -EMSGSIZE;
	}
	return 0;
}

SROCE_EXPORT_FOR_KUNIT(sroce_sgl_hold);

void sroce_sgl_release(struct sroce_sgl_mrs *m)
{
	while (m->n)
		sroce_mr_put(m->mr[--m->n]);
}

SROCE_EXPORT_FOR_KUNIT(sroce_sgl_release);

/* sroce_sgl_walk() over the MRs @m holds: the same pieces, no lookups. */
static int sroce_sgl_walk_held(const struct sroce_sgl_mrs *m,
			       sroce_sgl_fn fn, void *ctx)
{
	struct sroce_sgl_range it = m->range;
	u32 i = 0, n;
	u64 addr;
	int err;

	while (i < m->n && sroce_sgl_next(&it, &addr, &n)) {
		err = fn(m->mr[i++], addr, n, ctx);
		if (err)
			return err;
	}
	return 0;
}

struct sroce_sgl_skb_ctx {
	struct sk_buff *skb;
	int off;
	bool zcopy;
};

static int sroce_sgl_write_skb_fn(struct sroce_mr *mr, u64 addr, u32 len,
				  void *ctx)
{
	struct sroce_sgl_skb_ctx *c = ctx;
	int err = sroce_mr_write_skb(mr, addr, c->skb, c->off, len);

	c->off += len;
	return err == -EAGAIN ? err : err ? -EACCES : 0;
}

int sroce_sgl_write_skb(struct sroce_dev *sdev, struct ib_pd *pd,
			const struct sroce_sge *sgl, u32 num_sge, u32 offset,
			const struct sk_buff *skb, int skb_off, u32 len)
{
	struct sroce_sgl_skb_ctx c = {
		.skb = (struct sk_buff *)skb,
		.off = skb_off,
	};

	return sroce_sgl_walk(sdev, pd, sgl, num_sge, offset, len,
			      IB_ACCESS_LOCAL_WRITE, sroce_sgl_write_skb_fn, &c);
}

static int sroce_sgl_write_fn(struct sroce_mr *mr, u64 addr, u32 len,
			      void *ctx)
{
	const u8 **src = ctx;
	int err = sroce_mr_write(mr, addr, *src, len);

	if (err)
		return err == -EAGAIN ? err : -EACCES;
	*src += len;
	return 0;
}

int sroce_sgl_write(struct sroce_dev *sdev, struct ib_pd *pd,
		    const struct sroce_sge *sgl, u32 num_sge, u32 offset,
		    const void *src, u32 len)
{
	return sroce_sgl_walk(sdev, pd, sgl, num_sge, offset, len,
			      IB_ACCESS_LOCAL_WRITE, sroce_sgl_write_fn, &src);
}

static int sroce_sgl_append_fn(struct sroce_mr *mr, u64 addr, u32 len,
			       void *ctx)
{
	struct sroce_sgl_skb_ctx *c = ctx;
	int err = sroce_mr_append_skb(mr, addr, c->skb, len, c->zcopy);

	return err == -EFAULT ? -EACCES : err;
}

static int sroce_sgl_ready_fn(struct sroce_mr *mr, u64 addr, u32 len,
			      void *ctx)
{
	int write = *(int *)ctx & IB_ACCESS_LOCAL_WRITE;
	int err = sroce_mr_ready(mr, addr, len, write);

	return err == -EFAULT ? -EACCES : err;
}

int sroce_sgl_ready(struct sroce_dev *sdev, struct ib_pd *pd,
		    const struct sroce_sge *sgl, u32 num_sge, u32 len,
		    int access)
{
	return sroce_sgl_walk(sdev, pd, sgl, num_sge, 0, len, access,
			      sroce_sgl_ready_fn, &access);
}

int sroce_sgl_append_skb(const struct sroce_sgl_mrs *m, struct sk_buff *skb,
			 bool zcopy)
{
	struct sroce_sgl_skb_ctx c = { .skb = skb, .zcopy = zcopy };

	return sroce_sgl_walk_held(m, sroce_sgl_append_fn, &c);
}

SROCE_EXPORT_FOR_KUNIT(sroce_sgl_append_skb);

static int sroce_sgl_frags_fn(struct sroce_mr *mr, u64 addr, u32 len,
			      void *ctx)
{
	*(unsigned int *)ctx += sroce_mr_frags(mr, addr, len);
	return 0;
}

unsigned int sroce_sgl_frags(const struct sroce_sgl_mrs *m)
{
	unsigned int frags = 0;

	sroce_sgl_walk_held(m, sroce_sgl_frags_fn, &frags);
	return frags;
}

SROCE_EXPORT_FOR_KUNIT(sroce_sgl_frags);
