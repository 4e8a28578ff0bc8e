// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-doorbell -d DEV -g GID_INDEX -t SECONDS [-q rc|uc]
 *
 * Posts racing the end of the kernel's drain of a send queue (issue 30,
 * item 5). While sroce's requester drains an SQ it reads the producer
 * index again before it stops, and the provider skips the doorbell of a
 * post that sees it draining (SROCE_RING_FLAG_SQ_DRAINING, sroce-abi.h).
 * A post that skipped it and that the kernel did not see would wait for
 * ever: a lost wake-up.
 *
 * Two QPs (RC, or UC with -q uc) of one device connected to each other
 * (through lo). Each round, the drainer thread (CPU 0) posts BATCH WRITEs
 * in one list, one doorbell, and its system call sends them; the poster
 * thread (CPU 1) posts one WRITE at a random moment of that drain
 * (uniform over 1.5 times the running average of that system call), then
 * neither posts until the round is complete. On RC the last WRITE of the
 * batch and the poster's carry immediate data, so the other QP's
 * receives say that each arrived, and every WRITE carries a pattern of
 * its round, checked byte for byte once it has arrived. But on RC every
 * ACK runs the requester again, which hides most lost wake-ups; UC has no
 * ACKs, so there nothing but the kernel's second look at the producer
 * index picks up a WRITE posted as the drain ends (UC's WRITEs are
 * checked for being sent: see main).
 *
 * Expected: every round completes within ROUND_TIMEOUT_MS, every
 * completion is IBV_WC_SUCCESS, every byte arrives; the device's
 * sq_user_wqes counter grew by exactly the WQEs posted and sq_doorbells
 * by at most two per round; and some posts skipped the doorbell (else
 * nothing was raced). Prints the rounds, doorbells per 1,000 WQEs and
 * "doorbell: N checks, F failures: PASS|FAIL"; exit 0 only on PASS.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

/*
 * The drainer's WRITEs per round, each of four packets at path MTU 1024:
 * 124 packets, not a multiple of the requester's 16 per batch, so that
 * the drain does not end on a pass that only looks for more.
 */
#define BATCH		31
#define BATCH_LEN	4096
#define SINGLE_MAX	4096	/* the poster's WRITE: 1 .. SINGLE_MAX bytes */
#define RBUF_LEN	(BATCH * BATCH_LEN + SINGLE_MAX)
#define ROUND_TIMEOUT_MS 10000
#define DRAINER_CPU	0
#define POSTER_CPU	1

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *sqp, *rqp;
static unsigned char *sbuf, *rbuf;
static struct ibv_mr *smr, *rmr;
static const char *dev_name;
/* RC: the signaled WRITEs carry immediate data; UC: none (see main) */
static bool with_imm;

/* round the poster is to post in (0: none yet, -1: stop) */
static atomic_long go;
/* the drainer's doorbell is on its way: the poster's delay starts */
static atomic_long rung;
/* the poster's WRITE of this round is posted */
static atomic_long posted;
/* the drainer's system call's running average in ns: the poster's delay */
static atomic_long drain_ns = 200000;

static unsigned long rounds, bad_bytes;

static unsigned char pattern(long round, uint32_t i)
{
	return (unsigned char)(round * 131 + i * 7 + (i >> 9));
}

static long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
}

/* The poster's WRITE of @round: its length and where it lands. */
static uint32_t single_len(long round)
{
	return 1 + (uint32_t)(round * 2654435761UL % SINGLE_MAX);
}

/* A WRITE; @signaled: the last of its kind, with immediate data on RC. */
static void post_write(uint64_t wr_id, uint32_t off, uint32_t len,
		       bool signaled, struct ibv_send_wr *next,
		       struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	*sge = (struct ibv_sge){ .addr = (uintptr_t)(sbuf + off),
				 .length = len, .lkey = smr->lkey };
	*wr = (struct ibv_send_wr){
		.wr_id = wr_id, .next = next, .sg_list = sge, .num_sge = 1,
		.opcode = signaled && with_imm ? IBV_WR_RDMA_WRITE_WITH_IMM :
						 IBV_WR_RDMA_WRITE,
		.imm_data = htonl((uint32_t)wr_id),
		.send_flags = signaled ? IBV_SEND_SIGNALED : 0,
		.wr.rdma = { .remote_addr = (uintptr_t)(rbuf + off),
			     .rkey = rmr->rkey },
	};
}

static void *poster(void *arg)
{
	long round = 0, delay, start;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	uint32_t len, i;

	(void)arg;
	pin(POSTER_CPU);
	srand48(1);
	for (;;) {
		while (atomic_load(&go) == round)
			sched_yield();
		round = atomic_load(&go);
		if (round < 0)
			return NULL;
		len = single_len(round);
		for (i = 0; i < len; i++)
			sbuf[BATCH * BATCH_LEN + i] =
				pattern(round, BATCH * BATCH_LEN + i);
		while (atomic_load(&rung) != round)
			sched_yield();
		delay = (long)(drand48() * 1.5 * atomic_load(&drain_ns));
		start = now_ns();
		while (now_ns() - start < delay)
			;
		post_write(round << 1 | 1, BATCH * BATCH_LEN, len, true, NULL,
			   &wr, &sge);
		if (ibv_post_send(sqp, &wr, &bad))
			die("ibv_post_send (poster)");
		atomic_store(&posted, round);
	}
}

static void fill_batch(long round)
{
	uint32_t i;

	for (i = 0; i < BATCH * BATCH_LEN; i++)
		sbuf[i] = pattern(round, i);
}

/* Each round's completions, by bit. */
enum {
	BATCH_SENT = 1, SINGLE_SENT = 2, BATCH_ARRIVED = 4, SINGLE_ARRIVED = 8,
	ROUND_DONE = 15,
};

static unsigned int completion_bit(const struct ibv_wc *wc, long round)
{
	bool recv = wc->qp_num == rqp->qp_num;
	uint64_t id = recv ? ntohl(wc->imm_data) : wc->wr_id;

	if (wc->status != IBV_WC_SUCCESS || id >> 1 != (uint64_t)round ||
	    (recv && wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM)) {
		fprintf(stderr, "FAIL: round %ld: %s completion %#llx: %s\n",
			round, recv ? "receive" : "send",
			(unsigned long long)id, ibv_wc_status_str(wc->status));
		return 0;
	}
	return (recv ? BATCH_ARRIVED : BATCH_SENT) << (id & 1);
}

/* Both WRITEs of @round sent and arrived (a bit of each, or 0: late). */
static unsigned int round_complete(long round)
{
	long deadline = now_ms() + ROUND_TIMEOUT_MS;
	unsigned int done = 0, bit;
	struct ibv_wc wc;
	int n;

	while (done != (with_imm ? ROUND_DONE : BATCH_SENT | SINGLE_SENT)) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			die("ibv_poll_cq");
		if (n == 0) {
			if (now_ms() > deadline)
				return done;
			/* the kernel's softirqs and workers run on these CPUs */
			sched_yield();
			continue;
		}
		bit = completion_bit(&wc, round);
		if (!bit || (done & bit))
			fatal("round %ld: completions out of order or in error",
			      round);
		done |= bit;
	}
	return done;
}

static void check_round(long round)
{
	uint32_t i, end = BATCH * BATCH_LEN + single_len(round);

	for (i = 0; i < end; i++)
		if (rbuf[i] != pattern(round, i)) {
			bad_bytes++;
			fprintf(stderr, "FAIL: round %ld: byte %u is %#x, not %#x\n",
				round, i, rbuf[i], pattern(round, i));
			return;
		}
}

static void drain_round(long round)
{
	struct ibv_send_wr wr[BATCH], *bad;
	struct ibv_sge sge[BATCH];
	unsigned int done;
	long start;
	int i;

	fill_batch(round);
	for (i = 0; i < BATCH; i++)
		post_write(round << 1, i * BATCH_LEN, BATCH_LEN, i == BATCH - 1,
			   i + 1 < BATCH ? &wr[i + 1] : NULL, &wr[i], &sge[i]);
	if (with_imm) {
		post_recv_buf(rqp, rbuf, 0, rmr->lkey);
		post_recv_buf(rqp, rbuf, 0, rmr->lkey);
	}
	atomic_store(&go, round);
	start = now_ns();
	atomic_store(&rung, round);
	if (ibv_post_send(sqp, wr, &bad))
		die("ibv_post_send (drainer)");
	atomic_store(&drain_ns, (atomic_load(&drain_ns) * 7 +
				 now_ns() - start) / 8);
	while (atomic_load(&posted) != round)
		sched_yield();
	done = round_complete(round);
	if (!(done & SINGLE_SENT))
		fatal("round %ld: the poster's WRITE was never sent (%d s): a post that skipped its doorbell was not seen",
		      round, ROUND_TIMEOUT_MS / 1000);
	if (!(done & BATCH_SENT) || (with_imm && done != ROUND_DONE))
		fatal("round %ld: completions %#x of %#x in %d s", round, done,
		      ROUND_DONE, ROUND_TIMEOUT_MS / 1000);
	if (with_imm)
		check_round(round);
	rounds++;
}

int main(int argc, char **argv)
{
	long long wqes0, bells0, wqes, bells, resent0, resent;
	enum ibv_qp_type type = IBV_QPT_RC;
	int opt, gidx = -1, seconds = 0;
	unsigned long posts;
	pthread_t thread;
	long end, round;

	while ((opt = getopt(argc, argv, "d:g:t:q:")) != -1) {
		if (opt == 'd')
			dev_name = optarg;
		else if (opt == 'g')
			gidx = atoi(optarg);
		else if (opt == 't')
			seconds = atoi(optarg);
		else if (opt == 'q' && !strcmp(optarg, "uc"))
			type = IBV_QPT_UC;
		else if (opt != 'q' || strcmp(optarg, "rc"))
			break;
	}
	if (!dev_name || gidx < 0 || seconds <= 0 || optind < argc)
		fatal("usage: sroce-doorbell -d DEV -g GID_INDEX -t SECONDS [-q rc|uc]");
	ctx = open_device(dev_name);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	if (!pd || !cq)
		die("setup");
	sbuf = map_anon(RBUF_LEN);
	rbuf = map_anon(RBUF_LEN);
	smr = ibv_reg_mr(pd, sbuf, RBUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	rmr = ibv_reg_mr(pd, rbuf, RBUF_LEN,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!smr || !rmr)
		die("ibv_reg_mr");
	/*
	 * UC loses a message whenever a packet is missing, and on lo the
	 * packets of one QP sent from two CPUs can overtake each other:
	 * there only sending is checked, the bytes and arrival on RC.
	 */
	with_imm = type == IBV_QPT_RC;
	sqp = create_qp(pd, type, cq, NULL, 2 * BATCH, 1, 0);
	rqp = create_qp(pd, type, cq, NULL, 1, 2, IBV_ACCESS_REMOTE_WRITE);
	connect_loopback(ctx, sqp, rqp, gidx);

	wqes0 = port_counter(dev_name, "sq_user_wqes");
	bells0 = port_counter(dev_name, "sq_doorbells");
	resent0 = port_counter(dev_name, "req_retransmits");
	if (wqes0 < 0 || bells0 < 0)
		fatal("%s has no sq_user_wqes or sq_doorbells counter", dev_name);
	pin(DRAINER_CPU);
	if (pthread_create(&thread, NULL, poster, NULL))
		fatal("pthread_create");
	end = now_ms() + seconds * 1000L;
	for (round = 1; now_ms() < end; round++)
		drain_round(round);
	atomic_store(&go, -1);
	pthread_join(thread, NULL);
	wqes = port_counter(dev_name, "sq_user_wqes") - wqes0;
	bells = port_counter(dev_name, "sq_doorbells") - bells0;
	resent = port_counter(dev_name, "req_retransmits") - resent0;

	posts = rounds * (BATCH + 1);
	printf("doorbell: %s: %lu rounds, %lu posts (%lu calls of ibv_post_send), %lld WQEs and %lld doorbells counted: %lld doorbells per 1,000 WQEs; %lld of %lu ibv_post_send calls skipped the doorbell; a drain %ld us on average; %lld packets resent\n",
	       type == IBV_QPT_UC ? "UC" : "RC", rounds, posts, 2 * rounds, wqes, bells,
	       wqes ? bells * 1000 / wqes : 0, 2 * (long long)rounds - bells,
	       2 * rounds, atomic_load(&drain_ns) / 1000, resent);
	CHECK(rounds >= 10, "only %lu rounds", rounds);
	CHECK(!bad_bytes, "%lu rounds with wrong bytes", bad_bytes);
	CHECK(wqes == (long long)posts,
	      "sq_user_wqes grew by %lld, %lu WQEs were posted", wqes, posts);
	/* the drainer's post finds the kernel idle but for a late ACK's run */
	CHECK(bells >= (long long)rounds / 2 && bells <= 2 * (long long)rounds,
	      "sq_doorbells grew by %lld in %lu rounds of two posts, the first nearly always rung",
	      bells, rounds);
	CHECK(bells < 2 * (long long)rounds,
	      "no post skipped its doorbell: nothing raced the drain");

	ibv_destroy_qp(sqp);
	ibv_destroy_qp(rqp);
	if (ibv_dereg_mr(smr) || ibv_dereg_mr(rmr))
		die("ibv_dereg_mr");
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	printf("doorbell: %u checks, %u failures: %s\n", checks, failures,
	       failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
