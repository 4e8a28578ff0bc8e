// SPDX-License-Identifier: GPL-2.0
/*
 * One RDMA WRITE of 2 GiB (the largest message) at path MTU 256: 2^23
 * PSNs, half the PSN space, which a requester must not have outstanding
 * at once (stale ACKs would then look current). The guests have 1 GiB,
 * so each side's 2 GiB MR covers one 64 MiB memfd mapped 32 times over:
 * the responder's copy ends with the pattern at every offset (written 32
 * times), which it checks; then the QP must still carry a WRITE and a
 * READ of fresh data.
 *
 * Usage: sroce-bigwrite -d DEV -g GIDX [-c HOST] [-p PORT] [-n COPIES]
 * (without -c: the responder, which waits for the client)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"

#define ALIAS		(64ul << 20)
#define COPIES		32	/* 2 GiB */
#define SMALL		4096
#define TIMEOUT_MS	(2100 * 1000L)

struct endpoint_info {
	uint32_t qpn;
	uint32_t rkey;
	uint64_t addr;
	uint8_t gid[16];
};

static unsigned char pattern(size_t offset, unsigned int round)
{
	return (unsigned char)(offset * 7 + (offset >> 12) + round * 13 + 1);
}

static unsigned int copies = COPIES;
#define SPAN		(ALIAS * copies)

/* SPAN bytes of address space backed by one ALIAS-byte memfd. */
static unsigned char *aliased_span(void)
{
	unsigned char *span;
	unsigned int i;
	int fd = memfd_create("sroce-bigwrite", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, ALIAS))
		die("memfd");
	span = mmap(NULL, SPAN, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (span == MAP_FAILED)
		die("mmap span");
	for (i = 0; i < copies; i++)
		if (mmap(span + i * ALIAS, ALIAS, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
			die("mmap alias");
	close(fd);
	return span;
}

/* Bytes of span[from, to) that are not @round's pattern. */
static size_t count_wrong(const unsigned char *span, size_t from, size_t to,
			  unsigned int round)
{
	size_t i, wrong = 0;

	for (i = from; i < to; i++)
		wrong += span[i] != pattern(i, round);
	return wrong;
}

static enum ibv_wc_status rdma_op(struct ibv_qp *qp, struct ibv_cq *cq,
				  enum ibv_wr_opcode op, void *local,
				  uint32_t len, uint32_t lkey,
				  const struct endpoint_info *peer)
{
	struct ibv_sge sge = { .addr = (uintptr_t)local, .length = len,
			       .lkey = lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = peer->addr,
					       .rkey = peer->rkey } };
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	if (ibv_post_send(qp, &wr, &bad))
		die("ibv_post_send");
	if (!poll_cq(cq, &wc, TIMEOUT_MS))
		fatal("no completion in %ld s", TIMEOUT_MS / 1000);
	return wc.status;
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *host = NULL, *port = "18990";
	struct endpoint_info me, peer;
	struct ibv_context *ctx;
	union ibv_gid gid;
	unsigned char *span;
	struct ibv_mr *mr;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	enum ibv_wc_status st;
	int gidx = -1, sock, opt;
	uint32_t verdict;
	size_t wrong;
	long t0, ms;

	while ((opt = getopt(argc, argv, "d:g:c:p:n:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 'c': host = optarg; break;
		case 'p': port = optarg; break;
		case 'n': copies = atoi(optarg); break;	/* a quicker run */
		default: goto usage;
		}
	}
	if (!dev || gidx < 0 || !copies || copies > COPIES)
		goto usage;

	ctx = open_device(dev);
	gid = query_gid(ctx, gidx);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	if (!pd || !cq)
		die("pd, cq");
	span = aliased_span();
	if (host)
		for (size_t i = 0; i < ALIAS; i++)
			span[i] = pattern(i, 0);
	else
		memset(span, 0, ALIAS);
	mr = ibv_reg_mr(pd, span, SPAN, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr)
		die("ibv_reg_mr 2 GiB");
	qp = create_qp(pd, IBV_QPT_RC, cq, NULL, 4, 4,
		       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);

	me = (struct endpoint_info){ .qpn = qp->qp_num, .rkey = mr->rkey,
				     .addr = (uintptr_t)span };
	memcpy(me.gid, gid.raw, sizeof(me.gid));
	sock = side_channel(host, port, 180 * 1000);
	sc_send(sock, &me, sizeof(me));
	sc_recv(sock, &peer, sizeof(peer));
	struct qp_path path = { .dqpn = peer.qpn, .sgid_index = gidx,
				.mtu = IBV_MTU_256 };
	memcpy(path.dgid.raw, peer.gid, sizeof(path.dgid.raw));
	connect_qp(qp, &path);
	sc_send(sock, &me, sizeof(me));	/* connected */
	sc_recv(sock, &peer, sizeof(peer));

	if (!host) {
		/* the responder checks after the 2 GiB, then after the rest */
		for (unsigned int step = 0; step < 2; step++) {
			sc_recv(sock, &verdict, sizeof(verdict));
			wrong = count_wrong(span, 0, SMALL * step, 1) +
				count_wrong(span, SMALL * step, ALIAS, 0);
			if (wrong) {
				failures++;
				fprintf(stderr, "FAIL: step %u: %zu of %lu bytes wrong\n",
					step, wrong, ALIAS);
			}
			verdict = failures;
			sc_send(sock, &verdict, sizeof(verdict));
		}
		printf("bigwrite: responder: %u failures: %s\n", failures,
		       failures ? "FAIL" : "PASS");
		return failures ? 1 : 0;
	}

	t0 = now_ms();
	st = rdma_op(qp, cq, IBV_WR_RDMA_WRITE, span, (uint32_t)SPAN,
		     mr->lkey, &peer);
	ms = now_ms() - t0;
	if (st != IBV_WC_SUCCESS) {
		failures++;
		fprintf(stderr, "FAIL: the 2 GiB WRITE: %s\n", ibv_wc_status_str(st));
	}
	printf("bigwrite: %lu bytes at MTU 256 in %ld ms (%.1f MB/s): %s\n",
	       SPAN, ms, SPAN / 1e3 / (ms ? ms : 1), ibv_wc_status_str(st));
	sc_send(sock, &verdict, sizeof(verdict));
	sc_recv(sock, &verdict, sizeof(verdict));	/* the responder's count */
	/* fresh data through the same QP: its PSN state is still sound */
	for (size_t i = 0; i < SMALL; i++)
		span[i] = pattern(i, 1);
	st = rdma_op(qp, cq, IBV_WR_RDMA_WRITE, span, SMALL, mr->lkey, &peer);
	if (st == IBV_WC_SUCCESS) {
		memset(span, 0, SMALL);
		st = rdma_op(qp, cq, IBV_WR_RDMA_READ, span, SMALL, mr->lkey,
			     &peer);
		wrong = count_wrong(span, 0, SMALL, 1);
		if (st == IBV_WC_SUCCESS && wrong) {
			failures++;
			fprintf(stderr, "FAIL: READ back: %zu of %d bytes wrong\n",
				wrong, SMALL);
		}
	}
	if (st != IBV_WC_SUCCESS) {
		failures++;
		fprintf(stderr, "FAIL: after the 2 GiB WRITE: %s\n",
			ibv_wc_status_str(st));
	}
	sc_send(sock, &verdict, sizeof(verdict));
	sc_recv(sock, &verdict, sizeof(verdict));	/* all the responder's */
	failures += verdict;
	printf("bigwrite: client: %u failures (the responder's included): %s\n",
	       failures, failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;

usage:
	fprintf(stderr, "usage: %s -d DEV -g GIDX [-c HOST] [-p PORT] [-n 1..32]\n",
		argv[0]);
	return 2;
}
