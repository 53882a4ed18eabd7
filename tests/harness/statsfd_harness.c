// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd_harness - proves the test harness can fail.
 *
 * `make check-harness` loads this module with fail_kunit=1 (a KUnit case
 * that fails) or warn=1 (a kernel WARNING at load) and expects the verdict
 * to turn red each time.  With both parameters off, the module loads, its
 * case skips itself, and nothing is reported, so it is harmless to load.
 * The normal `make check` run does not load it.
 */
#include <kunit/test.h>
#include <linux/bug.h>
#include <linux/module.h>
#include <linux/moduleparam.h>

static bool fail_kunit;
module_param(fail_kunit, bool, 0444);
MODULE_PARM_DESC(fail_kunit, "Make the statsfd_harness KUnit case fail");

static bool warn;
module_param(warn, bool, 0444);
MODULE_PARM_DESC(warn, "Trigger a kernel WARNING at module load");

/*
 * A real expectation on a value the test cannot know at build time, so the
 * failure goes through the same KUnit reporting path a genuine bug would.
 */
static void statsfd_harness_deliberate_failure(struct kunit *test)
{
	if (!fail_kunit)
		kunit_skip(test, "load with fail_kunit=1 to fail on purpose");

	KUNIT_EXPECT_FALSE_MSG(test, fail_kunit,
			       "deliberate failure requested by fail_kunit=1");
}

static struct kunit_case statsfd_harness_cases[] = {
	KUNIT_CASE(statsfd_harness_deliberate_failure),
	{}
};

static struct kunit_suite statsfd_harness_suite = {
	.name = "statsfd_harness",
	.test_cases = statsfd_harness_cases,
};

kunit_test_suite(statsfd_harness_suite);

static int __init statsfd_harness_init(void)
{
	WARN(warn, "statsfd_harness: deliberate WARNING requested by warn=1\n");
	return 0;
}

static void __exit statsfd_harness_exit(void)
{
}

module_init(statsfd_harness_init);
module_exit(statsfd_harness_exit);

MODULE_DESCRIPTION("statsfd harness proof: a failing KUnit case, a WARN");
MODULE_LICENSE("GPL");
