// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-msg: every message of a UC or RC-with-SRQ connection checked, from
 * 1 byte to many packets. The stock ibv_uc_pingpong -c and
 * ibv_srq_pingpong -c look at one byte per page of the last receive buffer
 * only; this looks at all of them.
 *
 *   sroce-msg -d DEV -g GIDX -t uc|srq [-S] [-R] [-q QPS] [-n MSGS]
 *             [-M MAX] [-w WIN] [-e SEED] [-m PATH_MTU] [-p PORT] [-c HOST]
 *
 * PATH_MTU is the QPs' path MTU in bytes (256 to 4096, default 1024; both
 * sides must give the same).
 *
 * The sender's SEED (default 1) counts; the receiver's -e is ignored.
 *
 * The side with -S sends, the other receives; without -c a side listens
 * on PORT for the other's TCP connection, which carries QP numbers, GIDs,
 * PSNs and the write area's key, then one credit per batch: the receiver
 * posts WIN receive WQEs per QP (uc: one RQ per QP; srq: QPS x WIN in one
 * SRQ shared by the QPS RC QPs), poisons the write slots, and only then
 * lets the sender post the next WIN messages of every QP.
 *
 * Message j of QP q is size(j) bytes (a table from 1 byte to MAX, every
 * size with every opcode) of a pattern of (seed, q, j), sent as SEND,
 * SEND with immediate or RDMA WRITE with immediate (into slot j % WIN of
 * q's part of the receiver's write area), the immediate being q << 24 | j.
 * The receiver checks every completion: status, opcode, the immediate,
 * byte_len, the QP it arrived on (wc.qp_num, which for srq is the one
 * thing telling the QPs sharing the SRQ apart), that it comes after the
 * QP's earlier messages, every byte of the payload, and that the 64 bytes
 * after it are untouched (write slots; receive buffers on srq, whose WQEs
 * a lost UC message cannot have left partly written). Every message must
 * arrive exactly once; srq loses none. UC loses a whole message when any
 * of its packets is lost: the receiver reports the count ("N lost") for
 * the caller to compare with the counters of the link.
 *
 * With -R the sender overwrites each message's buffer as soon as its send
 * completion arrives, as an application reusing its buffers may: a
 * completion must mean that nothing still to be sent reads the buffer, so
 * the receiver must see every message intact and none lost.
 *
 * The last line is "msg: ... F failures: PASS" (or FAIL); exit 1 on any
 * failed check, 2 when the run could not be set up.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

#define MAX_QPS 16
#define GUARD 64
#define POISON 0xa5
#define TIMEOUT_MS 60000
#define MAGIC 0x73724d32	/* "srM2" */

enum op { OP_SEND_IMM, OP_WRITE_IMM, OP_SEND };
static const char *const op_name[] = { "SEND with immediate",
				       "RDMA WRITE with immediate", "SEND" };

/*
 * message sizes: one packet and its edges at every path MTU (256 to 4096),
 * and up to 128 packets at 1024
 */
static const uint32_t size_table[] = {
	1, 2, 3, 8, 63, 255, 256, 257, 512, 513, 1000, 1023, 1024, 1025, 2047,
	2048, 2049, 3000, 4096, 4097, 8191, 8192, 16384, 32769, 65536, 65537,
	100000, 131072,
};

struct hello {
	uint32_t magic, uc, qps, msgs, max, win, seed, sender, mtu;
	uint32_t wrkey;
	uint64_t waddr;
	uint8_t gid[16];
	uint32_t qpn[MAX_QPS], psn[MAX_QPS];
};

struct ctl {
	uint32_t what, batch;
};

enum { CTL_GO = 1, CTL_DONE, CTL_END };

static bool uc, reuse;
static unsigned int qps = 4, msgs = 198, max_size = 131072, win = 16;
static unsigned int seed = 1;
static enum ibv_mtu path_mtu = IBV_MTU_1024;
static uint32_t sizes[sizeof(size_table) / sizeof(size_table[0]) + 1];
static unsigned int nsizes, op_step;
static size_t slot_size;

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_srq *srq;
static struct ibv_qp *qp[MAX_QPS];
static struct ibv_mr *mr, *wmr;
static uint8_t *buf, *wbuf;	/* send or receive slots; the write area */
static int sock;
static uint64_t raddr;		/* the sender's view of the write area */
static uint32_t rkey;

/* A path MTU in bytes as the verbs enum; 0 for any other number. */
static enum ibv_mtu mtu_enum(unsigned long bytes)
{
	static const unsigned long mtus[] = { 256, 512, 1024, 2048, 4096 };
	unsigned int i;

	for (i = 0; i < sizeof(mtus) / sizeof(mtus[0]); i++)
		if (bytes == mtus[i])
			return IBV_MTU_256 + i;
	return 0;
}

static uint32_t msg_size(unsigned int j)
{
	return sizes[j % nsizes];
}

/* every (size, opcode) pair once in 3 * nsizes messages */
static enum op msg_op(unsigned int j)
{
	return (j + op_step * (j / nsizes)) % 3;
}

static uint32_t psn_of(unsigned int q, bool sender)
{
	return (seed * 2654435761u + q * 7919u + (sender ? 0x5000 : 0)) &
	       0xffffff;
}

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The pattern of message j of QP q: a splitmix64 stream of the three. */
static void pattern(uint8_t *p, uint32_t len, unsigned int q, unsigned int j)
{
	uint64_t x = mix(((uint64_t)seed << 40) ^ ((uint64_t)q << 32) ^ j);
	uint64_t w;
	uint32_t i;

	for (i = 0; i < len; i += 8) {
		x += 0x9e3779b97f4a7c15ull;
		w = mix(x);
		memcpy(p + i, &w, len - i < 8 ? len - i : 8);
	}
}

/* First byte of p[0..len) that differs from message (q, j), or -1. */
static long differs(const uint8_t *p, uint32_t len, unsigned int q,
		    unsigned int j, uint8_t *want)
{
	uint32_t i;

	pattern(want, len, q, j);
	if (!memcmp(p, want, len))
		return -1;
	for (i = 0; p[i] == want[i]; i++)
		;
	return i;
}

/* ---- setup ---- */

static void setup_sizes(void)
{
	unsigned int i;

	for (i = 0; i < sizeof(size_table) / sizeof(size_table[0]); i++)
		if (size_table[i] < max_size)
			sizes[nsizes++] = size_table[i];
	sizes[nsizes++] = max_size;
	op_step = (nsizes + 1) % 3 ? 1 : 2;
	slot_size = (max_size + GUARD + 4095) & ~4095ul;
}

static void *area(size_t len)
{
	void *p = aligned_alloc(4096, len);

	if (!p)
		die("aligned_alloc");
	memset(p, POISON, len);
	return p;
}

static void hello_check(const struct hello *a, const struct hello *b)
{
	if (b->magic != MAGIC)
		fatal("the peer is no sroce-msg of this version");
	if (a->uc != b->uc || a->qps != b->qps || a->msgs != b->msgs ||
	    a->max != b->max || a->win != b->win || a->mtu != b->mtu)
		fatal("the peer runs another test (type, -q, -n, -M, -w, -m)");
	if (a->sender == b->sender)
		fatal("exactly one side sends (-S)");
}

static void setup(bool sender, int gidx, const char *host,
		  const char *port)
{
	struct hello me = { .magic = MAGIC, .uc = uc, .qps = qps,
			    .msgs = msgs, .max = max_size, .win = win,
			    .seed = seed, .sender = sender, .mtu = path_mtu },
		     peer;
	struct qp_path path = { .sgid_index = gidx, .mtu = path_mtu };
	size_t len = (size_t)qps * win * slot_size;
	struct ibv_srq_init_attr sattr = {
		.attr = { .max_wr = qps * win, .max_sge = 1 } };
	uint32_t ready;
	unsigned int q;

	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 2 * qps * win + 8, NULL, NULL, 0);
	if (!pd || !cq)
		die("pd/cq");
	buf = area(len);
	mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	if (!sender) {
		wbuf = area(len);
		wmr = ibv_reg_mr(pd, wbuf, len, IBV_ACCESS_LOCAL_WRITE |
				 IBV_ACCESS_REMOTE_WRITE);
		if (!wmr)
			die("ibv_reg_mr (write area)");
		me.waddr = (uintptr_t)wbuf;
		me.wrkey = wmr->rkey;
		if (!uc) {
			srq = ibv_create_srq(pd, &sattr);
			if (!srq)
				die("ibv_create_srq");
		}
	}
	for (q = 0; q < qps; q++) {
		qp[q] = create_qp(pd, uc ? IBV_QPT_UC : IBV_QPT_RC, cq, srq,
				  sender ? win : 1, sender ? 1 : win,
				  sender ? 0 : IBV_ACCESS_REMOTE_WRITE);
		me.qpn[q] = qp[q]->qp_num;
		me.psn[q] = psn_of(q, sender);
	}
	memcpy(me.gid, query_gid(ctx, gidx).raw, 16);

	sock = side_channel(host, port, TIMEOUT_MS);
	sc_send(sock, &me, sizeof(me));
	sc_recv(sock, &peer, sizeof(peer));
	hello_check(&me, &peer);
	/* the sender's seed makes the patterns */
	if (!sender)
		seed = peer.seed;
	memcpy(path.dgid.raw, peer.gid, 16);
	for (q = 0; q < qps; q++) {
		path.dqpn = peer.qpn[q];
		path.rq_psn = peer.psn[q];
		path.sq_psn = me.psn[q];
		connect_qp(qp[q], &path);
	}
	raddr = peer.waddr;
	rkey = peer.wrkey;
	/* both sides in RTS before a message is sent */
	ready = MAGIC;
	sc_send(sock, &ready, sizeof(ready));
	sc_recv(sock, &ready, sizeof(ready));
}

static void ctl_send(uint32_t what, uint32_t batch)
{
	struct ctl c = { .what = what, .batch = batch };

	sc_send(sock, &c, sizeof(c));
}

static void ctl_expect(uint32_t what, uint32_t batch)
{
	struct ctl c;

	sc_recv(sock, &c, sizeof(c));
	if (c.what != what || c.batch != batch)
		fatal("side channel: got %u/%u, expected %u/%u", c.what,
		      c.batch, what, batch);
}

static unsigned int batches(void)
{
	return (msgs + win - 1) / win;
}

/* ---- the sender ---- */

static void send_one(unsigned int q, unsigned int j)
{
	size_t slot = (size_t)q * win + j % win;
	uint8_t *p = buf + slot * slot_size;
	uint32_t len = msg_size(j);
	struct ibv_sge sge = { .addr = (uintptr_t)p, .length = len,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = j, .sg_list = &sge, .num_sge = 1,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	pattern(p, len, q, j);
	switch (msg_op(j)) {
	case OP_SEND:
		wr.opcode = IBV_WR_SEND;
		break;
	case OP_SEND_IMM:
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.imm_data = htonl(q << 24 | j);
		break;
	case OP_WRITE_IMM:
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htonl(q << 24 | j);
		wr.wr.rdma.remote_addr = raddr + slot * slot_size;
		wr.wr.rdma.rkey = rkey;
		break;
	}
	if (ibv_post_send(qp[q], &wr, &bad))
		die("ibv_post_send");
}

/* -R: the buffer of the message @wc completed is the application's again. */
static void overwrite(const struct ibv_wc *wc)
{
	unsigned int q;

	for (q = 0; q < qps && qp[q]->qp_num != wc->qp_num; q++)
		;
	if (q == qps)
		fatal("a completion of QP %u, not one of ours", wc->qp_num);
	memset(buf + ((size_t)q * win + wc->wr_id % win) * slot_size, 0x5a,
	       msg_size(wc->wr_id));
}

static void sender(void)
{
	unsigned int b, j, q, n, sent = 0;
	struct ibv_wc wc;

	for (b = 0; b < batches(); b++) {
		ctl_expect(CTL_GO, b);
		n = 0;
		for (j = b * win; j < msgs && j < (b + 1) * win; j++)
			for (q = 0; q < qps; q++, n++)
				send_one(q, j);
		while (n--) {
			if (!poll_cq(cq, &wc, TIMEOUT_MS))
				fatal("batch %u: %u send completions missing",
				      b, n + 1);
			CHECK(wc.status == IBV_WC_SUCCESS,
			      "send of message %" PRIu64 ": status %s",
			      wc.wr_id, ibv_wc_status_str(wc.status));
			CHECK(wc.status || wc.opcode ==
			      (msg_op(wc.wr_id) == OP_WRITE_IMM ?
			       IBV_WC_RDMA_WRITE : IBV_WC_SEND),
			      "send of message %" PRIu64 ": opcode %d",
			      wc.wr_id, wc.opcode);
			if (reuse)
				overwrite(&wc);
			sent++;
		}
		ctl_send(CTL_DONE, b);
	}
	/* the receiver has seen everything before the QPs go */
	ctl_expect(CTL_END, b);
	printf("msg: %s sender, %u QPs x %u messages of 1..%u bytes, path MTU %d, seed %u, %u sent%s, %u failures: %s\n",
	       uc ? "uc" : "srq", qps, msgs, max_size,
	       128 << path_mtu, seed, sent,
	       reuse ? " (buffers overwritten on completion)" : "", failures,
	       failures ? "FAIL" : "PASS");
}

/* ---- the receiver ---- */

static uint8_t *seen;		/* [q * msgs + j] */
static long *last;		/* [q]: the latest message that arrived */
static bool *posted;		/* [slot] */
static uint32_t *used;		/* [slot]: bytes written at its last use */
static uint8_t *want;
static unsigned int received, by_op[3];

/* Repost every receive slot, poisoning what its last message wrote. */
static void top_up(void)
{
	unsigned int s, n = qps * win;
	struct ibv_sge sge = { .length = max_size, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	for (s = 0; s < n; s++) {
		if (posted[s])
			continue;
		memset(buf + s * slot_size, POISON,
		       used[s] + GUARD < slot_size ? used[s] + GUARD :
		       slot_size);
		sge.addr = (uintptr_t)(buf + s * slot_size);
		wr.wr_id = s;
		if (srq ? ibv_post_srq_recv(srq, &wr, &bad) :
			  ibv_post_recv(qp[s / win], &wr, &bad))
			die("post receive");
		posted[s] = true;
	}
}

static void poison_writes(unsigned int b)
{
	unsigned int j, q;
	uint32_t len;

	for (q = 0; q < qps; q++)
		for (j = b * win; j < msgs && j < (b + 1) * win; j++) {
			len = msg_size(j) + GUARD;
			memset(wbuf + ((size_t)q * win + j % win) * slot_size,
			       POISON, len < slot_size ? len : slot_size);
		}
}

static bool guard_ok(const uint8_t *p, uint32_t len)
{
	uint32_t i, end = len + GUARD < slot_size ? len + GUARD : slot_size;

	for (i = len; i < end; i++)
		if (p[i] != POISON)
			return false;
	return true;
}

/* The message a plain SEND of @len bytes on QP q is: the next one that fits. */
static long which_send(unsigned int q, const uint8_t *p, uint32_t len)
{
	unsigned long j;

	for (j = last[q] + 1; j < msgs; j++)
		if (msg_op(j) == OP_SEND && msg_size(j) == len &&
		    differs(p, len, q, j, want) < 0)
			return j;
	return -1;
}

static void check_wc(const struct ibv_wc *wc)
{
	unsigned int q, s = wc->wr_id, sq;
	const uint8_t *p = buf + (size_t)s * slot_size;
	enum op op;
	uint32_t v;
	long j, bad;

	posted[s] = false;
	used[s] = max_size;
	CHECK(wc->status == IBV_WC_SUCCESS, "receive WQE %u: status %s", s,
	      ibv_wc_status_str(wc->status));
	if (wc->status != IBV_WC_SUCCESS)
		return;
	used[s] = wc->byte_len < max_size ? wc->byte_len : max_size;
	for (q = 0; q < qps && qp[q]->qp_num != wc->qp_num; q++)
		;
	CHECK(q < qps, "a completion for QP %#x, none of ours", wc->qp_num);
	if (q == qps)
		return;
	CHECK(srq || s / win == q, "WQE %u of QP %u completed on QP %u", s,
	      s / win, q);

	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		op = OP_WRITE_IMM;
	} else if (wc->opcode == IBV_WC_RECV) {
		op = wc->wc_flags & IBV_WC_WITH_IMM ? OP_SEND_IMM : OP_SEND;
	} else {
		CHECK(0, "QP %u: receive opcode %d", q, wc->opcode);
		return;
	}
	if (op == OP_SEND) {
		j = which_send(q, p, wc->byte_len);
		CHECK(j >= 0, "QP %u: a SEND of %u bytes that none of its remaining SENDs matches (after message %ld)",
		      q, wc->byte_len, last[q]);
		if (j < 0)
			return;
	} else {
		CHECK(wc->wc_flags & IBV_WC_WITH_IMM, "QP %u: %s without IBV_WC_WITH_IMM",
		      q, op_name[op]);
		v = ntohl(wc->imm_data);
		sq = v >> 24;
		j = v & 0xffffff;
		CHECK(sq == q, "message %ld of QP %u arrived on QP %u", j, sq,
		      q);
		CHECK(j < msgs, "QP %u: immediate %#x: no such message", q, v);
		if (sq != q || j >= msgs)
			return;
		CHECK(msg_op(j) == op, "QP %u message %ld: a %s, sent as %s",
		      q, j, op_name[op], op_name[msg_op(j)]);
		CHECK(wc->byte_len == msg_size(j),
		      "QP %u message %ld: byte_len %u, sent %u", q, j,
		      wc->byte_len, msg_size(j));
		if (op == OP_WRITE_IMM)
			p = wbuf + ((size_t)q * win + j % win) * slot_size;
		bad = differs(p, msg_size(j) < wc->byte_len ? msg_size(j) :
			      wc->byte_len, q, j, want);
		CHECK(bad < 0, "QP %u message %ld (%s, %u bytes): byte %ld is %#x, not %#x",
		      q, j, op_name[op], msg_size(j), bad, bad < 0 ? 0 : p[bad],
		      bad < 0 ? 0 : want[bad]);
	}
	CHECK(!seen[q * msgs + j], "QP %u message %ld arrived again", q, j);
	CHECK(seen[q * msgs + j] || j > last[q],
	      "QP %u message %ld arrived after message %ld", q, j, last[q]);
	if ((op == OP_WRITE_IMM || srq) && wc->byte_len == msg_size(j))
		CHECK(guard_ok(p, msg_size(j)),
		      "QP %u message %ld: written beyond its %u bytes", q, j,
		      msg_size(j));
	if (j > last[q])
		last[q] = j;
	seen[q * msgs + j]++;
	by_op[op]++;
	received++;
}

static void receiver(void)
{
	unsigned int b, j, q, expect, got, lost = 0;
	unsigned int slots = qps * win;
	long quiet_end;
	struct ibv_wc wc;

	seen = calloc((size_t)qps * msgs, 1);
	last = calloc(qps, sizeof(*last));
	posted = calloc(slots, sizeof(*posted));
	used = calloc(slots, sizeof(*used));
	want = malloc(max_size);
	if (!seen || !last || !posted || !used || !want)
		die("calloc");
	for (q = 0; q < qps; q++)
		last[q] = -1;
	for (j = 0; j < slots; j++)
		used[j] = max_size;
	for (b = 0; b < batches(); b++) {
		top_up();
		poison_writes(b);
		ctl_send(CTL_GO, b);
		expect = qps * ((b + 1) * win < msgs ? win : msgs - b * win);
		ctl_expect(CTL_DONE, b);
		/*
		 * The sender's completions are in: RC's messages have all
		 * arrived, UC's are on the way or lost, which silence for a
		 * while tells.
		 */
		for (got = 0; got < expect; got++) {
			quiet_end = now_ms() + (uc ? 3000 : TIMEOUT_MS);
			if (!poll_cq(cq, &wc, quiet_end - now_ms()))
				break;
			check_wc(&wc);
		}
		CHECK(uc || got == expect, "batch %u: %u of %u messages arrived",
		      b, got, expect);
	}
	ctl_send(CTL_END, b);
	/* a late message: one that arrived after its batch's silence */
	usleep(200000);
	while (ibv_poll_cq(cq, 1, &wc) > 0)
		check_wc(&wc);

	for (q = 0; q < qps; q++)
		for (j = 0; j < msgs; j++)
			if (!seen[q * msgs + j]) {
				lost++;
				if (!uc || lost <= 20)
					printf("msg: QP %u message %u (%s, %u bytes) lost\n",
					       q, j, op_name[msg_op(j)],
					       msg_size(j));
			}
	CHECK(uc || !lost, "RC lost %u messages", lost);
	CHECK(received + lost == qps * msgs, "%u received + %u lost != %u sent",
	      received, lost, qps * msgs);
	printf("msg: %s receiver, %u QPs x %u messages of 1..%u bytes, path MTU %d, seed %u, %u received (%u SEND, %u SEND-imm, %u WRITE-imm), %u lost, %u failures: %s\n",
	       uc ? "uc" : "srq", qps, msgs, max_size, 128 << path_mtu, seed,
	       received,
	       by_op[OP_SEND], by_op[OP_SEND_IMM], by_op[OP_WRITE_IMM], lost,
	       failures, failures ? "FAIL" : "PASS");
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *host = NULL, *port = "18555", *type = NULL;
	bool send_side = false;
	unsigned int q;
	int gidx = -1, c;

	while ((c = getopt(argc, argv, "d:g:t:SRq:n:M:w:e:m:p:c:")) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 't': type = optarg; break;
		case 'S': send_side = true; break;
		case 'R': reuse = true; break;
		case 'q': qps = strtoul(optarg, NULL, 0); break;
		case 'n': msgs = strtoul(optarg, NULL, 0); break;
		case 'M': max_size = strtoul(optarg, NULL, 0); break;
		case 'w': win = strtoul(optarg, NULL, 0); break;
		case 'e': seed = strtoul(optarg, NULL, 0); break;
		case 'm': path_mtu = mtu_enum(strtoul(optarg, NULL, 0)); break;
		case 'p': port = optarg; break;
		case 'c': host = optarg; break;
		default: goto usage;
		}
	}
	if (!dev || gidx < 0 || !type || (strcmp(type, "uc") &&
					  strcmp(type, "srq")) ||
	    !qps || qps > MAX_QPS || !msgs || msgs > 0xffffff || !win ||
	    max_size < 1 || !path_mtu)
		goto usage;
	uc = !strcmp(type, "uc");
	setup_sizes();
	ctx = open_device(dev);
	setup(send_side, gidx, host, port);
	if (send_side)
		sender();
	else
		receiver();
	for (q = 0; q < qps; q++)
		ibv_destroy_qp(qp[q]);
	if (srq)
		ibv_destroy_srq(srq);
	ibv_dereg_mr(mr);
	if (wmr)
		ibv_dereg_mr(wmr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	close(sock);
	return failures ? 1 : 0;

usage:
	fprintf(stderr, "usage: %s -d DEV -g GIDX -t uc|srq [-S] [-R] [-q QPS (1..%d)] [-n MSGS] [-M MAX] [-w WIN] [-e SEED] [-m 256|512|1024|2048|4096] [-p PORT] [-c HOST]\n",
		argv[0], MAX_QPS);
	return 2;
}
