// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-srq: the asynchronous events of a shared receive queue, on one
 * device (two RC QPs connected to each other through the device's own
 * GID; the receiving one takes its WQEs from an SRQ).
 *
 *   sroce-srq -d DEV -g GIDX
 *
 * 1. 16 WQEs posted, limit armed at 10: SENDs one by one; exactly one
 *    IBV_EVENT_SRQ_LIMIT_REACHED, right after the send that left 9 WQEs,
 *    none for the sends after it (the limit disarms itself: query_srq
 *    reports 0); a second arming (limit 5 with 8 left) fires once more,
 *    after the send that left 4.
 * 2. Every message's data, length and wr_id is checked on receive.
 * 3. The receiving QP moved to the error state: exactly one
 *    IBV_EVENT_QP_LAST_WQE_REACHED, and no flush completion for the WQEs
 *    still in the SRQ (they belong to the SRQ, not to the QP).
 * 4. Arming a limit above max_wr fails with EINVAL.
 *
 * Exits non-zero on any failed check.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

#define NWQE 16
#define MSG 3000
#define TIMEOUT_MS 10000

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *scq, *rcq;
static struct ibv_srq *srq;
static struct ibv_qp *sqp, *rqp;
static struct ibv_mr *mr;
static uint8_t *buf;		/* NWQE receive slots, then a send slot */
static unsigned int sent;

/* Async events of the context within ms milliseconds: counts by type. */
static void collect_events(int ms, unsigned int *limit, unsigned int *last)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	long end = now_ms() + ms;

	for (;;) {
		long left = end - now_ms();

		if (left <= 0 || poll(&pfd, 1, left) <= 0)
			return;
		if (ibv_get_async_event(ctx, &ev))
			continue;
		if (ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED) {
			CHECK(ev.element.srq == srq, "limit event for another SRQ");
			(*limit)++;
		} else if (ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED) {
			CHECK(ev.element.qp == rqp, "last-WQE event for another QP");
			(*last)++;
		} else {
			CHECK(0, "unexpected async event %s",
			      ibv_event_type_str(ev.event_type));
		}
		ibv_ack_async_event(&ev);
	}
}

static void post_srq(unsigned int slot, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(buf + slot * MSG),
			       .length = MSG, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	memset(buf + slot * MSG, 0, MSG);
	if (ibv_post_srq_recv(srq, &wr, &bad))
		die("ibv_post_srq_recv");
}

/* Send message n (MSG - n bytes) and check its arrival. */
static void send_one(unsigned int n)
{
	uint32_t len = MSG - n, i;
	uint8_t *p = buf + NWQE * MSG;
	struct ibv_sge sge = { .addr = (uintptr_t)p, .length = len,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = n, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(n * 37 + i);
	if (ibv_post_send(sqp, &wr, &bad))
		die("ibv_post_send");
	if (!poll_cq(scq, &wc, TIMEOUT_MS) || wc.status != IBV_WC_SUCCESS)
		fatal("message %u: no successful send completion", n);
	if (!poll_cq(rcq, &wc, TIMEOUT_MS)) {
		CHECK(0, "message %u: no receive completion", n);
		return;
	}
	sent++;
	CHECK(wc.status == IBV_WC_SUCCESS, "message %u: status %s", n,
	      ibv_wc_status_str(wc.status));
	CHECK(wc.byte_len == len, "message %u: byte_len %u", n, wc.byte_len);
	CHECK(wc.qp_num == rqp->qp_num, "message %u: qp_num", n);
	/* the SRQ is FIFO: message n lands in WQE n (slot n % NWQE) */
	CHECK(wc.wr_id == 1000 + n, "message %u: wr_id %" PRIu64, n, wc.wr_id);
	p = buf + (wc.wr_id - 1000) % NWQE * MSG;
	for (i = 0; i < len; i++)
		if (p[i] != (uint8_t)(n * 37 + i)) {
			CHECK(0, "message %u: byte %u", n, i);
			break;
		}
}

static void arm(unsigned int limit)
{
	struct ibv_srq_attr a = { .srq_limit = limit };
	struct ibv_srq_attr q;

	if (ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT))
		die("ibv_modify_srq(limit)");
	if (ibv_query_srq(srq, &q))
		die("ibv_query_srq");
	CHECK(q.srq_limit == limit, "query_srq: limit %u after arming %u",
	      q.srq_limit, limit);
}

int main(int argc, char **argv)
{
	struct ibv_srq_init_attr sattr = { .attr = { .max_wr = NWQE,
						     .max_sge = 1 } };
	unsigned int limit = 0, last = 0, n = 0, i;
	struct qp_path path = { 0 };
	struct ibv_srq_attr q;
	struct ibv_qp_attr qa;
	const char *dev = NULL;
	struct ibv_wc wc;
	int gidx = -1, c, flags;

	while ((c = getopt(argc, argv, "d:g:")) != -1) {
		if (c == 'd')
			dev = optarg;
		else if (c == 'g')
			gidx = atoi(optarg);
		else
			return 2;
	}
	if (!dev || gidx < 0) {
		fprintf(stderr, "usage: %s -d DEV -g GIDX\n", argv[0]);
		return 2;
	}
	ctx = open_device(dev);
	flags = fcntl(ctx->async_fd, F_GETFL);
	fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
	path.dgid = query_gid(ctx, gidx);
	path.sgid_index = gidx;
	pd = ibv_alloc_pd(ctx);
	scq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	rcq = ibv_create_cq(ctx, 2 * NWQE, NULL, NULL, 0);
	srq = ibv_create_srq(pd, &sattr);
	if (!pd || !scq || !rcq || !srq)
		die("pd/cq/srq");
	CHECK(sattr.attr.max_wr >= NWQE, "create_srq: max_wr %u",
	      sattr.attr.max_wr);
	buf = aligned_alloc(4096, ((NWQE + 1) * MSG + 4095) & ~4095ul);
	mr = buf ? ibv_reg_mr(pd, buf, (NWQE + 1) * MSG,
			      IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr)
		die("ibv_reg_mr");
	sqp = create_qp(pd, IBV_QPT_RC, scq, NULL, 4, 4, 0);
	rqp = create_qp(pd, IBV_QPT_RC, rcq, srq, 4, 0, 0);
	path.dqpn = rqp->qp_num;
	connect_qp(sqp, &path);
	path.dqpn = sqp->qp_num;
	connect_qp(rqp, &path);

	/* 4: a limit above max_wr is refused */
	{
		struct ibv_srq_attr a = { .srq_limit = sattr.attr.max_wr + 1 };

		CHECK(ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT) == EINVAL,
		      "limit above max_wr (%u) accepted", sattr.attr.max_wr);
	}

	for (i = 0; i < NWQE; i++)
		post_srq(i, 1000 + i);
	arm(10);
	collect_events(200, &limit, &last);
	CHECK(!limit, "limit event with 16 WQEs posted and limit 10");

	/* 16 -> 10 WQEs left: no event yet */
	for (; n < 6; n++)
		send_one(n);
	collect_events(300, &limit, &last);
	CHECK(limit == 0, "limit event with 10 WQEs left (limit 10): %u",
	      limit);
	/* 10 -> 9: exactly one */
	send_one(n++);
	collect_events(1000, &limit, &last);
	CHECK(limit == 1, "%u limit events after 9 WQEs left, expected 1",
	      limit);
	if (ibv_query_srq(srq, &q))
		die("ibv_query_srq");
	CHECK(q.srq_limit == 0, "limit still armed (%u) after the event",
	      q.srq_limit);
	/* 9 -> 8: disarmed, nothing */
	send_one(n++);
	collect_events(300, &limit, &last);
	CHECK(limit == 1, "limit fired again while disarmed (%u)", limit);

	/* re-arm at 5 with 8 left; 8 -> 5: nothing, 5 -> 4: one */
	arm(5);
	for (; n < 11; n++)
		send_one(n);
	collect_events(300, &limit, &last);
	CHECK(limit == 1, "limit event with 5 WQEs left (limit 5)");
	send_one(n++);
	collect_events(1000, &limit, &last);
	CHECK(limit == 2, "%u limit events in all after re-arming, expected 2",
	      limit);

	/* 3: error state: one last-WQE-reached event, no flushes */
	qa.qp_state = IBV_QPS_ERR;
	if (ibv_modify_qp(rqp, &qa, IBV_QP_STATE))
		die("modify ERR");
	collect_events(1000, &limit, &last);
	CHECK(last == 1, "%u last-WQE-reached events, expected 1", last);
	CHECK(limit == 2, "limit events after the error state: %u", limit);
	usleep(200000);
	c = ibv_poll_cq(rcq, 1, &wc);
	CHECK(c == 0, "a completion (status %s) after the error state: the SRQ's WQEs were flushed",
	      c > 0 ? ibv_wc_status_str(wc.status) : "-");

	printf("srq: %u messages checked, %u limit events, %u last-WQE events, %u failures: %s\n",
	       sent, limit, last, failures, failures ? "FAIL" : "PASS");
	ibv_destroy_qp(sqp);
	ibv_destroy_qp(rqp);
	ibv_destroy_srq(srq);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(scq);
	ibv_destroy_cq(rcq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return failures ? 1 : 0;
}
