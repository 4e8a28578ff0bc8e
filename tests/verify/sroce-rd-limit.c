// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-rd-limit DEV GID-INDEX
 *
 * A requester that keeps more RDMA READs outstanding than the responder
 * has responder resources (max_rd_atomic above the peer's
 * max_dest_rd_atomic: a misconfigured or hostile peer) must get the NAK
 * the IBTA prescribes, invalid request, not silently have its oldest
 * resources overwritten. Two loopback RC pairs on DEV, 16 READs posted at
 * once against a responder with 2 resources: the first of 192 KiB, whose
 * answer the responder cannot send at once, then 15 of 4 KiB (252 PSNs in
 * all: the requester's window lets them all go). The responder sees the
 * excess as answers to new READs it still has to send:
 *
 *   within  the requester's max_rd_atomic is 2: every READ succeeds and
 *           returns exactly the responder's bytes (no false alarm);
 *   beyond  its max_rd_atomic is 16: a READ completes with
 *           IBV_WC_REM_INV_REQ_ERR, the ones after it are flushed, the
 *           responder's QP is in the error state, and the READs that did
 *           succeed returned the right bytes.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

#define NREADS	16
#define LEN	(256 * 1024)	/* stride of the READs' areas */
#define RES	2

struct side {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *req, *resp;
	struct ibv_mr *src, *dst;
};

static int gidx;

static uint32_t read_len(unsigned int i)
{
	return i ? 4096 : 192 * 1024;
}

static void modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	if (ibv_modify_qp(qp, a, mask))
		die("ibv_modify_qp");
}

/* INIT -> RTR -> RTS toward @dqpn, with the READ depths given. */
static void connect_rd(struct ibv_qp *qp, uint32_t dqpn, union ibv_gid gid,
		       uint8_t rd_atomic, uint8_t dest_rd_atomic)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = dqpn, .rq_psn = 1, .max_dest_rd_atomic = dest_rd_atomic,
		.min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = gid, .sgid_index = gidx, .hop_limit = 64 } },
	};

	modify(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
	       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
	       IBV_QP_MIN_RNR_TIMER);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = rd_atomic;
	modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
	       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static void setup(struct ibv_context *ctx, struct side *s, uint8_t rd_atomic)
{
	union ibv_gid gid = query_gid(ctx, gidx);
	uint8_t *mem;
	size_t i;

	s->pd = ibv_alloc_pd(ctx);
	s->cq = ibv_create_cq(ctx, 2 * NREADS, NULL, NULL, 0);
	if (!s->pd || !s->cq)
		die("ibv_alloc_pd/ibv_create_cq");
	s->req = create_qp(s->pd, IBV_QPT_RC, s->cq, NULL, NREADS, 1, 0);
	s->resp = create_qp(s->pd, IBV_QPT_RC, s->cq, NULL, 1, 1,
			    IBV_ACCESS_REMOTE_READ);
	connect_rd(s->req, s->resp->qp_num, gid, rd_atomic, RES);
	connect_rd(s->resp, s->req->qp_num, gid, RES, RES);
	mem = malloc((size_t)NREADS * LEN);
	if (!mem)
		die("malloc");
	for (i = 0; i < (size_t)NREADS * LEN; i++)
		mem[i] = (uint8_t)(i * 131 + (i >> 12));
	s->src = ibv_reg_mr(s->pd, mem, (size_t)NREADS * LEN,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	s->dst = ibv_reg_mr(s->pd, calloc(NREADS, LEN), (size_t)NREADS * LEN,
			    IBV_ACCESS_LOCAL_WRITE);
	if (!s->src || !s->dst)
		die("ibv_reg_mr");
}

/*
 * The responder errors its QP right after its NAK went out; the requester
 * may see the NAK first. Its state within 5 s.
 */
static enum ibv_qp_state settled_state(struct ibv_qp *qp, enum ibv_qp_state want)
{
	long end = now_ms() + 5000;
	enum ibv_qp_state st;

	while ((st = qp_state(qp)) != want && now_ms() < end)
		usleep(10000);
	return st;
}

/* Post the READs and sort their completions; returns how many succeeded. */
static unsigned int run(const char *name, struct side *s, unsigned int *inv_req,
			unsigned int *flushed)
{
	const uint8_t *src = s->src->addr, *dst = s->dst->addr;
	unsigned int i, ok = 0, bad_data = 0;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;

	*inv_req = *flushed = 0;
	for (i = 0; i < NREADS; i++) {
		sge = (struct ibv_sge){ .addr = (uintptr_t)dst + (size_t)i * LEN,
					.length = read_len(i), .lkey = s->dst->lkey };
		wr = (struct ibv_send_wr){
			.wr_id = i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = (uintptr_t)src + (size_t)i * LEN,
				     .rkey = s->src->rkey } };
		if (ibv_post_send(s->req, &wr, &bad))
			die("ibv_post_send");
	}
	for (i = 0; i < NREADS; i++) {
		if (!poll_cq(s->cq, &wc, 60000))
			fatal("%s: %u of %u READ completions missing", name, NREADS - i,
			      NREADS);
		if (wc.status == IBV_WC_SUCCESS) {
			ok++;
			bad_data += memcmp(dst + wc.wr_id * LEN, src + wc.wr_id * LEN,
					   read_len(wc.wr_id)) != 0;
		} else if (wc.status == IBV_WC_REM_INV_REQ_ERR) {
			(*inv_req)++;
		} else if (wc.status == IBV_WC_WR_FLUSH_ERR) {
			(*flushed)++;
		} else {
			CHECK(0, "%s: READ %" PRIu64 ": %s", name, (uint64_t)wc.wr_id,
			      ibv_wc_status_str(wc.status));
		}
	}
	CHECK(bad_data == 0, "%s: %u READs returned wrong bytes", name, bad_data);
	printf("%s: %u READs, %u succeeded (data checked), %u invalid request, %u flushed; responder QP state %d\n",
	       name, NREADS, ok, *inv_req, *flushed, qp_state(s->resp));
	return ok;
}

int main(int argc, char **argv)
{
	unsigned int ok, inv_req, flushed;
	struct ibv_context *ctx;
	struct side within, beyond;

	if (argc != 3)
		fatal("usage: sroce-rd-limit DEV GID-INDEX");
	gidx = atoi(argv[2]);
	ctx = open_device(argv[1]);
	setup(ctx, &within, RES);
	setup(ctx, &beyond, NREADS);

	ok = run("within", &within, &inv_req, &flushed);
	CHECK(ok == NREADS, "within: %u of %u READs succeeded", ok, NREADS);
	CHECK(qp_state(within.resp) == IBV_QPS_RTS, "within: the responder left RTS");

	ok = run("beyond", &beyond, &inv_req, &flushed);
	CHECK(inv_req == 1, "beyond: %u READs completed with invalid request, expected 1",
	      inv_req);
	CHECK(ok + inv_req + flushed == NREADS && ok < NREADS,
	      "beyond: %u succeeded, %u invalid request, %u flushed", ok, inv_req,
	      flushed);
	CHECK(settled_state(beyond.resp, IBV_QPS_ERR) == IBV_QPS_ERR,
	      "beyond: the responder's QP is not in the error state");
	printf("rd-limit: %u checks, %u failed\n", checks, failures);
	return failures ? 1 : 0;
}
