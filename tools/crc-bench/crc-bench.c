// SPDX-License-Identifier: GPL-2.0
/*
 * crc-bench: per-byte cost of the RoCEv2 ICRC (CRC-32, reflected, poly
 * 0xEDB88320: the kernel's crc32_le()) on the host CPU, one core.
 *
 * Implementations:
 *   bitwise   bit-at-a-time reference, only used to check the others
 *   slice8    slice-by-8 tables, the shape of Linux's generic crc32_le()
 *             (what 6.1 and 6.12 run without the crypto API)
 *   isal      isa-l crc32_gzip_refl(): PCLMULQDQ folding, the technique of
 *             crc32-pclmul and of crc32_le() from Linux 6.14
 *   zlib      zlib's crc32(), a familiar baseline
 *
 * crc32_le(crc, p, n) takes and returns the raw register; isa-l's
 * crc32_gzip_refl() and zlib's crc32() invert it on entry and exit, so
 * crc32_le(crc, p, n) == ~crc32_gzip_refl(~crc, p, n) == ~crc32(~crc, p, n).
 * Every implementation is checked against the reference in crc32_le
 * terms over random buffers of many lengths and alignments before timing.
 *
 * Usage: crc-bench [-j] [-c CPU] [-r REPS] [-t SECONDS_PER_REP]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <isa-l/crc.h>
#include <zlib.h>

#define CRC32_POLY_LE 0xedb88320u
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static uint32_t tab[8][256];

static uint32_t crc32_bitwise(uint32_t crc, const uint8_t *p, size_t len)
{
	int i;

	while (len--) {
		crc ^= *p++;
		for (i = 0; i < 8; i++)
			crc = (crc >> 1) ^ (CRC32_POLY_LE & -(crc & 1));
	}
	return crc;
}

static void slice8_init(void)
{
	uint32_t crc;
	int i, j;

	for (i = 0; i < 256; i++) {
		crc = i;
		for (j = 0; j < 8; j++)
			crc = (crc >> 1) ^ (CRC32_POLY_LE & -(crc & 1));
		tab[0][i] = crc;
	}
	/* tab[k][i]: byte i followed by k zero bytes */
	for (i = 0; i < 256; i++)
		for (j = 1; j < 8; j++)
			tab[j][i] = (tab[j - 1][i] >> 8) ^
				    tab[0][tab[j - 1][i] & 0xff];
}

/* Little-endian hosts only, as the benchmark is for x86. */
static uint32_t crc32_slice8(uint32_t crc, const uint8_t *p, size_t len)
{
	uint32_t q, q2;

	/* bytes up to a 4-byte boundary, as the kernel's crc32_body() */
	while (len && ((uintptr_t)p & 3)) {
		crc = (crc >> 8) ^ tab[0][(crc ^ *p++) & 0xff];
		len--;
	}
	while (len >= 8) {
		memcpy(&q, p, 4);
		memcpy(&q2, p + 4, 4);
		q ^= crc;
		crc = tab[7][q & 0xff] ^ tab[6][(q >> 8) & 0xff] ^
		      tab[5][(q >> 16) & 0xff] ^ tab[4][q >> 24] ^
		      tab[3][q2 & 0xff] ^ tab[2][(q2 >> 8) & 0xff] ^
		      tab[1][(q2 >> 16) & 0xff] ^ tab[0][q2 >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ tab[0][(crc ^ *p++) & 0xff];
	return crc;
}

static uint32_t crc32_isal(uint32_t crc, const uint8_t *p, size_t len)
{
	return ~crc32_gzip_refl(~crc, p, len);
}

static uint32_t crc32_zlib(uint32_t crc, const uint8_t *p, size_t len)
{
	return ~(uint32_t)crc32(~crc & 0xffffffffu, p, len);
}

struct impl {
	const char *name;
	uint32_t (*fn)(uint32_t crc, const uint8_t *p, size_t len);
};

static const struct impl impls[] = {
	{ "slice8", crc32_slice8 },
	{ "isal", crc32_isal },
	{ "zlib", crc32_zlib },
};

#define NIMPLS ARRAY_SIZE(impls)

static const size_t sizes[] = { 64, 256, 1024, 4096, 9000 };

#define NSIZES ARRAY_SIZE(sizes)
#define BUFSZ (9000 + 64) /* the largest size and 64 bytes of offset */

/* 8-byte aligned: the timed runs start at an aligned address */
static uint64_t buf_words[BUFSZ / 8];
static uint8_t *const buf = (uint8_t *)buf_words;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Check every implementation against the reference; 0 on success. */
static int self_test(void)
{
	uint32_t seed, want, got;
	size_t len, off, n, k;
	int round, bad = 0;
	unsigned long cases = 0;

	/* the CRC-32 check value: crc32_le(~0, "123456789") ^ ~0 */
	if ((crc32_bitwise(~0u, (const uint8_t *)"123456789", 9) ^ ~0u) !=
	    0xcbf43926u) {
		fprintf(stderr, "reference fails the check value\n");
		return 1;
	}
	for (round = 0; round < 40000; round++) {
		if (round < 2 * 9001)
			len = round / 2;
		else
			len = rng() % 9001;
		off = rng() % 64;
		seed = round & 1 ? (uint32_t)rng() : ~0u;
		want = crc32_bitwise(seed, buf + off, len);
		for (k = 0; k < NIMPLS; k++) {
			got = impls[k].fn(seed, buf + off, len);
			cases++;
			if (got != want) {
				fprintf(stderr,
					"%s: len %zu off %zu seed %08x: %08x != %08x\n",
					impls[k].name, len, off, seed, got,
					want);
				if (++bad > 10)
					return 1;
			}
			/* split in two: chaining must give the same CRC */
			n = len ? rng() % len : 0;
			got = impls[k].fn(impls[k].fn(seed, buf + off, n),
					  buf + off + n, len - n);
			cases++;
			if (got != want) {
				fprintf(stderr, "%s: split %zu+%zu mismatch\n",
					impls[k].name, n, len - n);
				if (++bad > 10)
					return 1;
			}
		}
	}
	if (!bad)
		fprintf(stderr, "self-test: %lu cases equal the reference\n",
			cases);
	return bad;
}

/* Results land here so that the compiler keeps every call. */
uint32_t crc_bench_sink;

/* Best of reps runs of about secs each, in GB/s (1e9 bytes/s). */
static double measure(const struct impl *im, const uint8_t *p, size_t len,
		      int reps, double secs)
{
	unsigned long iters = 64, i;
	double t0, t, best = 0;
	uint32_t acc = 0;
	int r;

	/* calibrate: grow the count until one run takes secs / 4 */
	for (;;) {
		t0 = now();
		for (i = 0; i < iters; i++)
			acc ^= im->fn(~0u, p, len);
		t = now() - t0;
		if (t >= secs / 4)
			break;
		iters *= 2;
	}
	iters = (unsigned long)(iters * secs / t) + 1;
	for (r = 0; r < reps; r++) {
		t0 = now();
		for (i = 0; i < iters; i++)
			acc ^= im->fn(~0u, p, len);
		t = now() - t0;
		if ((double)iters * len / t / 1e9 > best)
			best = (double)iters * len / t / 1e9;
	}
	crc_bench_sink = acc;
	return best;
}

static void cpu_model(char *model, size_t n, int *pclmul)
{
	char line[4096], *v;
	FILE *f = fopen("/proc/cpuinfo", "r");

	snprintf(model, n, "unknown");
	*pclmul = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		v = strchr(line, ':');
		if (!v)
			continue;
		v += 2;
		if (!strncmp(line, "model name", 10)) {
			snprintf(model, n, "%s", v);
			model[strcspn(model, "\n")] = 0;
		} else if (!strncmp(line, "flags", 5)) {
			*pclmul = !!strstr(v, " pclmulqdq");
			break;
		}
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	double gbps[NIMPLS][NSIZES], secs = 0.1;
	int json = 0, cpu = -1, reps = 5, pclmul, opt;
	size_t i, k;
	char model[256];
	cpu_set_t set;

	while ((opt = getopt(argc, argv, "jc:r:t:")) != -1) {
		switch (opt) {
		case 'j':
			json = 1;
			break;
		case 'c':
			cpu = atoi(optarg);
			break;
		case 'r':
			reps = atoi(optarg);
			break;
		case 't':
			secs = atof(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: %s [-j] [-c CPU] [-r REPS] [-t SECONDS_PER_REP]\n",
				argv[0]);
			return 2;
		}
	}
	if (cpu < 0)
		cpu = sched_getcpu();
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "sched_setaffinity(%d): %s\n", cpu,
			strerror(errno));
		return 1;
	}
	cpu_model(model, sizeof(model), &pclmul);

	for (i = 0; i < BUFSZ; i++)
		buf[i] = (uint8_t)rng();
	slice8_init();
	if (self_test())
		return 1;

	for (k = 0; k < NIMPLS; k++)
		for (i = 0; i < NSIZES; i++)
			gbps[k][i] = measure(&impls[k], buf, sizes[i], reps,
					     secs);

	if (json) {
		printf("{\"cpu\": \"%s\", \"pclmulqdq\": %s, ", model,
		       pclmul ? "true" : "false");
		printf("\"pinned_cpu\": %d, \"reps\": %d, ", cpu, reps);
		printf("\"seconds_per_rep\": %g, \"gbytes_per_s\": {", secs);
		for (k = 0; k < NIMPLS; k++) {
			printf("%s\"%s\": {", k ? ", " : "", impls[k].name);
			for (i = 0; i < NSIZES; i++)
				printf("%s\"%zu\": %.3f", i ? ", " : "",
				       sizes[i], gbps[k][i]);
			printf("}");
		}
		printf("}}\n");
		return 0;
	}
	printf("cpu: %s\npclmulqdq: %s\n", model, pclmul ? "yes" : "no");
	printf("pinned to cpu %d, best of %d runs of %gs, ", cpu, reps, secs);
	printf("GB/s (1e9 bytes/s), hot buffer\n\n");
	printf("%-8s", "bytes");
	for (i = 0; i < NSIZES; i++)
		printf(" %8zu", sizes[i]);
	printf("\n");
	for (k = 0; k < NIMPLS; k++) {
		printf("%-8s", impls[k].name);
		for (i = 0; i < NSIZES; i++)
			printf(" %8.2f", gbps[k][i]);
		printf("\n");
	}
	return 0;
}
