// SPDX-License-Identifier: GPL-2.0
/*
 * harness_fail_test - a selftest that always fails, to prove a failing
 * selftest turns the verdict red.  Only `make check-harness` puts it in the
 * guest's run; `make check` never runs it.
 */
#include "kselftest_harness.h"

TEST(deliberate_failure)
{
	int expected = 1, actual = 0;

	TH_LOG("deliberate selftest failure for make check-harness");
	EXPECT_EQ(expected, actual);
}

TEST_HARNESS_MAIN
