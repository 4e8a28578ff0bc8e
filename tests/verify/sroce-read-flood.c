// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-read-flood DEV GID-INDEX: the victim of tests/integration/
 * reply-flood.sh. A loopback RC pair on DEV whose requester reads 256 KiB
 * from the responder when told, so that the script can capture that READ
 * request on the wire and replay it thousands of times: each copy is a
 * duplicate the responder must answer again with 256 packets (at MTU 1024,
 * more than it sends from softirq at once), far faster than it can send
 * them, which only the bound on its queued replies holds.
 *
 * Protocol on stdin/stdout: prints "responder <qpn>", then for each line
 * "read" on stdin posts one READ, checks every byte it brought and prints
 * "read <n> ok" (or a FAIL line); at end of input prints
 * "<checks> checks, <failures> failures". Exit 1 if a check failed.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define LEN	(256 * 1024)

int main(int argc, char **argv)
{
	struct ibv_qp *req, *resp;
	struct ibv_context *ctx;
	struct ibv_mr *src, *dst;
	unsigned int round = 0;
	union ibv_gid gid;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	char line[64];
	int gidx;

	if (argc != 3)
		fatal("usage: sroce-read-flood DEV GID-INDEX");
	setvbuf(stdout, NULL, _IOLBF, 0);
	ctx = open_device(argv[1]);
	gidx = atoi(argv[2]);
	gid = query_gid(ctx, gidx);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!pd || !cq)
		die("PD/CQ");
	src = ibv_reg_mr(pd, calloc(1, LEN), LEN, IBV_ACCESS_REMOTE_READ);
	dst = ibv_reg_mr(pd, calloc(1, LEN), LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!src || !dst)
		die("ibv_reg_mr");
	req = create_qp(pd, IBV_QPT_RC, cq, NULL, 4, 4, 0);
	resp = create_qp(pd, IBV_QPT_RC, cq, NULL, 4, 4,
			 IBV_ACCESS_REMOTE_READ);
	connect_qp(req, &(struct qp_path){ .dqpn = resp->qp_num, .dgid = gid,
					   .sgid_index = gidx });
	connect_qp(resp, &(struct qp_path){ .dqpn = req->qp_num, .dgid = gid,
					    .sgid_index = gidx });
	printf("responder %u\n", resp->qp_num);

	while (fgets(line, sizeof(line), stdin) && !strcmp(line, "read\n")) {
		unsigned char *s = src->addr, *d = dst->addr;
		struct ibv_sge sge = { .addr = (uintptr_t)d, .length = LEN,
				       .lkey = dst->lkey };
		struct ibv_send_wr wr = {
			.wr_id = ++round, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_READ,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = (uintptr_t)s,
				     .rkey = src->rkey },
		}, *bad;
		struct ibv_wc wc;
		size_t i, wrong = 0;

		for (i = 0; i < LEN; i++) {
			s[i] = (unsigned char)(i * 31 + round);
			d[i] = 0;
		}
		if (ibv_post_send(req, &wr, &bad))
			die("ibv_post_send");
		if (!poll_cq(cq, &wc, 30000)) {
			CHECK(false, "READ %u: no completion in 30 s", round);
			break;
		}
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == round,
		      "READ %u: %s (wr_id %llu)", round,
		      ibv_wc_status_str(wc.status),
		      (unsigned long long)wc.wr_id);
		for (i = 0; i < LEN; i++)
			wrong += d[i] != (unsigned char)(i * 31 + round);
		CHECK(!wrong, "READ %u: %zu of %d bytes wrong", round, wrong,
		      LEN);
		if (wc.status == IBV_WC_SUCCESS && !wrong)
			printf("read %u ok\n", round);
	}
	printf("%u checks, %u failures\n", checks, failures);
	return failures ? 1 : 0;
}
