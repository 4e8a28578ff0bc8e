// SPDX-License-Identifier: GPL-2.0
/*
 * On-demand paging MRs, what rdma-core's suite does not check: two RC QPs
 * of one device connected to each other (through lo), the target an ODP MR
 * over a memfd mapping whose pages are also mapped a second time (the
 * alias), so every byte the device places is seen through the alias.
 *
 *  - the capabilities: ODP and implicit ODP, RC with every operation
 *  - WRITE into pages never touched (faulted in on demand), READ back into
 *    an untouched ODP buffer, FETCH_AND_ADD: data checked on both sides
 *  - munmap of the MR's second half (the alias keeps the pages alive): a
 *    WRITE there completes with IBV_WC_REM_ACCESS_ERR and the alias shows
 *    that nothing was written, as a write through a stale page would
 *  - a WRITE from an unmapped ODP source completes IBV_WC_LOC_PROT_ERR
 *  - dereg of an MR while a WRITE into it is being faulted in, and of the
 *    half-unmapped MR, return
 *  - an implicit MR (NULL, SIZE_MAX: the whole address space), its lkey
 *    and rkey on memory mapped after it was registered: WRITE, READ and
 *    SEND/RECV across a 2 MiB boundary (two of its chunks), data checked
 *    through the alias; munmap of a target page, then WRITE there: remote
 *    access error, the alias untouched, the next page still reachable; a
 *    new mapping at the same address receives the next WRITE; an unmapped
 *    source: local protection error; addresses beyond the user address
 *    space: remote access and local protection errors; ibv_advise_mr
 *    prefetch of mapped memory succeeds, of unmapped memory fails
 *  - with -C CAP (the module's odp_max_children set to CAP): an implicit
 *    MR maps CAP of its 2 MiB chunks (WRITEs to CAP chunks of a
 *    MAP_NORESERVE reservation succeed), a WRITE to one more completes
 *    with a remote access error and a prefetch of one more fails with
 *    ENOMEM; WRITEs to chunks of a PROT_NONE reservation fail and leave
 *    no child behind (the port's odp_children gauge)
 *  - a READ into an ODP sink that another thread keeps unmapping
 *    (MADV_DONTNEED) completes, with an error or not, instead of being
 *    retried forever
 *
 * Prints "odp: N checks, F failures: PASS|FAIL"; exit 0 only on PASS.
 *
 * With -M GIB [-c CGROUP] it checks the cost of registering instead (run
 * unprivileged, in a memory cgroup): it registers 1 GiB ODP MRs over one
 * PROT_NONE reservation until one is refused or GIB are held. Their page
 * lists (16 bytes per 4 KiB page, mapped or not) must be refused past the
 * device's odp_max_mb or charged to the cgroup (memory.current). Prints
 * "odp-mem: N GiB registered, then ERROR|nothing refused", the charge,
 * and "odp-mem: refused|charged|neither refused nor charged: PASS|FAIL".
 *
 * With -R SECONDS it churns instead: WRITE then READ back, round after
 * round, an ODP MR of private anonymous memory that another thread keeps
 * unmapping (MADV_DONTNEED) and prefetching (ibv_advise_mr), so that the
 * driver's faults and invalidations race. Every byte READ must be 0 (a
 * page freshly faulted in) or the pattern this round wrote to its page:
 * anything else came from a page the process no longer owns. Once the
 * other thread stopped, a last WRITE must reach every page. At most a
 * quarter of the rounds may fail (a READ response packet that met fault
 * after fault gives up; before, a READ gave up at its first missing page
 * and on 7.2 nearly every round failed). Prints
 * "churn: R rounds, B bad bytes, ...: PASS|FAIL".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"

#define PAGE		4096
#define NPAGES		16
#define LEN		(NPAGES * PAGE)
#define HALF		(LEN / 2)
#define TIMEOUT_MS	30000

#define ODP_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
		    IBV_ACCESS_ON_DEMAND)

static const char *devname;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static int gidx;

/* a connected pair: req sends, tgt is the target */
struct pair {
	struct ibv_qp *req, *tgt;
};

static struct pair pair_new(void)
{
	struct pair p;

	p.req = create_qp(pd, IBV_QPT_RC, cq, NULL, 4, 4, 0);
	p.tgt = create_qp(pd, IBV_QPT_RC, cq, NULL, 4, 4,
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC);
	connect_loopback(ctx, p.req, p.tgt, gidx);
	return p;
}

static void pair_free(struct pair *p)
{
	struct ibv_wc wc;

	ibv_destroy_qp(p->req);
	ibv_destroy_qp(p->tgt);
	while (ibv_poll_cq(cq, 1, &wc) > 0)
		;	/* flushed completions of the QPs just destroyed */
}

/* Post one signaled RDMA op on @qp. */
static void post_op(struct ibv_qp *qp, enum ibv_wr_opcode op, void *local,
		    uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		    uint64_t add)
{
	struct ibv_sge sge = { .addr = (uintptr_t)local, .length = len,
			       .lkey = lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = add;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	if (ibv_post_send(qp, &wr, &bad))
		die("ibv_post_send");
}

static enum ibv_wc_status wait_op(void)
{
	struct ibv_wc wc;

	if (!poll_cq(cq, &wc, TIMEOUT_MS))
		fatal("no completion");
	return wc.status;
}

/* Post one RDMA op on @qp and return its completion status. */
static enum ibv_wc_status rdma_op(struct ibv_qp *qp, enum ibv_wr_opcode op,
				  void *local, uint32_t len, uint32_t lkey,
				  uint64_t raddr, uint32_t rkey, uint64_t add)
{
	post_op(qp, op, local, len, lkey, raddr, rkey, add);
	return wait_op();
}

static void check_caps(void)
{
	struct ibv_device_attr_ex attr;
	uint32_t rc = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		      IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
		      IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;

	if (ibv_query_device_ex(ctx, NULL, &attr))
		die("ibv_query_device_ex");
	CHECK(attr.odp_caps.general_caps ==
	      (IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT),
	      "general_caps 0x%llx, want IBV_ODP_SUPPORT and _IMPLICIT",
	      (unsigned long long)attr.odp_caps.general_caps);
	/* and, from 7.2, FLUSH and ATOMIC WRITE (bits 6 and 7) */
	CHECK((attr.odp_caps.per_transport_caps.rc_odp_caps & ~0xc0u) == rc,
	      "rc_odp_caps 0x%x, want 0x%x (with or without 0xc0)",
	      attr.odp_caps.per_transport_caps.rc_odp_caps, rc);
	CHECK(attr.odp_caps.per_transport_caps.ud_odp_caps ==
	      IBV_ODP_SUPPORT_SEND, "ud_odp_caps 0x%x",
	      attr.odp_caps.per_transport_caps.ud_odp_caps);
}

static int count_bad(const unsigned char *p, size_t len, unsigned char want)
{
	size_t i;
	int bad = 0;

	for (i = 0; i < len; i++)
		bad += p[i] != want;
	return bad;
}

/* @len bytes of a fresh memfd mapped twice (*alias the second), untouched */
static unsigned char *map_twice(size_t len, unsigned char **alias)
{
	unsigned char *p;
	int fd = memfd_create("sroce-odp", 0);

	if (fd < 0 || ftruncate(fd, len))
		die("memfd");
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	*alias = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED || *alias == MAP_FAILED)
		die("mmap");
	close(fd);
	return p;
}

/* SEND [src, src + len) to a RECV at dst; both completions' status */
static void send_recv(struct pair *p, void *src, void *dst, uint32_t len,
		      uint32_t lkey)
{
	enum ibv_wc_status st[2];
	struct ibv_wc wc;
	int i;

	post_recv_buf(p->tgt, dst, len, lkey);
	post_op(p->req, IBV_WR_SEND, src, len, lkey, 0, 0, 0);
	for (i = 0; i < 2; i++) {
		if (!poll_cq(cq, &wc, TIMEOUT_MS))
			fatal("no completion");
		st[wc.opcode == IBV_WC_RECV] = wc.status;
		if (wc.opcode == IBV_WC_RECV)
			CHECK(wc.byte_len == len, "implicit RECV: %u bytes",
			      wc.byte_len);
	}
	CHECK(st[0] == IBV_WC_SUCCESS && st[1] == IBV_WC_SUCCESS,
	      "implicit SEND/RECV: %s, %s", ibv_wc_status_str(st[0]),
	      ibv_wc_status_str(st[1]));
}

#define CHUNK		(2u << 20)	/* the driver's implicit chunk */
#define ILEN		(2 * CHUNK)
#define IOFF		(CHUNK - 2 * PAGE)	/* 2 pages before a boundary */
#define IPAGES		4
#define FAR_AWAY	(1ull << 62)	/* beyond any user address space */

/* An access through the implicit MR that must fail with @want. */
static void implicit_refused(struct ibv_mr *imr, void *local, uint64_t raddr,
			     enum ibv_wc_status want, const char *what)
{
	struct pair p = pair_new();
	enum ibv_wc_status st;

	st = rdma_op(p.req, IBV_WR_RDMA_WRITE, local, PAGE, imr->lkey, raddr,
		     imr->rkey, 0);
	CHECK(st == want, "implicit WRITE %s: %s, want %s", what,
	      ibv_wc_status_str(st), ibv_wc_status_str(want));
	pair_free(&p);
}

/*
 * The implicit MR: tgt (aliased) and src, dst mapped after registration,
 * [IOFF, IOFF + IPAGES pages) crossing a chunk boundary.
 */
static void check_implicit(void)
{
	unsigned char *tgt, *alias, *src, *dst, *t, *a;
	struct ibv_sge sge;
	struct ibv_mr *imr;
	enum ibv_wc_status st;
	struct pair p;
	int bad, err;

	imr = ibv_reg_mr(pd, NULL, SIZE_MAX, ODP_ACCESS);
	if (!imr)
		die("ibv_reg_mr(NULL, SIZE_MAX, ON_DEMAND)");
	tgt = map_twice(ILEN, &alias);
	src = mmap(NULL, ILEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	dst = mmap(NULL, ILEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (src == MAP_FAILED || dst == MAP_FAILED)
		die("mmap");
	/* 2 pages before a 2 MiB boundary, a page or more inside tgt */
	t = (unsigned char *)((((uintptr_t)tgt + 4 * PAGE + CHUNK - 1) &
			       ~(uintptr_t)(CHUNK - 1)) - 2 * PAGE);
	a = alias + (t - tgt);

	p = pair_new();
	memset(src, 0x3c, ILEN);
	st = rdma_op(p.req, IBV_WR_RDMA_WRITE, src + IOFF, IPAGES * PAGE,
		     imr->lkey, (uintptr_t)t, imr->rkey, 0);
	CHECK(st == IBV_WC_SUCCESS, "implicit WRITE: %s",
	      ibv_wc_status_str(st));
	bad = count_bad(a, IPAGES * PAGE, 0x3c);
	CHECK(!bad, "implicit WRITE: %d bytes wrong at the target", bad);
	bad = count_bad(a - PAGE, PAGE, 0) +
	      count_bad(a + IPAGES * PAGE, PAGE, 0);
	CHECK(!bad, "implicit WRITE: %d bytes written beside it", bad);
	st = rdma_op(p.req, IBV_WR_RDMA_READ, dst + IOFF, IPAGES * PAGE,
		     imr->lkey, (uintptr_t)t, imr->rkey, 0);
	CHECK(st == IBV_WC_SUCCESS, "implicit READ: %s",
	      ibv_wc_status_str(st));
	bad = count_bad(dst + IOFF, IPAGES * PAGE, 0x3c);
	CHECK(!bad, "implicit READ: %d bytes wrong", bad);
	memset(src, 0xc3, ILEN);
	send_recv(&p, src + IOFF, t, IPAGES * PAGE, imr->lkey);
	bad = count_bad(a, IPAGES * PAGE, 0xc3);
	CHECK(!bad, "implicit SEND/RECV: %d bytes wrong", bad);
	pair_free(&p);

	/* the first page past the boundary unmapped: the alias keeps it */
	if (munmap(t + 2 * PAGE, PAGE))
		die("munmap");
	memset(src, 0x77, ILEN);
	implicit_refused(imr, src, (uintptr_t)t + 2 * PAGE,
			 IBV_WC_REM_ACCESS_ERR, "to an unmapped page");
	bad = count_bad(a + 2 * PAGE, PAGE, 0xc3);
	CHECK(!bad, "implicit WRITE to an unmapped page changed %d bytes",
	      bad);
	p = pair_new();
	st = rdma_op(p.req, IBV_WR_RDMA_WRITE, src, PAGE, imr->lkey,
		     (uintptr_t)t + 3 * PAGE, imr->rkey, 0);
	CHECK(st == IBV_WC_SUCCESS && !count_bad(a + 3 * PAGE, PAGE, 0x77),
	      "implicit WRITE beside the unmapped page: %s",
	      ibv_wc_status_str(st));
	/* a new mapping there: the next WRITE lands in it */
	if (mmap(t + 2 * PAGE, PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		die("mmap MAP_FIXED");
	st = rdma_op(p.req, IBV_WR_RDMA_WRITE, src, PAGE, imr->lkey,
		     (uintptr_t)t + 2 * PAGE, imr->rkey, 0);
	bad = count_bad(t + 2 * PAGE, PAGE, 0x77);
	CHECK(st == IBV_WC_SUCCESS && !bad,
	      "implicit WRITE to a new mapping: %s, %d bytes wrong",
	      ibv_wc_status_str(st), bad);
	bad = count_bad(a + 2 * PAGE, PAGE, 0xc3);
	CHECK(!bad, "implicit WRITE to a new mapping reached the old page");
	pair_free(&p);

	/* prefetch: mapped memory faults in, unmapped memory fails */
	sge = (struct ibv_sge){ .addr = (uintptr_t)dst, .length = ILEN,
				.lkey = imr->lkey };
	err = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			    IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
	CHECK(!err, "ibv_advise_mr of mapped memory: %s", strerror(err));
	if (munmap(src, ILEN))
		die("munmap");
	sge.addr = (uintptr_t)src;
	err = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			    IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
	CHECK(err, "ibv_advise_mr of unmapped memory succeeded");

	implicit_refused(imr, src, (uintptr_t)t, IBV_WC_LOC_PROT_ERR,
			 "from an unmapped source");
	implicit_refused(imr, dst, FAR_AWAY, IBV_WC_REM_ACCESS_ERR,
			 "beyond the address space");
	implicit_refused(imr, (void *)(uintptr_t)FAR_AWAY, (uintptr_t)t,
			 IBV_WC_LOC_PROT_ERR, "from beyond the address space");
	bad = count_bad(a, 2 * PAGE, 0xc3);
	CHECK(!bad, "failed implicit WRITEs changed %d bytes", bad);

	CHECK(!ibv_dereg_mr(imr), "dereg of the implicit MR");
	munmap(tgt, ILEN);
	munmap(alias, ILEN);
	munmap(dst, ILEN);
}

/* Children of the device's implicit MRs; a CHECK fails where none shows. */
static long long odp_children(void)
{
	long long n;

	/*
	 * ib_core serves hw_counters from a copy at most lifespan old (10 ms
	 * by default): a read right after the last one is that one again.
	 */
	usleep(20 * 1000);
	n = port_counter(devname, "odp_children");

	CHECK(n >= 0, "the port has no odp_children counter");
	return n;
}

/* A reservation of @chunks 2 MiB chunks, aligned to one, with @prot. */
static unsigned char *reserve_chunks(size_t chunks, int prot)
{
	unsigned char *p = mmap(NULL, (chunks + 1) * CHUNK, prot,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				-1, 0);

	if (p == MAP_FAILED)
		die("mmap MAP_NORESERVE");
	return (unsigned char *)(((uintptr_t)p + CHUNK - 1) &
				 ~(uintptr_t)(CHUNK - 1));
}

/*
 * odp_max_children, set to @cap: an implicit MR maps @cap chunks and no
 * more, a peer's WRITE beyond them is a remote access error, a prefetch
 * ENOMEM; chunks whose faults fail keep no child.
 */
static void check_children(unsigned int cap)
{
	unsigned char *rw = reserve_chunks(cap + 2, PROT_READ | PROT_WRITE);
	unsigned char *none = reserve_chunks(4, PROT_NONE);
	unsigned char *buf = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long long before = odp_children(), held;
	struct ibv_mr *imr, *buf_mr;
	enum ibv_wc_status st;
	struct ibv_sge sge;
	struct pair p;
	unsigned int i;
	int err;

	/* a pinned source, so that only the target's chunks are counted */
	buf_mr = buf == MAP_FAILED ? NULL :
		 ibv_reg_mr(pd, buf, PAGE, IBV_ACCESS_LOCAL_WRITE);
	imr = ibv_reg_mr(pd, NULL, SIZE_MAX, ODP_ACCESS);
	if (!buf_mr || !imr)
		die("ibv_reg_mr");
	p = pair_new();
	for (i = 0, st = IBV_WC_SUCCESS; i < cap && st == IBV_WC_SUCCESS; i++)
		st = rdma_op(p.req, IBV_WR_RDMA_WRITE, buf, PAGE, buf_mr->lkey,
			     (uintptr_t)rw + (size_t)i * CHUNK, imr->rkey, 0);
	CHECK(st == IBV_WC_SUCCESS, "implicit WRITE to chunk %u of %u: %s",
	      i, cap, ibv_wc_status_str(st));
	pair_free(&p);
	held = odp_children();
	CHECK(held - before == cap, "%lld children for %u chunks written",
	      held - before, cap);

	p = pair_new();
	st = rdma_op(p.req, IBV_WR_RDMA_WRITE, buf, PAGE, buf_mr->lkey,
		     (uintptr_t)rw + (size_t)cap * CHUNK, imr->rkey, 0);
	CHECK(st == IBV_WC_REM_ACCESS_ERR,
	      "implicit WRITE to chunk %u past odp_max_children %u: %s, want remote access error",
	      cap + 1, cap, ibv_wc_status_str(st));
	pair_free(&p);
	sge = (struct ibv_sge){ .addr = (uintptr_t)rw + (cap + 1ul) * CHUNK,
				.length = PAGE, .lkey = imr->lkey };
	err = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			    IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
	CHECK(err == ENOMEM, "prefetch past odp_max_children: %s, want %s",
	      strerror(err), strerror(ENOMEM));
	CHECK(odp_children() == held, "%lld children past the cap, want %lld",
	      odp_children(), held);
	CHECK(!ibv_dereg_mr(imr), "dereg of the implicit MR at its cap");
	CHECK(odp_children() == before, "%lld children left after dereg",
	      odp_children() - before);

	/* a peer naming ever new PROT_NONE chunks grows nothing */
	imr = ibv_reg_mr(pd, NULL, SIZE_MAX, ODP_ACCESS);
	if (!imr)
		die("ibv_reg_mr");
	for (i = 0; i < 4; i++) {
		p = pair_new();
		st = rdma_op(p.req, IBV_WR_RDMA_WRITE, buf, PAGE, buf_mr->lkey,
			     (uintptr_t)none + (size_t)i * CHUNK, imr->rkey, 0);
		CHECK(st == IBV_WC_REM_ACCESS_ERR,
		      "implicit WRITE to PROT_NONE chunk %u: %s", i,
		      ibv_wc_status_str(st));
		pair_free(&p);
	}
	CHECK(odp_children() == before,
	      "%lld children left by WRITEs to PROT_NONE chunks",
	      odp_children() - before);
	CHECK(!ibv_dereg_mr(imr), "dereg of the implicit MR");
	CHECK(!ibv_dereg_mr(buf_mr), "dereg");
}

/* memory.current of cgroup directory @cg, 0 without one */
static long long memory_current(const char *cg)
{
	char path[512];

	if (!cg)
		return 0;
	snprintf(path, sizeof(path), "%s/memory.current", cg);
	return sysfs_number(path);
}

/* -M: 1 GiB ODP MRs over PROT_NONE until refused or @gib of them. */
static int odp_memory(unsigned int gib, const char *cg)
{
	const size_t len = 1ul << 30;
	/* 16 bytes per page (8 on 7.2): half of it must be charged */
	const long long lists_kib = (long long)(len / PAGE) * 16 / 1024;
	struct ibv_mr **mrs = calloc(gib, sizeof(*mrs));
	long long before = memory_current(cg), charged;
	void *res = mmap(NULL, len, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	bool refused, charge_ok;
	unsigned int n;
	int err = 0;

	if (!mrs || res == MAP_FAILED)
		die("setup");
	for (n = 0; n < gib; n++) {
		mrs[n] = ibv_reg_mr(pd, res, len, ODP_ACCESS);
		if (!mrs[n]) {
			err = errno;
			break;
		}
	}
	charged = (memory_current(cg) - before) / 1024;
	printf("odp-mem: %u GiB registered, then %s\n", n,
	       n < gib ? strerror(err) : "nothing refused");
	printf("odp-mem: odp_pages %lld, memory.current %+lld KiB, page lists %lld KiB\n",
	       port_counter(devname, "odp_pages"), charged, n * lists_kib);
	refused = n < gib && err == ENOMEM;
	charge_ok = cg && n && charged >= n * lists_kib / 2;
	while (n)
		CHECK(!ibv_dereg_mr(mrs[--n]), "dereg");
	printf("odp-mem: %s: %s\n",
	       refused ? "refused" :
	       charge_ok ? "charged" : "neither refused nor charged",
	       refused || charge_ok ? "PASS" : "FAIL");
	return refused || charge_ok ? 0 : 1;
}

/* Another thread keeps unmapping [zap_at, zap_at + zap_len). */
static unsigned char *zap_at;
static size_t zap_len;
static struct ibv_mr *zap_mr;	/* and prefetching it, if set */
static atomic_bool zap_stop;
static atomic_ulong zaps;

static void *zapper(void *arg)
{
	struct ibv_sge sge;
	unsigned long i;
	long pause = (long)(intptr_t)arg;

	for (i = 0; !atomic_load(&zap_stop); i++) {
		if (madvise(zap_at, zap_len, MADV_DONTNEED))
			die("madvise");
		atomic_fetch_add(&zaps, 1);
		if (zap_mr && i % 4 == 0) {
			sge = (struct ibv_sge){ .addr = (uintptr_t)zap_at,
						.length = zap_len,
						.lkey = zap_mr->lkey };
			/* fails when the device goes away: fine */
			ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				      IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
		}
		if (pause)
			usleep(pause / 2 + rand() % pause);
	}
	return NULL;
}

static pthread_t zap_start(unsigned char *at, size_t len, struct ibv_mr *mr,
			   long pause_us)
{
	pthread_t t;

	zap_at = at;
	zap_len = len;
	zap_mr = mr;
	atomic_store(&zap_stop, false);
	if (pthread_create(&t, NULL, zapper, (void *)(intptr_t)pause_us))
		fatal("pthread_create");
	return t;
}

static void zap_end(pthread_t t)
{
	atomic_store(&zap_stop, true);
	pthread_join(t, NULL);
}

/*
 * A READ into an ODP sink that another thread unmaps over and over: the
 * driver must give up at some point (a completion with an error; or the
 * READ slipped through) rather than retry it forever.
 */
static void check_read_sink_unmapped(unsigned char *from,
				     struct ibv_mr *from_mr)
{
	size_t len = LEN;
	unsigned char *sink;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	struct pair p;
	pthread_t t;
	bool done;
	long t0;

	sink = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sink == MAP_FAILED)
		die("mmap");
	mr = ibv_reg_mr(pd, sink, len, ODP_ACCESS);
	if (!mr)
		die("ibv_reg_mr ON_DEMAND");
	p = pair_new();
	t = zap_start(sink, len, NULL, 0);
	t0 = now_ms();
	post_op(p.req, IBV_WR_RDMA_READ, sink, len, mr->lkey,
		(uintptr_t)from, from_mr->rkey, 0);
	done = poll_cq(cq, &wc, 60000);
	zap_end(t);
	CHECK(done, "READ into a sink unmapped %lu times: no completion in 60 s",
	      atomic_load(&zaps));
	if (done)
		printf("odp: READ into a sink unmapped %lu times: %s after %ld ms\n",
		       atomic_load(&zaps), ibv_wc_status_str(wc.status),
		       now_ms() - t0);
	pair_free(&p);
	CHECK(!ibv_dereg_mr(mr), "dereg of the unmapped sink");
	munmap(sink, len);
}

#define CHURN_PAGES	32

static unsigned char churn_byte(unsigned int round, unsigned int page)
{
	return (round * 31 + page) % 255 + 1;
}

/* Bytes of @buf that are neither 0 nor their page's pattern of @round. */
static long churn_bad(const unsigned char *buf, unsigned int round,
		      bool zero_ok)
{
	unsigned int pg, i;
	long bad = 0;

	for (pg = 0; pg < CHURN_PAGES; pg++)
		for (i = 0; i < PAGE; i++)
			bad += buf[pg * PAGE + i] != churn_byte(round, pg) &&
			       !(zero_ok && !buf[pg * PAGE + i]);
	return bad;
}

static int churn(long seconds)
{
	size_t len = CHURN_PAGES * PAGE;
	unsigned char *tgt, *src, *dst;
	struct ibv_mr *tgt_mr, *src_mr, *dst_mr;
	enum ibv_wc_status st;
	unsigned int round, pg, errs = 0;
	long end = now_ms() + seconds * 1000, bad = 0, last;
	struct pair p;
	pthread_t t;

	tgt = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	src = malloc(len);
	dst = malloc(len);
	if (tgt == MAP_FAILED || !src || !dst)
		die("buffers");
	tgt_mr = ibv_reg_mr(pd, tgt, len, ODP_ACCESS);
	src_mr = ibv_reg_mr(pd, src, len, IBV_ACCESS_LOCAL_WRITE);
	dst_mr = ibv_reg_mr(pd, dst, len, IBV_ACCESS_LOCAL_WRITE);
	if (!tgt_mr || !src_mr || !dst_mr)
		die("ibv_reg_mr");
	p = pair_new();
	t = zap_start(tgt, len, tgt_mr, 1000);
	for (round = 0; now_ms() < end; round++) {
		for (pg = 0; pg < CHURN_PAGES; pg++)
			memset(src + pg * PAGE, churn_byte(round, pg), PAGE);
		st = rdma_op(p.req, IBV_WR_RDMA_WRITE, src, len, src_mr->lkey,
			     (uintptr_t)tgt, tgt_mr->rkey, 0);
		if (st == IBV_WC_SUCCESS)
			st = rdma_op(p.req, IBV_WR_RDMA_READ, dst, len,
				     dst_mr->lkey, (uintptr_t)tgt,
				     tgt_mr->rkey, 0);
		if (st != IBV_WC_SUCCESS) {
			/* an RNR or retry limit under churn: a new pair */
			errs++;
			pair_free(&p);
			p = pair_new();
			continue;
		}
		bad += churn_bad(dst, round, true);
	}
	zap_end(t);
	/* quiet now: a WRITE must reach every page, a READ see it all */
	for (pg = 0; pg < CHURN_PAGES; pg++)
		memset(src + pg * PAGE, churn_byte(round, pg), PAGE);
	st = rdma_op(p.req, IBV_WR_RDMA_WRITE, src, len, src_mr->lkey,
		     (uintptr_t)tgt, tgt_mr->rkey, 0);
	CHECK(st == IBV_WC_SUCCESS, "churn: last WRITE: %s",
	      ibv_wc_status_str(st));
	last = churn_bad(tgt, round, false);
	CHECK(!last, "churn: last WRITE: %ld bytes missing from the MR", last);
	memset(tgt, 0, len);
	for (pg = 0; pg < CHURN_PAGES; pg++)
		memset(tgt + pg * PAGE, churn_byte(round + 1, pg), PAGE);
	st = rdma_op(p.req, IBV_WR_RDMA_READ, dst, len, dst_mr->lkey,
		     (uintptr_t)tgt, tgt_mr->rkey, 0);
	last = churn_bad(dst, round + 1, false);
	CHECK(st == IBV_WC_SUCCESS && !last, "churn: last READ: %s, %ld bytes wrong",
	      ibv_wc_status_str(st), last);
	CHECK(!bad, "churn: %ld bytes READ from pages the process does not own",
	      bad);
	/* a round fails only where a READ response packet met 16 faults */
	CHECK(round && errs * 4 <= round, "churn: %u rounds, %u failed", round,
	      errs);
	pair_free(&p);
	ibv_dereg_mr(tgt_mr);
	ibv_dereg_mr(src_mr);
	ibv_dereg_mr(dst_mr);
	printf("churn: %u rounds (%u failed), %lu unmaps, %ld bad bytes, %u failures: %s\n",
	       round, errs, atomic_load(&zaps), bad, failures,
	       failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	long churn_s = 0;
	unsigned char *tgt, *alias, *src, *dst;
	struct ibv_mr *tgt_mr, *src_mr, *dst_mr, *late_mr;
	unsigned int cap = 0, gib = 0;
	const char *cg = NULL;
	enum ibv_wc_status st;
	uint64_t *word;
	struct pair p;
	int opt, fd, bad;

	while ((opt = getopt(argc, argv, "d:g:C:M:c:R:")) != -1) {
		if (opt == 'd')
			devname = optarg;
		else if (opt == 'g')
			gidx = atoi(optarg);
		else if (opt == 'C')
			cap = atoi(optarg);
		else if (opt == 'M')
			gib = atoi(optarg);
		else if (opt == 'c')
			cg = optarg;
		else if (opt == 'R')
			churn_s = atol(optarg);
		else
			fatal("usage: sroce-odp -d DEV {-g GID_INDEX [-C CAP] | -M GIB [-c CGROUP] | -R SECONDS}");
	}
	if (!devname)
		fatal("usage: sroce-odp -d DEV {-g GID_INDEX [-C CAP] | -M GIB [-c CGROUP] | -R SECONDS}");
	ctx = open_device(devname);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!pd || !cq)
		die("setup");
	if (gib)
		return odp_memory(gib, cg);
	if (churn_s)
		return churn(churn_s);
	check_caps();

	/* the target: a memfd mapped twice, neither mapping touched yet */
	fd = memfd_create("sroce-odp", 0);
	if (fd < 0 || ftruncate(fd, LEN))
		die("memfd");
	tgt = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	alias = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	src = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	dst = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (tgt == MAP_FAILED || alias == MAP_FAILED || src == MAP_FAILED ||
	    dst == MAP_FAILED)
		die("mmap");
	tgt_mr = ibv_reg_mr(pd, tgt, LEN, ODP_ACCESS);
	src_mr = ibv_reg_mr(pd, src, LEN, ODP_ACCESS);
	dst_mr = ibv_reg_mr(pd, dst, LEN, ODP_ACCESS);
	if (!tgt_mr || !src_mr || !dst_mr)
		die("ibv_reg_mr ON_DEMAND");

	/* WRITE into untouched pages, READ back into untouched pages */
	p = pair_new();
	memset(src, 0xa5, LEN);
	st = rdma_op(p.req, IBV_WR_RDMA_WRITE, src, LEN, src_mr->lkey,
		     (uintptr_t)tgt, tgt_mr->rkey, 0);
	CHECK(st == IBV_WC_SUCCESS, "WRITE: %s", ibv_wc_status_str(st));
	bad = count_bad(alias, LEN, 0xa5);
	CHECK(!bad, "WRITE: %d of %d bytes wrong at the target", bad, LEN);
	st = rdma_op(p.req, IBV_WR_RDMA_READ, dst, LEN, dst_mr->lkey,
		     (uintptr_t)tgt, tgt_mr->rkey, 0);
	CHECK(st == IBV_WC_SUCCESS, "READ: %s", ibv_wc_status_str(st));
	bad = count_bad(dst, LEN, 0xa5);
	CHECK(!bad, "READ: %d of %d bytes wrong", bad, LEN);

	/* FETCH_AND_ADD: the original value back, the sum in memory */
	word = (uint64_t *)(alias + PAGE);
	*word = 40;
	st = rdma_op(p.req, IBV_WR_ATOMIC_FETCH_AND_ADD, dst, 8, dst_mr->lkey,
		     (uintptr_t)tgt + PAGE, tgt_mr->rkey, 2);
	CHECK(st == IBV_WC_SUCCESS, "FETCH_AND_ADD: %s",
	      ibv_wc_status_str(st));
	CHECK(*(uint64_t *)dst == 40 && *word == 42,
	      "FETCH_AND_ADD: got %llu, memory %llu; want 40, 42",
	      (unsigned long long)*(uint64_t *)dst,
	      (unsigned long long)*word);

	/* the MR's second half unmapped: the alias keeps its pages */
	if (munmap(tgt + HALF, HALF))
		die("munmap");
	memset(src, 0x5a, LEN);
	st = rdma_op(p.req, IBV_WR_RDMA_WRITE, src, PAGE, src_mr->lkey,
		     (uintptr_t)tgt + HALF, tgt_mr->rkey, 0);
	CHECK(st == IBV_WC_REM_ACCESS_ERR,
	      "WRITE to unmapped ODP pages: %s, want remote access error",
	      ibv_wc_status_str(st));
	bad = count_bad(alias + HALF, HALF, 0xa5);
	CHECK(!bad, "WRITE to unmapped ODP pages changed %d bytes", bad);
	bad = count_bad(alias, HALF, 0xa5) - 8;	/* less the atomic's word */
	CHECK(!bad, "the mapped half changed: %d bytes", bad);
	pair_free(&p);

	/* the first half is still reachable through a fresh pair */
	p = pair_new();
	st = rdma_op(p.req, IBV_WR_RDMA_WRITE, src, PAGE, src_mr->lkey,
		     (uintptr_t)tgt, tgt_mr->rkey, 0);
	CHECK(st == IBV_WC_SUCCESS, "WRITE after munmap: %s",
	      ibv_wc_status_str(st));
	bad = count_bad(alias, PAGE, 0x5a);
	CHECK(!bad, "WRITE after munmap: %d bytes wrong", bad);

	/* a source that is gone: local protection error, nothing sent */
	if (munmap(src, LEN))
		die("munmap");
	st = rdma_op(p.req, IBV_WR_RDMA_WRITE, src, PAGE, src_mr->lkey,
		     (uintptr_t)tgt, tgt_mr->rkey, 0);
	CHECK(st == IBV_WC_LOC_PROT_ERR,
	      "WRITE from unmapped ODP pages: %s, want local protection error",
	      ibv_wc_status_str(st));
	bad = count_bad(alias, PAGE, 0x5a);
	CHECK(!bad, "WRITE from unmapped ODP pages changed %d bytes", bad);
	pair_free(&p);

	/* dereg while a WRITE into untouched pages is being faulted in */
	tgt = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (tgt == MAP_FAILED)
		die("mmap");
	late_mr = ibv_reg_mr(pd, tgt, LEN, ODP_ACCESS);
	if (!late_mr)
		die("ibv_reg_mr ON_DEMAND");
	p = pair_new();
	post_op(p.req, IBV_WR_RDMA_WRITE, dst, LEN, dst_mr->lkey,
		(uintptr_t)tgt, late_mr->rkey, 0);
	CHECK(!ibv_dereg_mr(late_mr), "dereg during a fault");
	st = wait_op();
	CHECK(st == IBV_WC_SUCCESS || st == IBV_WC_REM_ACCESS_ERR,
	      "WRITE racing dereg: %s", ibv_wc_status_str(st));
	pair_free(&p);

	check_implicit();
	if (cap)
		check_children(cap);
	check_read_sink_unmapped(dst, dst_mr);

	CHECK(!ibv_dereg_mr(tgt_mr), "dereg of the half-unmapped MR");
	CHECK(!ibv_dereg_mr(src_mr), "dereg of the unmapped MR");
	CHECK(!ibv_dereg_mr(dst_mr), "dereg");
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	printf("odp: %u checks, %u failures: %s\n", checks, failures,
	       failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
