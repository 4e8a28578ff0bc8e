// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-flush: the memory placement extensions (IBTA 1.5 annex A19)
 * between two devices over rdma_cm, and what each device reports of them.
 *
 *   sroce-flush -s [-b ADDR] -p PORT -e AW,FG,FP
 *   sroce-flush -c ADDR -p PORT -e AW,FG,FP [-r ROUNDS] [-N] [-f]
 *
 * -e: what this side's device must report in device_cap_flags_ex: ATOMIC
 * WRITE, FLUSH global, FLUSH persistent (1 or 0 each). Both sides check:
 * 1. the three bits are as expected;
 * 2. an MR with FLUSH global access registers iff FLUSH global is
 *    reported; one with FLUSH persistent does not register unless it is
 *    reported (the memory is no persistent memory either way);
 * 3. with ATOMIC WRITE reported, a QP with IBV_QP_EX_WITH_ATOMIC_WRITE can
 *    be created.
 * When both sides report ATOMIC WRITE, the client then (the server checks
 * its memory after every connection):
 * 4. writes 64 slots with ibv_wr_atomic_write(), interleaved with RDMA
 *    WRITEs to the same slots before and after (in-order execution: the
 *    last one wins), ROUNDS times with fresh values; every signaled
 *    completion is IBV_WC_ATOMIC_WRITE/success; an RDMA READ returns
 *    exactly the expected bytes, and so does the server's memory;
 * 5. on a fresh connection each: a misaligned ATOMIC WRITE
 *    (IBV_WC_REM_INV_REQ_ERR), one past the MR's end, one with a wrong
 *    rkey and one to an MR without remote write (IBV_WC_REM_ACCESS_ERR);
 *    the server finds the bytes around those targets unchanged.
 * -N leaves out step 5 (for a lossy link, where a lost NAK turns the
 * expected error into a retry error); the server then expects no more
 * connections after the last round.
 * FLUSH can be posted only when built against rdma-core 45 or later
 * (ibv_wr_flush(); the Makefile defines SROCE_WR_FLUSH then). With -f (an
 * error unless built so), when both sides report FLUSH global, the client
 * also (the server's MR has FLUSH global access whenever its device
 * reports it):
 * 6. ends each round of step 4 with a FLUSH global of the slots' range and
 *    one of the whole MR (level MR), both IBV_WC_FLUSH/success, before the
 *    READ back;
 * 7. on a fresh connection, FLUSHes the read-only MR, which has no FLUSH
 *    access: IBV_WC_REM_ACCESS_ERR.
 * Otherwise only FLUSH's reporting (1, 2) is checked. (rdma_rxe's FLUSH
 * packets carry a wrong ICRC, so -f is for pairs without it.)
 *
 * Prints "PASS" and exits 0 when every check passed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
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

/* device_cap_flags_ex bits (uverbs ABI; rdma-core 44 names none of them) */
#define CAP_FLUSH_GLOBAL	(1ULL << 38)
#define CAP_FLUSH_PERSISTENT	(1ULL << 39)
#define CAP_ATOMIC_WRITE	(1ULL << 40)
/* MR access bits (IBV_ACCESS_FLUSH_* of rdma-core 45) */
#define ACCESS_FLUSH_GLOBAL	(1 << 8)
#define ACCESS_FLUSH_PERSISTENT	(1 << 9)

#define MAGIC		0x534c5348u
#define NSLOT		64
#define GUARD		64	/* bytes of pattern around the slots */
#define NEG_OFF		(GUARD + NSLOT * 8 + GUARD)	/* negative target */
#define NEG_LEN		64
#define REGION_LEN	(NEG_OFF + NEG_LEN)
#define RO_LEN		64
/*
 * rdma_cm events: long enough for the CM to resend a lost REQ or REP
 * (seconds apart) a few times under TCG.
 */
#define TIMEOUT_MS	60000
#define DEPTH		4

enum kind {
	K_DATA, K_MISALIGNED, K_RANGE, K_RKEY, K_READONLY, K_FLUSH_DENIED,
	K_COUNT
};

static const char *const kind_name[K_COUNT] = {
	"data", "misaligned", "past the MR", "wrong rkey", "read-only MR",
	"FLUSH without access",
};

#ifdef SROCE_WR_FLUSH
static const bool wr_flush_built = true;
#else
static const bool wr_flush_built;
#endif

struct conn_req {		/* client -> server, CM private data */
	uint32_t magic;
	uint32_t kind;
	uint32_t last;
	uint32_t round;
	uint64_t seed;
	uint64_t caps;		/* the client's device_cap_flags_ex */
};

struct conn_rep {		/* server -> client */
	uint32_t magic;
	uint32_t rkey;
	uint64_t addr;		/* REGION_LEN bytes, remote write+read */
	uint32_t ro_rkey;
	uint32_t pad;
	uint64_t ro_addr;	/* RO_LEN bytes, remote read only */
	uint64_t caps;		/* the server's device_cap_flags_ex */
};

static unsigned int failures, checks;
static int expect[3] = { -1, -1, -1 };

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("FATAL: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	checks++;
	if (ok)
		return;
	failures++;
	va_start(ap, fmt);
	fputs("FAIL: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint8_t pattern(size_t i)
{
	return (uint8_t)(0xa5 ^ (i * 7));
}

/* Slot i's bytes: ATOMIC WRITE value and RDMA WRITE value of a round. */
static void slot_values(uint64_t seed, uint32_t round, unsigned int i,
			uint8_t aw[8], uint8_t w[8])
{
	uint64_t a = mix(seed ^ ((uint64_t)round << 32) ^ (i * 2));
	uint64_t b = mix(seed ^ ((uint64_t)round << 32) ^ (i * 2 + 1));

	memcpy(aw, &a, 8);
	memcpy(w, &b, 8);
}

/* What slot i holds after a round: i % 4 == 0 gets the RDMA WRITE last. */
static void slot_final(uint64_t seed, uint32_t round, unsigned int i,
		       uint8_t out[8])
{
	uint8_t aw[8], w[8];

	slot_values(seed, round, i, aw, w);
	memcpy(out, i % 4 == 0 ? w : aw, 8);
}

/* ---- capabilities (both sides) ---- */

static uint64_t check_caps(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_device_attr_ex attr = { 0 };
	static char buf[4096] __attribute__((aligned(4096)));
	struct ibv_mr *mr;
	uint64_t caps;
	int have[3];
	int i;

	if (ibv_query_device_ex(ctx, NULL, &attr))
		die("ibv_query_device_ex: %s", strerror(errno));
	caps = attr.device_cap_flags_ex;
	have[0] = !!(caps & CAP_ATOMIC_WRITE);
	have[1] = !!(caps & CAP_FLUSH_GLOBAL);
	have[2] = !!(caps & CAP_FLUSH_PERSISTENT);
	printf("%s: device_cap_flags_ex %#" PRIx64
	       ": ATOMIC_WRITE %d FLUSH_GLOBAL %d FLUSH_PERSISTENT %d\n",
	       ibv_get_device_name(ctx->device), caps, have[0], have[1],
	       have[2]);
	for (i = 0; i < 3; i++)
		check(expect[i] < 0 || have[i] == expect[i],
		      "capability %d reported %d, expected %d", i, have[i],
		      expect[i]);

	mr = ibv_reg_mr(pd, buf, sizeof(buf),
			IBV_ACCESS_LOCAL_WRITE | ACCESS_FLUSH_GLOBAL);
	printf("MR with FLUSH_GLOBAL access: %s\n",
	       mr ? "registered" : strerror(errno));
	check(!!mr == have[1], "MR with FLUSH_GLOBAL %s, capability says %d",
	      mr ? "registered" : "refused", have[1]);
	if (mr)
		ibv_dereg_mr(mr);
	mr = ibv_reg_mr(pd, buf, sizeof(buf),
			IBV_ACCESS_LOCAL_WRITE | ACCESS_FLUSH_PERSISTENT);
	printf("MR with FLUSH_PERSISTENT access: %s\n",
	       mr ? "registered" : strerror(errno));
	check(!mr || have[2], "MR with FLUSH_PERSISTENT registered unreported");
	if (mr)
		ibv_dereg_mr(mr);
	return caps;
}

/* ---- rdma_cm ---- */

static struct rdma_event_channel *chan;

static struct rdma_cm_event *cm_next(void)
{
	struct pollfd p = { .fd = chan->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&p, 1, TIMEOUT_MS) != 1)
		die("no rdma_cm event within %d ms", TIMEOUT_MS);
	if (rdma_get_cm_event(chan, &ev))
		die("rdma_get_cm_event: %s", strerror(errno));
	return ev;
}

static void cm_expect(enum rdma_cm_event_type type, struct rdma_cm_event **out)
{
	struct rdma_cm_event *ev = cm_next();

	if (ev->event != type)
		die("rdma_cm event %s (status %d), expected %s",
		    rdma_event_str(ev->event), ev->status,
		    rdma_event_str(type));
	if (out)
		*out = ev;
	else
		rdma_ack_cm_event(ev);
}

static struct ibv_wc wait_wc(struct ibv_cq *cq)
{
	struct timespec t0, t;
	struct ibv_wc wc;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			die("ibv_poll_cq");
		if (n)
			return wc;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 +
		    (t.tv_nsec - t0.tv_nsec) / 1000000 > TIMEOUT_MS)
			die("no completion within %d ms", TIMEOUT_MS);
		usleep(100);
	}
}

/* ---- server ---- */

static uint8_t *region, *ro;

static void region_reset(void)
{
	size_t i;

	for (i = 0; i < REGION_LEN; i++)
		region[i] = pattern(i);
	for (i = 0; i < RO_LEN; i++)
		ro[i] = pattern(i + 1);
}

static void server_check(const struct conn_req *req, uint64_t caps)
{
	/* no ATOMIC WRITE pair: the client sent nothing */
	bool data = req->kind == K_DATA && (caps & CAP_ATOMIC_WRITE) &&
		    (req->caps & CAP_ATOMIC_WRITE);
	uint8_t fin[8];
	unsigned int i, bad = 0;
	size_t b;

	for (b = 0; b < REGION_LEN; b++) {
		bool slot = b >= GUARD && b < GUARD + NSLOT * 8;

		if (slot && data) {
			i = (b - GUARD) / 8;
			slot_final(req->seed, req->round, i, fin);
			if (region[b] != fin[(b - GUARD) % 8])
				bad++;
		} else if (!slot && region[b] != pattern(b)) {
			bad++;
		}
	}
	check(!bad, "server: %u bytes wrong after connection %s round %u",
	      bad, kind_name[req->kind], req->round);
	for (b = 0; b < RO_LEN; b++)
		check(ro[b] == pattern(b + 1), "server: read-only MR changed");
	printf("server: memory after %s (round %u): %s\n",
	       kind_name[req->kind], req->round, bad ? "WRONG" : "as expected");
}

static int run_server(const char *bind_addr, const char *port)
{
	struct rdma_cm_id *listen_id, *id = NULL;
	struct ibv_mr *mr = NULL, *ro_mr = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	struct rdma_cm_event *ev;
	struct conn_req req = { 0 };
	struct addrinfo *ai;
	uint64_t caps = 0;
	bool done = false;

	if (getaddrinfo(bind_addr, port, NULL, &ai))
		die("getaddrinfo %s", bind_addr);
	if (rdma_create_id(chan, &listen_id, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(listen_id, ai->ai_addr) || rdma_listen(listen_id, 4))
		die("listen: %s", strerror(errno));
	freeaddrinfo(ai);
	printf("server: listening\n");
	fflush(stdout);

	while (!done) {
		ev = cm_next();
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct ibv_qp_init_attr qa = { 0 };
			struct rdma_conn_param cp = { 0 };
			struct conn_rep rep = { 0 };

			if (ev->param.conn.private_data_len < sizeof(req))
				die("short connect request");
			memcpy(&req, ev->param.conn.private_data, sizeof(req));
			if (req.magic != MAGIC || req.kind >= K_COUNT)
				die("bad connect request");
			id = ev->id;
			if (!pd) {
				pd = ibv_alloc_pd(id->verbs);
				if (!pd)
					die("ibv_alloc_pd");
				caps = check_caps(id->verbs, pd);
				if (posix_memalign((void **)&region, 4096,
						   REGION_LEN) ||
				    posix_memalign((void **)&ro, 4096, RO_LEN))
					die("memory");
				region_reset();
				mr = ibv_reg_mr(pd, region, REGION_LEN,
						IBV_ACCESS_LOCAL_WRITE |
						IBV_ACCESS_REMOTE_WRITE |
						IBV_ACCESS_REMOTE_READ |
						(caps & CAP_FLUSH_GLOBAL ?
						 ACCESS_FLUSH_GLOBAL : 0));
				ro_mr = ibv_reg_mr(pd, ro, RO_LEN,
						   IBV_ACCESS_REMOTE_READ);
				cq = ibv_create_cq(id->verbs, 16, NULL, NULL, 0);
				if (!mr || !ro_mr || !cq)
					die("server resources: %s",
					    strerror(errno));
			}
			qa.send_cq = cq;
			qa.recv_cq = cq;
			qa.qp_type = IBV_QPT_RC;
			qa.cap.max_send_wr = 4;
			qa.cap.max_recv_wr = 4;
			qa.cap.max_send_sge = 1;
			qa.cap.max_recv_sge = 1;
			if (rdma_create_qp(id, pd, &qa))
				die("rdma_create_qp: %s", strerror(errno));
			rep.magic = MAGIC;
			rep.addr = (uintptr_t)region;
			rep.rkey = mr->rkey;
			rep.ro_addr = (uintptr_t)ro;
			rep.ro_rkey = ro_mr->rkey;
			rep.caps = caps;
			cp.private_data = &rep;
			cp.private_data_len = sizeof(rep);
			cp.responder_resources = DEPTH;
			cp.initiator_depth = DEPTH;
			rdma_ack_cm_event(ev);
			if (rdma_accept(id, &cp))
				die("rdma_accept: %s", strerror(errno));
			continue;
		}
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED) {
			struct rdma_cm_id *cid = ev->id;

			rdma_ack_cm_event(ev);
			server_check(&req, caps);
			region_reset();
			rdma_destroy_qp(cid);
			rdma_destroy_id(cid);
			done = req.last;
			continue;
		}
		if (ev->event != RDMA_CM_EVENT_ESTABLISHED)
			die("server: rdma_cm event %s (status %d)",
			    rdma_event_str(ev->event), ev->status);
		rdma_ack_cm_event(ev);
	}
	rdma_destroy_id(listen_id);
	if (mr)
		ibv_dereg_mr(mr);
	if (ro_mr)
		ibv_dereg_mr(ro_mr);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	return 0;
}

/* ---- client ---- */

struct client {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp_ex *qpx;
	struct ibv_mr *mr;
	uint8_t *buf;		/* RDMA WRITE sources, then READ target */
	struct conn_rep rep;
	bool flush_qp;		/* its QPs can FLUSH: built so, reported */
	bool flush;		/* steps 6 and 7: the server reports it too */
};

static void client_connect(struct client *c, const char *addr,
			   const char *port, const struct conn_req *req)
{
	struct ibv_qp_init_attr_ex qa = { 0 };
	struct rdma_conn_param cp = { 0 };
	struct rdma_cm_event *ev;
	struct addrinfo *ai;

	if (getaddrinfo(addr, port, NULL, &ai))
		die("getaddrinfo %s", addr);
	if (rdma_create_id(chan, &c->id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(c->id, NULL, ai->ai_addr, TIMEOUT_MS))
		die("rdma_resolve_addr: %s", strerror(errno));
	freeaddrinfo(ai);
	cm_expect(RDMA_CM_EVENT_ADDR_RESOLVED, NULL);
	if (rdma_resolve_route(c->id, TIMEOUT_MS))
		die("rdma_resolve_route: %s", strerror(errno));
	cm_expect(RDMA_CM_EVENT_ROUTE_RESOLVED, NULL);

	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.cap.max_send_wr = 256;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.pd = c->pd;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qa.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE |
			    IBV_QP_EX_WITH_RDMA_WRITE |
			    IBV_QP_EX_WITH_RDMA_READ;
#ifdef SROCE_WR_FLUSH
	if (c->flush_qp)
		qa.send_ops_flags |= IBV_QP_EX_WITH_FLUSH;
#endif
	if (rdma_create_qp_ex(c->id, &qa))
		die("rdma_create_qp_ex with ATOMIC_WRITE: %s", strerror(errno));
	c->qpx = ibv_qp_to_qp_ex(c->id->qp);
	if (!c->qpx)
		die("no extended QP");

	cp.private_data = req;
	cp.private_data_len = sizeof(*req);
	cp.initiator_depth = DEPTH;
	cp.responder_resources = DEPTH;
	cp.retry_count = 7;
	if (rdma_connect(c->id, &cp))
		die("rdma_connect: %s", strerror(errno));
	cm_expect(RDMA_CM_EVENT_ESTABLISHED, &ev);
	if (ev->param.conn.private_data_len < sizeof(c->rep))
		die("short accept");
	memcpy(&c->rep, ev->param.conn.private_data, sizeof(c->rep));
	rdma_ack_cm_event(ev);
	if (c->rep.magic != MAGIC)
		die("bad accept");
	c->flush = c->flush_qp && (c->rep.caps & CAP_FLUSH_GLOBAL);
}

static void client_disconnect(struct client *c)
{
	rdma_disconnect(c->id);
	cm_expect(RDMA_CM_EVENT_DISCONNECTED, NULL);
	rdma_destroy_qp(c->id);
	rdma_destroy_id(c->id);
	c->id = NULL;
}

static void aw_post(struct client *c, uint64_t wr_id, unsigned int flags,
		    uint32_t rkey, uint64_t addr, const uint8_t v[8])
{
	c->qpx->wr_id = wr_id;
	c->qpx->wr_flags = flags;
	ibv_wr_atomic_write(c->qpx, rkey, addr, v);
}

static void write_post(struct client *c, uint64_t wr_id, unsigned int flags,
		       uint64_t addr, const uint8_t *src)
{
	c->qpx->wr_id = wr_id;
	c->qpx->wr_flags = flags;
	ibv_wr_rdma_write(c->qpx, c->rep.rkey, addr);
	ibv_wr_set_sge(c->qpx, c->mr->lkey, (uintptr_t)src, 8);
}

#ifdef SROCE_WR_FLUSH
static void flush_post(struct client *c, uint64_t wr_id, uint32_t rkey,
		       uint64_t addr, size_t len, uint8_t level)
{
	c->qpx->wr_id = wr_id;
	c->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_flush(c->qpx, rkey, addr, len, IBV_FLUSH_GLOBAL, level);
}

/* Step 6: after the ATOMIC WRITEs, before the READ back. */
static void client_flush(struct client *c, uint64_t slots)
{
	struct ibv_wc wc;
	unsigned int i;

	ibv_wr_start(c->qpx);
	flush_post(c, 8001, c->rep.rkey, slots, NSLOT * 8, IBV_FLUSH_RANGE);
	flush_post(c, 8002, c->rep.rkey, c->rep.addr, 0, IBV_FLUSH_MR);
	if (ibv_wr_complete(c->qpx))
		die("ibv_wr_complete (FLUSH): %s", strerror(errno));
	for (i = 0; i < 2; i++) {
		wc = wait_wc(c->cq);
		check(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_FLUSH &&
		      wc.wr_id == 8001 + i, "FLUSH %u: %s opcode %d wr_id %"
		      PRIu64, i, ibv_wc_status_str(wc.status), wc.opcode,
		      wc.wr_id);
	}
	printf("client: FLUSH global of the range and of the MR: %s\n",
	       ibv_wc_status_str(wc.status));
}
#endif

/* One round of step 4. */
static void client_data(struct client *c, uint64_t seed, uint32_t round)
{
	uint64_t slots = c->rep.addr + GUARD;
	uint8_t aw[8], fin[8];
	struct ibv_wc wc;
	unsigned int i, n_aw = 0, signaled = 0, bad = 0;

	ibv_wr_start(c->qpx);
	for (i = 0; i < NSLOT; i++) {
		uint8_t *w = c->buf + i * 8;
		unsigned int sig = i % 8 == 7 ? IBV_SEND_SIGNALED : 0;

		slot_values(seed, round, i, aw, w);
		if (i % 4 == 1)
			write_post(c, 1000 + i, 0, slots + i * 8, w);
		aw_post(c, i, sig, c->rep.rkey, slots + i * 8, aw);
		n_aw++;
		signaled += !!sig;
		if (i % 4 == 0)
			write_post(c, 1000 + i, 0, slots + i * 8, w);
	}
	if (ibv_wr_complete(c->qpx))
		die("ibv_wr_complete: %s", strerror(errno));
	for (i = 0; i < signaled; i++) {
		wc = wait_wc(c->cq);
		check(wc.status == IBV_WC_SUCCESS,
		      "ATOMIC WRITE completion status %s",
		      ibv_wc_status_str(wc.status));
		check(wc.opcode == IBV_WC_ATOMIC_WRITE,
		      "completion opcode %d, expected IBV_WC_ATOMIC_WRITE",
		      wc.opcode);
		check(wc.wr_id == i * 8 + 7, "completion wr_id %" PRIu64
		      ", expected %u", wc.wr_id, i * 8 + 7);
	}

#ifdef SROCE_WR_FLUSH
	if (c->flush)
		client_flush(c, slots);
#endif
	/* read everything back */
	memset(c->buf, 0, NSLOT * 8);
	ibv_wr_start(c->qpx);
	c->qpx->wr_id = 7777;
	c->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(c->qpx, c->rep.rkey, slots);
	ibv_wr_set_sge(c->qpx, c->mr->lkey, (uintptr_t)c->buf, NSLOT * 8);
	if (ibv_wr_complete(c->qpx))
		die("ibv_wr_complete: %s", strerror(errno));
	wc = wait_wc(c->cq);
	check(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ,
	      "READ back: %s opcode %d", ibv_wc_status_str(wc.status),
	      wc.opcode);
	for (i = 0; i < NSLOT; i++) {
		slot_final(seed, round, i, fin);
		if (memcmp(c->buf + i * 8, fin, 8))
			bad++;
	}
	check(!bad, "round %u: %u of %d slots read back wrong", round, bad,
	      NSLOT);
	printf("client: round %u: %u ATOMIC WRITEs (%u signaled), %d slots "
	       "read back %s\n", round, n_aw, signaled, NSLOT,
	       bad ? "WRONG" : "exact");
}

/* Step 5: one ATOMIC WRITE that must fail with @want. */
static void client_negative(struct client *c, enum kind k)
{
	uint64_t addr = c->rep.addr + NEG_OFF;
	uint32_t rkey = c->rep.rkey;
	enum ibv_wc_status want = IBV_WC_REM_ACCESS_ERR;
	const uint8_t v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct ibv_wc wc;

	switch (k) {
	case K_MISALIGNED:
		addr += 4;
		want = IBV_WC_REM_INV_REQ_ERR;
		break;
	case K_RANGE:
		addr = c->rep.addr + REGION_LEN;
		break;
	case K_RKEY:
		rkey ^= 0x80;
		break;
	default:
		addr = c->rep.ro_addr;
		rkey = c->rep.ro_rkey;
		break;
	}
	ibv_wr_start(c->qpx);
#ifdef SROCE_WR_FLUSH
	if (k == K_FLUSH_DENIED) {
		flush_post(c, 42, rkey, addr, RO_LEN, IBV_FLUSH_RANGE);
	} else {
		aw_post(c, 42, IBV_SEND_SIGNALED, rkey, addr, v);
	}
#else
	aw_post(c, 42, IBV_SEND_SIGNALED, rkey, addr, v);
#endif
	if (ibv_wr_complete(c->qpx))
		die("ibv_wr_complete: %s", strerror(errno));
	const char *op = k == K_FLUSH_DENIED ? "FLUSH" : "ATOMIC WRITE";

	wc = wait_wc(c->cq);
	check(wc.status == want && wc.wr_id == 42, "%s %s: %s, expected %s",
	      kind_name[k], op, ibv_wc_status_str(wc.status),
	      ibv_wc_status_str(want));
	printf("client: %s %s: %s\n", kind_name[k], op,
	       ibv_wc_status_str(wc.status));
}

static int run_client(const char *addr, const char *port, unsigned int rounds,
		      bool negatives, bool flush)
{
	struct conn_req req = { .magic = MAGIC };
	struct client c = { 0 };
	struct rdma_cm_id *probe;
	struct addrinfo *ai;
	uint64_t caps;
	unsigned int r;
	int k, last;

	/* the local device, found through the route to the server */
	if (getaddrinfo(addr, port, NULL, &ai))
		die("getaddrinfo %s", addr);
	if (rdma_create_id(chan, &probe, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(probe, NULL, ai->ai_addr, TIMEOUT_MS))
		die("rdma_resolve_addr: %s", strerror(errno));
	freeaddrinfo(ai);
	cm_expect(RDMA_CM_EVENT_ADDR_RESOLVED, NULL);
	c.pd = ibv_alloc_pd(probe->verbs);
	c.cq = ibv_create_cq(probe->verbs, 512, NULL, NULL, 0);
	if (!c.pd || !c.cq || posix_memalign((void **)&c.buf, 4096, 4096))
		die("client resources");
	c.mr = ibv_reg_mr(c.pd, c.buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!c.mr)
		die("ibv_reg_mr");
	caps = check_caps(probe->verbs, c.pd);

	c.flush_qp = flush && (caps & CAP_FLUSH_GLOBAL);
	req.seed = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
	req.caps = caps;
	req.kind = K_DATA;
	req.last = !(caps & CAP_ATOMIC_WRITE);
	client_connect(&c, addr, port, &req);
	printf("server: device_cap_flags_ex %#" PRIx64 ": ATOMIC_WRITE %d\n",
	       (uint64_t)c.rep.caps, !!(c.rep.caps & CAP_ATOMIC_WRITE));
	if (!(caps & CAP_ATOMIC_WRITE) || !(c.rep.caps & CAP_ATOMIC_WRITE)) {
		/* the script checks each side's report (-e) */
		printf("client: ATOMIC WRITE not reported by %s: none sent\n",
		       !(caps & CAP_ATOMIC_WRITE) ? "this device" :
		       "the server's device");
		if (!req.last) {
			client_disconnect(&c);
			req.last = 1;
			client_connect(&c, addr, port, &req);
		}
		client_disconnect(&c);
		goto out;
	}
	for (r = 0; r < rounds; r++) {
		req.last = !negatives && r == rounds - 1;
		if (r) {
			req.round = r;
			client_connect(&c, addr, port, &req);
		}
		client_data(&c, req.seed, r);
		client_disconnect(&c);
	}
	last = c.flush ? K_FLUSH_DENIED : K_READONLY;
	for (k = K_MISALIGNED; negatives && k <= last; k++) {
		req.kind = k;
		req.last = k == last;
		client_connect(&c, addr, port, &req);
		client_negative(&c, k);
		client_disconnect(&c);
	}
out:
	ibv_dereg_mr(c.mr);
	ibv_destroy_cq(c.cq);
	ibv_dealloc_pd(c.pd);
	rdma_destroy_id(probe);
	return 0;
}

int main(int argc, char **argv)
{
	const char *server = NULL, *bind_addr = NULL, *port = "18600";
	unsigned int rounds = 3;
	bool serve = false, negatives = true, flush = false;
	int opt;

	while ((opt = getopt(argc, argv, "sb:c:p:e:r:Nf")) != -1) {
		switch (opt) {
		case 's':
			serve = true;
			break;
		case 'b':
			bind_addr = optarg;
			break;
		case 'c':
			server = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 'e':
			if (sscanf(optarg, "%d,%d,%d", &expect[0], &expect[1],
				   &expect[2]) != 3)
				die("-e AW,FG,FP");
			break;
		case 'r':
			rounds = strtoul(optarg, NULL, 0);
			break;
		case 'N':
			negatives = false;
			break;
		case 'f':
			if (!wr_flush_built)
				die("-f: built without ibv_wr_flush()");
			flush = true;
			break;
		default:
			die("usage: see the comment at the top");
		}
	}
	if (serve == !!server)
		die("one of -s and -c");
	setvbuf(stdout, NULL, _IOLBF, 0);
	chan = rdma_create_event_channel();
	if (!chan)
		die("rdma_create_event_channel");
	if (serve)
		run_server(bind_addr, port);
	else
		run_client(server, port, rounds, negatives, flush);
	rdma_destroy_event_channel(chan);
	printf("%s: %u checks, %u failed: %s\n", serve ? "server" : "client",
	       checks, failures, failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
