// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-fault-create DEV GID_INDEX: every allocation a verb makes in the
 * kernel fails once, and the verb either refuses cleanly or succeeds; for
 * tests/integration/fault-create.sh on the debug kernel.
 *
 * Systematic fault injection (/proc/thread-self/fail-nth, the kernel's
 * failslab and fail_page_alloc): for each step below, in order, the n-th
 * injectable allocation in this thread fails, for n = 1, 2, ... until the
 * step completes before reaching its n-th allocation. A step that fails
 * must report an error (NULL with errno, or a non-zero return) and leave
 * nothing behind; one that succeeds although an allocation failed is
 * undone and tried with the next n. The data steps (an RC WRITE and a UD
 * SEND on loopback QPs) must complete with the right bytes whatever failed
 * while they were posted: a packet that could not be built is built again.
 *
 * Every object is then destroyed; the script checks that the device holds
 * no object of ours and the debug kernel's reports (kmemleak, KASAN).
 * Prints one line per step ("<step>: <points> points, <refused> refused,
 * <tolerated> tolerated") and "<checks> checks, <failures> failures";
 * exit status 1 if a check failed, 2 if the setup failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"

#define BUF_SIZE	(64 * 1024)
#define WRITE_LEN	(16 * 1024)
#define UD_LEN		512
#define GRH_LEN		40
/* the most allocations one step may make before the test calls it a loop */
#define MAX_POINTS	2000

struct world {
	struct ibv_device *dev;
	int gid_index;
	union ibv_gid gid;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	unsigned char *buf;
	struct ibv_mr *mr;
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq;
	struct ibv_qp *rc;
	struct ibv_srq *srq;
	struct ibv_qp *rc_srq;
	struct ibv_qp *ud;
	struct ibv_ah *ah;
	struct ibv_mw *mw;
	unsigned int round;	/* varies the data steps' pattern */
};

static int fail_nth_fd;

/* Arm the n-th injectable allocation of this thread to fail (0: disarm). */
static void arm(unsigned int n)
{
	char s[16];
	int len = snprintf(s, sizeof(s), "%u", n);

	if (pwrite(fail_nth_fd, s, len, 0) != len)
		die("write fail-nth");
}

/* Has the armed failure happened yet? (It stays armed.) */
static bool fired(void)
{
	char s[16] = "";

	if (pread(fail_nth_fd, s, sizeof(s) - 1, 0) <= 0)
		die("read fail-nth");
	return atoi(s) == 0;
}

/* Did the armed failure happen? Disarms it either way. */
static bool injected(void)
{
	bool hit = fired();

	arm(0);
	return hit;
}

/* NULL from a creating verb: its errno, never 0 */
static int refusal(const void *obj)
{
	if (obj)
		return 0;
	return errno ? errno : -1;
}

static int make_open(struct world *w)
{
	w->ctx = ibv_open_device(w->dev);
	return refusal(w->ctx);
}

static void undo_open(struct world *w)
{
	if (ibv_close_device(w->ctx))
		die("ibv_close_device");
	w->ctx = NULL;
}

static int make_pd(struct world *w)
{
	w->pd = ibv_alloc_pd(w->ctx);
	return refusal(w->pd);
}

static void undo_pd(struct world *w)
{
	if (ibv_dealloc_pd(w->pd))
		die("ibv_dealloc_pd");
	w->pd = NULL;
}

static int make_mr(struct world *w)
{
	w->mr = ibv_reg_mr(w->pd, w->buf, BUF_SIZE,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND);
	return refusal(w->mr);
}

static void undo_mr(struct world *w)
{
	if (ibv_dereg_mr(w->mr))
		die("ibv_dereg_mr");
	w->mr = NULL;
}

static int make_channel(struct world *w)
{
	w->channel = ibv_create_comp_channel(w->ctx);
	return refusal(w->channel);
}

static void undo_channel(struct world *w)
{
	if (ibv_destroy_comp_channel(w->channel))
		die("ibv_destroy_comp_channel");
	w->channel = NULL;
}

static int make_cq(struct world *w)
{
	w->cq = ibv_create_cq(w->ctx, 256, NULL, w->channel, 0);
	return refusal(w->cq);
}

static void undo_cq(struct world *w)
{
	if (ibv_destroy_cq(w->cq))
		die("ibv_destroy_cq");
	w->cq = NULL;
}

static struct ibv_qp *new_qp(struct world *w, enum ibv_qp_type type,
			     struct ibv_srq *srq)
{
	struct ibv_qp_init_attr init = {
		.send_cq = w->cq, .recv_cq = w->cq, .srq = srq,
		.qp_type = type,
		.cap = { .max_send_wr = 64, .max_recv_wr = srq ? 0 : 64,
			 .max_send_sge = 2, .max_recv_sge = 2 },
	};

	return ibv_create_qp(w->pd, &init);
}

static int make_rc(struct world *w)
{
	w->rc = new_qp(w, IBV_QPT_RC, NULL);
	return refusal(w->rc);
}

static void destroy_qp(struct ibv_qp **qp)
{
	if (ibv_destroy_qp(*qp))
		die("ibv_destroy_qp");
	*qp = NULL;
}

static void undo_rc(struct world *w)
{
	destroy_qp(&w->rc);
}

/* RESET -> INIT -> RTR -> RTS, the QP connected to itself */
static int connect_self(struct world *w, struct ibv_qp *qp)
{
	bool rc = qp->qp_type == IBV_QPT_RC;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	int mask;

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return errno;
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	if (rc)
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ;
	else
		a.qkey = 0x11111111;
	mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
	       (rc ? IBV_QP_ACCESS_FLAGS : IBV_QP_QKEY);
	if (ibv_modify_qp(qp, &a, mask))
		return errno;
	a.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (rc) {
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = qp->qp_num;
		a.rq_psn = 0;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 1;
		a.ah_attr = (struct ibv_ah_attr){
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = w->gid, .sgid_index = w->gid_index,
				 .hop_limit = 64 } };
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			IBV_QP_MIN_RNR_TIMER;
	}
	if (ibv_modify_qp(qp, &a, mask))
		return errno;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (rc)
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	if (ibv_modify_qp(qp, &a, mask))
		return errno;
	return 0;
}

static int make_rc_connected(struct world *w)
{
	return connect_self(w, w->rc);
}

static void undo_connected(struct world *w)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	if (ibv_modify_qp(w->rc, &a, IBV_QP_STATE))
		die("modify RESET");
}

static int make_srq(struct world *w)
{
	struct ibv_srq_init_attr sa = {
		.attr = { .max_wr = 64, .max_sge = 2 },
	};

	w->srq = ibv_create_srq(w->pd, &sa);
	return refusal(w->srq);
}

static void undo_srq(struct world *w)
{
	if (ibv_destroy_srq(w->srq))
		die("ibv_destroy_srq");
	w->srq = NULL;
}

static int make_rc_srq(struct world *w)
{
	w->rc_srq = new_qp(w, IBV_QPT_RC, w->srq);
	return refusal(w->rc_srq);
}

static void undo_rc_srq(struct world *w)
{
	destroy_qp(&w->rc_srq);
}

static int make_ud(struct world *w)
{
	int err;

	w->ud = new_qp(w, IBV_QPT_UD, NULL);
	if (!w->ud)
		return refusal(w->ud);
	err = connect_self(w, w->ud);
	if (err)
		destroy_qp(&w->ud);
	return err;
}

static void undo_ud(struct world *w)
{
	destroy_qp(&w->ud);
}

static int make_ah(struct world *w)
{
	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = w->gid, .sgid_index = w->gid_index,
			 .hop_limit = 64 },
	};

	w->ah = ibv_create_ah(w->pd, &aa);
	return refusal(w->ah);
}

static void undo_ah(struct world *w)
{
	if (ibv_destroy_ah(w->ah))
		die("ibv_destroy_ah");
	w->ah = NULL;
}

static int make_mw(struct world *w)
{
	w->mw = ibv_alloc_mw(w->pd, IBV_MW_TYPE_2);
	return refusal(w->mw);
}

static void undo_mw(struct world *w)
{
	if (ibv_dealloc_mw(w->mw))
		die("ibv_dealloc_mw");
	w->mw = NULL;
}

static unsigned char pattern(const struct world *w, size_t i)
{
	return (unsigned char)(i * 7 + w->round * 13 + 1);
}

/*
 * The next completion of @cq, which must be a success of @opcode, within
 * @timeout_ms; with @timeout_ms 0 it may also be missing.
 */
static bool completed(struct world *w, enum ibv_wc_opcode opcode,
		      long timeout_ms)
{
	uint64_t wr_id = opcode == IBV_WC_RECV ? 0 : w->round;
	struct ibv_wc wc;

	if (!poll_cq(w->cq, &wc, timeout_ms ? timeout_ms : 2000)) {
		CHECK(!timeout_ms, "no completion for opcode %d in %ld ms",
		      opcode, timeout_ms);
		return false;
	}
	/* a refused post must not complete later: the WR is the round's */
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == opcode &&
	      wc.wr_id == wr_id,
	      "completion %s, opcode %d, wr_id %llu (expected %d, %llu)",
	      ibv_wc_status_str(wc.status), wc.opcode,
	      (unsigned long long)wc.wr_id, opcode,
	      (unsigned long long)wr_id);
	return wc.status == IBV_WC_SUCCESS;
}

/*
 * An RDMA WRITE of the first WRITE_LEN bytes of buf into its second half,
 * on the RC QP connected to itself: a refused post is a clean refusal; a
 * posted WRITE must complete and deliver every byte.
 */
static int make_write(struct world *w)
{
	unsigned char *src = w->buf, *dst = w->buf + BUF_SIZE / 2;
	struct ibv_sge sge = { .addr = (uintptr_t)src, .length = WRITE_LEN,
			       .lkey = w->mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)dst,
			     .rkey = w->mr->rkey },
	}, *bad;
	size_t i, wrong = 0;
	int err;

	wr.wr_id = ++w->round;
	for (i = 0; i < WRITE_LEN; i++) {
		src[i] = pattern(w, i);
		dst[i] = 0;
	}
	err = ibv_post_send(w->rc, &wr, &bad);
	if (err)
		return err;
	if (!completed(w, IBV_WC_RDMA_WRITE, 10000))
		return 0;
	for (i = 0; i < WRITE_LEN; i++)
		wrong += dst[i] != pattern(w, i);
	CHECK(!wrong, "RDMA WRITE round %u: %zu of %d bytes wrong", w->round,
	      wrong, WRITE_LEN);
	return 0;
}

/* A SEND of UD_LEN bytes from the UD QP to itself, received and checked. */
static int make_ud_send(struct world *w)
{
	unsigned char *src = w->buf, *dst = w->buf + BUF_SIZE / 2;
	struct ibv_sge ssge = { .addr = (uintptr_t)src, .length = UD_LEN,
				.lkey = w->mr->lkey };
	struct ibv_sge rsge = { .addr = (uintptr_t)dst,
				.length = GRH_LEN + UD_LEN,
				.lkey = w->mr->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &rsge, .num_sge = 1 }, *rbad;
	struct ibv_send_wr wr = {
		.sg_list = &ssge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.ud = { .ah = w->ah, .remote_qpn = w->ud->qp_num,
			   .remote_qkey = 0x11111111 },
	}, *bad;
	size_t i, wrong = 0;
	int err;

	wr.wr_id = ++w->round;
	for (i = 0; i < UD_LEN; i++)
		src[i] = pattern(w, i);
	memset(dst, 0, GRH_LEN + UD_LEN);
	err = ibv_post_recv(w->ud, &rwr, &rbad);
	if (err)
		return err;
	err = ibv_post_send(w->ud, &wr, &bad);
	if (err)
		return err;	/* the posted receive waits for the next try */
	if (!completed(w, IBV_WC_SEND, 10000))
		return 0;
	/*
	 * UD is unreliable: a datagram whose receive side could not allocate
	 * is lost, which only an injected failure may cause. The receive
	 * stays posted and takes a later round's datagram.
	 */
	if (!completed(w, IBV_WC_RECV, fired() ? 0 : 10000))
		return 0;
	for (i = 0; i < UD_LEN; i++)
		wrong += dst[GRH_LEN + i] != pattern(w, i);
	CHECK(!wrong, "UD SEND round %u: %zu of %d bytes wrong", w->round,
	      wrong, UD_LEN);
	return 0;
}

struct step {
	const char *name;
	int (*make)(struct world *w);	/* 0, or why it was refused */
	void (*undo)(struct world *w);	/* NULL: nothing to undo */
	bool kernel;	/* allocates in the kernel: must meet a failure */
};

/* in creation order; each may use what the ones before made */
static const struct step steps[] = {
	{ "open", make_open, undo_open, true },
	{ "pd", make_pd, undo_pd, true },
	{ "mr", make_mr, undo_mr, true },
	{ "channel", make_channel, undo_channel, true },
	{ "cq", make_cq, undo_cq, true },
	{ "rc", make_rc, undo_rc, true },
	{ "rc-connect", make_rc_connected, undo_connected, false },
	{ "srq", make_srq, undo_srq, true },
	{ "rc-srq", make_rc_srq, undo_rc_srq, true },
	{ "ud", make_ud, undo_ud, true },
	{ "ah", make_ah, undo_ah, true },
	{ "mw", make_mw, undo_mw, true },
	{ "rdma-write", make_write, NULL, false },
	{ "ud-send", make_ud_send, NULL, false },
};

#define STEPS (sizeof(steps) / sizeof(steps[0]))

/*
 * Fail the n-th allocation of @s for n = 1, 2, ... until it completes
 * without reaching its n-th one.
 */
static void run_step(struct world *w, const struct step *s)
{
	unsigned int n, refused = 0, tolerated = 0;
	bool hit;
	int err;

	for (n = 1; n <= MAX_POINTS; n++) {
		errno = 0;
		arm(n);
		err = s->make(w);
		hit = injected();
		if (err) {
			CHECK(hit, "%s refused (%s) with no failure injected",
			      s->name, strerror(err > 0 ? err : EIO));
			CHECK(err > 0, "%s refused without an errno", s->name);
			refused++;
			continue;
		}
		if (!hit)
			break;
		tolerated++;
		if (s->undo)
			s->undo(w);
	}
	CHECK(n <= MAX_POINTS, "%s: still allocating after %d failures",
	      s->name, MAX_POINTS);
	CHECK(!s->kernel || n > 1, "%s: no allocation could be failed",
	      s->name);
	printf("%s: %u points, %u refused, %u tolerated\n", s->name, n - 1,
	       refused, tolerated);
	fflush(stdout);
}

static struct ibv_device *find_device(const char *name)
{
	struct ibv_device **list;
	int n, i;

	list = ibv_get_device_list(&n);
	if (!list)
		die("ibv_get_device_list");
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			return list[i];	/* the list is kept: it owns it */
	fatal("no device %s", name);
}

int main(int argc, char **argv)
{
	struct world w = { 0 };
	size_t i;

	if (argc != 3)
		fatal("usage: sroce-fault-create DEV GID_INDEX");
	setvbuf(stdout, NULL, _IOLBF, 0);
	w.dev = find_device(argv[1]);
	w.gid_index = atoi(argv[2]);
	w.buf = aligned_alloc(4096, BUF_SIZE);
	if (!w.buf)
		die("aligned_alloc");
	memset(w.buf, 0, BUF_SIZE);
	/*
	 * Memory this process touches later is populated at once, so a
	 * page fault inside a step does not meet the injected failure.
	 */
	if (mlockall(MCL_CURRENT | MCL_FUTURE))
		die("mlockall");
	fail_nth_fd = open("/proc/thread-self/fail-nth", O_RDWR);
	if (fail_nth_fd < 0)
		die("/proc/thread-self/fail-nth");
	for (i = 0; i < STEPS; i++) {
		if (i == 1)	/* open done: the GID for the paths */
			w.gid = query_gid(w.ctx, w.gid_index);
		run_step(&w, &steps[i]);
	}
	for (i = STEPS; i-- > 0;)
		if (steps[i].undo)
			steps[i].undo(&w);
	printf("%u checks, %u failures\n", checks, failures);
	return failures ? 1 : 0;
}
