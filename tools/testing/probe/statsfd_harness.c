// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd_harness - proves the test harness can fail.
 *
 * `make check-harness` loads this module with one parameter at a time and
 * expects the verdict to turn red, each time for its own reason:
 *
 *	fail_kunit=1	a KUnit case that fails
 *	warn=1		a kernel WARNING at load (panic_on_warn in the guest)
 *	leak=1		kmalloc() objects whose only pointers are lost: kmemleak
 *	oob=1		a read one byte past a kmalloc() buffer: KASAN
 *	abba=1		two mutexes taken in both orders: lockdep
 *	race=1		a counter bumped with a plain ++ by a kthread while
 *			init reads it with READ_ONCE(): KCSAN (check-kcsan)
 *
 * Everything but fail_kunit happens at module init.  With every parameter
 * off, the module loads, its case skips itself, and nothing is reported,
 * so it is harmless to load.  The normal `make check` run does not load it.
 */
#include <kunit/test.h>
#include <linux/bug.h>
#include <linux/compiler.h>
#include <linux/err.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/string.h>

static bool fail_kunit;
module_param(fail_kunit, bool, 0444);
MODULE_PARM_DESC(fail_kunit, "Make the statsfd_harness KUnit case fail");

static bool warn;
module_param(warn, bool, 0444);
MODULE_PARM_DESC(warn, "Trigger a kernel WARNING at module load");

static bool leak;
module_param(leak, bool, 0444);
MODULE_PARM_DESC(leak, "Leak kmalloc() objects at load, for kmemleak");

static bool oob;
module_param(oob, bool, 0444);
MODULE_PARM_DESC(oob, "Read one byte past a kmalloc() buffer at load, for KASAN");

static bool abba;
module_param(abba, bool, 0444);
MODULE_PARM_DESC(abba, "Take two mutexes in both orders at load, for lockdep");

static bool race;
module_param(race, bool, 0444);
MODULE_PARM_DESC(race, "Race a plain writer against a READ_ONCE() reader at load, for KCSAN");

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

/* Big enough that the report cannot be mistaken for allocator noise. */
#define STATSFD_HARNESS_LEAK_SIZE	512
#define STATSFD_HARNESS_LEAK_COUNT	4

/*
 * Allocate, fill and drop the only pointer, a few times over.  The fill
 * and the hidden pointer keep the compiler from dropping the allocation;
 * the pattern makes the objects recognizable in kmemleak's hex dump.
 * kmemleak also scans stacks, including an exited task's stack cached for
 * reuse, where the allocator's frames may have left a stale copy of the
 * last pointer; each allocation overwrites the previous one's, so the
 * earlier objects are unreferenced for sure.  Nothing frees them, not even
 * unload, so kmemleak's scans 5 s apart find them whatever happens next.
 */
static noinline void statsfd_harness_leak(void)
{
	void *p;
	int i;

	for (i = 0; i < STATSFD_HARNESS_LEAK_COUNT; i++) {
		p = kmalloc(STATSFD_HARNESS_LEAK_SIZE, GFP_KERNEL);
		OPTIMIZER_HIDE_VAR(p);
		if (p)
			memset(p, 0x5a, STATSFD_HARNESS_LEAK_SIZE);
	}
	pr_info("statsfd_harness: leaked %d objects of %d bytes on purpose (leak=1)\n",
		STATSFD_HARNESS_LEAK_COUNT, STATSFD_HARNESS_LEAK_SIZE);
}

/*
 * The size is not a multiple of KASAN's 8-byte granule, so the byte just
 * past the buffer lies in the poisoned tail of the same slab object:
 * generic KASAN reports a slab-out-of-bounds read whatever the neighbour
 * objects are.  Both the pointer and the index are hidden from the
 * compiler, so it can neither fold the read nor warn about it at build
 * time, and READ_ONCE() makes the (instrumented) load real.
 */
#define STATSFD_HARNESS_OOB_SIZE	123

static noinline void statsfd_harness_oob(void)
{
	size_t idx = STATSFD_HARNESS_OOB_SIZE;
	char *buf = kmalloc(STATSFD_HARNESS_OOB_SIZE, GFP_KERNEL);
	char val;

	if (!buf)
		return;
	OPTIMIZER_HIDE_VAR(buf);
	OPTIMIZER_HIDE_VAR(idx);
	val = READ_ONCE(buf[idx]);
	pr_info("statsfd_harness: read byte %zu of a %d-byte buffer (oob=1): %d\n",
		idx, STATSFD_HARNESS_OOB_SIZE, val);
	kfree(buf);
}

static DEFINE_MUTEX(statsfd_harness_a);
static DEFINE_MUTEX(statsfd_harness_b);

/*
 * A then B, released, then B then A: lockdep records A -> B and then sees
 * B -> A close a cycle, and reports the possible deadlock.  One thread
 * takes both orders one after the other, so nothing can actually wait.
 */
static noinline void statsfd_harness_abba(void)
{
	mutex_lock(&statsfd_harness_a);
	mutex_lock(&statsfd_harness_b);
	mutex_unlock(&statsfd_harness_b);
	mutex_unlock(&statsfd_harness_a);

	mutex_lock(&statsfd_harness_b);
	mutex_lock(&statsfd_harness_a);
	mutex_unlock(&statsfd_harness_a);
	mutex_unlock(&statsfd_harness_b);
}

/*
 * The data race statsfd's stats writers must never have: a counter bumped
 * with a plain "++" while a lockless reader loads it with READ_ONCE(), as
 * every statsfd reader does.  Only a KCSAN that does not assume plain
 * aligned writes atomic reports it (tools/testing/config/kcsan.config sets
 * KCSAN_ASSUME_PLAIN_WRITES_ATOMIC=n for exactly this), so this probe also
 * proves the leg would catch a stat written without statsfd_stat_add().
 * The guest has two CPUs and both sides loop for two seconds, far more
 * accesses than KCSAN needs to catch one in a watchpoint.  The function
 * call in each loop keeps the compiler from hoisting the accesses out.
 */
static unsigned long statsfd_harness_racy;

static int statsfd_harness_racer(void *unused)
{
	while (!kthread_should_stop()) {
		statsfd_harness_racy++;
		cond_resched();
	}
	return 0;
}

static noinline void statsfd_harness_race(void)
{
	unsigned long end = jiffies + 2 * HZ, sum = 0;
	struct task_struct *t;

	t = kthread_run(statsfd_harness_racer, NULL, "statsfd_racer");
	if (IS_ERR(t))
		return;
	while (time_before(jiffies, end)) {
		sum += READ_ONCE(statsfd_harness_racy);
		cond_resched();
	}
	kthread_stop(t);
	pr_info("statsfd_harness: raced a plain counter for 2 s (race=1): %lu\n", sum);
}

static int __init statsfd_harness_init(void)
{
	if (leak)
		statsfd_harness_leak();
	if (oob)
		statsfd_harness_oob();
	if (abba)
		statsfd_harness_abba();
	if (race)
		statsfd_harness_race();
	WARN(warn, "statsfd_harness: deliberate WARNING requested by warn=1\n");
	return 0;
}

static void __exit statsfd_harness_exit(void)
{
}

module_init(statsfd_harness_init);
module_exit(statsfd_harness_exit);

MODULE_DESCRIPTION("statsfd harness proof: KUnit failure, WARN, leak, KASAN, lockdep, KCSAN");
MODULE_LICENSE("GPL");
