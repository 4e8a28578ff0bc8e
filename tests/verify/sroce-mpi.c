// SPDX-License-Identifier: GPL-2.0
/*
 * sroce-mpi: an MPI program that checks every byte it moves, for
 * tests/integration/mpi.sh. Two ranks:
 * - point-to-point ping-pong of many sizes (1 B to 4 MiB + 3), each message
 *   a pattern of its size, iteration and sender that the receiver checks
 *   byte by byte before answering with its own;
 * - allreduce (sum) of int64 and double vectors whose exact sums are known;
 * - one-sided: each rank puts a pattern into the other's window and gets
 *   one back from it, checked after the fences, and fetch-and-add on a
 *   counter in rank 0's window.
 * Prints "mpi: rank R: N checks, F failures, B bytes sent: PASS|FAIL" and
 * exits non-zero on a failure.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long checks, failures;
static uint64_t bytes_sent;
static int rank;

static void check(int ok, const char *what, long a, long b)
{
	checks++;
	if (ok)
		return;
	failures++;
	if (failures <= 10)
		fprintf(stderr, "mpi: rank %d: %s (%ld, %ld)\n", rank, what, a, b);
}

static unsigned char pattern(size_t i, uint32_t seed)
{
	uint32_t x = (uint32_t)i * 2654435761u ^ seed;

	x ^= x >> 13;
	return (unsigned char)(x * 0x9e3779b1u >> 24);
}

static void fill(unsigned char *buf, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = pattern(i, seed);
}

/* The first wrong byte, or -1. */
static long first_bad(const unsigned char *buf, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != pattern(i, seed))
			return (long)i;
	return -1;
}

static uint32_t seed_of(size_t size, int iter, int from)
{
	return (uint32_t)size * 31u + (uint32_t)iter * 7u + (uint32_t)from + 1u;
}

static void ping_pong(unsigned char *buf, size_t size, int iters)
{
	int peer = 1 - rank;
	long bad;

	for (int it = 0; it < iters; it++) {
		for (int turn = 0; turn < 2; turn++) {
			if (turn == rank) {
				fill(buf, size, seed_of(size, it, rank));
				MPI_Send(buf, (int)size, MPI_BYTE, peer, it, MPI_COMM_WORLD);
				bytes_sent += size;
			} else {
				memset(buf, 0, size);
				MPI_Recv(buf, (int)size, MPI_BYTE, peer, it, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				bad = first_bad(buf, size, seed_of(size, it, peer));
				check(bad < 0, "ping-pong byte differs (size, offset)", (long)size, bad);
			}
		}
	}
}

static void allreduce(size_t n)
{
	int64_t *in = malloc(n * sizeof(*in)), *out = malloc(n * sizeof(*out));
	double *din = malloc(n * sizeof(*din)), *dout = malloc(n * sizeof(*dout));
	long wrong = 0;

	if (!in || !out || !din || !dout) {
		check(0, "out of memory", (long)n, 0);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		in[i] = (int64_t)i * (rank + 1) - 3 * rank;
		din[i] = (double)i * 0.5 + rank;	/* exact in binary */
	}
	MPI_Allreduce(in, out, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(din, dout, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	bytes_sent += n * (sizeof(*in) + sizeof(*din));
	for (size_t i = 0; i < n; i++) {
		/* ranks 0 and 1: i - 0 + 2i - 3 */
		if (out[i] != (int64_t)i * 3 - 3 || dout[i] != (double)i + 1.0)
			wrong++;
	}
	check(wrong == 0, "allreduce sums wrong (n, count)", (long)n, wrong);
out:
	free(in);
	free(out);
	free(din);
	free(dout);
}

static void one_sided(size_t size)
{
	int peer = 1 - rank;
	unsigned char *win_buf, *local = malloc(size);
	int64_t *counter, one = 1, before = -1;
	MPI_Win win, cwin;
	long bad;

	MPI_Alloc_mem((MPI_Aint)size, MPI_INFO_NULL, &win_buf);
	MPI_Alloc_mem(sizeof(*counter), MPI_INFO_NULL, &counter);
	if (!local || !win_buf || !counter) {
		check(0, "out of memory", (long)size, 0);
		return;
	}
	*counter = 0;
	/* my window holds my own pattern for the peer to get */
	fill(win_buf, size, seed_of(size, 100, rank));
	MPI_Win_create(win_buf, (MPI_Aint)size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	MPI_Win_create(counter, sizeof(*counter), sizeof(*counter), MPI_INFO_NULL,
		       MPI_COMM_WORLD, &cwin);

	MPI_Win_fence(0, win);
	MPI_Get(local, (int)size, MPI_BYTE, peer, 0, (int)size, MPI_BYTE, win);
	MPI_Win_fence(0, win);
	bad = first_bad(local, size, seed_of(size, 100, peer));
	check(bad < 0, "get: byte differs (size, offset)", (long)size, bad);

	/* then each puts a new pattern into the other's window */
	fill(local, size, seed_of(size, 200, rank));
	MPI_Put(local, (int)size, MPI_BYTE, peer, 0, (int)size, MPI_BYTE, win);
	bytes_sent += 2 * size;
	MPI_Win_fence(0, win);
	bad = first_bad(win_buf, size, seed_of(size, 200, peer));
	check(bad < 0, "put: byte differs (size, offset)", (long)size, bad);

	/* both ranks add 1 to rank 0's counter, 50 times each */
	MPI_Win_fence(0, cwin);
	for (int i = 0; i < 50; i++) {
		MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, cwin);
		MPI_Fetch_and_op(&one, &before, MPI_INT64_T, 0, 0, MPI_SUM, cwin);
		MPI_Win_unlock(0, cwin);
		check(before >= 0 && before < 100, "fetch-and-add: value out of range", before, i);
	}
	MPI_Win_fence(0, cwin);
	if (rank == 0)
		check(*counter == 100, "fetch-and-add: final counter", (long)*counter, 100);

	MPI_Win_free(&cwin);
	MPI_Win_free(&win);
	MPI_Free_mem(counter);
	MPI_Free_mem(win_buf);
	free(local);
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 1, 7, 64, 1000, 4096, 8193, 65536, 262147,
					1048576, 4194307 };
	size_t max = sizes[sizeof(sizes) / sizeof(sizes[0]) - 1];
	unsigned char *buf;
	int size;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (rank == 0)
			fprintf(stderr, "mpi: needs exactly 2 ranks, not %d\n", size);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	buf = malloc(max);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		ping_pong(buf, sizes[i], sizes[i] > 1000000 ? 3 : 20);
	allreduce(1);
	allreduce(1000);
	allreduce(300000);
	one_sided(8);
	one_sided(100000);
	one_sided(1048579);
	free(buf);
	MPI_Barrier(MPI_COMM_WORLD);
	printf("mpi: rank %d: %ld checks, %ld failures, %llu bytes sent: %s\n", rank, checks,
	       failures, (unsigned long long)bytes_sent, failures ? "FAIL" : "PASS");
	MPI_Finalize();
	return failures ? 1 : 0;
}
