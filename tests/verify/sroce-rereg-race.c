// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-rereg-race -d DEV -g GID_INDEX -t SECONDS
 *
 * ibv_rereg_mr racing the requester on the MR it sends from (issue 29,
 * items 1 and 12). Two RC QPs of one device connected to each other
 * (through lo). The main thread keeps DEPTH SENDs in flight, each of NSGE
 * SGEs spread over one send MR (packets of a path MTU, every one at least
 * the requester's zero-copy threshold and spanning two SGEs), each
 * message a pattern of its own sequence number, and checks every byte of
 * every message the other QP receives. A second thread toggles
 * IBV_ACCESS_ON_DEMAND on the send MR with ibv_rereg_mr(CHANGE_ACCESS)
 * until SECONDS have passed, prefetching the ODP MR's pages after each
 * switch to it (so a SEND finds them mapped).
 *
 * Expected: the key stays the same, every rereg and prefetch succeeds,
 * every completion is IBV_WC_SUCCESS and every message arrives intact and
 * in order. A completion in error is counted by status (local protection
 * errors apart: the key is valid throughout) and the pair replaced, so
 * that one run counts them all. Kernels before the fix sized a packet
 * for zero copy from the user MR and filled it from the ODP MR that took
 * its key (skb_over_panic), or failed a SEND whose lookup met the old MR
 * losing its last reference (IBV_WC_LOC_PROT_ERR).
 *
 * Prints "rereg-race: N checks, F failures: PASS|FAIL"; exit 0 only on
 * PASS.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define NSGE		4
#define SGE_LEN		3001	/* odd: pieces start anywhere in a page */
#define SGE_GAP		517	/* between the SGEs of one message */
#define MSG_LEN		(NSGE * SGE_LEN)
#define SLOT_LEN	(NSGE * (SGE_LEN + SGE_GAP))
#define DEPTH		8	/* SENDs in flight; twice as many RECVs */
#define RECVS		(2 * DEPTH)
#define TIMEOUT_MS	30000

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *scq, *rcq;
static struct ibv_qp *sqp, *rqp;
static int gidx;

static unsigned char *sbuf, *rbuf;
static struct ibv_mr *smr, *rmr;
static uint32_t skey;		/* smr's key as registered */

static atomic_bool stop;
/* the toggler's counts, read by main once it is joined */
static unsigned long reregs, to_odp, rereg_errors, prefetch_errors,
		     key_changes;

/* completions in error, by status, and what the receiver found */
static unsigned long errors[IBV_WC_TM_RNDV_INCOMPLETE + 1];
static unsigned long sent, received, bad_msgs, replaced;
static uint32_t expect;		/* the sequence number of the next receive */

static unsigned char pattern(uint32_t seq, uint32_t i)
{
	return (unsigned char)(seq * 29 + i * 7 + (i >> 8));
}

static unsigned char *sge_addr(uint32_t slot, int j)
{
	return sbuf + slot * SLOT_LEN + j * (SGE_LEN + SGE_GAP) + SGE_GAP / 2;
}

/* Post the receive of @slot (its wr_id), unless its QP is gone. */
static void post_recv_slot(uint32_t slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(rbuf + slot * MSG_LEN),
			       .length = MSG_LEN, .lkey = rmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	if (rqp && ibv_post_recv(rqp, &wr, &bad))
		die("ibv_post_recv");
}

/* A connected pair with every receive posted. */
static void pair_new(void)
{
	uint32_t i;

	sqp = create_qp_sge(pd, IBV_QPT_RC, scq, NULL, DEPTH, RECVS, NSGE, 0);
	rqp = create_qp_sge(pd, IBV_QPT_RC, rcq, NULL, DEPTH, RECVS, NSGE, 0);
	connect_loopback(ctx, sqp, rqp, gidx);
	for (i = 0; i < RECVS; i++)
		post_recv_slot(i);
}

static void post_send_msg(uint32_t seq)
{
	uint32_t slot = seq % DEPTH, i;
	struct ibv_sge sge[NSGE];
	struct ibv_send_wr wr = { .wr_id = seq, .sg_list = sge,
				  .num_sge = NSGE, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	int j;

	for (j = 0; j < NSGE; j++) {
		unsigned char *p = sge_addr(slot, j);

		for (i = 0; i < SGE_LEN; i++)
			p[i] = pattern(seq, j * SGE_LEN + i);
		sge[j] = (struct ibv_sge){ .addr = (uintptr_t)p,
					   .length = SGE_LEN, .lkey = skey };
	}
	if (ibv_post_send(sqp, &wr, &bad))
		die("ibv_post_send");
}

static bool msg_ok(const unsigned char *p, uint32_t seq)
{
	uint32_t i;

	for (i = 0; i < MSG_LEN; i++)
		if (p[i] != pattern(seq, i))
			return false;
	return true;
}

static void count_error(const struct ibv_wc *wc, const char *side)
{
	if (wc->status < sizeof(errors) / sizeof(errors[0]))
		errors[wc->status]++;
	if (wc->status != IBV_WC_WR_FLUSH_ERR)
		fprintf(stderr, "%s completion %llu: %s\n", side,
			(unsigned long long)wc->wr_id,
			ibv_wc_status_str(wc->status));
}

/*
 * Toggle ON_DEMAND on the send MR until told to stop; prefetch the ODP
 * MR's pages (the whole MR) after each switch to it.
 */
static void *toggler(void *arg)
{
	int access = IBV_ACCESS_LOCAL_WRITE;
	struct ibv_sge all = { .addr = (uintptr_t)sbuf,
			       .length = DEPTH * SLOT_LEN, .lkey = skey };

	(void)arg;
	while (!atomic_load(&stop)) {
		access ^= IBV_ACCESS_ON_DEMAND;
		if (ibv_rereg_mr(smr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				 access)) {
			rereg_errors++;
			access ^= IBV_ACCESS_ON_DEMAND;
			continue;
		}
		reregs++;
		key_changes += smr->lkey != skey || smr->rkey != skey;
		if (!(access & IBV_ACCESS_ON_DEMAND))
			continue;
		to_odp++;
		if (ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
				  IBV_ADVISE_MR_FLAG_FLUSH, &all, 1))
			prefetch_errors++;
	}
	return NULL;
}

/* Receives completed so far, each checked: false if one failed. */
static bool poll_recvs(void)
{
	struct ibv_wc wc;
	bool ok = true;

	while (ibv_poll_cq(rcq, 1, &wc) > 0) {
		uint32_t slot = wc.wr_id;

		if (wc.status != IBV_WC_SUCCESS) {
			count_error(&wc, "recv");
			ok = false;
			continue;
		}
		received++;
		if (wc.byte_len != MSG_LEN ||
		    !msg_ok(rbuf + slot * MSG_LEN, expect)) {
			if (bad_msgs++ < 5)
				fprintf(stderr, "message %u: %u bytes, data %s\n",
					expect, wc.byte_len,
					wc.byte_len == MSG_LEN ?
					"wrong" : "not checked");
		}
		expect++;
		post_recv_slot(slot);
	}
	return ok;
}

/*
 * After an error: both QPs go (the rest of their work is flushed, not
 * sent); what the receiver completed before is still checked.
 */
static void pair_replace(uint32_t next)
{
	struct ibv_wc wc;

	ibv_destroy_qp(sqp);
	ibv_destroy_qp(rqp);
	while (ibv_poll_cq(scq, 1, &wc) > 0)
		;
	rqp = NULL;
	poll_recvs();
	replaced++;
	expect = next;
	pair_new();
}

/*
 * SENDs until @end: DEPTH in flight, each receive checked in order. A
 * completion in error is counted and the pair replaced.
 */
static void run(long end)
{
	uint32_t next = 0, done = 0;
	long idle_since = now_ms();
	struct ibv_wc wc;
	bool broken;

	while (now_ms() < end || done != next) {
		broken = false;
		while (now_ms() < end && next - done < DEPTH)
			post_send_msg(next++);
		while (ibv_poll_cq(scq, 1, &wc) > 0) {
			idle_since = now_ms();
			done++;
			if (wc.status == IBV_WC_SUCCESS) {
				sent++;
				continue;
			}
			count_error(&wc, "send");
			broken = true;
		}
		broken |= !poll_recvs();
		if (broken) {
			pair_replace(next);
			done = next;
		}
		if (now_ms() - idle_since > TIMEOUT_MS)
			fatal("no send completion in %d ms (%u of %u done)",
			      TIMEOUT_MS, done, next);
	}
	/* the receives of the last SENDs */
	idle_since = now_ms();
	while (poll_recvs() && received < sent &&
	       now_ms() - idle_since < TIMEOUT_MS)
		;
}

int main(int argc, char **argv)
{
	unsigned long errs = 0, prot;
	pthread_t thread;
	int opt, seconds = 0;
	size_t i;

	while ((opt = getopt(argc, argv, "d:g:t:")) != -1) {
		if (opt == 'd')
			ctx = open_device(optarg);
		else if (opt == 'g')
			gidx = atoi(optarg);
		else if (opt == 't')
			seconds = atoi(optarg);
		else
			break;
	}
	if (!ctx || seconds <= 0)
		fatal("usage: sroce-rereg-race -d DEV -g GID_INDEX -t SECONDS");
	pd = ibv_alloc_pd(ctx);
	scq = ibv_create_cq(ctx, 2 * DEPTH, NULL, NULL, 0);
	rcq = ibv_create_cq(ctx, 2 * RECVS, NULL, NULL, 0);
	if (!pd || !scq || !rcq)
		die("setup");
	sbuf = map_anon(DEPTH * SLOT_LEN);
	rbuf = map_anon(RECVS * MSG_LEN);
	smr = ibv_reg_mr(pd, sbuf, DEPTH * SLOT_LEN, IBV_ACCESS_LOCAL_WRITE);
	rmr = ibv_reg_mr(pd, rbuf, RECVS * MSG_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!smr || !rmr)
		die("ibv_reg_mr");
	skey = smr->lkey;
	pair_new();

	if (pthread_create(&thread, NULL, toggler, NULL))
		fatal("pthread_create");
	run(now_ms() + seconds * 1000L);
	atomic_store(&stop, true);
	pthread_join(thread, NULL);

	for (i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		if (i != IBV_WC_WR_FLUSH_ERR)
			errs += errors[i];
	prot = errors[IBV_WC_LOC_PROT_ERR];
	printf("rereg-race: %lu SENDs completed, %lu received, %lu reregs (%lu to ODP), %lu local protection errors, %lu other errors, %lu flushed, %lu bad messages, %lu pairs replaced\n",
	       sent, received, reregs, to_odp, prot, errs - prot,
	       errors[IBV_WC_WR_FLUSH_ERR], bad_msgs, replaced);
	CHECK(reregs >= 10 && to_odp, "only %lu reregs", reregs);
	CHECK(!rereg_errors, "%lu ibv_rereg_mr calls failed", rereg_errors);
	CHECK(!prefetch_errors, "%lu prefetches failed", prefetch_errors);
	CHECK(!key_changes, "the key changed %lu times", key_changes);
	CHECK(sent >= 10, "only %lu SENDs completed", sent);
	CHECK(!prot, "%lu SENDs failed with a local protection error", prot);
	CHECK(errs == prot, "%lu completions in error", errs - prot);
	CHECK(!bad_msgs, "%lu messages arrived wrong", bad_msgs);
	/* an error may flush SENDs the receiver got whole */
	CHECK(replaced ? received >= sent : received == sent,
	      "%lu SENDs completed, %lu received", sent, received);

	ibv_destroy_qp(sqp);
	ibv_destroy_qp(rqp);
	if (ibv_dereg_mr(smr) || ibv_dereg_mr(rmr))
		die("ibv_dereg_mr");
	ibv_destroy_cq(scq);
	ibv_destroy_cq(rcq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	printf("rereg-race: %u checks, %u failures: %s\n", checks, failures,
	       failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
