// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-drop: one RC operation over rdma_cm, with its data checked, for
 * tests/integration/drop.sh, which drops a chosen packet of it with tc.
 *
 *   sroce-drop -s -b ADDR -p PORT -o OP -S SEED [-t SECONDS]   (server)
 *   sroce-drop -c ADDR -p PORT -o OP -S SEED [-T ACK_TIMEOUT] [-t SECONDS]
 *
 * The server offers one MR filled with data derived from SEED; the client
 * runs OP against it on a fresh QP (so OP's packets are the QP's first) and
 * disconnects once OP completed. OP is
 *   write   one RDMA WRITE of half an MTU (WRITE ONLY)
 *   read3   one RDMA READ of 2 MTUs + 100 bytes (three READ RESPONSEs)
 *   fadd    one FETCH_ADD
 *   write3  one RDMA WRITE of 2 MTUs + 100 bytes (FIRST, MIDDLE, LAST)
 *   write2  two WRITE ONLYs of 64 and 128 bytes, posted as one chain
 *   rnr5    five signaled SEND ONLYs posted as one chain, on a QP whose
 *           rnr_retry is 1 (the server's REP sets it); the server posts
 *           no receive until its device counted the first RNR NAK, then
 *           one receive (into its MR) per further RNR NAK: each message
 *           is RNR NAKed exactly once, and the client checks that all
 *           five succeed
 * The client checks READ data, the atomic's original value and for rnr5
 * that it had rnr_retry 1; the server checks rnr5's receive completions.
 * After the disconnect the server checks every byte of its MR against the
 * seed with OP applied exactly once. Each side prints what it checked and "PASS", or
 * the first mismatch and exits 1. No other packet than OP's own travels
 * on the QP: drop.sh counts the packets its filters see.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define MR_LEN 65536
#define MAX_RANGES 5
#define OFFER_MAGIC 0xd709c0deu

struct offer {
	uint32_t magic;
	uint32_t rkey;
	uint64_t addr;
};

/* One remote range an operation touches; the atomic is a range of 8. */
struct op_range {
	uint32_t off;
	uint32_t len;
};

static int timeout_s = 60;
static const char *op;
static uint64_t seed;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("FAIL: ", stdout);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	exit(1);
}

static void fill(uint64_t s, uint8_t *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		buf[i] = s >> 56;
	}
}

/*
 * The remote ranges OP writes (n of them) or reads, sized from the path
 * MTU, which both sides query from their QP. The atomic's addend.
 */
static int op_ranges(uint32_t mtu, struct op_range *r)
{
	if (!strcmp(op, "write")) {
		r[0] = (struct op_range){ 256, mtu / 2 };
		return 1;
	}
	if (!strcmp(op, "read3")) {
		r[0] = (struct op_range){ 64, 2 * mtu + 100 };
		return 1;
	}
	if (!strcmp(op, "fadd")) {
		r[0] = (struct op_range){ 8, 8 };
		return 1;
	}
	if (!strcmp(op, "write3")) {
		r[0] = (struct op_range){ 1000, 2 * mtu + 100 };
		return 1;
	}
	if (!strcmp(op, "write2")) {
		r[0] = (struct op_range){ 4096, 64 };
		r[1] = (struct op_range){ 4200, 128 };
		return 2;
	}
	if (!strcmp(op, "rnr5")) {
		int i;

		/* one packet each at any MTU; a receive WQE of 1024 bytes */
		for (i = 0; i < 5; i++)
			r[i] = (struct op_range){ 8192 + 1024 * i, 100 + 37 * i };
		return 5;
	}
	die("unknown operation '%s'", op);
	return 0;
}

static bool op_rnr(void)
{
	return !strcmp(op, "rnr5");
}

static uint64_t fadd_value(void)
{
	return (seed | 1) * 0x9e3779b97f4a7c15ull;
}

/* Does OP place the client's data (fill(seed ^ (0x57 + i))) in ranges? */
static bool op_writes(void)
{
	return strncmp(op, "write", 5) == 0 || op_rnr();
}

static uint32_t qp_mtu(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	if (ibv_query_qp(qp, &attr, IBV_QP_PATH_MTU, &init))
		die("ibv_query_qp: %s", strerror(errno));
	return 128u << attr.path_mtu;
}

static struct rdma_cm_event *cm_expect(struct rdma_event_channel *ch,
				       enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event: %s", strerror(errno));
	if (ev->event != type)
		die("rdma_cm event %s (status %d), expected %s",
		    rdma_event_str(ev->event), ev->status,
		    rdma_event_str(type));
	return ev;
}

static struct ibv_cq *make_qp(struct rdma_cm_id *id, struct ibv_pd **pd)
{
	struct ibv_qp_init_attr init = { 0 };
	struct ibv_cq *cq;

	*pd = ibv_alloc_pd(id->verbs);
	cq = *pd ? ibv_create_cq(id->verbs, 16, NULL, NULL, 0) : NULL;
	if (!cq)
		die("ibv_alloc_pd/ibv_create_cq: %s", strerror(errno));
	init.send_cq = cq;
	init.recv_cq = cq;
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = 8;
	init.cap.max_recv_wr = MAX_RANGES;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, *pd, &init))
		die("rdma_create_qp: %s", strerror(errno));
	return cq;
}

/* The device's count of RNR NAKs its responders sent. */
static uint64_t rnr_naks_sent(struct rdma_cm_id *id)
{
	char path[256];
	unsigned long long v;
	FILE *f;

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/%u/hw_counters/resp_rnr_naks",
		 ibv_get_device_name(id->verbs->device), id->port_num);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%llu", &v) != 1)
		die("server: cannot read %s", path);
	fclose(f);
	return v;
}

/*
 * rnr5's receiver: receive k is posted once the device sent its k-th RNR
 * NAK since @base, i.e. once message k was refused; the requester waits
 * its RNR timer (rdma_cm's min_rnr_timer 0: 655 ms) before it sends k
 * again, long enough to post. Then every receive must have completed in
 * order with its message's length.
 */
static void rnr_serve(struct rdma_cm_id *id, struct ibv_cq *cq,
		      struct ibv_mr *mr, const struct op_range *r, int n,
		      uint64_t base)
{
	struct timespec ts = { 0, 1000000 };
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint64_t naks;
	int k, got;

	for (k = 0; k < n; k++) {
		while (rnr_naks_sent(id) - base < (uint64_t)k + 1)
			nanosleep(&ts, NULL);
		sge = (struct ibv_sge){ (uintptr_t)mr->addr + r[k].off, 1024,
					mr->lkey };
		wr = (struct ibv_recv_wr){ .wr_id = k, .sg_list = &sge,
					   .num_sge = 1 };
		if (ibv_post_recv(id->qp, &wr, &bad))
			die("server: ibv_post_recv: %s", strerror(errno));
	}
	for (k = 0; k < n; k++) {
		while (!(got = ibv_poll_cq(cq, 1, &wc)))
			nanosleep(&ts, NULL);
		if (got < 0)
			die("server: ibv_poll_cq failed");
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
		    wc.wr_id != (uint64_t)k || wc.byte_len != r[k].len)
			die("server: rnr5: receive completion %d: %s, opcode %d, wr_id %" PRIu64 ", %u bytes; expected receive %d of %u bytes",
			    k, ibv_wc_status_str(wc.status), wc.opcode,
			    wc.wr_id, wc.byte_len, k, r[k].len);
	}
	naks = rnr_naks_sent(id) - base;
	if (naks != (uint64_t)n)
		die("server: rnr5: %" PRIu64 " RNR NAKs sent, expected %d",
		    naks, n);
	printf("server: rnr5: %d messages received, each after one RNR NAK\n",
	       n);
}

static int run_server(const char *bind_addr, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	struct rdma_conn_param param = { 0 };
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id, *id;
	struct rdma_cm_event *ev;
	struct op_range r[MAX_RANGES];
	uint8_t *mem, *want;
	struct offer offer;
	struct ibv_cq *cq;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint64_t v, naks0;
	uint32_t mtu, i;
	int n, err;

	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP))
		die("rdma_create_id: %s", strerror(errno));
	err = getaddrinfo(bind_addr, port, &hints, &ai);
	if (err)
		die("getaddrinfo(%s): %s", bind_addr, gai_strerror(err));
	if (rdma_bind_addr(listen_id, ai->ai_addr) || rdma_listen(listen_id, 1))
		die("rdma_bind_addr/listen: %s", strerror(errno));
	freeaddrinfo(ai);
	printf("server: listening on port %s\n", port);
	fflush(stdout);

	ev = cm_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	id = ev->id;
	rdma_ack_cm_event(ev);
	cq = make_qp(id, &pd);
	mem = aligned_alloc(4096, MR_LEN);
	want = malloc(MR_LEN);
	if (!mem || !want)
		die("out of memory");
	fill(seed, mem, MR_LEN);
	mr = ibv_reg_mr(pd, mem, MR_LEN, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC);
	if (!mr)
		die("ibv_reg_mr: %s", strerror(errno));
	offer = (struct offer){ OFFER_MAGIC, mr->rkey, (uintptr_t)mem };
	param.private_data = &offer;
	param.private_data_len = sizeof(offer);
	param.responder_resources = 4;
	param.initiator_depth = 4;
	/* the REP carries the client's rnr_retry */
	param.rnr_retry_count = op_rnr() ? 1 : 0;
	naks0 = rnr_naks_sent(id);	/* before the client can send */
	if (rdma_accept(id, &param))
		die("rdma_accept: %s", strerror(errno));
	rdma_ack_cm_event(cm_expect(ch, RDMA_CM_EVENT_ESTABLISHED));
	mtu = qp_mtu(id->qp);
	n = op_ranges(mtu, r);
	if (op_rnr())
		rnr_serve(id, cq, mr, r, n, naks0);
	/* the client disconnects once its operation completed */
	rdma_ack_cm_event(cm_expect(ch, RDMA_CM_EVENT_DISCONNECTED));

	fill(seed, want, MR_LEN);
	if (op_writes()) {
		for (i = 0; i < (uint32_t)n; i++)
			fill(seed ^ (0x57ull + i), want + r[i].off, r[i].len);
	} else if (!strcmp(op, "fadd")) {
		/* added once: a replayed atomic must not run again */
		memcpy(&v, want + r[0].off, 8);
		v += fadd_value();
		memcpy(want + r[0].off, &v, 8);
	}
	for (i = 0; i < MR_LEN; i++)
		if (mem[i] != want[i])
			die("server: %s: MR byte %u is 0x%02x, expected 0x%02x",
			    op, i, mem[i], want[i]);
	printf("server: %s (mtu %u): all %d bytes of the MR as expected: PASS\n",
	       op, mtu, MR_LEN);
	rdma_destroy_qp(id);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	rdma_destroy_id(id);
	rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(ch);
	free(mem);
	free(want);
	return 0;
}

/* The @n send completions, in order of wr_id 0.., all successful. */
static void wait_wcs(struct ibv_cq *cq, int n)
{
	struct timespec ts = { 0, 1000000 };
	struct ibv_wc wc;
	uint64_t next = 0;
	int got;

	while (n > 0) {
		got = ibv_poll_cq(cq, 1, &wc);
		if (got < 0)
			die("ibv_poll_cq failed");
		if (!got) {
			nanosleep(&ts, NULL);
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS)
			die("client: %s: work request %" PRIu64 " failed: %s",
			    op, wc.wr_id, ibv_wc_status_str(wc.status));
		if (wc.wr_id != next++)
			die("client: %s: work request %" PRIu64 " completed, expected %" PRIu64,
			    op, wc.wr_id, next - 1);
		n--;
	}
}

static int run_client(const char *addr, const char *port, uint8_t ack_timeout)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	struct ibv_send_wr wr[MAX_RANGES] = { 0 }, *bad;
	struct rdma_conn_param param = { 0 };
	struct ibv_qp_init_attr init;
	struct rdma_event_channel *ch;
	struct ibv_qp_attr attr;
	struct ibv_sge sge[MAX_RANGES];
	struct rdma_cm_event *ev;
	uint8_t *buf, *want;
	struct op_range r[MAX_RANGES];
	struct rdma_cm_id *id;
	struct offer offer;
	struct ibv_cq *cq;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint64_t orig;
	uint32_t mtu;
	int n, i, err;

	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		die("rdma_create_id: %s", strerror(errno));
	/* the retransmit timer the drop phases wait for */
	if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
			    &ack_timeout, sizeof(ack_timeout)))
		die("RDMA_OPTION_ID_ACK_TIMEOUT: %s", strerror(errno));
	err = getaddrinfo(addr, port, &hints, &ai);
	if (err)
		die("getaddrinfo(%s): %s", addr, gai_strerror(err));
	if (rdma_resolve_addr(id, NULL, ai->ai_addr, 5000))
		die("rdma_resolve_addr: %s", strerror(errno));
	freeaddrinfo(ai);
	rdma_ack_cm_event(cm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(id, 5000))
		die("rdma_resolve_route: %s", strerror(errno));
	rdma_ack_cm_event(cm_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	cq = make_qp(id, &pd);
	param.responder_resources = 4;
	param.initiator_depth = 4;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_connect(id, &param))
		die("rdma_connect: %s", strerror(errno));
	ev = cm_expect(ch, RDMA_CM_EVENT_ESTABLISHED);
	if (ev->param.conn.private_data_len < sizeof(offer))
		die("connect: no offer from the server");
	memcpy(&offer, ev->param.conn.private_data, sizeof(offer));
	rdma_ack_cm_event(ev);
	if (offer.magic != OFFER_MAGIC)
		die("connect: bad offer");
	if (ibv_query_qp(id->qp, &attr, IBV_QP_PATH_MTU | IBV_QP_TIMEOUT |
			 IBV_QP_RNR_RETRY, &init))
		die("ibv_query_qp: %s", strerror(errno));
	mtu = 128u << attr.path_mtu;
	if (op_rnr() && attr.rnr_retry != 1)
		die("client: rnr5: the QP's rnr_retry is %u, not 1",
		    attr.rnr_retry);

	buf = calloc(1, MR_LEN);
	want = malloc(MR_LEN);
	if (!buf || !want)
		die("out of memory");
	mr = ibv_reg_mr(pd, buf, MR_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr: %s", strerror(errno));
	fill(seed, want, MR_LEN);
	n = op_ranges(mtu, r);
	for (i = 0; i < n; i++) {
		sge[i] = (struct ibv_sge){ (uintptr_t)buf + r[i].off, r[i].len,
					   mr->lkey };
		wr[i].wr_id = i;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
		wr[i].wr.rdma.remote_addr = offer.addr + r[i].off;
		wr[i].wr.rdma.rkey = offer.rkey;
		if (op_writes()) {
			wr[i].opcode = op_rnr() ? IBV_WR_SEND :
						  IBV_WR_RDMA_WRITE;
			fill(seed ^ (0x57ull + i), buf + r[i].off, r[i].len);
		} else if (!strcmp(op, "read3")) {
			wr[i].opcode = IBV_WR_RDMA_READ;
		} else {
			wr[i].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			wr[i].wr.atomic.remote_addr = offer.addr + r[i].off;
			wr[i].wr.atomic.rkey = offer.rkey;
			wr[i].wr.atomic.compare_add = fadd_value();
		}
	}
	if (ibv_post_send(id->qp, wr, &bad))
		die("ibv_post_send: %s", strerror(errno));
	wait_wcs(cq, n);

	if (!strcmp(op, "read3")) {
		if (memcmp(buf + r[0].off, want + r[0].off, r[0].len))
			die("client: read3: the %u bytes read differ from the server's MR",
			    r[0].len);
		printf("client: read3: %u bytes read back as expected\n",
		       r[0].len);
	} else if (!strcmp(op, "fadd")) {
		memcpy(&orig, buf + r[0].off, 8);
		if (memcmp(&orig, want + r[0].off, 8))
			die("client: fadd: original value 0x%016" PRIx64 " is wrong",
			    orig);
		printf("client: fadd: original value 0x%016" PRIx64 " as expected\n",
		       orig);
	} else {
		for (i = 0; i < n; i++)
			printf("client: %s: %s %u bytes at offset %u\n", op,
			       op_rnr() ? "sent" : "wrote", r[i].len,
			       r[i].off);
	}
	printf("client: %s (mtu %u, QP timeout %u, rnr_retry %u): PASS\n",
	       op, mtu, attr.timeout, attr.rnr_retry);
	fflush(stdout);

	rdma_disconnect(id);
	rdma_ack_cm_event(cm_expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_destroy_qp(id);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	free(buf);
	free(want);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: sroce-drop -s -b ADDR -p PORT -o OP -S SEED [-t SECONDS]\n"
		"       sroce-drop -c ADDR -p PORT -o OP -S SEED [-T ACK_TIMEOUT] [-t SECONDS]\n"
		"OP: write read3 fadd write3 write2 rnr5\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *bind_addr = NULL, *port = "18700";
	bool server = false;
	int ack_timeout = 18, opt;

	while ((opt = getopt(argc, argv, "sc:b:p:o:S:T:t:")) != -1) {
		switch (opt) {
		case 's':
			server = true;
			break;
		case 'c':
			addr = optarg;
			break;
		case 'b':
			bind_addr = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 'o':
			op = optarg;
			break;
		case 'S':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'T':
			ack_timeout = atoi(optarg);
			break;
		case 't':
			timeout_s = atoi(optarg);
			break;
		default:
			usage();
		}
	}
	if (!op || server == !!addr || (server && !bind_addr) ||
	    ack_timeout < 1 || ack_timeout > 31)
		usage();
	/* a lost packet the transport never recovers must not hang the test */
	alarm(timeout_s);
	setvbuf(stdout, NULL, _IOLBF, 0);
	return server ? run_server(bind_addr, port) :
			run_client(addr, port, ack_timeout);
}
