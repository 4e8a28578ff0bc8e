// SPDX-License-Identifier: GPL-2.0
/*
 * An RC QP that outlives its network: connect, exchange verified data,
 * then hold the QP until told to destroy it.
 *
 * sroce-hold -d DEV -g GIDX [-c] [-n NETNS] [-m MESSAGES]
 *
 * Talks on stdin/stdout, one line each: prints "local QPN GID" (GID as
 * 32 hex digits), reads the peer's "QPN GID", connects, and exchanges
 * MESSAGES (default 64) SENDs of 4096 bytes in turn with the peer (-c
 * sends first), each checked byte by byte. Then it prints "ready N
 * verified" and, with -n, moves itself to the network namespace NETNS
 * (e.g. /proc/1/ns/net), so it does not keep the device's namespace
 * alive. It waits for a line "destroy" on stdin, destroys every object,
 * prints "destroyed" and exits 0 (1: a check failed, 2: setup failed).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

#define MSG_LEN 4096

static void gid_to_hex(const union ibv_gid *gid, char *hex)
{
	int i;

	for (i = 0; i < 16; i++)
		sprintf(hex + 2 * i, "%02x", gid->raw[i]);
}

static int hex_to_gid(const char *hex, union ibv_gid *gid)
{
	unsigned int b;
	int i;

	if (strlen(hex) != 32)
		return -1;
	for (i = 0; i < 16; i++) {
		if (sscanf(hex + 2 * i, "%2x", &b) != 1)
			return -1;
		gid->raw[i] = b;
	}
	return 0;
}

static void post_recv(struct ibv_qp *qp, struct ibv_mr *mr, char *buf)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = MSG_LEN,
			       .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		die("ibv_post_recv");
}

static void send_msg(struct ibv_qp *qp, struct ibv_mr *mr, char *buf, int i)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = MSG_LEN,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	int j;

	for (j = 0; j < MSG_LEN; j++)
		buf[j] = (char)(i * 7 + j);
	if (ibv_post_send(qp, &wr, &bad))
		die("ibv_post_send");
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *netns = NULL;
	int gidx = -1, messages = 64, first = 0, c, i, j, verified = 0;
	struct qp_path path = {};
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct ibv_wc wc;
	union ibv_gid gid;
	char hex[33], line[128], *buf;
	unsigned int dqpn;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "d:g:cn:m:")) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 'c': first = 1; break;
		case 'n': netns = optarg; break;
		case 'm': messages = atoi(optarg); break;
		default: fatal("bad option");
		}
	}
	if (!dev || gidx < 0 || messages < 1)
		fatal("usage: sroce-hold -d DEV -g GIDX [-c] [-n NETNS] [-m N]");

	ctx = open_device(dev);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	buf = aligned_alloc(4096, 2 * MSG_LEN);
	if (!pd || !cq || !buf)
		die("pd/cq/buffer");
	mr = ibv_reg_mr(pd, buf, 2 * MSG_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	qp = create_qp(pd, IBV_QPT_RC, cq, NULL, 2, 2, 0);
	post_recv(qp, mr, buf + MSG_LEN);

	gid = query_gid(ctx, gidx);
	gid_to_hex(&gid, hex);
	printf("local %u %s\n", qp->qp_num, hex);
	if (!fgets(line, sizeof(line), stdin) ||
	    sscanf(line, "%u %32s", &dqpn, hex) != 2 ||
	    hex_to_gid(hex, &path.dgid))
		fatal("no peer QPN and GID on stdin");
	path.dqpn = dqpn;
	path.sgid_index = gidx;
	connect_qp(qp, &path);

	for (i = 0; i < messages; i++) {
		if ((i & 1) == !first) {
			send_msg(qp, mr, buf, i);
			if (!poll_cq(cq, &wc, 20000))
				fatal("message %d: no send completion", i);
			CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)i,
			      "message %d: send status %s", i,
			      ibv_wc_status_str(wc.status));
			continue;
		}
		if (!poll_cq(cq, &wc, 20000))
			fatal("message %d: nothing received", i);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == MSG_LEN,
		      "message %d: receive status %s, %u bytes", i,
		      ibv_wc_status_str(wc.status), wc.byte_len);
		for (j = 0; j < MSG_LEN &&
		     buf[MSG_LEN + j] == (char)(i * 7 + j); j++)
			;
		CHECK(j == MSG_LEN, "message %d: byte %d differs", i, j);
		verified += j == MSG_LEN;
		post_recv(qp, mr, buf + MSG_LEN);
	}
	printf("ready %d verified\n", verified);

	if (netns) {
		int fd = open(netns, O_RDONLY);

		if (fd < 0 || setns(fd, CLONE_NEWNET))
			die(netns);
		close(fd);
	}
	while (fgets(line, sizeof(line), stdin) && strcmp(line, "destroy\n"))
		;
	if (ibv_destroy_qp(qp) || ibv_dereg_mr(mr) || ibv_destroy_cq(cq) ||
	    ibv_dealloc_pd(pd) || ibv_close_device(ctx))
		die("destroy");
	printf("destroyed\n");
	return failures ? 1 : 0;
}
