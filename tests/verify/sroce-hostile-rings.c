// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-hostile-rings DEV GID-INDEX SECONDS
 *
 * A process that rewrites its own mapped rings behind the provider's back,
 * as a hostile user may, while another process keeps checked traffic
 * going on the same device.
 *
 *   good   (a child) a loopback RC pair: RDMA WRITE and SEND/RECV of a
 *          pattern that changes every round, every byte checked, until the
 *          parent is done; its QPs must still be RTS at the end.
 *   back   the defect of the SQ producer moved backwards: with four SENDs
 *          fetched but not completed (the peer has no receive posted, RNR
 *          retries forever), the producer is set between the kernel's tail
 *          and what it fetched and the doorbell rung; the QP must go to the
 *          error state with IBV_EVENT_QP_FATAL (the old kernel spun ~2^32
 *          times with interrupts off).
 *   fuzz   rounds of fresh victim objects (an RC loopback pair on one CQ,
 *          with an SRQ): random and adversarial producer and consumer
 *          values and random slot contents (SGE counts, lengths, opcodes,
 *          keys) written into every ring this round created, each followed
 *          by raw doorbells, until SECONDS are spent. Each round's objects
 *          must be destroyed cleanly.
 *
 * The kernel's health is the harness's to judge (kernel log, kmemleak);
 * this program checks the states and the good process's data. Doorbells
 * are raw POST_SEND commands with no work requests, as the provider rings
 * them, because ibv_post_send would publish the provider's own producer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/ib_user_verbs.h>

#include "common.h"

#define GOOD_LEN	4096
#define RING_CTRL_CONSUMER 64	/* struct sroce_ring_ctrl: byte offsets */
#define RING_SLOTS	128

struct ring_map {
	uint8_t *addr;
	size_t len;
};

struct loop_pair {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp[2];
};

static const char *dev_name;
static int gidx;
static unsigned long ring_writes, doorbells;

static void make_pair(struct ibv_context *ctx, struct loop_pair *p,
		      bool with_srq)
{
	struct ibv_srq_init_attr sattr = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct qp_path path = { .dgid = query_gid(ctx, gidx), .sgid_index = gidx };
	int i;

	p->pd = ibv_alloc_pd(ctx);
	p->cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!p->pd || !p->cq)
		die("ibv_alloc_pd/ibv_create_cq");
	p->srq = with_srq ? ibv_create_srq(p->pd, &sattr) : NULL;
	if (with_srq && !p->srq)
		die("ibv_create_srq");
	for (i = 0; i < 2; i++)
		p->qp[i] = create_qp(p->pd, IBV_QPT_RC, p->cq, i ? p->srq : NULL,
				     16, 16, IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_LOCAL_WRITE);
	for (i = 0; i < 2; i++) {
		path.dqpn = p->qp[!i]->qp_num;
		connect_qp(p->qp[i], &path);
	}
}

/* Returns 0 when every object was destroyed. */
static int destroy_pair(struct loop_pair *p)
{
	int err = 0, i;

	for (i = 0; i < 2; i++)
		err |= ibv_destroy_qp(p->qp[i]);
	if (p->srq)
		err |= ibv_destroy_srq(p->srq);
	err |= ibv_destroy_cq(p->cq);
	err |= ibv_dealloc_pd(p->pd);
	return err;
}

static void raw_doorbell(struct ibv_qp *qp)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send core;
	} cmd = {
		.hdr = { .command = IB_USER_VERBS_CMD_POST_SEND,
			 .in_words = sizeof(cmd) / 4 },
		.core = { .qp_handle = qp->handle,
			  .wqe_size = sizeof(struct ib_uverbs_send_wr) },
	};
	struct ib_uverbs_post_send_resp resp;

	cmd.hdr.out_words = sizeof(resp) / 4;
	cmd.core.response = (uintptr_t)&resp;
	/* a QP in error may refuse: only the kernel's survival matters */
	if (write(qp->context->cmd_fd, &cmd, sizeof(cmd)) < 0 && errno == EBADF)
		die("doorbell");
	doorbells++;
}

/* The uverbs mappings of this process (rings), up to @max. */
static int ring_maps(struct ring_map *maps, int max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long start, end;
	char line[512];
	int n = 0;

	if (!f)
		die("/proc/self/maps");
	while (n < max && fgets(line, sizeof(line), f))
		if (strstr(line, "/dev/infiniband/uverbs") &&
		    sscanf(line, "%lx-%lx", &start, &end) == 2) {
			maps[n].addr = (uint8_t *)start;
			maps[n].len = end - start;
			n++;
		}
	fclose(f);
	return n;
}

static bool known(const struct ring_map *m, const struct ring_map *old, int n)
{
	while (n--)
		if (old[n].addr == m->addr)
			return true;
	return false;
}

static uint32_t *word(const struct ring_map *m, size_t off)
{
	return (uint32_t *)(m->addr + off);
}

/* ---- good: checked traffic in another process ------------------------ */

static int good_round(struct loop_pair *p, struct ibv_mr *src, struct ibv_mr *dst,
		      unsigned int round)
{
	uint8_t *s = src->addr, *d = dst->addr;
	struct ibv_sge sge = { .addr = (uintptr_t)s, .length = GOOD_LEN, .lkey = src->lkey };
	struct ibv_sge rsge = { .addr = (uintptr_t)d + GOOD_LEN, .length = GOOD_LEN,
				.lkey = dst->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &rsge, .num_sge = 1 }, *brw;
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = (uintptr_t)d, .rkey = dst->rkey } };
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	int i, bad_bytes = 0;

	for (i = 0; i < GOOD_LEN; i++)
		s[i] = (uint8_t)(round * 131 + i * 7);
	memset(d, 0, 2 * GOOD_LEN);
	if (ibv_post_recv(p->qp[1], &rwr, &brw) || ibv_post_send(p->qp[0], &wr, &bad))
		die("good: post");
	wr.opcode = IBV_WR_SEND;
	if (ibv_post_send(p->qp[0], &wr, &bad))
		die("good: post SEND");
	for (i = 0; i < 3; i++) {
		if (!poll_cq(p->cq, &wc, 10000))
			fatal("good: round %u: completion %d missing", round, i);
		if (wc.status != IBV_WC_SUCCESS)
			fatal("good: round %u: %s", round, ibv_wc_status_str(wc.status));
	}
	for (i = 0; i < GOOD_LEN; i++)
		bad_bytes += d[i] != s[i] || d[GOOD_LEN + i] != s[i];
	return bad_bytes;
}

static int good_main(int stop_fd)
{
	struct ibv_context *ctx = open_device(dev_name);
	struct pollfd pfd = { .fd = stop_fd, .events = POLLIN };
	struct loop_pair p;
	struct ibv_mr *src, *dst;
	unsigned int round = 0, corrupt = 0;

	make_pair(ctx, &p, false);
	src = ibv_reg_mr(p.pd, aligned_alloc(4096, GOOD_LEN), GOOD_LEN,
			 IBV_ACCESS_LOCAL_WRITE);
	dst = ibv_reg_mr(p.pd, aligned_alloc(4096, 2 * GOOD_LEN), 2 * GOOD_LEN,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!src || !dst)
		die("good: ibv_reg_mr");
	do {
		corrupt += good_round(&p, src, dst, round) != 0;
		round++;
	} while (poll(&pfd, 1, 0) == 0);
	CHECK(corrupt == 0, "good: %u of %u rounds had wrong bytes", corrupt, round);
	CHECK(round > 0, "good: no round completed");
	CHECK(qp_state(p.qp[0]) == IBV_QPS_RTS && qp_state(p.qp[1]) == IBV_QPS_RTS,
	      "good: QPs left RTS");
	printf("good: %u rounds of WRITE+SEND, %u bytes each, checked\n", round,
	       2 * GOOD_LEN);
	ibv_dereg_mr(src);
	ibv_dereg_mr(dst);
	CHECK(destroy_pair(&p) == 0, "good: destroy");
	ibv_close_device(ctx);
	return failures ? 1 : 0;
}

/* ---- back: the SQ producer moved behind what the kernel fetched ------ */

static bool fatal_event(struct ibv_context *ctx, struct ibv_qp *qp, int timeout_ms)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	bool seen = false;

	while (!seen && poll(&pfd, 1, timeout_ms) > 0) {
		if (ibv_get_async_event(ctx, &ev))
			die("ibv_get_async_event");
		seen = ev.event_type == IBV_EVENT_QP_FATAL && ev.element.qp == qp;
		ibv_ack_async_event(&ev);
	}
	return seen;
}

static void backwards_producer(struct ibv_context *ctx)
{
	struct ring_map before[64], after[64], *sq = NULL;
	uint32_t old[64];
	struct loop_pair p;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	enum ibv_qp_state state = IBV_QPS_RESET;
	struct ibv_mr *mr;
	uint32_t prod;
	bool seen;
	int n, i;

	make_pair(ctx, &p, false);
	mr = ibv_reg_mr(p.pd, calloc(1, 64), 64, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	sge = (struct ibv_sge){ .addr = (uintptr_t)mr->addr, .length = 64, .lkey = mr->lkey };
	n = ring_maps(before, 64);
	for (i = 0; i < n; i++)
		old[i] = *word(&before[i], 0);
	/* no receive at qp[1]: the SENDs wait on RNR, fetched but not done */
	for (i = 0; i < 4; i++)
		if (ibv_post_send(p.qp[0], &wr, &bad))
			die("ibv_post_send");
	if (ring_maps(after, 64) != n)
		fatal("back: the mappings changed");
	for (i = 0; i < n; i++)
		if (*word(&after[i], 0) - old[i] == 4)
			sq = &after[i];
	if (!sq)
		fatal("back: no ring's producer moved by the 4 posted WQEs");
	usleep(200000);	/* the kernel fetched them; RNR keeps them */
	prod = *word(sq, 0);
	CHECK(*word(sq, RING_CTRL_CONSUMER) == prod - 4,
	      "back: the kernel retired %u of 4 SENDs with no receive posted",
	      prod - *word(sq, RING_CTRL_CONSUMER));
	__atomic_store_n(word(sq, 0), prod - 2, __ATOMIC_RELEASE);
	ring_writes++;
	raw_doorbell(p.qp[0]);
	/* the requester runs from a work item: give it a moment */
	for (i = 0; i < 100 && (state = qp_state(p.qp[0])) != IBV_QPS_ERR; i++)
		usleep(20000);
	CHECK(state == IBV_QPS_ERR,
	      "back: producer moved behind the fetched WQEs: QP state %d, not ERR",
	      state);
	seen = fatal_event(ctx, p.qp[0], 2000);
	CHECK(seen, "back: no IBV_EVENT_QP_FATAL");
	printf("back: producer %u -> %u behind 4 fetched WQEs: QP state %d%s\n",
	       prod, prod - 2, state, seen ? ", QP_FATAL seen" : "");
	ibv_dereg_mr(mr);
	CHECK(destroy_pair(&p) == 0, "back: destroy");
}

/* ---- fuzz ------------------------------------------------------------ */

static uint32_t adversarial(uint32_t cur)
{
	static const uint32_t fixed[] = { 0, 1, 0x7fffffff, 0x80000000, 0xffffffff };

	switch (rand() % 8) {
	case 0: return fixed[rand() % 5];
	case 1: return cur - 1 - rand() % 64;		/* behind */
	case 2: return cur + 1 + rand() % 64;		/* a little ahead */
	case 3: return cur + 0x10000 + rand();		/* far ahead */
	case 4: return cur + 0x80000000u;		/* half the space away */
	case 5: return cur;
	default: return (uint32_t)rand() ^ ((uint32_t)rand() << 16);
	}
}

static void scribble(const struct ring_map *m)
{
	size_t off;
	uint32_t v;

	switch (rand() % 4) {
	case 0:
		*word(m, 0) = adversarial(*word(m, 0));
		break;
	case 1:
		*word(m, RING_CTRL_CONSUMER) = adversarial(*word(m, RING_CTRL_CONSUMER));
		break;
	default:
		/* a slot word: counts, lengths, opcodes, keys, addresses */
		off = RING_SLOTS + (size_t)rand() % (m->len - RING_SLOTS);
		off &= ~(size_t)3;
		v = rand() % 3 ? adversarial(0) : (uint32_t)rand() % 64;
		*word(m, off) = v;
		break;
	}
	ring_writes++;
}

static void fuzz(struct ibv_context *ctx, long until_ms)
{
	struct ring_map old[64], now[64], mine[64];
	unsigned int rounds = 0, in_error = 0, destroy_failed = 0;
	struct loop_pair p;
	int n_old, n, nm, i, k;

	while (now_ms() < until_ms) {
		n_old = ring_maps(old, 64);
		make_pair(ctx, &p, true);
		n = ring_maps(now, 64);
		for (i = nm = 0; i < n; i++)
			if (!known(&now[i], old, n_old))
				mine[nm++] = now[i];
		if (nm == 0)
			fatal("fuzz: the new objects mapped no ring");
		for (k = 0; k < 200; k++) {
			scribble(&mine[rand() % nm]);
			if (k % 4 == 3)
				raw_doorbell(p.qp[rand() % 2]);
		}
		raw_doorbell(p.qp[0]);
		raw_doorbell(p.qp[1]);
		in_error += (qp_state(p.qp[0]) == IBV_QPS_ERR) +
			    (qp_state(p.qp[1]) == IBV_QPS_ERR);
		destroy_failed += destroy_pair(&p) != 0;
		rounds++;
	}
	CHECK(rounds > 0, "fuzz: no round ran");
	CHECK(destroy_failed == 0, "fuzz: %u rounds failed to destroy their objects",
	      destroy_failed);
	printf("fuzz: %u rounds, %u victim QPs ended in ERR\n", rounds, in_error);
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx;
	int stop[2], status;
	long until;
	pid_t good;

	if (argc != 4)
		fatal("usage: sroce-hostile-rings DEV GID-INDEX SECONDS");
	dev_name = argv[1];
	gidx = atoi(argv[2]);
	until = now_ms() + 1000L * atoi(argv[3]);
	srand(0x5eed1e55);
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (pipe(stop))
		die("pipe");
	good = fork();
	if (good < 0)
		die("fork");
	if (!good) {
		close(stop[1]);
		exit(good_main(stop[0]));
	}
	close(stop[0]);

	ctx = open_device(dev_name);
	backwards_producer(ctx);
	fuzz(ctx, until);
	ibv_close_device(ctx);

	close(stop[1]);	/* the good process ends its round and reports */
	if (waitpid(good, &status, 0) < 0)
		die("waitpid");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the good process failed (status 0x%x)", status);
	printf("hostile-rings: %lu ring words written, %lu doorbells; %u checks, %u failed\n",
	       ring_writes, doorbells, checks, failures);
	return failures ? 1 : 0;
}
