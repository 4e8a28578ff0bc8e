// SPDX-License-Identifier: GPL-2.0
/*
 * Change an RC QP's path again and again while traffic runs both ways.
 *
 * sroce-pathmod -d DEV -g GIDX [-n ROUNDS]
 *
 * Two RC QPs, A and B, connected to each other through the device's own
 * GID GIDX. Each round, both post WINDOW SENDs of MSG_LEN bytes with a
 * pattern of the round and message to the other, and meanwhile A goes
 * RTS -> SQD -> SQD with a new path (traffic class and flow label, which
 * also moves the UDP source port) -> RTS, so A's
 * requester (finishing what it started) and responder (ACKs to B) send
 * while the path is replaced. Every send must complete successfully and
 * every message arrive intact and in order; query_qp must return the
 * path last set. The last line says PASS or FAIL with the counts; exit
 * status 0, 1 (a check failed) or 2 (setup failed).
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define MSG_LEN 2048
#define WINDOW 8

struct side {
	const char *name;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char *buf;		/* WINDOW send slots, then WINDOW receive slots */
	unsigned int received;
};

static char pattern(int round, int msg, int side, int byte)
{
	return (char)(round * 31 + msg * 7 + side * 101 + byte);
}

static char *slot(struct side *s, int recv, int i)
{
	return s->buf + (size_t)(recv * WINDOW + i) * MSG_LEN;
}

static void post_recv(struct side *s, int i)
{
	struct ibv_sge sge = { .addr = (uintptr_t)slot(s, 1, i),
			       .length = MSG_LEN, .lkey = s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	if (ibv_post_recv(s->qp, &wr, &bad))
		die("ibv_post_recv");
}

static void post_sends(struct side *s, int id, int round)
{
	int i, j;

	for (i = 0; i < WINDOW; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)slot(s, 0, i),
				       .length = MSG_LEN,
				       .lkey = s->mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = WINDOW + i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		}, *bad;

		for (j = 0; j < MSG_LEN; j++)
			slot(s, 0, i)[j] = pattern(round, i, id, j);
		if (ibv_post_send(s->qp, &wr, &bad))
			die("ibv_post_send");
	}
}

/* WINDOW send and WINDOW receive completions of side @s (id @id). */
static void reap(struct side *s, int id, int round)
{
	int sends = 0, recvs = 0, j;
	struct ibv_wc wc;

	while (sends < WINDOW || recvs < WINDOW) {
		if (!poll_cq(s->cq, &wc, 20000))
			fatal("%s round %d: %d sends, %d receives completed",
			      s->name, round, sends, recvs);
		if (wc.status != IBV_WC_SUCCESS)
			fatal("%s round %d: %s completion %s", s->name, round,
			      wc.opcode & IBV_WC_RECV ? "receive" : "send",
			      ibv_wc_status_str(wc.status));
		if (!(wc.opcode & IBV_WC_RECV)) {
			sends++;
			continue;
		}
		/* messages arrive in order, each in the next receive slot */
		CHECK(wc.wr_id == (uint64_t)recvs && wc.byte_len == MSG_LEN,
		      "%s round %d: receive %d in slot %d, %u bytes", s->name,
		      round, recvs, (int)wc.wr_id, wc.byte_len);
		for (j = 0; j < MSG_LEN &&
		     slot(s, 1, wc.wr_id)[j] == pattern(round, recvs, !id, j);
		     j++)
			;
		CHECK(j == MSG_LEN, "%s round %d message %d: byte %d differs",
		      s->name, round, recvs, j);
		s->received += j == MSG_LEN;
		recvs++;
	}
	for (j = 0; j < WINDOW; j++)
		post_recv(s, j);
}

static void modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask,
		   const char *what)
{
	if (ibv_modify_qp(qp, a, mask))
		die(what);
}

/* A: RTS -> SQD -> SQD with path variant @v -> RTS. */
static void change_path(struct ibv_qp *qp, int gidx, union ibv_gid dgid,
			int v)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_SQD };
	struct ibv_qp_init_attr init;

	modify(qp, &a, IBV_QP_STATE, "modify RTS->SQD");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_SQD;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = dgid;
	a.ah_attr.grh.sgid_index = gidx;
	/* ib_core sets a RoCE path's hop limit from the route */
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.traffic_class = v & 1 ? 0x48 : 0;
	a.ah_attr.grh.flow_label = v & 2 ? 0x1234 + v : 0;
	modify(qp, &a, IBV_QP_STATE | IBV_QP_AV, "modify SQD->SQD with a path");
	if (ibv_query_qp(qp, &a, IBV_QP_AV, &init))
		die("ibv_query_qp");
	CHECK(a.ah_attr.grh.traffic_class == (v & 1 ? 0x48 : 0) &&
	      a.ah_attr.grh.flow_label == (v & 2 ? 0x1234u + v : 0),
	      "path variant %d: query_qp returned class %u, flow %u", v,
	      a.ah_attr.grh.traffic_class, a.ah_attr.grh.flow_label);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	modify(qp, &a, IBV_QP_STATE, "modify SQD->RTS");
}

int main(int argc, char **argv)
{
	struct side s[2] = { { .name = "A" }, { .name = "B" } };
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	const char *dev = NULL;
	int gidx = -1, rounds = 100, c, r, i;
	union ibv_gid gid;

	while ((c = getopt(argc, argv, "d:g:n:")) != -1) {
		if (c == 'd')
			dev = optarg;
		else if (c == 'g')
			gidx = atoi(optarg);
		else if (c == 'n')
			rounds = atoi(optarg);
		else
			fatal("usage: sroce-pathmod -d DEV -g GIDX [-n ROUNDS]");
	}
	if (!dev || gidx < 0 || rounds < 1)
		fatal("usage: sroce-pathmod -d DEV -g GIDX [-n ROUNDS]");

	ctx = open_device(dev);
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd");
	gid = query_gid(ctx, gidx);
	for (i = 0; i < 2; i++) {
		s[i].cq = ibv_create_cq(ctx, 4 * WINDOW, NULL, NULL, 0);
		s[i].buf = calloc(2 * WINDOW, MSG_LEN);
		if (!s[i].cq || !s[i].buf)
			die("cq/buffer");
		s[i].mr = ibv_reg_mr(pd, s[i].buf, 2 * WINDOW * MSG_LEN,
				     IBV_ACCESS_LOCAL_WRITE);
		if (!s[i].mr)
			die("ibv_reg_mr");
		s[i].qp = create_qp(pd, IBV_QPT_RC, s[i].cq, NULL, WINDOW,
				    WINDOW, 0);
		for (c = 0; c < WINDOW; c++)
			post_recv(&s[i], c);
	}
	for (i = 0; i < 2; i++) {
		struct qp_path p = { .dqpn = s[!i].qp->qp_num, .dgid = gid,
				     .sgid_index = gidx };

		connect_qp(s[i].qp, &p);
	}

	for (r = 0; r < rounds; r++) {
		post_sends(&s[0], 0, r);
		post_sends(&s[1], 1, r);
		change_path(s[0].qp, gidx, gid, r);
		reap(&s[0], 0, r);
		reap(&s[1], 1, r);
	}
	printf("%d path changes under traffic; A received %u, B received %u of %d messages intact; %u checks, %u failed: %s\n",
	       rounds, s[0].received, s[1].received, rounds * WINDOW, checks,
	       failures, failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
