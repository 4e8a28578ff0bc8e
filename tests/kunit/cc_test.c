// SPDX-License-Identifier: GPL-2.0
/*
 * The reaction point's window arithmetic (cc.c): how much a CNP cuts, that
 * it cuts once per round trip, how alpha follows the CNPs, and how the
 * window grows back.
 */
#include <kunit/test.h>
#include <linux/slab.h>

#include "cc.h"
#include "psn.h"
#include "qp.h"

static struct sroce_comp *fresh(struct kunit *test)
{
	struct sroce_comp *comp = kunit_kzalloc(test, sizeof(*comp),
						GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, comp);
	comp->psn = 100;
	sroce_cc_reset(comp);
	return comp;
}

/*
 * One round trip: @n more PSNs sent, a CNP while they are in flight if
 * @cnp, then all of them acknowledged. Whether the CNP cut the window.
 */
static bool round_trip(struct sroce_comp *comp, u32 n, bool cnp)
{
	u32 next = sroce_psn_add(comp->psn, n);
	bool cut = cnp && sroce_cc_cnp(comp, next);

	comp->psn = next;
	sroce_cc_grow(comp, n, next);
	return cut;
}

static void first_cnp_halves_test(struct kunit *test)
{
	struct sroce_comp *comp = fresh(test);

	KUNIT_EXPECT_EQ(test, comp->cwnd, SROCE_CWND_MAX);
	KUNIT_EXPECT_TRUE(test, sroce_cc_cnp(comp, 356));
	KUNIT_EXPECT_EQ(test, comp->cwnd, SROCE_CWND_MAX / 2);
	KUNIT_EXPECT_EQ(test, comp->cc.ssthresh, SROCE_CWND_MAX / 2);
}

static void one_cut_per_round_trip_test(struct kunit *test)
{
	struct sroce_comp *comp = fresh(test);

	KUNIT_ASSERT_TRUE(test, sroce_cc_cnp(comp, 356));
	/* CNPs for what was in flight at the cut do not cut again ... */
	KUNIT_EXPECT_FALSE(test, sroce_cc_cnp(comp, 400));
	comp->psn = 355;		/* one short of the cut */
	sroce_cc_grow(comp, 255, 400);
	KUNIT_EXPECT_FALSE(test, sroce_cc_cnp(comp, 400));
	KUNIT_EXPECT_EQ(test, comp->cwnd, SROCE_CWND_MAX / 2);
	/* ... one for what was sent after it does */
	comp->psn = 356;
	sroce_cc_grow(comp, 1, 400);
	KUNIT_EXPECT_TRUE(test, sroce_cc_cnp(comp, 500));
	KUNIT_EXPECT_EQ(test, comp->cwnd, SROCE_CWND_MAX / 4);
}

static void alpha_follows_the_rounds_test(struct kunit *test)
{
	struct sroce_comp *comp = fresh(test);
	u32 before;
	int i;

	KUNIT_ASSERT_TRUE(test, round_trip(comp, 256, true));
	KUNIT_EXPECT_EQ(test, comp->cc.alpha, SROCE_CC_ALPHA_ONE);
	/* ten rounds without a CNP: alpha is (15/16)^10 of 1, about 0.53 */
	for (i = 0; i < 10; i++)
		round_trip(comp, comp->cwnd, false);
	KUNIT_EXPECT_GE(test, comp->cc.alpha, 530);
	KUNIT_EXPECT_LE(test, comp->cc.alpha, 550);
	before = comp->cwnd;
	KUNIT_ASSERT_TRUE(test, round_trip(comp, before, true));
	KUNIT_EXPECT_EQ(test, comp->cwnd,
			before - before * 540 / (2 * SROCE_CC_ALPHA_ONE));
	/* and the round with the CNP moves it back up by g */
	KUNIT_EXPECT_EQ(test, comp->cc.alpha, 540 - 540 / 16 + 1024 / 16);
}

static void window_floor_test(struct kunit *test)
{
	struct sroce_comp *comp = fresh(test);
	int i;

	/* a CNP every round: alpha stays 1, each cut halves */
	for (i = 0; i < 8; i++)
		KUNIT_EXPECT_TRUE(test, round_trip(comp, comp->cwnd, true));
	KUNIT_EXPECT_EQ(test, comp->cwnd, SROCE_CWND_MIN);
}

static void additive_growth_after_a_cut_test(struct kunit *test)
{
	struct sroce_comp *comp = fresh(test);

	/* the cut's own round trip grows nothing */
	KUNIT_ASSERT_TRUE(test, round_trip(comp, 256, true));
	KUNIT_EXPECT_EQ(test, comp->cwnd, 128);
	round_trip(comp, 127, false);
	KUNIT_EXPECT_EQ(test, comp->cwnd, 128);
	round_trip(comp, 1, false);	/* a whole window: one more */
	KUNIT_EXPECT_EQ(test, comp->cwnd, 129);
}

static void calm_restores_doubling_test(struct kunit *test)
{
	struct sroce_comp *comp = fresh(test);
	int i;

	KUNIT_ASSERT_TRUE(test, round_trip(comp, 256, true));
	for (i = 0; i < 4; i++)
		round_trip(comp, 128, false);
	KUNIT_EXPECT_EQ(test, comp->cc.ssthresh, 128);
	KUNIT_EXPECT_LT(test, comp->cwnd, 140);
	/* the fifth round without a CNP: the window may double again */
	round_trip(comp, 128, false);
	KUNIT_EXPECT_EQ(test, comp->cc.ssthresh, SROCE_CWND_MAX);
	KUNIT_EXPECT_EQ(test, comp->cwnd, SROCE_CWND_MAX);
}

static struct kunit_case sroce_cc_cases[] = {
	KUNIT_CASE(first_cnp_halves_test),
	KUNIT_CASE(one_cut_per_round_trip_test),
	KUNIT_CASE(alpha_follows_the_rounds_test),
	KUNIT_CASE(window_floor_test),
	KUNIT_CASE(additive_growth_after_a_cut_test),
	KUNIT_CASE(calm_restores_doubling_test),
	{}
};

static struct kunit_suite sroce_cc_suite = {
	.name = "sroce_cc",
	.test_cases = sroce_cc_cases,
};

kunit_test_suites(&sroce_cc_suite);
