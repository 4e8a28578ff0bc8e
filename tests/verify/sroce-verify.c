// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-verify: an end-to-end data check of an RDMA device over rdma_cm.
 *
 *   sroce-verify -s [-p PORT] [-t SECONDS]                  (server)
 *   sroce-verify -c ADDR [-p PORT] [-q QPS] [-n OPS] [-S SEED] [-N] [-F]
 *
 * The client opens QPS "data" connections. On each it RDMA-WRITEs random
 * data to random ranges of a server MR registered at an odd address and
 * length, RDMA-READs ranges back and compares them with a local shadow of
 * the server's memory; SENDs (with and without immediate) and
 * WRITE_WITH_IMM messages whose sizes, contents and immediates the server
 * derives from the same seed and checks; runs fetch-add and compare-swap
 * on 8-byte slots checking every returned original value; then asks the
 * server to check its memory (hash of the data MR, atomic slots, untouched
 * guard bytes around every MR) and report back.
 *
 * Then, unless -N, one connection per negative case, each expecting a
 * specific failed completion on the client: WRITE crossing the end of an
 * MR, READ with a wrong rkey, WRITE to a read-only MR, atomic on an MR
 * without remote atomic access (all IBV_WC_REM_ACCESS_ERR), a misaligned
 * atomic and a SEND longer than the posted receive (IBV_WC_REM_INV_REQ_ERR).
 * The server checks that none of them changed a byte of its memory.
 *
 * -F: the link fails over during the session (tests/integration/bond.sh).
 * ib_core then deletes the bond's GIDs and adds them back, and rdma_cm
 * can send no CM message for a connection made before: rdma_create_ah()
 * refuses the GID entry its path still holds. The data path is unaffected,
 * but no DREQ leaves, so neither side would see the disconnect. Under -F
 * the server ends a data connection once its result SEND completed, and
 * the client reports a disconnect that was not confirmed instead of
 * failing on it.
 *
 * Both sides print what they checked and exit non-zero on any mismatch.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define VFY_MAGIC 0x5eedc0deu
#define VFY_VERSION 1

#define GUARD 64		/* guard bytes on each side of every MR */
#define GUARD_BYTE 0xa5
#define ATOM_SLOTS 16
#define RECV_SLOTS 16
#define RECV_CAP 70001		/* bytes per posted receive */
#define IMM_AREA (256 * 1024 + 3)
#define RO_LEN 4099
#define SMALL_RECV 100		/* receive posted for the too-long SEND case */
#define MAX_SGE 2

enum conn_kind {
	KIND_DATA,
	KIND_NEG_WRITE_OOB,
	KIND_NEG_READ_BADKEY,
	KIND_NEG_WRITE_RO,
	KIND_NEG_ATOMIC_NOPERM,
	KIND_NEG_ATOMIC_MISALIGNED,
	KIND_NEG_SEND_TOO_LONG,
	KIND_NEG_RNR,		/* no receive, rnr_retry 0 */
	KIND_RNR_WAIT,		/* receives posted late: RNR NAKs, retries */
	KIND_COUNT,
};

static const char *const kind_name[KIND_COUNT] = {
	[KIND_DATA] = "data",
	[KIND_NEG_WRITE_OOB] = "write crossing the MR end",
	[KIND_NEG_READ_BADKEY] = "read with a wrong rkey",
	[KIND_NEG_WRITE_RO] = "write to a read-only MR",
	[KIND_NEG_ATOMIC_NOPERM] = "atomic without remote atomic access",
	[KIND_NEG_ATOMIC_MISALIGNED] = "misaligned atomic",
	[KIND_NEG_SEND_TOO_LONG] = "send longer than the receive",
	[KIND_NEG_RNR] = "send without a receive, rnr_retry 0",
	[KIND_RNR_WAIT] = "sends waiting for late receives",
};

/* CM REQ private data (at most 56 bytes through rdma_cm). */
struct hello {
	uint32_t magic;
	uint16_t version;
	uint16_t kind;
	uint32_t index;		/* connection number in this session */
	uint32_t total;		/* connections in this session */
	uint32_t num_msgs;	/* scheduled SEND/WRITE_IMM messages */
	uint32_t flags;		/* HELLO_F_* */
	uint64_t seed;
};

#define HELLO_F_FAILOVER 0x1	/* -F: see the head of this file */

struct remote_mr {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

/* CM REP private data (at most 196 bytes). */
struct offer {
	uint32_t magic;
	uint32_t flags;		/* OFFER_* */
	struct remote_mr data;	/* remote read/write */
	struct remote_mr atom;	/* remote atomic/read/write, 8-byte slots */
	struct remote_mr imm;	/* remote write: WRITE_WITH_IMM targets */
	struct remote_mr ro;	/* remote read only */
};

/* The server's device is rdma_rxe, whose error statuses differ from IBTA. */
#define OFFER_RXE 1u

/* Last SEND of a data connection: what the server's memory must hold. */
struct finish {
	uint32_t magic;
	uint32_t reserved;
	uint64_t data_hash;
	uint64_t atom[ATOM_SLOTS];
};

/* The server's answer to struct finish. */
struct result {
	uint32_t magic;
	uint32_t failures;
	uint32_t checks;
	uint32_t reserved;
};

static unsigned int timeout_s = 300;
static bool verbose;
static unsigned long total_checks;
static unsigned long total_failures;
/* The client's longest wait for one completion: how long a link failover stalled it. */
static uint64_t longest_wait_ms;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "sroce-verify: FATAL: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	total_checks++;
	if (ok && !verbose)
		return;
	va_start(ap, fmt);
	printf("%s: ", ok ? "ok" : "MISMATCH");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	if (!ok)
		total_failures++;
}

static void on_alarm(int sig)
{
	static const char msg[] = "sroce-verify: FATAL: timed out\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(3);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* splitmix64: a small, well-mixed generator both sides can replay. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rng_below(uint64_t *s, uint64_t n)
{
	return n ? rng_next(s) % n : 0;
}

static void rng_fill(uint64_t seed, void *buf, size_t len)
{
	uint8_t *p = buf;
	uint64_t s = seed, v = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		if (!(i & 7))
			v = rng_next(&s);
		p[i] = v >> ((i & 7) * 8);
	}
}

static uint64_t fnv1a(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t h = 0xcbf29ce484222325ull;

	while (len--)
		h = (h ^ *p++) * 0x100000001b3ull;
	return h;
}

static uint64_t conn_seed(uint64_t seed, uint32_t index, uint32_t what)
{
	uint64_t s = seed ^ ((uint64_t)index << 40) ^ ((uint64_t)what << 20);

	return rng_next(&s);
}

/* --- a buffer with guard bytes around the registered range ----------- */

struct region {
	uint8_t *alloc;
	size_t alloc_len;
	uint8_t *start;		/* registered range */
	size_t len;
	struct ibv_mr *mr;
};

static void region_init(struct region *r, struct ibv_pd *pd, size_t len,
			size_t misalign, int access)
{
	size_t before = GUARD + misalign;

	r->alloc_len = before + len + GUARD;
	if (posix_memalign((void **)&r->alloc, 4096, r->alloc_len))
		die("out of memory");
	memset(r->alloc, GUARD_BYTE, r->alloc_len);
	r->start = r->alloc + before;
	r->len = len;
	memset(r->start, 0, len);
	r->mr = ibv_reg_mr(pd, r->start, len ? len : 1, access);
	if (!r->mr)
		die("ibv_reg_mr(%zu bytes at +%zu): %s", len, before,
		    strerror(errno));
}

static bool region_guards_intact(const struct region *r)
{
	const uint8_t *end = r->start + r->len;
	const uint8_t *p;

	for (p = r->alloc; p < r->start; p++)
		if (*p != GUARD_BYTE)
			return false;
	for (p = end; p < r->alloc + r->alloc_len; p++)
		if (*p != GUARD_BYTE)
			return false;
	return true;
}

static void region_fini(struct region *r)
{
	if (r->mr)
		ibv_dereg_mr(r->mr);
	free(r->alloc);
	memset(r, 0, sizeof(*r));
}

static struct remote_mr region_remote(const struct region *r)
{
	struct remote_mr m = {
		.addr = (uintptr_t)r->start,
		.rkey = r->mr->rkey,
		.len = r->len,
	};

	return m;
}

/* --- message schedule shared by client and server --------------------- */

struct msg {
	bool write_imm;		/* RDMA WRITE with immediate, else SEND */
	bool with_imm;
	uint32_t len;
	uint32_t imm;
	uint32_t imm_offset;	/* write_imm: offset in the imm MR */
	uint64_t content_seed;
};

static const uint32_t fixed_msg_len[] = {
	0, 1, 2, 3, 4, 5, 255, 256, 257, 1023, 1024, 1025, 2047, 2048, 2049,
	4095, 4096, 4097, 8193, 12291, RECV_CAP,
};

#define NFIXED_MSG (sizeof(fixed_msg_len) / sizeof(fixed_msg_len[0]))

static void msg_schedule(struct msg *m, uint32_t count, uint64_t seed,
			 uint32_t index)
{
	uint64_t s = conn_seed(seed, index, 1);
	uint32_t cursor = 0, i;

	for (i = 0; i < count; i++) {
		m[i].write_imm = (i % 4) == 3;
		m[i].with_imm = m[i].write_imm || (i % 2);
		if (i < NFIXED_MSG)
			m[i].len = fixed_msg_len[i];
		else
			m[i].len = rng_below(&s, RECV_CAP + 1);
		m[i].imm = (uint32_t)rng_next(&s);
		m[i].content_seed = rng_next(&s);
		if (m[i].write_imm) {
			if (cursor + m[i].len > IMM_AREA)
				cursor = 0;
			m[i].imm_offset = cursor;
			cursor += m[i].len;
		}
	}
}

/* --- connection plumbing ---------------------------------------------- */

struct conn {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_comp_channel *chan;
	struct ibv_qp *qp;
	struct hello hello;
	struct offer offer;
	bool established, disconnected, done;
	uint32_t mtu;

	/* server */
	struct region data, atom, imm, ro, recv;
	struct msg *msgs;
	uint32_t next_msg;
	uint32_t posted_msgs;	/* receives posted for scheduled messages */
	uint8_t *expect;	/* scratch for expected contents */
	uint64_t data_seed;
	uint64_t post_at;	/* KIND_RNR_WAIT: when to post (ms) */
	uint32_t failures, checks;
	bool finished;
	int result_status;	/* the result SEND's completion, -1 before */

	/* client */
	struct region src, dst, res, ctl;
	uint8_t *shadow;	/* client's view of the server data MR */
	uint64_t atom_shadow[ATOM_SLOTS];
};

static struct rdma_event_channel *cm_chan;

static struct rdma_cm_event *cm_wait(int timeout_ms)
{
	struct pollfd pfd = { .fd = cm_chan->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&pfd, 1, timeout_ms) <= 0)
		return NULL;
	if (rdma_get_cm_event(cm_chan, &ev)) {
		if (errno == EAGAIN)
			return NULL;
		die("rdma_get_cm_event: %s", strerror(errno));
	}
	return ev;
}

static struct rdma_cm_event *cm_expect(enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev = cm_wait(timeout_s * 1000);

	if (!ev)
		die("no rdma_cm event (waiting for %s)", rdma_event_str(type));
	if (ev->event != type)
		die("rdma_cm event %s (status %d), expected %s",
		    rdma_event_str(ev->event), ev->status,
		    rdma_event_str(type));
	return ev;
}

static void conn_query_mtu(struct conn *c)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	if (!ibv_query_qp(c->qp, &attr, IBV_QP_PATH_MTU, &init))
		c->mtu = 128u << attr.path_mtu;
}

static void conn_create_qp(struct conn *c, struct ibv_context *ctx)
{
	struct ibv_qp_init_attr init = { 0 };

	c->pd = ibv_alloc_pd(ctx);
	c->chan = ibv_create_comp_channel(ctx);
	if (!c->pd || !c->chan)
		die("ibv_alloc_pd/ibv_create_comp_channel: %s",
		    strerror(errno));
	c->cq = ibv_create_cq(ctx, 256, c, c->chan, 0);
	if (!c->cq)
		die("ibv_create_cq: %s", strerror(errno));
	if (ibv_req_notify_cq(c->cq, 0))
		die("ibv_req_notify_cq: %s", strerror(errno));
	init.send_cq = c->cq;
	init.recv_cq = c->cq;
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = 64;
	init.cap.max_recv_wr = RECV_SLOTS + 4;
	init.cap.max_send_sge = MAX_SGE;
	init.cap.max_recv_sge = MAX_SGE;
	if (rdma_create_qp(c->id, c->pd, &init))
		die("rdma_create_qp: %s", strerror(errno));
	c->qp = c->id->qp;
}

static void conn_destroy(struct conn *c)
{
	if (c->qp)
		rdma_destroy_qp(c->id);
	region_fini(&c->data);
	region_fini(&c->atom);
	region_fini(&c->imm);
	region_fini(&c->ro);
	region_fini(&c->recv);
	region_fini(&c->src);
	region_fini(&c->dst);
	region_fini(&c->res);
	region_fini(&c->ctl);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->chan)
		ibv_destroy_comp_channel(c->chan);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->id)
		rdma_destroy_id(c->id);
	free(c->msgs);
	free(c->expect);
	free(c->shadow);
	free(c);
}

/* Poll up to @max completions; wait on the channel for at most @ms. */
static int cq_get(struct conn *c, struct ibv_wc *wc, int max, int ms)
{
	struct pollfd pfd = { .fd = c->chan->fd, .events = POLLIN };
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int n;

	n = ibv_poll_cq(c->cq, max, wc);
	if (n)
		return n;
	if (poll(&pfd, 1, ms) <= 0)
		return ibv_poll_cq(c->cq, max, wc);
	if (ibv_get_cq_event(c->chan, &ev_cq, &ev_ctx))
		die("ibv_get_cq_event: %s", strerror(errno));
	ibv_ack_cq_events(ev_cq, 1);
	if (ibv_req_notify_cq(c->cq, 0))
		die("ibv_req_notify_cq: %s", strerror(errno));
	return ibv_poll_cq(c->cq, max, wc);
}

/* Wait for the completion of @wr_id, which must be the next one. */
static struct ibv_wc wait_wc(struct conn *c, uint64_t wr_id)
{
	struct ibv_wc wc;
	time_t deadline = time(NULL) + timeout_s;
	uint64_t start = now_ms(), waited;
	int n;

	for (;;) {
		n = cq_get(c, &wc, 1, 1000);
		if (n < 0)
			die("ibv_poll_cq failed");
		if (n)
			break;
		if (time(NULL) > deadline)
			die("no completion for wr_id %#" PRIx64, wr_id);
	}
	waited = now_ms() - start;
	if (waited > longest_wait_ms)
		longest_wait_ms = waited;
	if (wc.wr_id != wr_id)
		die("completion for wr_id %#" PRIx64 " (%s), expected %#"
		    PRIx64, wc.wr_id, ibv_wc_status_str(wc.status), wr_id);
	return wc;
}

static void post_recv(struct conn *c, uint64_t wr_id, void *addr,
		      uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)addr, .length = len, .lkey = lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	if (ibv_post_recv(c->qp, &wr, &bad))
		die("ibv_post_recv: %s", strerror(errno));
}

/* --- server ------------------------------------------------------------ */

static bool device_is_rxe(const struct conn *c)
{
	char path[256], driver[64] = "";
	ssize_t n;

	/* rxe devices can have any name: ask which driver is behind it */
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device/driver",
		 c->id->verbs->device->name);
	n = readlink(path, driver, sizeof(driver) - 1);
	if (n > 0)
		driver[n] = 0;
	return !strncmp(c->id->verbs->device->name, "rxe", 3) ||
	       strstr(driver, "rxe");
}

#define REMOTE_RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		   IBV_ACCESS_REMOTE_READ)

static void server_setup(struct conn *c)
{
	uint32_t i, n = c->hello.num_msgs;
	uint64_t *slots;

	c->data_seed = conn_seed(c->hello.seed, c->hello.index, 2);
	region_init(&c->data, c->pd, 300000 + c->hello.index * 1237, 13,
		    REMOTE_RW);
	rng_fill(c->data_seed, c->data.start, c->data.len);
	/* 8-byte aligned slots crossing a page boundary */
	region_init(&c->atom, c->pd, ATOM_SLOTS * 8, 4096 - GUARD - 64,
		    REMOTE_RW | IBV_ACCESS_REMOTE_ATOMIC);
	slots = (uint64_t *)c->atom.start;
	for (i = 0; i < ATOM_SLOTS; i++)
		slots[i] = conn_seed(c->hello.seed, c->hello.index, 100 + i);
	region_init(&c->imm, c->pd, IMM_AREA, 7, REMOTE_RW);
	region_init(&c->ro, c->pd, RO_LEN, 3,
		    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	rng_fill(conn_seed(c->hello.seed, c->hello.index, 3), c->ro.start,
		 c->ro.len);
	region_init(&c->recv, c->pd, (size_t)RECV_SLOTS * (RECV_CAP + 5), 5,
		    IBV_ACCESS_LOCAL_WRITE);
	c->expect = malloc(c->data.len + RECV_CAP + IMM_AREA);
	c->msgs = calloc(n + 1, sizeof(*c->msgs));
	if (!c->expect || !c->msgs)
		die("out of memory");
	msg_schedule(c->msgs, n, c->hello.seed, c->hello.index);

	c->offer.magic = VFY_MAGIC;
	if (device_is_rxe(c))
		c->offer.flags |= OFFER_RXE;
	c->offer.data = region_remote(&c->data);
	c->offer.atom = region_remote(&c->atom);
	c->offer.imm = region_remote(&c->imm);
	c->offer.ro = region_remote(&c->ro);
}

static uint8_t *recv_slot(struct conn *c, uint32_t msg)
{
	return c->recv.start + (size_t)(msg % RECV_SLOTS) * (RECV_CAP + 5);
}

/* Receives are posted ahead for scheduled messages plus the finish. */
static void server_post_recvs(struct conn *c)
{
	uint32_t limit = c->hello.num_msgs + 1;
	uint32_t cap;

	if (c->hello.kind == KIND_NEG_RNR)
		return;
	if (c->hello.kind == KIND_NEG_SEND_TOO_LONG) {
		if (!c->posted_msgs++)
			post_recv(c, 0, recv_slot(c, 0), SMALL_RECV,
				  c->recv.mr->lkey);
		return;
	}
	while (c->posted_msgs < limit &&
	       c->posted_msgs < c->next_msg + RECV_SLOTS) {
		cap = RECV_CAP;
		post_recv(c, c->posted_msgs, recv_slot(c, c->posted_msgs), cap,
			  c->recv.mr->lkey);
		c->posted_msgs++;
	}
}

static void srv_check(struct conn *c, bool ok, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	c->checks++;
	if (!ok)
		c->failures++;
	check(ok, "conn %u: %s", c->hello.index, buf);
}

static void server_check_msg(struct conn *c, const struct ibv_wc *wc)
{
	const struct msg *m = &c->msgs[c->next_msg];
	uint32_t i = c->next_msg;
	const uint8_t *got;

	srv_check(c, wc->status == IBV_WC_SUCCESS, "msg %u status %s", i,
		  ibv_wc_status_str(wc->status));
	if (wc->status != IBV_WC_SUCCESS)
		return;
	srv_check(c, wc->wr_id == i, "msg %u in order (wr_id %" PRIu64 ")",
		  i, wc->wr_id);
	srv_check(c, wc->opcode == (m->write_imm ? IBV_WC_RECV_RDMA_WITH_IMM :
				    IBV_WC_RECV),
		  "msg %u opcode %d (%s)", i, wc->opcode,
		  m->write_imm ? "write with imm" : "send");
	srv_check(c, wc->byte_len == m->len, "msg %u byte_len %u == %u", i,
		  wc->byte_len, m->len);
	srv_check(c, !!(wc->wc_flags & IBV_WC_WITH_IMM) == m->with_imm,
		  "msg %u immediate flag %d", i,
		  !!(wc->wc_flags & IBV_WC_WITH_IMM));
	if (m->with_imm)
		srv_check(c, ntohl(wc->imm_data) == m->imm,
			  "msg %u imm %#x == %#x", i, ntohl(wc->imm_data),
			  m->imm);
	srv_check(c, wc->qp_num == c->qp->qp_num, "msg %u qp_num", i);
	rng_fill(m->content_seed, c->expect, m->len);
	got = m->write_imm ? c->imm.start + m->imm_offset : recv_slot(c, i);
	srv_check(c, !memcmp(got, c->expect, m->len),
		  "msg %u %u bytes of data%s", i, m->len,
		  m->write_imm ? " written with imm" : " received");
}

static void server_finish(struct conn *c, const struct ibv_wc *wc)
{
	const struct finish *f = (const void *)recv_slot(c, c->next_msg);
	const uint64_t *slots = (const uint64_t *)c->atom.start;
	struct result *r;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { 0 }, *bad;
	uint32_t i;

	srv_check(c, wc->status == IBV_WC_SUCCESS &&
		  wc->byte_len == sizeof(*f) && f->magic == VFY_MAGIC,
		  "finish message (%s, %u bytes)",
		  ibv_wc_status_str(wc->status), wc->byte_len);
	if (wc->status == IBV_WC_SUCCESS && f->magic == VFY_MAGIC) {
		srv_check(c, fnv1a(c->data.start, c->data.len) == f->data_hash,
			  "data MR (%zu bytes at %p) holds what the client wrote",
			  c->data.len, (void *)c->data.start);
		for (i = 0; i < ATOM_SLOTS; i++)
			srv_check(c, slots[i] == f->atom[i],
				  "atomic slot %u final value %#" PRIx64
				  " == %#" PRIx64, i, slots[i], f->atom[i]);
	}
	srv_check(c, region_guards_intact(&c->data) &&
		  region_guards_intact(&c->atom) &&
		  region_guards_intact(&c->imm) &&
		  region_guards_intact(&c->ro) &&
		  region_guards_intact(&c->recv),
		  "guard bytes around every MR untouched");

	region_init(&c->ctl, c->pd, sizeof(*r), 1, IBV_ACCESS_LOCAL_WRITE);
	r = (struct result *)c->ctl.start;
	r->magic = VFY_MAGIC;
	r->failures = c->failures;
	r->checks = c->checks;
	sge.addr = (uintptr_t)r;
	sge.length = sizeof(*r);
	sge.lkey = c->ctl.mr->lkey;
	wr.wr_id = 0xfeed;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(c->qp, &wr, &bad))
		die("ibv_post_send(result): %s", strerror(errno));
	c->finished = true;
}

static void server_negative_wc(struct conn *c, const struct ibv_wc *wc)
{
	bool rxe = device_is_rxe(c);

	if (wc->status == IBV_WC_WR_FLUSH_ERR)
		return;
	if (c->hello.kind != KIND_NEG_SEND_TOO_LONG) {
		srv_check(c, false, "unexpected completion %s opcode %d",
			  ibv_wc_status_str(wc->status), wc->opcode);
		return;
	}
	/*
	 * IBTA: a SEND longer than the receive buffer completes the receive
	 * with a local length error. rdma_rxe reports a remote invalid request
	 * (6.12) or a local QP operation error (6.1) instead; accept those
	 * only from rxe.
	 */
	srv_check(c, wc->status == IBV_WC_LOC_LEN_ERR ||
		  (rxe && (wc->status == IBV_WC_REM_INV_REQ_ERR ||
			   wc->status == IBV_WC_LOC_QP_OP_ERR)),
		  "too-long send completes the receive with %s",
		  ibv_wc_status_str(wc->status));
}

static void server_poll(struct conn *c)
{
	struct ibv_wc wc[16];
	int n, i;

	while ((n = ibv_poll_cq(c->cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++) {
			if (wc[i].opcode == IBV_WC_SEND &&
			    wc[i].wr_id == 0xfeed) {
				c->result_status = wc[i].status;
				continue;
			}
			if (c->hello.kind == KIND_RNR_WAIT) {
				if (wc[i].status == IBV_WC_WR_FLUSH_ERR)
					continue;
				if (c->next_msg < c->hello.num_msgs)
					server_check_msg(c, &wc[i]);
				c->next_msg++;
				continue;
			}
			if (c->hello.kind != KIND_DATA) {
				server_negative_wc(c, &wc[i]);
				continue;
			}
			if (c->finished) {
				srv_check(c, wc[i].status ==
					  IBV_WC_WR_FLUSH_ERR,
					  "nothing after the finish (%s)",
					  ibv_wc_status_str(wc[i].status));
				continue;
			}
			if (c->next_msg == c->hello.num_msgs)
				server_finish(c, &wc[i]);
			else
				server_check_msg(c, &wc[i]);
			c->next_msg++;
		}
		if (c->hello.kind == KIND_DATA && !c->finished)
			server_post_recvs(c);
	}
	if (n < 0)
		die("ibv_poll_cq: %s", strerror(errno));
}

/*
 * Checked once the client has disconnected, which it does only after it
 * received the result. Its ACK of that SEND can still be lost (verify-loss
 * drops packets), and a QP that disconnected answers no retransmission:
 * the SEND is then flushed when this side's QP goes to the error state,
 * although the client has it. So either status means delivered; any other
 * (retry exceeded, say) is a failure.
 */
static void server_result_sent(struct conn *c)
{
	uint64_t until = now_ms() + 5000;

	/* the flush may complete a moment after the QP left RTS */
	while (c->finished && c->result_status < 0 && now_ms() < until) {
		usleep(1000);
		server_poll(c);
	}
	srv_check(c, c->result_status == IBV_WC_SUCCESS ||
		  c->result_status == IBV_WC_WR_FLUSH_ERR,
		  "result sent (%s)", c->result_status < 0 ? "no completion" :
		  ibv_wc_status_str(c->result_status));
}

/*
 * -F: once the result SEND completed the client has it, and the DREQ
 * that would end the connection may never come (the head of this file).
 */
static void server_failover_ended(struct conn *c)
{
	if (!(c->hello.flags & HELLO_F_FAILOVER) ||
	    c->hello.kind != KIND_DATA || c->disconnected ||
	    c->result_status != IBV_WC_SUCCESS)
		return;
	c->disconnected = true;
	rdma_disconnect(c->id);
	printf("server: conn %u: result delivered; not waiting for the disconnect (-F)\n",
	       c->hello.index);
}

static void server_negative_done(struct conn *c)
{
	const uint64_t *slots = (const uint64_t *)c->atom.start;
	uint32_t i;
	bool ok = true;

	/* the data MR keeps its initial pattern: regenerate and compare */
	rng_fill(c->data_seed, c->expect, c->data.len);
	srv_check(c, !memcmp(c->expect, c->data.start, c->data.len),
		  "%s: data MR unchanged", kind_name[c->hello.kind]);
	rng_fill(conn_seed(c->hello.seed, c->hello.index, 3), c->expect,
		 c->ro.len);
	srv_check(c, !memcmp(c->expect, c->ro.start, c->ro.len),
		  "%s: read-only MR unchanged", kind_name[c->hello.kind]);
	for (i = 0; i < ATOM_SLOTS; i++)
		ok &= slots[i] == conn_seed(c->hello.seed, c->hello.index,
					    100 + i);
	srv_check(c, ok, "%s: atomic slots unchanged",
		  kind_name[c->hello.kind]);
	srv_check(c, region_guards_intact(&c->data) &&
		  region_guards_intact(&c->atom) &&
		  region_guards_intact(&c->imm) &&
		  region_guards_intact(&c->ro) &&
		  region_guards_intact(&c->recv),
		  "%s: guard bytes untouched", kind_name[c->hello.kind]);
}

static void server_connect_request(struct rdma_cm_event *ev,
				   struct conn **conns, uint32_t *nconns)
{
	struct rdma_conn_param param = { 0 };
	struct conn *c;

	if (ev->param.conn.private_data_len < sizeof(struct hello))
		die("connect request without a hello");
	c = calloc(1, sizeof(*c));
	if (!c)
		die("out of memory");
	c->result_status = -1;
	memcpy(&c->hello, ev->param.conn.private_data, sizeof(c->hello));
	if (c->hello.magic != VFY_MAGIC || c->hello.version != VFY_VERSION ||
	    c->hello.kind >= KIND_COUNT || c->hello.num_msgs > 100000 ||
	    c->hello.total > 1000 || c->hello.index >= c->hello.total)
		die("bad hello");
	c->id = ev->id;
	c->id->context = c;
	conn_create_qp(c, c->id->verbs);
	server_setup(c);
	if (c->hello.kind != KIND_RNR_WAIT)
		server_post_recvs(c);

	param.private_data = &c->offer;
	param.private_data_len = sizeof(c->offer);
	param.responder_resources = ev->param.conn.initiator_depth;
	param.initiator_depth = ev->param.conn.responder_resources;
	/* the client's QP gets its rnr_retry from here */
	param.rnr_retry_count = c->hello.kind == KIND_NEG_RNR ? 0 : 7;
	if (rdma_accept(c->id, &param))
		die("rdma_accept: %s", strerror(errno));
	conns[(*nconns)++] = c;
	printf("server: conn %u (%s) from the client, device %s\n",
	       c->hello.index, kind_name[c->hello.kind],
	       c->id->verbs->device->name);
}

static int run_server(const char *port, const char *bind_addr)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE,
				  .ai_socktype = SOCK_STREAM }, *ai;
	struct conn *conns[1024];
	uint32_t nconns = 0, closed = 0, total = 0, i;
	struct rdma_cm_id *listen_id;
	struct rdma_cm_event *ev;
	struct conn *c;
	int err;

	err = getaddrinfo(bind_addr, port, &hints, &ai);
	if (err)
		die("getaddrinfo: %s", gai_strerror(err));
	if (rdma_create_id(cm_chan, &listen_id, NULL, RDMA_PS_TCP))
		die("rdma_create_id: %s", strerror(errno));
	if (ai->ai_family == AF_INET6) {
		int afonly = 0;

		rdma_set_option(listen_id, RDMA_OPTION_ID,
				RDMA_OPTION_ID_AFONLY, &afonly,
				sizeof(afonly));
	}
	if (rdma_bind_addr(listen_id, ai->ai_addr))
		die("rdma_bind_addr: %s", strerror(errno));
	freeaddrinfo(ai);
	if (rdma_listen(listen_id, 16))
		die("rdma_listen: %s", strerror(errno));
	printf("server: listening on port %s\n", port);
	fflush(stdout);

	while (!total || closed < total) {
		ev = cm_wait(20);
		if (ev) {
			c = ev->id->context;
			switch (ev->event) {
			case RDMA_CM_EVENT_CONNECT_REQUEST:
				if (nconns == 1024)
					die("too many connections");
				server_connect_request(ev, conns, &nconns);
				total = conns[nconns - 1]->hello.total;
				break;
			case RDMA_CM_EVENT_ESTABLISHED:
				c->established = true;
				conn_query_mtu(c);
				printf("server: conn %u established, path MTU %u\n",
				       c->hello.index, c->mtu);
				if (c->hello.kind == KIND_RNR_WAIT)
					c->post_at = now_ms() + 800;
				break;
			case RDMA_CM_EVENT_TIMEWAIT_EXIT:
				break;
			case RDMA_CM_EVENT_CONNECT_ERROR:
			case RDMA_CM_EVENT_UNREACHABLE:
				srv_check(c, false, "connection failed: %s",
					  rdma_event_str(ev->event));
				c->disconnected = true;
				break;
			case RDMA_CM_EVENT_DISCONNECTED:
				if (c && !c->disconnected) {
					c->disconnected = true;
					rdma_disconnect(c->id);
				}
				break;
			default:
				die("server: unexpected rdma_cm event %s (%d)",
				    rdma_event_str(ev->event), ev->status);
			}
			rdma_ack_cm_event(ev);
		}
		for (i = 0; i < nconns; i++) {
			c = conns[i];
			if (c->done)
				continue;
			if (c->post_at && now_ms() >= c->post_at) {
				c->post_at = 0;
				server_post_recvs(c);
				printf("server: conn %u: receives posted late\n",
				       c->hello.index);
			}
			server_poll(c);
			server_failover_ended(c);
			if (!c->disconnected)
				continue;
			server_poll(c);
			if (c->hello.kind == KIND_DATA) {
				srv_check(c, c->finished,
					  "data connection finished");
				server_result_sent(c);
			}
			else if (c->hello.kind == KIND_RNR_WAIT)
				srv_check(c, c->next_msg == c->hello.num_msgs,
					  "%u of %u messages arrived after RNR NAKs",
					  c->next_msg, c->hello.num_msgs);
			else
				server_negative_done(c);
			printf("server: conn %u (%s): %u checks, %u failed\n",
			       c->hello.index, kind_name[c->hello.kind],
			       c->checks, c->failures);
			c->done = true;
			closed++;
		}
		fflush(stdout);
	}
	for (i = 0; i < nconns; i++)
		conn_destroy(conns[i]);
	rdma_destroy_id(listen_id);
	return 0;
}

/* --- client ------------------------------------------------------------ */

static struct conn *client_connect(const char *addr, const char *port,
				   const struct hello *hello)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	struct rdma_conn_param param = { 0 };
	struct rdma_cm_event *ev;
	struct conn *c;
	int err;

	c = calloc(1, sizeof(*c));
	if (!c)
		die("out of memory");
	c->hello = *hello;
	err = getaddrinfo(addr, port, &hints, &ai);
	if (err)
		die("getaddrinfo(%s): %s", addr, gai_strerror(err));
	if (rdma_create_id(cm_chan, &c->id, c, RDMA_PS_TCP))
		die("rdma_create_id: %s", strerror(errno));
	if (rdma_resolve_addr(c->id, NULL, ai->ai_addr, 5000))
		die("rdma_resolve_addr: %s", strerror(errno));
	freeaddrinfo(ai);
	rdma_ack_cm_event(cm_expect(RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(c->id, 5000))
		die("rdma_resolve_route: %s", strerror(errno));
	rdma_ack_cm_event(cm_expect(RDMA_CM_EVENT_ROUTE_RESOLVED));
	conn_create_qp(c, c->id->verbs);

	param.private_data = &c->hello;
	param.private_data_len = sizeof(c->hello);
	param.responder_resources = 4;
	param.initiator_depth = 4;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_connect(c->id, &param))
		die("rdma_connect: %s", strerror(errno));
	ev = cm_wait(timeout_s * 1000);
	if (!ev)
		die("no answer to the connect request");
	if (ev->event != RDMA_CM_EVENT_ESTABLISHED)
		die("connect: %s (status %d)", rdma_event_str(ev->event),
		    ev->status);
	if (ev->param.conn.private_data_len < sizeof(c->offer))
		die("connect: no offer from the server");
	memcpy(&c->offer, ev->param.conn.private_data, sizeof(c->offer));
	rdma_ack_cm_event(ev);
	if (c->offer.magic != VFY_MAGIC)
		die("connect: bad offer");
	conn_query_mtu(c);	/* final now that the QP is in RTS */
	c->established = true;
	return c;
}

/* How long -F waits for a disconnect rdma_cm may be unable to make. */
#define FAILOVER_DISCONNECT_MS 5000

static void client_disconnect(struct conn *c)
{
	bool failover = c->hello.flags & HELLO_F_FAILOVER;
	struct rdma_cm_event *ev;

	rdma_disconnect(c->id);
	ev = cm_wait(failover ? FAILOVER_DISCONNECT_MS : timeout_s * 1000);
	if (!ev && failover) {
		printf("client: conn %u: disconnect not confirmed in %d s (-F)\n",
		       c->hello.index, FAILOVER_DISCONNECT_MS / 1000);
		conn_destroy(c);
		return;
	}
	if (!ev)
		die("no DISCONNECTED event");
	if (ev->event != RDMA_CM_EVENT_DISCONNECTED &&
	    !(failover && ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT))
		die("disconnect: %s", rdma_event_str(ev->event));
	if (failover)
		printf("client: conn %u: disconnect: %s\n", c->hello.index,
		       rdma_event_str(ev->event));
	rdma_ack_cm_event(ev);
	conn_destroy(c);
}

static void post_rdma(struct conn *c, uint64_t wr_id,
		      enum ibv_wr_opcode op, void *local, uint32_t len,
		      uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge[MAX_SGE];
	struct ibv_send_wr wr = { 0 }, *bad;

	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = sge;
	/* split larger buffers over two SGEs to exercise gather/scatter */
	if (len > 4096 && (wr_id & 1)) {
		uint32_t first = len / 3 + 1;

		sge[0] = (struct ibv_sge){ (uintptr_t)local, first, lkey };
		sge[1] = (struct ibv_sge){ (uintptr_t)local + first,
					   len - first, lkey };
		wr.num_sge = 2;
	} else if (len) {
		sge[0] = (struct ibv_sge){ (uintptr_t)local, len, lkey };
		wr.num_sge = 1;
	}
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(c->qp, &wr, &bad))
		die("ibv_post_send: %s", strerror(errno));
}

static const uint32_t fixed_rdma_len[] = {
	0, 1, 2, 3, 5, 7, 8, 63, 255, 256, 257, 1023, 1024, 1025, 2048, 2049,
	4095, 4096, 4097, 8191, 8193, 65549, 131071, 262147, 0xffffffff,
};

#define NFIXED_RDMA (sizeof(fixed_rdma_len) / sizeof(fixed_rdma_len[0]))
/* local buffers: the largest data MR (64 QPs) plus room for offsets */
#define SRC_LEN (300000 + 64 * 1237 + 256)

/* WRITE random data to a random range, READ a random range back. */
static void client_write_read(struct conn *c, uint32_t ops, uint64_t *rng)
{
	uint32_t dlen = c->offer.data.len, len, off, rlen, roff, i;
	uint64_t raddr = c->offer.data.addr, wbytes = 0, rbytes = 0;
	uint32_t wmax = 0;
	struct ibv_wc wc;
	uint8_t *src, *dst;

	for (i = 0; i < ops; i++) {
		len = i < NFIXED_RDMA ? fixed_rdma_len[i] :
			rng_below(rng, dlen + 1);
		if (len > dlen)
			len = dlen;
		off = rng_below(rng, dlen - len + 1);
		src = c->src.start + rng_below(rng, 61);
		rng_fill(rng_next(rng), src, len);
		post_rdma(c, 2 * i, IBV_WR_RDMA_WRITE, src, len,
			  c->src.mr->lkey, raddr + off, c->offer.data.rkey);
		memcpy(c->shadow + off, src, len);

		/* read back the written range, or a random one */
		if (i % 3 == 2) {
			rlen = rng_below(rng, dlen + 1);
			roff = rng_below(rng, dlen - rlen + 1);
		} else {
			rlen = len;
			roff = off;
		}
		dst = c->dst.start + rng_below(rng, 61);
		memset(dst, 0x5a, rlen + 8);
		post_rdma(c, 2 * i + 1, IBV_WR_RDMA_READ, dst, rlen,
			  c->dst.mr->lkey, raddr + roff, c->offer.data.rkey);

		wc = wait_wc(c, 2 * i);
		check(wc.status == IBV_WC_SUCCESS &&
		      wc.opcode == IBV_WC_RDMA_WRITE,
		      "conn %u: write %u bytes at +%u (%s)", c->hello.index,
		      len, off, ibv_wc_status_str(wc.status));
		wc = wait_wc(c, 2 * i + 1);
		check(wc.status == IBV_WC_SUCCESS &&
		      wc.opcode == IBV_WC_RDMA_READ,
		      "conn %u: read %u bytes at +%u (%s)", c->hello.index,
		      rlen, roff, ibv_wc_status_str(wc.status));
		if (wc.status != IBV_WC_SUCCESS)
			die("conn %u: RDMA failed, giving up", c->hello.index);
		check(!memcmp(dst, c->shadow + roff, rlen),
		      "conn %u: read back %u bytes at +%u match", c->hello.index,
		      rlen, roff);
		check(dst[rlen] == 0x5a,
		      "conn %u: read of %u bytes wrote nothing past its end",
		      c->hello.index, rlen);
		wbytes += len;
		rbytes += rlen;
		if (len > wmax)
			wmax = len;
	}
	printf("client: conn %u: %u RDMA WRITEs (%" PRIu64 " bytes, up to %u) "
	       "and %u READs (%" PRIu64 " bytes) compared with the shadow\n",
	       c->hello.index, ops, wbytes, wmax, ops, rbytes);
}

static void client_messages(struct conn *c)
{
	uint32_t n = c->hello.num_msgs, i;
	struct msg *m = calloc(n, sizeof(*m));
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;

	if (!m)
		die("out of memory");
	msg_schedule(m, n, c->hello.seed, c->hello.index);
	for (i = 0; i < n; i++) {
		memset(&wr, 0, sizeof(wr));
		rng_fill(m[i].content_seed, c->src.start + 1, m[i].len);
		sge.addr = (uintptr_t)c->src.start + 1;
		sge.length = m[i].len;
		sge.lkey = c->src.mr->lkey;
		wr.wr_id = 1000 + i;
		wr.sg_list = &sge;
		wr.num_sge = m[i].len ? 1 : 0;
		wr.send_flags = IBV_SEND_SIGNALED;
		if (m[i].write_imm) {
			wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
			wr.wr.rdma.remote_addr = c->offer.imm.addr +
						 m[i].imm_offset;
			wr.wr.rdma.rkey = c->offer.imm.rkey;
		} else {
			wr.opcode = m[i].with_imm ? IBV_WR_SEND_WITH_IMM :
						    IBV_WR_SEND;
		}
		wr.imm_data = htonl(m[i].imm);
		if (ibv_post_send(c->qp, &wr, &bad))
			die("ibv_post_send: %s", strerror(errno));
		wc = wait_wc(c, 1000 + i);
		check(wc.status == IBV_WC_SUCCESS, "conn %u: %s %u of %u bytes%s (%s)",
		      c->hello.index, m[i].write_imm ? "write-imm" : "send",
		      i, m[i].len, m[i].with_imm ? " with imm" : "",
		      ibv_wc_status_str(wc.status));
		if (wc.status != IBV_WC_SUCCESS)
			die("conn %u: message failed, giving up",
			    c->hello.index);
	}
	printf("client: conn %u: %u SEND / SEND-with-imm / WRITE-with-imm messages "
	       "of 0..%u bytes sent (the server checks them)\n",
	       c->hello.index, n, RECV_CAP);
	free(m);
}

static int try_post_atomic(struct conn *c, uint64_t wr_id,
			   enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey,
			   uint64_t compare_add, uint64_t swap)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)c->res.start, .length = 8,
		.lkey = c->res.mr->lkey,
	};
	struct ibv_send_wr wr = { 0 }, *bad;

	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	return ibv_post_send(c->qp, &wr, &bad);
}

static void post_atomic(struct conn *c, uint64_t wr_id,
			enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey,
			uint64_t compare_add, uint64_t swap)
{
	int err = try_post_atomic(c, wr_id, op, raddr, rkey, compare_add,
				  swap);

	if (err)
		die("ibv_post_send(atomic): %s", strerror(err));
}

static void client_atomics(struct conn *c, uint32_t ops, uint64_t *rng)
{
	uint64_t orig, arg, swap, got;
	uint32_t i, slot;
	struct ibv_wc wc;
	int kind;

	for (i = 0; i < ATOM_SLOTS; i++)
		c->atom_shadow[i] = conn_seed(c->hello.seed, c->hello.index,
					      100 + i);
	for (i = 0; i < ops; i++) {
		slot = rng_below(rng, ATOM_SLOTS);
		orig = c->atom_shadow[slot];
		kind = i % 3;	/* fetch-add, cmp-swap hit, cmp-swap miss */
		arg = kind == 1 ? orig : kind == 2 ? orig ^ 0x100 :
			rng_next(rng);
		swap = rng_next(rng);
		memset(c->res.start, 0xee, 8);
		post_atomic(c, 5000 + i, kind ? IBV_WR_ATOMIC_CMP_AND_SWP :
			    IBV_WR_ATOMIC_FETCH_AND_ADD,
			    c->offer.atom.addr + 8 * slot, c->offer.atom.rkey,
			    arg, swap);
		wc = wait_wc(c, 5000 + i);
		memcpy(&got, c->res.start, 8);
		check(wc.status == IBV_WC_SUCCESS &&
		      wc.opcode == (kind ? IBV_WC_COMP_SWAP :
				    IBV_WC_FETCH_ADD),
		      "conn %u: atomic %u (%s) completes (%s)", c->hello.index,
		      i, kind ? "compare-swap" : "fetch-add",
		      ibv_wc_status_str(wc.status));
		if (wc.status != IBV_WC_SUCCESS)
			die("conn %u: atomic failed, giving up",
			    c->hello.index);
		check(got == orig, "conn %u: atomic %u on slot %u returned %#"
		      PRIx64 ", original %#" PRIx64, c->hello.index, i, slot,
		      got, orig);
		if (kind == 0)
			c->atom_shadow[slot] = orig + arg;
		else if (kind == 1)
			c->atom_shadow[slot] = swap;
	}
	/* read the slots back */
	memset(c->dst.start, 0, ATOM_SLOTS * 8);
	post_rdma(c, 6000, IBV_WR_RDMA_READ, c->dst.start, ATOM_SLOTS * 8,
		  c->dst.mr->lkey, c->offer.atom.addr, c->offer.atom.rkey);
	wc = wait_wc(c, 6000);
	check(wc.status == IBV_WC_SUCCESS &&
	      !memcmp(c->dst.start, c->atom_shadow, ATOM_SLOTS * 8),
	      "conn %u: atomic slots read back hold the expected values",
	      c->hello.index);
	printf("client: conn %u: %u fetch-add / compare-swap (hit and miss) "
	       "original values and %u final slots checked\n",
	       c->hello.index, ops, ATOM_SLOTS);
}

static void client_finish(struct conn *c)
{
	struct finish *f;
	struct result *r;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_wc wc[2];
	int got = 0, n, i;
	time_t deadline = time(NULL) + timeout_s;
	bool sent = false, answered = false;

	region_init(&c->ctl, c->pd, sizeof(*f) + sizeof(*r) + 8, 3,
		    IBV_ACCESS_LOCAL_WRITE);
	f = (struct finish *)c->ctl.start;
	r = (struct result *)(c->ctl.start + sizeof(*f) + 8);
	post_recv(c, 0xbeef, r, sizeof(*r), c->ctl.mr->lkey);
	f->magic = VFY_MAGIC;
	f->data_hash = fnv1a(c->shadow, c->offer.data.len);
	memcpy(f->atom, c->atom_shadow, sizeof(f->atom));
	sge.addr = (uintptr_t)f;
	sge.length = sizeof(*f);
	sge.lkey = c->ctl.mr->lkey;
	wr.wr_id = 0xf1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(c->qp, &wr, &bad))
		die("ibv_post_send(finish): %s", strerror(errno));
	while (got < 2) {
		n = cq_get(c, wc, 2, 1000);
		for (i = 0; i < n; i++, got++) {
			if (wc[i].wr_id == 0xf1)
				sent = wc[i].status == IBV_WC_SUCCESS;
			else if (wc[i].wr_id == 0xbeef)
				answered = wc[i].status == IBV_WC_SUCCESS &&
					   wc[i].byte_len == sizeof(*r);
		}
		if (time(NULL) > deadline)
			die("conn %u: no answer from the server",
			    c->hello.index);
	}
	check(sent && answered && r->magic == VFY_MAGIC,
	      "conn %u: server answered the finish message", c->hello.index);
	check(r->failures == 0,
	      "conn %u: server checked its memory: %u checks, %u failed",
	      c->hello.index, r->checks, r->failures);
	printf("client: conn %u: server ran %u checks, %u failed\n",
	       c->hello.index, r->checks, r->failures);
}

static void client_data_setup(struct conn *c)
{
	uint32_t i;

	region_init(&c->src, c->pd, SRC_LEN, 5, IBV_ACCESS_LOCAL_WRITE);
	region_init(&c->dst, c->pd, SRC_LEN, 11, IBV_ACCESS_LOCAL_WRITE);
	region_init(&c->res, c->pd, 8, 3, IBV_ACCESS_LOCAL_WRITE);
	c->shadow = malloc(c->offer.data.len);
	if (!c->shadow)
		die("out of memory");
	rng_fill(conn_seed(c->hello.seed, c->hello.index, 2), c->shadow,
		 c->offer.data.len);
	for (i = 0; i < ATOM_SLOTS; i++)
		c->atom_shadow[i] = conn_seed(c->hello.seed, c->hello.index,
					      100 + i);
}

/*
 * Post the failing operation of a negative case and wait for its
 * completion. Returns false when the local provider refused to post it
 * (some providers check atomic alignment themselves).
 */
static bool negative_op(struct conn *c, struct ibv_wc *wc)
{
	const struct offer *o = &c->offer;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { 0 }, *bad;
	int err;

	memset(c->src.start, 0x77, 256);
	switch (c->hello.kind) {
	case KIND_NEG_WRITE_OOB:
		post_rdma(c, 1, IBV_WR_RDMA_WRITE, c->src.start, 16,
			  c->src.mr->lkey, o->data.addr + o->data.len - 4,
			  o->data.rkey);
		break;
	case KIND_NEG_READ_BADKEY:
		post_rdma(c, 1, IBV_WR_RDMA_READ, c->dst.start, 64,
			  c->dst.mr->lkey, o->data.addr,
			  o->data.rkey ^ 0x5a5a0000);
		break;
	case KIND_NEG_WRITE_RO:
		post_rdma(c, 1, IBV_WR_RDMA_WRITE, c->src.start, 64,
			  c->src.mr->lkey, o->ro.addr, o->ro.rkey);
		break;
	case KIND_NEG_ATOMIC_NOPERM:
		post_atomic(c, 1, IBV_WR_ATOMIC_FETCH_AND_ADD,
			    (o->data.addr + 7) & ~7ull, o->data.rkey, 1, 0);
		break;
	case KIND_NEG_ATOMIC_MISALIGNED:
		err = try_post_atomic(c, 1, IBV_WR_ATOMIC_FETCH_AND_ADD,
				      o->atom.addr + 4, o->atom.rkey, 1, 0);
		if (err) {
			printf("client: the provider refused the misaligned atomic: %s\n",
			       strerror(err));
			return false;
		}
		break;
	case KIND_NEG_RNR:
	case KIND_NEG_SEND_TOO_LONG:
		sge.addr = (uintptr_t)c->src.start;
		sge.length = SMALL_RECV * 2;
		sge.lkey = c->src.mr->lkey;
		wr.wr_id = 1;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		if (ibv_post_send(c->qp, &wr, &bad))
			die("ibv_post_send: %s", strerror(errno));
		break;
	default:
		die("bad kind");
	}
	*wc = wait_wc(c, 1);
	return true;
}

static void client_negative(const char *addr, const char *port,
			    struct hello *hello)
{
	enum ibv_wc_status want = IBV_WC_REM_ACCESS_ERR;
	struct ibv_wc wc;
	struct conn *c;

	if (hello->kind == KIND_NEG_ATOMIC_MISALIGNED ||
	    hello->kind == KIND_NEG_SEND_TOO_LONG)
		want = IBV_WC_REM_INV_REQ_ERR;
	if (hello->kind == KIND_NEG_RNR)
		want = IBV_WC_RNR_RETRY_EXC_ERR;
	c = client_connect(addr, port, hello);
	region_init(&c->src, c->pd, 4096, 5, IBV_ACCESS_LOCAL_WRITE);
	region_init(&c->dst, c->pd, 4096, 9, IBV_ACCESS_LOCAL_WRITE);
	region_init(&c->res, c->pd, 8, 3, IBV_ACCESS_LOCAL_WRITE);
	memset(c->dst.start, 0x33, c->dst.len);
	if (!negative_op(c, &wc)) {
		printf("client: negative case '%s': refused by the local provider\n",
		       kind_name[hello->kind]);
		client_disconnect(c);
		return;
	}
	/* rdma_rxe 6.1 NAKs a too-long SEND as a remote operational error */
	check(wc.status == want ||
	      (hello->kind == KIND_NEG_SEND_TOO_LONG &&
	       (c->offer.flags & OFFER_RXE) &&
	       wc.status == IBV_WC_REM_OP_ERR),
	      "negative: %s fails with %s (got %s)",
	      kind_name[hello->kind], ibv_wc_status_str(want),
	      ibv_wc_status_str(wc.status));
	if (hello->kind == KIND_NEG_READ_BADKEY) {
		uint32_t i;
		bool clean = true;

		for (i = 0; i < c->dst.len; i++)
			clean &= c->dst.start[i] == 0x33;
		check(clean, "negative: failed read placed no data");
	}
	printf("client: negative case '%s': %s\n", kind_name[hello->kind],
	       ibv_wc_status_str(wc.status));
	client_disconnect(c);
}

/* SENDs that meet no receive at first: RNR NAKs, then success. */
static void client_rnr_wait(const char *addr, const char *port,
			    const struct hello *hello)
{
	struct conn *c = client_connect(addr, port, hello);
	time_t start = time(NULL);

	client_data_setup(c);
	client_messages(c);
	printf("client: '%s': %u messages completed after %lds\n",
	       kind_name[hello->kind], hello->num_msgs,
	       (long)(time(NULL) - start));
	client_disconnect(c);
}

static int run_client(const char *addr, const char *port, uint32_t nqp,
		      uint32_t ops, uint64_t seed, bool negative,
		      bool failover)
{
	struct conn *conns[64];
	struct hello hello = {
		.magic = VFY_MAGIC, .version = VFY_VERSION, .seed = seed,
	};
	uint32_t i, total = nqp + (negative ? KIND_COUNT - 1 : 0);
	uint64_t rng = seed;

	if (nqp > 64)
		die("at most 64 QPs");
	hello.total = total;
	hello.num_msgs = ops + 8;
	hello.flags = failover ? HELLO_F_FAILOVER : 0;
	printf("client: seed %#" PRIx64 ", %u data QPs, %u ops each%s\n",
	       seed, nqp, ops, negative ? ", negative cases" : "");
	for (i = 0; i < nqp; i++) {
		hello.index = i;
		hello.kind = KIND_DATA;
		conns[i] = client_connect(addr, port, &hello);
		client_data_setup(conns[i]);
		printf("client: conn %u: device %s, path MTU %u, data MR %u bytes at %#"
		       PRIx64 "\n", i, conns[i]->id->verbs->device->name,
		       conns[i]->mtu, conns[i]->offer.data.len,
		       conns[i]->offer.data.addr);
	}
	/* interleave the QPs: each phase runs on every QP in turn */
	for (i = 0; i < nqp; i++)
		client_write_read(conns[i], ops / 2, &rng);
	for (i = 0; i < nqp; i++)
		client_messages(conns[i]);
	for (i = 0; i < nqp; i++)
		client_write_read(conns[i], ops - ops / 2, &rng);
	for (i = 0; i < nqp; i++)
		client_atomics(conns[i], ops, &rng);
	for (i = 0; i < nqp; i++) {
		client_finish(conns[i]);
		client_disconnect(conns[i]);
	}
	printf("client: longest wait for one completion on the data QPs: %" PRIu64
	       " ms\n", longest_wait_ms);
	if (negative) {
		for (i = 1; i < KIND_COUNT; i++) {
			hello.index = nqp + i - 1;
			hello.kind = i;
			hello.num_msgs = i == KIND_RNR_WAIT ? 4 : 0;
			if (i == KIND_RNR_WAIT)
				client_rnr_wait(addr, port, &hello);
			else
				client_negative(addr, port, &hello);
		}
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: sroce-verify -s [-b ADDR] [-p PORT] [-t SECONDS] [-v]\n"
		"       sroce-verify -c ADDR [-p PORT] [-q QPS] [-n OPS] [-S SEED]\n"
		"                    [-N] [-F] [-t SECONDS] [-v]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *port = "18515", *peer = NULL, *bind_addr = NULL;
	uint64_t seed = (uint64_t)time(NULL) * 2654435761u ^ getpid();
	uint32_t nqp = 3, ops = 40;
	bool server = false, negative = true, failover = false;
	int opt;

	while ((opt = getopt(argc, argv, "sc:b:p:q:n:S:NFt:v")) != -1) {
		switch (opt) {
		case 's':
			server = true;
			break;
		case 'c':
			peer = optarg;
			break;
		case 'b':
			bind_addr = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 'q':
			nqp = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			ops = strtoul(optarg, NULL, 0);
			break;
		case 'S':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'N':
			negative = false;
			break;
		case 'F':
			failover = true;
			break;
		case 't':
			timeout_s = strtoul(optarg, NULL, 0);
			break;
		case 'v':
			verbose = true;
			break;
		default:
			usage();
		}
	}
	if (server == !!peer || !nqp || !ops)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGALRM, on_alarm);
	alarm(timeout_s);
	cm_chan = rdma_create_event_channel();
	if (!cm_chan)
		die("rdma_create_event_channel: %s", strerror(errno));
	if (server)
		run_server(port, bind_addr);
	else
		run_client(peer, port, nqp, ops, seed, negative, failover);
	rdma_destroy_event_channel(cm_chan);
	printf("%s: %lu checks, %lu failed: %s\n", server ? "server" : "client",
	       total_checks, total_failures, total_failures ? "FAIL" : "PASS");
	return total_failures ? 1 : 0;
}
