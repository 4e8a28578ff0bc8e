// SPDX-License-Identifier: GPL-2.0
/*
 * An address handle serves the QPs of its own PD only.
 *
 * sroce-ahpd -d DEV -g GIDX
 *
 * AH numbers are per device and a process writes its send WQEs into its
 * own mmapped SQ ring, so any number can appear in a UD WQE. Process A
 * (the parent) creates a UD QP (the victim) and an AH to its own GID and
 * hands the AH's number and the victim's QPN to process B (a child with
 * its own device context and PD) through a pipe. B then:
 *  1. sends to itself through its own AH: must complete with success and
 *     arrive with the right data;
 *  2. posts a UD send naming A's AH number (through a forged ibv_ah whose
 *     provider object carries that number, which the provider copies into
 *     the WQE unchecked) to the victim: must complete with
 *     IBV_WC_LOC_QP_OP_ERR, exactly as a number that exists nowhere, and
 *     the device must transmit nothing (port counter tx_packets);
 *  3. sends to itself again, from a new QP, through its own AH: works.
 * A then checks that the victim received nothing. The last line says
 * PASS or FAIL with the number of checks; exit status 0, 1 (a check
 * failed) or 2 (setup failed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define QKEY 0x11111111u
#define MSG_LEN 64
#define GRH_LEN 40
#define NRECV 4

/* The provider's AH object (userspace/src/provider.h, struct Ah). */
struct provider_ah {
	struct ibv_ah ah;
	uint32_t ah_num;
};

/* What A tells B. */
struct handoff {
	uint32_t ah_num;
	uint32_t victim_qpn;
};

struct endpoint {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;	/* send completions */
	struct ibv_cq *rcq;	/* receive completions */
	struct ibv_mr *mr;
	char *buf;		/* NRECV receive slots, then the send buffer */
	struct ibv_ah *ah;	/* to this host's own GID */
};

static const char *dev_name;
static int gidx = -1;

static void endpoint_open(struct endpoint *e)
{
	union ibv_gid gid;
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	size_t len = (NRECV + 1) * (GRH_LEN + MSG_LEN);

	e->ctx = open_device(dev_name);
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	e->rcq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	e->buf = calloc(1, len);
	if (!e->pd || !e->cq || !e->rcq || !e->buf)
		die("pd/cq/buffer");
	e->mr = ibv_reg_mr(e->pd, e->buf, len, IBV_ACCESS_LOCAL_WRITE);
	if (!e->mr)
		die("ibv_reg_mr");
	gid = query_gid(e->ctx, gidx);
	aa.grh.dgid = gid;
	aa.grh.sgid_index = gidx;
	aa.grh.hop_limit = 64;
	e->ah = ibv_create_ah(e->pd, &aa);
	if (!e->ah)
		die("ibv_create_ah");
}

/* A UD QP in RTS with NRECV receives posted. */
static struct ibv_qp *ud_qp(struct endpoint *e)
{
	struct ibv_qp_init_attr init = {
		.send_cq = e->cq, .recv_cq = e->rcq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = NRECV,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qkey = QKEY };
	struct ibv_qp *qp = ibv_create_qp(e->pd, &init);
	int i;

	if (!qp)
		die("ibv_create_qp");
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		die("modify INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		die("modify RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("modify RTS");
	for (i = 0; i < NRECV; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)e->buf + i * (GRH_LEN + MSG_LEN),
			.length = GRH_LEN + MSG_LEN, .lkey = e->mr->lkey,
		};
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		if (ibv_post_recv(qp, &wr, &bad))
			die("ibv_post_recv");
	}
	return qp;
}

static uint64_t tx_packets(void)
{
	long long v = port_counter(dev_name, "tx_packets");

	if (v < 0)
		fatal("%s has no tx_packets counter", dev_name);
	return v;
}

/* Post one UD send of MSG_LEN bytes of @tag; the send completion. */
static struct ibv_wc ud_send(struct endpoint *e, struct ibv_qp *qp,
			     struct ibv_ah *ah, uint32_t dqpn, int tag)
{
	char *msg = e->buf + NRECV * (GRH_LEN + MSG_LEN);
	struct ibv_sge sge = { .addr = (uintptr_t)msg, .length = MSG_LEN,
			       .lkey = e->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1000 + tag, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		.wr.ud = { .ah = ah, .remote_qpn = dqpn, .remote_qkey = QKEY },
	}, *bad;
	struct ibv_wc wc = { .status = IBV_WC_GENERAL_ERR };

	memset(msg, tag, MSG_LEN);
	if (ibv_post_send(qp, &wr, &bad))
		die("ibv_post_send");
	CHECK(poll_cq(e->cq, &wc, 5000) && wc.wr_id == wr.wr_id,
	      "send %d: no send completion", tag);
	return wc;
}

/* B: a send to itself through its own AH arrives intact. */
static void self_send(struct endpoint *e, int tag)
{
	struct ibv_qp *qp = ud_qp(e);
	struct ibv_wc wc = ud_send(e, qp, e->ah, qp->qp_num, tag);
	int got_recv, i;

	CHECK(wc.status == IBV_WC_SUCCESS, "own AH send %d: status %s", tag,
	      ibv_wc_status_str(wc.status));
	/* skip what a QP in error flushed */
	while ((got_recv = poll_cq(e->rcq, &wc, 5000)) &&
	       wc.qp_num != qp->qp_num)
		;
	CHECK(got_recv && wc.status == IBV_WC_SUCCESS && wc.byte_len ==
	      GRH_LEN + MSG_LEN && wc.src_qp == qp->qp_num,
	      "own AH send %d: not received intact", tag);
	if (got_recv) {
		const char *p = e->buf + wc.wr_id * (GRH_LEN + MSG_LEN) +
				GRH_LEN;

		for (i = 0; i < MSG_LEN && p[i] == tag; i++)
			;
		CHECK(i == MSG_LEN, "own AH send %d: byte %d differs", tag, i);
	}
	if (ibv_destroy_qp(qp))
		die("ibv_destroy_qp");
}

static int process_b(int in, int out)
{
	struct endpoint e = {};
	struct handoff h;
	struct provider_ah forged = {};
	struct ibv_qp *qp;
	struct ibv_wc wc;
	uint64_t tx0, tx1;
	char done = 1;

	if (read(in, &h, sizeof(h)) != sizeof(h))
		fatal("no handoff from A");
	endpoint_open(&e);
	CHECK(((struct provider_ah *)e.ah)->ah_num != h.ah_num,
	      "A and B got the same AH number %u", h.ah_num);
	self_send(&e, 1);

	qp = ud_qp(&e);
	forged.ah = *e.ah;
	forged.ah_num = h.ah_num;
	tx0 = tx_packets();
	wc = ud_send(&e, qp, &forged.ah, h.victim_qpn, 2);
	CHECK(wc.status == IBV_WC_LOC_QP_OP_ERR,
	      "send naming A's AH %u: status %s, not local QP operation error",
	      h.ah_num, ibv_wc_status_str(wc.status));
	usleep(200000);
	tx1 = tx_packets();
	CHECK(tx1 == tx0, "send naming A's AH: %" PRIu64 " packets sent",
	      tx1 - tx0);
	printf("B: send naming A's AH %u to QP %u: %s, %" PRIu64
	       " packets sent\n", h.ah_num, h.victim_qpn,
	       ibv_wc_status_str(wc.status), tx1 - tx0);
	if (ibv_destroy_qp(qp))
		die("ibv_destroy_qp");

	self_send(&e, 3);
	printf("B: own AH %u before and after: %s\n",
	       ((struct provider_ah *)e.ah)->ah_num,
	       failures ? "see FAIL lines" : "delivered intact");
	if (write(out, &done, 1) != 1)
		die("write");
	return failures ? 1 : 0;
}

static int process_a(int out, int in, pid_t b)
{
	struct endpoint e = {};
	struct handoff h;
	struct ibv_qp *victim;
	struct ibv_wc wc;
	int status, received = 0;
	char done;

	endpoint_open(&e);
	victim = ud_qp(&e);
	h.ah_num = ((struct provider_ah *)e.ah)->ah_num;
	h.victim_qpn = victim->qp_num;
	if (write(out, &h, sizeof(h)) != sizeof(h))
		die("write");
	if (read(in, &done, 1) != 1)
		fprintf(stderr, "A: B ended early\n");
	/* anything B's forged send delivered has long arrived */
	while (poll_cq(e.rcq, &wc, 500))
		received++;
	CHECK(!received, "A's QP %u received %d messages sent with its AH by B",
	      h.victim_qpn, received);
	printf("A: AH %u, QP %u received %d messages\n", h.ah_num,
	       h.victim_qpn, received);
	if (waitpid(b, &status, 0) != b)
		die("waitpid");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "process B failed (status 0x%x)", status);
	ibv_destroy_qp(victim);
	return 0;
}

int main(int argc, char **argv)
{
	int a2b[2], b2a[2], c;
	pid_t pid;

	while ((c = getopt(argc, argv, "d:g:")) != -1) {
		if (c == 'd')
			dev_name = optarg;
		else if (c == 'g')
			gidx = atoi(optarg);
		else
			fatal("usage: sroce-ahpd -d DEV -g GIDX");
	}
	if (!dev_name || gidx < 0)
		fatal("usage: sroce-ahpd -d DEV -g GIDX");
	if (pipe(a2b) || pipe(b2a))
		die("pipe");
	/* each process opens the device itself, after the fork */
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		c = process_b(a2b[0], b2a[1]);
		printf("B: %u checks, %u failed\n", checks, failures);
		return c;
	}
	process_a(a2b[1], b2a[0], pid);
	printf("%u checks (A), %u failed: %s\n", checks, failures,
	       failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
