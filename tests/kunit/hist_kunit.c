// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd KUnit suite statsfd_hist: bucket math of linear and log
 * histograms at every edge, including the open-ended last bucket, and the
 * single-writer helpers the histogram updates are built on.
 */
#include <kunit/test.h>
#include <linux/limits.h>
#include <linux/statsfd.h>

#include "statsfd_kunit.h"

static void statsfd_linhist_bucket_maps_each_edge(struct kunit *test)
{
	/* 4 buckets of width 10: [0,10) [10,20) [20,30) [30,inf). */
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(4, 0, 10), 0);
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(4, 9, 10), 0);
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(4, 10, 10), 1);
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(4, 19, 10), 1);
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(4, 20, 10), 2);
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(4, 29, 10), 2);
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(4, 30, 10), 3);
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(4, 39, 10), 3);
}

static void statsfd_linhist_bucket_last_is_open_ended(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(4, 40, 10), 3);
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(4, 1000000, 10), 3);
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(4, U64_MAX, 10), 3);
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(4, U64_MAX, 1), 3);
}

static void statsfd_linhist_bucket_handles_unit_and_huge_widths(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(8, 0, 1), 0);
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(8, 6, 1), 6);
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(8, 7, 1), 7);
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(8, 8, 1), 7);
	/* A width above 2^32 needs the full 64-bit division. */
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(4, (1ULL << 33) - 1,
						     1ULL << 33), 0);
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(4, 1ULL << 33,
						     1ULL << 33), 1);
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(4, U64_MAX, U64_MAX), 1);
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(4, U64_MAX - 1, U64_MAX),
			0);
}

static void statsfd_linhist_bucket_single_bucket_takes_all(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(1, 0, 10), 0);
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(1, 10, 10), 0);
	KUNIT_EXPECT_EQ(test, statsfd_linhist_bucket(1, U64_MAX, 10), 0);
}

static void statsfd_loghist_bucket_maps_each_edge(struct kunit *test)
{
	/* [0,1) [1,2) [2,4) [4,8) [8,16) [16,inf). */
	KUNIT_EXPECT_EQ(test, statsfd_loghist_bucket(6, 0), 0);
	KUNIT_EXPECT_EQ(test, statsfd_loghist_bucket(6, 1), 1);
	KUNIT_EXPECT_EQ(test, statsfd_loghist_bucket(6, 2), 2);
	KUNIT_EXPECT_EQ(test, statsfd_loghist_bucket(6, 3), 2);
	KUNIT_EXPECT_EQ(test, statsfd_loghist_bucket(6, 4), 3);
	KUNIT_EXPECT_EQ(test, statsfd_loghist_bucket(6, 7), 3);
	KUNIT_EXPECT_EQ(test, statsfd_loghist_bucket(6, 8), 4);
	KUNIT_EXPECT_EQ(test, statsfd_loghist_bucket(6, 15), 4);
	KUNIT_EXPECT_EQ(test, statsfd_loghist_bucket(6, 16), 5);
	KUNIT_EXPECT_EQ(test, statsfd_loghist_bucket(6, 31), 5);
}

static void statsfd_loghist_bucket_last_is_open_ended(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, statsfd_loghist_bucket(6, 32), 5);
	KUNIT_EXPECT_EQ(test, statsfd_loghist_bucket(6, 1ULL << 40), 5);
	KUNIT_EXPECT_EQ(test, statsfd_loghist_bucket(6, U64_MAX), 5);
	KUNIT_EXPECT_EQ(test, statsfd_loghist_bucket(1, 0), 0);
	KUNIT_EXPECT_EQ(test, statsfd_loghist_bucket(1, U64_MAX), 0);
}

static void statsfd_loghist_bucket_covers_all_64_bits(struct kunit *test)
{
	unsigned int n;

	/* With 65 buckets no value is clamped: bucket n is [2^(n-1), 2^n). */
	for (n = 1; n <= 64; n++) {
		KUNIT_EXPECT_EQ_MSG(test, statsfd_loghist_bucket(65, 1ULL << (n - 1)),
				    n, "low edge of bucket %u", n);
		KUNIT_EXPECT_EQ_MSG(test,
				    statsfd_loghist_bucket(65, (1ULL << (n - 1)) +
							       ((1ULL << (n - 1)) - 1)),
				    n, "high edge of bucket %u", n);
	}
	KUNIT_EXPECT_EQ(test, statsfd_loghist_bucket(65, U64_MAX), 64);
}

static void statsfd_linhist_update_counts_one_bucket(struct kunit *test)
{
	u64 h[4] = { 0 };

	statsfd_linhist_update(h, 4, 0, 10);
	statsfd_linhist_update(h, 4, 19, 10);
	statsfd_linhist_update(h, 4, 20, 10);
	statsfd_linhist_update(h, 4, 25, 10);
	statsfd_linhist_update(h, 4, U64_MAX, 10);
	KUNIT_EXPECT_EQ(test, h[0], 1);
	KUNIT_EXPECT_EQ(test, h[1], 1);
	KUNIT_EXPECT_EQ(test, h[2], 2);
	KUNIT_EXPECT_EQ(test, h[3], 1);
}

static void statsfd_loghist_update_counts_one_bucket(struct kunit *test)
{
	u64 h[4] = { 0 };

	statsfd_loghist_update(h, 4, 0);
	statsfd_loghist_update(h, 4, 1);
	statsfd_loghist_update(h, 4, 2);
	statsfd_loghist_update(h, 4, 3);
	statsfd_loghist_update(h, 4, 4);
	statsfd_loghist_update(h, 4, 1ULL << 63);
	KUNIT_EXPECT_EQ(test, h[0], 1);
	KUNIT_EXPECT_EQ(test, h[1], 1);
	KUNIT_EXPECT_EQ(test, h[2], 2);
	KUNIT_EXPECT_EQ(test, h[3], 2);
}

/*
 * The writer helpers are WRITE_ONCE() stores, which KUnit cannot observe
 * as such (KCSAN checks the marking in make check-kcsan); here: the value
 * each one leaves behind.
 */
/* One call of a single-writer helper, and what the stat holds after it. */
struct stat_step {
	u64 arg;
	u64 want;
};

/* From @stat, @op with each step's argument, each step's value after it. */
static void expect_steps(struct kunit *test, void (*op)(u64 *stat, u64 arg),
			 u64 stat, const struct stat_step *steps,
			 unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		op(&stat, steps[i].arg);
		KUNIT_EXPECT_EQ_MSG(test, stat, steps[i].want, "step %u", i);
	}
}

static void statsfd_stat_add_adds_and_wraps_modulo_2_64(struct kunit *test)
{
	/* Counters wrap like KVM's: no saturation, no trap. */
	static const struct stat_step steps[] = {
		{ 5, 5 }, { 0, 5 }, { U64_MAX - 4, 0 }, { U64_MAX, U64_MAX },
	};

	expect_steps(test, statsfd_stat_add, 0, steps, ARRAY_SIZE(steps));
}

static void statsfd_stat_set_overwrites_whatever_was_there(struct kunit *test)
{
	static const struct stat_step steps[] = {
		{ 1, 1 }, { 0, 0 }, { U64_MAX, U64_MAX },
	};

	expect_steps(test, statsfd_stat_set, 7, steps, ARRAY_SIZE(steps));
}

static void statsfd_stat_max_only_ever_raises(struct kunit *test)
{
	static const struct stat_step steps[] = {
		{ 10, 10 }, { 3, 10 }, { 10, 10 },
		{ U64_MAX, U64_MAX }, { 0, U64_MAX },
	};

	expect_steps(test, statsfd_stat_max, 0, steps, ARRAY_SIZE(steps));
}

static struct kunit_case statsfd_hist_cases[] = {
	KUNIT_CASE(statsfd_linhist_bucket_maps_each_edge),
	KUNIT_CASE(statsfd_linhist_bucket_last_is_open_ended),
	KUNIT_CASE(statsfd_linhist_bucket_handles_unit_and_huge_widths),
	KUNIT_CASE(statsfd_linhist_bucket_single_bucket_takes_all),
	KUNIT_CASE(statsfd_loghist_bucket_maps_each_edge),
	KUNIT_CASE(statsfd_loghist_bucket_last_is_open_ended),
	KUNIT_CASE(statsfd_loghist_bucket_covers_all_64_bits),
	KUNIT_CASE(statsfd_linhist_update_counts_one_bucket),
	KUNIT_CASE(statsfd_loghist_update_counts_one_bucket),
	KUNIT_CASE(statsfd_stat_add_adds_and_wraps_modulo_2_64),
	KUNIT_CASE(statsfd_stat_set_overwrites_whatever_was_there),
	KUNIT_CASE(statsfd_stat_max_only_ever_raises),
	{}
};

STATSFD_KUNIT_SUITE(statsfd_hist, NULL);
