// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-xrc: XRC on one device, over its own GID, with every byte checked
 * and the target's refusals checked too.
 *
 *   sroce-xrc -d DEV -g GIDX
 *
 * Two XRC domains; SRQ A (domain 1, PD 1), SRQ B (domain 2, PD 1) and
 * SRQ C (domain 1, PD 2), each completing into its own CQ. Each case uses
 * a fresh XRC send QP connected to a fresh XRC receive QP of domain 1:
 *  1. SENDs of 3000 bytes (3 packets) and 64 bytes with immediate naming
 *     SRQ A: land in A's WQEs in order, complete on A's CQ with the
 *     receive QP's number, the length and the immediate; RDMA WRITE, READ
 *     and FETCH_ADD through the same QPs with an MR of PD 1 (A's).
 *  2. A SEND naming SRQ B (another domain): the sender completes with
 *     IBV_WC_REM_INV_REQ_ERR, B's WQE stays untouched and posted (B's CQ
 *     stays empty), the receive QP is in the error state.
 *  3. A SEND naming an SRQ number that does not exist: the same NAK.
 *  4. An RDMA WRITE with an rkey of PD 2 naming SRQ C (PD 2) works; the
 *     same naming SRQ A (PD 1) completes with IBV_WC_REM_ACCESS_ERR and
 *     changes nothing: the SRQ's PD, not the QP's, grants the access.
 *  5. Closing a domain that still has a receive QP fails (EBUSY); after
 *     the QPs and SRQs are gone it closes.
 * The last line says PASS or FAIL with the number of checks; exit status
 * 0, 1 (a check failed) or 2 (setup failed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

#define BIG 3000
#define SMALL 64
#define SLOT 4096		/* one receive WQE's buffer */
#define TIMEOUT_MS 10000
#define QUIET_MS 500
#define IMM 0x1234abcdu
#define NO_SRQ 0xfffffeu

/* the layout of buf (PD 1) */
enum {
	OFF_A = 0,			/* 2 receive slots of SRQ A */
	OFF_B = 2 * SLOT,		/* 1 receive slot of SRQ B */
	OFF_SEND = 3 * SLOT,
	OFF_TARGET = 4 * SLOT,		/* RDMA WRITE / READ source */
	OFF_READ = 5 * SLOT,		/* READ destination */
	OFF_ATOMIC = 6 * SLOT,
	BUF_LEN = 7 * SLOT,
};

static struct ibv_context *ctx;
static struct ibv_pd *pd1, *pd2;
static struct ibv_xrcd *xrcd1, *xrcd2;
static struct ibv_cq *send_cq, *cq_a, *cq_b, *cq_c;
static struct ibv_srq *srq_a, *srq_b, *srq_c;
static struct ibv_mr *mr1, *mr2;
static uint8_t *buf, *buf2;
static union ibv_gid gid;
static int gidx = -1;

struct pair {
	struct ibv_qp *ini, *tgt;
};

static struct ibv_xrcd *open_domain(void)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1,
		.oflags = O_CREAT,
	};
	struct ibv_xrcd *x = ibv_open_xrcd(ctx, &a);

	if (!x)
		die("ibv_open_xrcd");
	return x;
}

static struct ibv_srq *xrc_srq(struct ibv_xrcd *x, struct ibv_pd *pd,
			       struct ibv_cq *cq)
{
	struct ibv_srq_init_attr_ex a = {
		.attr = { .max_wr = 8, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC,
		.pd = pd, .xrcd = x, .cq = cq,
	};
	struct ibv_srq *s = ibv_create_srq_ex(ctx, &a);

	if (!s)
		die("ibv_create_srq_ex (XRC)");
	return s;
}

static uint32_t srq_num(struct ibv_srq *s)
{
	uint32_t n = 0;

	if (ibv_get_srq_num(s, &n))
		die("ibv_get_srq_num");
	return n;
}

static void modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	if (ibv_modify_qp(qp, a, mask))
		die("ibv_modify_qp");
}

/* RESET -> RTS with the attributes each XRC QP type takes. */
static void bring_up(struct ibv_qp *qp, uint32_t dqpn, bool tgt)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = tgt ? IBV_ACCESS_REMOTE_WRITE |
					 IBV_ACCESS_REMOTE_READ |
					 IBV_ACCESS_REMOTE_ATOMIC : 0,
	};

	modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
	       IBV_QP_ACCESS_FLAGS);
	a = (struct ibv_qp_attr) {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = dqpn, .rq_psn = 100,
		.max_dest_rd_atomic = 4, .min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = gid, .sgid_index = gidx,
				      .hop_limit = 64 } },
	};
	modify(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
	       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
	       (tgt ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 100;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
	       (tgt ? 0 : IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_MAX_QP_RD_ATOMIC));
}

/* A send QP of PD 1 connected to a receive QP of domain 1. */
static struct pair make_pair(void)
{
	struct ibv_qp_init_attr_ex t = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = xrcd1,
	};
	struct ibv_qp_init_attr_ex i = {
		.qp_type = IBV_QPT_XRC_SEND,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd1,
		.send_cq = send_cq,
		.sq_sig_all = 1,
		.cap = { .max_send_wr = 8, .max_send_sge = 1 },
	};
	struct pair p;

	p.tgt = ibv_create_qp_ex(ctx, &t);
	if (!p.tgt)
		die("ibv_create_qp_ex (XRC_RECV)");
	p.ini = ibv_create_qp_ex(ctx, &i);
	if (!p.ini)
		die("ibv_create_qp_ex (XRC_SEND)");
	bring_up(p.tgt, p.ini->qp_num, true);
	bring_up(p.ini, p.tgt->qp_num, false);
	return p;
}

static void free_pair(struct pair *p)
{
	if (ibv_destroy_qp(p->ini) || ibv_destroy_qp(p->tgt))
		die("ibv_destroy_qp");
}

static void post_srq(struct ibv_srq *s, uint8_t *addr, uint32_t lkey,
		     uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)addr, SLOT, lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	if (ibv_post_srq_recv(s, &wr, &bad))
		die("ibv_post_srq_recv");
}

/* One WR through @qp to SRQ number @srqn; its completion status. */
static enum ibv_wc_status run(struct ibv_qp *qp, struct ibv_send_wr *wr,
			      uint32_t srqn)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	wr->qp_type.xrc.remote_srqn = srqn;
	if (ibv_post_send(qp, wr, &bad))
		die("ibv_post_send");
	if (!poll_cq(send_cq, &wc, TIMEOUT_MS))
		fatal("no send completion (wr %" PRIu64 ")", wr->wr_id);
	CHECK(wc.wr_id == wr->wr_id, "send completion for wr %" PRIu64,
	      wc.wr_id);
	return wc.status;
}

static enum ibv_wc_status send_msg(struct ibv_qp *qp, uint32_t len,
				   bool imm, uint32_t srqn)
{
	struct ibv_sge sge = { (uintptr_t)buf + OFF_SEND, len, mr1->lkey };
	struct ibv_send_wr wr = {
		.wr_id = len, .sg_list = &sge, .num_sge = 1,
		.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
		.imm_data = htobe32(IMM),
	};

	return run(qp, &wr, srqn);
}

static enum ibv_wc_status rdma(struct ibv_qp *qp, enum ibv_wr_opcode op,
			       uint8_t *local, uint32_t len, uint64_t raddr,
			       uint32_t rkey, uint32_t srqn)
{
	struct ibv_sge sge = { (uintptr_t)local, len, mr1->lkey };
	struct ibv_send_wr wr = {
		.wr_id = op, .sg_list = &sge, .num_sge = 1, .opcode = op,
	};

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 5;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return run(qp, &wr, srqn);
}

static void fill(uint8_t *p, uint32_t len, uint8_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static bool filled(const uint8_t *p, uint32_t len, uint8_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != (uint8_t)(seed + i * 7))
			return false;
	return true;
}

static bool zero(const uint8_t *p, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/* Nothing completes on @cq for a while. */
static bool cq_quiet(struct ibv_cq *cq)
{
	struct ibv_wc wc;

	return !poll_cq(cq, &wc, QUIET_MS);
}

static void recv_check(struct ibv_qp *tgt, uint64_t wr_id, uint32_t len,
		       bool imm, uint8_t *slot, uint8_t seed)
{
	struct ibv_wc wc;

	if (!poll_cq(cq_a, &wc, TIMEOUT_MS)) {
		CHECK(0, "no receive completion on SRQ A's CQ (%u bytes)", len);
		return;
	}
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV,
	      "receive status %d opcode %d", wc.status, wc.opcode);
	CHECK(wc.wr_id == wr_id, "receive wr_id %" PRIu64 ", not %" PRIu64,
	      wc.wr_id, wr_id);
	CHECK(wc.qp_num == tgt->qp_num, "receive qp_num %u, not the XRC receive QP %u",
	      wc.qp_num, tgt->qp_num);
	CHECK(wc.byte_len == len, "byte_len %u, not %u", wc.byte_len, len);
	CHECK(!!(wc.wc_flags & IBV_WC_WITH_IMM) == imm &&
	      (!imm || be32toh(wc.imm_data) == IMM), "immediate data");
	CHECK(filled(slot, len, seed) && zero(slot + len, SLOT - len),
	      "%u bytes received intact into their WQE", len);
}

static void case_data(void)
{
	struct pair p = make_pair();
	uint64_t *counter = (uint64_t *)(buf + OFF_ATOMIC);
	uint32_t a = srq_num(srq_a);

	post_srq(srq_a, buf + OFF_A, mr1->lkey, 1);
	post_srq(srq_a, buf + OFF_A + SLOT, mr1->lkey, 2);

	fill(buf + OFF_SEND, BIG, 11);
	CHECK(send_msg(p.ini, BIG, false, a) == IBV_WC_SUCCESS, "SEND %u", BIG);
	recv_check(p.tgt, 1, BIG, false, buf + OFF_A, 11);
	fill(buf + OFF_SEND, SMALL, 33);
	CHECK(send_msg(p.ini, SMALL, true, a) == IBV_WC_SUCCESS,
	      "SEND with immediate");
	recv_check(p.tgt, 2, SMALL, true, buf + OFF_A + SLOT, 33);

	fill(buf + OFF_SEND, 2000, 55);
	CHECK(rdma(p.ini, IBV_WR_RDMA_WRITE, buf + OFF_SEND, 2000,
		   (uintptr_t)buf + OFF_TARGET, mr1->rkey, a) == IBV_WC_SUCCESS,
	      "RDMA WRITE");
	CHECK(filled(buf + OFF_TARGET, 2000, 55), "RDMA WRITE data");
	CHECK(rdma(p.ini, IBV_WR_RDMA_READ, buf + OFF_READ, 2000,
		   (uintptr_t)buf + OFF_TARGET, mr1->rkey, a) == IBV_WC_SUCCESS,
	      "RDMA READ");
	CHECK(filled(buf + OFF_READ, 2000, 55), "RDMA READ data");
	counter[0] = 37;
	CHECK(rdma(p.ini, IBV_WR_ATOMIC_FETCH_AND_ADD, buf + OFF_READ, 8,
		   (uintptr_t)counter, mr1->rkey, a) == IBV_WC_SUCCESS,
	      "FETCH_ADD");
	CHECK(counter[0] == 42 && *(uint64_t *)(buf + OFF_READ) == 37,
	      "FETCH_ADD: %" PRIu64 " (want 42), returned %" PRIu64, counter[0],
	      *(uint64_t *)(buf + OFF_READ));
	CHECK(cq_quiet(cq_a) && cq_quiet(cq_b), "no stray receive completion");
	printf("xrc: SEND %u and %u (imm), WRITE, READ, FETCH_ADD through SRQ %u: data intact\n",
	       BIG, SMALL, a);
	free_pair(&p);
}

/* A SEND naming @srqn is refused as an invalid request; B is untouched. */
static void case_refused(uint32_t srqn, const char *what)
{
	struct pair p = make_pair();
	enum ibv_wc_status st;

	fill(buf + OFF_SEND, SMALL, 77);
	st = send_msg(p.ini, SMALL, false, srqn);
	CHECK(st == IBV_WC_REM_INV_REQ_ERR, "%s: status %s, not remote invalid request",
	      what, ibv_wc_status_str(st));
	CHECK(cq_quiet(cq_b) && cq_quiet(cq_a), "%s: a receive completed", what);
	CHECK(zero(buf + OFF_B, SLOT), "%s: SRQ B's buffer was written", what);
	CHECK(qp_state(p.tgt) == IBV_QPS_ERR, "%s: receive QP not in error", what);
	printf("xrc: SEND naming %s: %s, nothing received\n", what,
	       ibv_wc_status_str(st));
	free_pair(&p);
}

static void case_pd(void)
{
	struct pair p = make_pair();
	enum ibv_wc_status st;

	fill(buf + OFF_SEND, 1000, 99);
	st = rdma(p.ini, IBV_WR_RDMA_WRITE, buf + OFF_SEND, 1000,
		  (uintptr_t)buf2, mr2->rkey, srq_num(srq_c));
	CHECK(st == IBV_WC_SUCCESS && filled(buf2, 1000, 99),
	      "WRITE to PD 2's MR naming SRQ C (PD 2): %s", ibv_wc_status_str(st));
	memset(buf2, 0, SLOT);
	st = rdma(p.ini, IBV_WR_RDMA_WRITE, buf + OFF_SEND, 1000,
		  (uintptr_t)buf2, mr2->rkey, srq_num(srq_a));
	CHECK(st == IBV_WC_REM_ACCESS_ERR,
	      "WRITE to PD 2's MR naming SRQ A (PD 1): %s, not remote access error",
	      ibv_wc_status_str(st));
	CHECK(zero(buf2, SLOT), "PD 2's MR written through SRQ A");
	printf("xrc: WRITE to a PD 2 MR: through SRQ C works, through SRQ A %s\n",
	       ibv_wc_status_str(st));
	free_pair(&p);
}

static void case_close(void)
{
	struct pair p = make_pair();
	int err;

	err = ibv_close_xrcd(xrcd1);
	CHECK(err == EBUSY, "closing a domain with a receive QP: %d, not EBUSY", err);
	free_pair(&p);
	if (ibv_destroy_srq(srq_a) || ibv_destroy_srq(srq_b) ||
	    ibv_destroy_srq(srq_c))
		die("ibv_destroy_srq");
	CHECK(ibv_close_xrcd(xrcd1) == 0 && ibv_close_xrcd(xrcd2) == 0,
	      "closing the unused domains");
	printf("xrc: a domain in use stays; closed once unused\n");
}

int main(int argc, char **argv)
{
	const char *dev = NULL;
	int c;

	while ((c = getopt(argc, argv, "d:g:")) != -1) {
		if (c == 'd')
			dev = optarg;
		else if (c == 'g')
			gidx = atoi(optarg);
		else
			fatal("usage: sroce-xrc -d DEV -g GIDX");
	}
	if (!dev || gidx < 0)
		fatal("usage: sroce-xrc -d DEV -g GIDX");
	ctx = open_device(dev);
	gid = query_gid(ctx, gidx);
	pd1 = ibv_alloc_pd(ctx);
	pd2 = ibv_alloc_pd(ctx);
	send_cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	cq_a = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	cq_b = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	cq_c = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	buf = aligned_alloc(SLOT, BUF_LEN);
	buf2 = aligned_alloc(SLOT, SLOT);
	if (!pd1 || !pd2 || !send_cq || !cq_a || !cq_b || !cq_c || !buf || !buf2)
		die("pd/cq/buffer");
	memset(buf, 0, BUF_LEN);
	memset(buf2, 0, SLOT);
	mr1 = ibv_reg_mr(pd1, buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			 IBV_ACCESS_REMOTE_ATOMIC);
	mr2 = ibv_reg_mr(pd2, buf2, SLOT, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE);
	if (!mr1 || !mr2)
		die("ibv_reg_mr");
	xrcd1 = open_domain();
	xrcd2 = open_domain();
	srq_a = xrc_srq(xrcd1, pd1, cq_a);
	srq_b = xrc_srq(xrcd2, pd1, cq_b);
	srq_c = xrc_srq(xrcd1, pd2, cq_c);
	post_srq(srq_b, buf + OFF_B, mr1->lkey, 99);
	CHECK(srq_num(srq_a) && srq_num(srq_a) != srq_num(srq_b),
	      "SRQ numbers %u and %u", srq_num(srq_a), srq_num(srq_b));

	case_data();
	case_refused(srq_num(srq_b), "another domain's SRQ");
	case_refused(NO_SRQ, "no SRQ");
	case_pd();
	case_close();

	printf("xrc: %u checks, %u failed: %s\n", checks, failures,
	       failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
