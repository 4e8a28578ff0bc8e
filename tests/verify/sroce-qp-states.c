// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-qp-states DEV GID-INDEX: targets for tests/integration/peer-fuzz.sh.
 *
 * Creates RC, UC and UD QPs in every state a QP can be left in (RESET,
 * INIT, RTR, RTS, SQD for RC and UC, ERR), pointed at each other over the
 * device's own GID, prints "qpns N,N,..." and waits for a line "done" on
 * stdin while forged packets hit them. Then every QP must be in the state
 * it was left in, or in ERR where a packet may legitimately put it there
 * (RTR, RTS and SQD); RESET and INIT take no packet at all. Every QP, CQ
 * and the PD must be destroyed. Prints one line per QP and
 * "<checks> checks, <failures> failures"; exit 1 if a check failed.
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"

static const enum ibv_qp_state states[] = {
	IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD,
	IBV_QPS_ERR,
};
#define NSTATES (sizeof(states) / sizeof(states[0]))
#define NTYPES	3
#define NQPS	(NSTATES * NTYPES)

static const char *const state_name[] = {
	[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT",
	[IBV_QPS_RTR] = "RTR", [IBV_QPS_RTS] = "RTS", [IBV_QPS_SQD] = "SQD",
	[IBV_QPS_SQE] = "SQE", [IBV_QPS_ERR] = "ERR",
};

struct target {
	struct ibv_qp *qp;
	enum ibv_qp_state want;
};

static void modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	if (ibv_modify_qp(qp, a, mask))
		die("ibv_modify_qp");
}

static void to_state(struct ibv_qp *qp, enum ibv_qp_state want,
		     union ibv_gid gid, int gidx, uint32_t dqpn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };
	bool ud = qp->qp_type == IBV_QPT_UD;
	struct qp_path p = { .dqpn = dqpn, .dgid = gid, .sgid_index = gidx,
			     .rq_psn = 1, .sq_psn = 1 };

	if (want == IBV_QPS_RESET || want == IBV_QPS_ERR) {
		a.qp_state = want;
		modify(qp, &a, IBV_QP_STATE);
		return;
	}
	if (want == IBV_QPS_INIT)
		return;
	if (ud) {
		modify(qp, &a, IBV_QP_STATE);
		if (want == IBV_QPS_RTR)
			return;
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 1;
		modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	} else if (want == IBV_QPS_RTR) {
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = dqpn;
		a.rq_psn = 1;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 1;
		a.ah_attr = (struct ibv_ah_attr){
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = gid, .sgid_index = gidx, .hop_limit = 64 } };
		modify(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		       (qp->qp_type == IBV_QPT_RC ? IBV_QP_MAX_DEST_RD_ATOMIC |
		        IBV_QP_MIN_RNR_TIMER : 0));
		return;
	} else {
		connect_qp(qp, &p);
	}
	if (want == IBV_QPS_SQD) {
		a.qp_state = IBV_QPS_SQD;
		modify(qp, &a, IBV_QP_STATE);
	}
}

static struct ibv_qp *create_any(struct ibv_pd *pd, struct ibv_cq *cq,
				 enum ibv_qp_type type)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = type,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qkey = 0x11111111,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ |
						    IBV_ACCESS_REMOTE_ATOMIC };
	struct ibv_qp *qp = ibv_create_qp(pd, &qa);
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	if (!qp)
		die("ibv_create_qp");
	if (type == IBV_QPT_UD) {
		mask |= IBV_QP_QKEY;
	} else {
		if (type == IBV_QPT_UC)	/* UC has no READ or atomics */
			a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	modify(qp, &a, mask);
	return qp;
}

int main(int argc, char **argv)
{
	static const enum ibv_qp_type types[NTYPES] = {
		IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD,
	};
	struct target t[NQPS];
	struct ibv_context *ctx;
	enum ibv_qp_state got;
	union ibv_gid gid;
	char line[64];
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	unsigned int i, s, n = 0;
	long start;
	int gidx;

	if (argc != 3)
		fatal("usage: sroce-qp-states DEV GID-INDEX");
	setvbuf(stdout, NULL, _IOLBF, 0);
	ctx = open_device(argv[1]);
	gidx = atoi(argv[2]);
	gid = query_gid(ctx, gidx);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 4 * NQPS, NULL, NULL, 0);
	if (!pd || !cq)
		die("PD and CQ");
	for (i = 0; i < NTYPES; i++)
		for (s = 0; s < NSTATES; s++) {
			/* UD has no SQD to speak of: take RTS twice */
			t[n].want = types[i] == IBV_QPT_UD && states[s] == IBV_QPS_SQD ?
				    IBV_QPS_RTS : states[s];
			t[n].qp = create_any(pd, cq, types[i]);
			n++;
		}
	/* each points at the next one, so PSN and address checks can pass */
	for (i = 0; i < n; i++)
		to_state(t[i].qp, t[i].want, gid, gidx, t[(i + 1) % n].qp->qp_num);
	printf("qpns ");
	for (i = 0; i < n; i++)
		printf("%s%u", i ? "," : "", t[i].qp->qp_num);
	printf("\n");

	while (fgets(line, sizeof(line), stdin) && strcmp(line, "done\n"))
		;
	for (i = 0; i < n; i++) {
		unsigned int qpn = t[i].qp->qp_num;
		int type = t[i].qp->qp_type;

		start = now_ms();
		got = qp_state(t[i].qp);
		if (t[i].want == IBV_QPS_RESET || t[i].want == IBV_QPS_INIT)
			CHECK(got == t[i].want, "QP %u left in %s is now %s",
			      t[i].qp->qp_num, state_name[t[i].want],
			      state_name[got]);
		else
			CHECK(got == t[i].want || got == IBV_QPS_ERR,
			      "QP %u left in %s is now %s", t[i].qp->qp_num,
			      state_name[t[i].want], state_name[got]);
		CHECK(!ibv_destroy_qp(t[i].qp), "destroying QP in %s",
		      state_name[got]);
		printf("qp %u type %d left %s, now %s, destroyed in %ld ms\n",
		       qpn, type, state_name[t[i].want], state_name[got],
		       now_ms() - start);
	}
	start = now_ms();
	CHECK(!ibv_destroy_cq(cq) && !ibv_dealloc_pd(pd), "destroying CQ and PD");
	ibv_close_device(ctx);
	printf("CQ, PD and context closed in %ld ms\n", now_ms() - start);
	printf("%u checks, %u failures\n", checks, failures);
	return failures ? 1 : 0;
}
