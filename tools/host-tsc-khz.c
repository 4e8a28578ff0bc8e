// SPDX-License-Identifier: GPL-2.0
/*
 * Print the host's TSC frequency in kHz. Under TCG a guest's TSC is the
 * host's, and the debug kernel (no ACPI, so no HPET or PM timer to
 * calibrate against) is told it with tsc_early_khz= instead of falling
 * back to jiffies as its clocksource (see tools/sroce-vm).
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC_RAW, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(void)
{
	const struct timespec pause = { .tv_nsec = 200000000 };
	uint64_t ns0 = now_ns(), tsc0 = __rdtsc(), ns1, tsc1;

	nanosleep(&pause, NULL);
	ns1 = now_ns();
	tsc1 = __rdtsc();
	if (ns1 <= ns0)
		return 1;
	printf("%llu\n", (unsigned long long)((tsc1 - tsc0) * 1000000u / (ns1 - ns0)));
	return 0;
}
