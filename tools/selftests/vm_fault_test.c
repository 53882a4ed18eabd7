// SPDX-License-Identifier: GPL-2.0
/*
 * vm_fault_test - statsfd_vm under injected allocation failures and churn,
 * and the module's lifetime (bad-inputs.md #16, #18, #26):
 *
 * - failslab during VM, vCPU and stats fd creation, every allocation of
 *   each path failed in turn (/proc/thread-self/fail-nth) and then at
 *   random (probability/interval/times/task-filter with make-it-fail):
 *   each failure is a clean -ENOMEM with no fd, VM, vCPU or stats fd left
 *   behind, and kmemleak finds nothing new afterwards;
 * - thousands of VMs and vCPUs created and destroyed: every count back to
 *   its baseline, kmemleak clean, slab memory back (when measurable);
 * - rmmod refused while a stats fd (or a VM fd) is open, allowed after;
 *   the module reloaded with the `group` parameter to check the device
 *   node, then reloaded as it was.
 *
 * A kernel built without fault injection (the stock 6.1 kernel) SKIPs the
 * two failslab tests, one built without kmemleak SKIPs
 * leak_scan_after_churn_26; a kernel that has either but does not let this
 * test use it FAILs them.  Loop counts grow with STATSFD_STRESS=1.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "statsfd_vm_util.h"

#define FAILSLAB "/sys/kernel/debug/failslab"
#define KMEMLEAK "/sys/kernel/debug/kmemleak"

/* ---------------------------------------------------------------- kmemleak */

/* Built with CONFIG_DEBUG_KMEMLEAK, whether or not its file is usable. */
static bool kernel_has_kmemleak(void)
{
	return !access(KMEMLEAK, F_OK) || kernel_has_symbol("kmemleak_alloc");
}

/* Up to this many suspects are remembered from the scan before a test. */
#define MAX_SUSPECTS 4096

struct leaks {
	bool enabled;
	unsigned long addr[MAX_SUSPECTS];
	int n;
};

/*
 * Scan, then collect the addresses of every object kmemleak reports
 * ("unreferenced object 0x... (size ...)").  With @print, print the report
 * of each object not already in @before.  Returns the number of those, or
 * -1 if kmemleak is unavailable.
 */
static int kmemleak_collect(struct leaks *now, const struct leaks *before,
			    bool print)
{
	static char report[1 << 20];
	char *line, *save = NULL;
	bool in_new = false;
	int fd, fresh = 0, i;
	ssize_t len, got = 0;

	now->n = 0;
	now->enabled = !write_file(KMEMLEAK, "scan");
	if (!now->enabled)
		return -1;
	fd = open(KMEMLEAK, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while ((len = read(fd, report + got, sizeof(report) - 1 - got)) > 0)
		got += len;
	close(fd);
	report[got] = 0;

	for (line = strtok_r(report, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long addr;

		if (sscanf(line, "unreferenced object 0x%lx", &addr) != 1) {
			if (print && in_new)
				fprintf(stderr, "#   %s\n", line);
			continue;
		}
		in_new = true;
		for (i = 0; before && i < before->n; i++)
			if (before->addr[i] == addr)
				in_new = false;
		if (now->n < MAX_SUSPECTS)
			now->addr[now->n++] = addr;
		if (in_new) {
			fresh++;
			if (print)
				fprintf(stderr, "# %s\n", line);
		}
	}
	return fresh;
}

/*
 * Whether the failslab tests scan for leaks themselves.  Each scan pair
 * costs seconds under KASAN; without STATSFD_STRESS the guest's own
 * kmemleak check after every test (tools/testing/qemu/check-guest.sh)
 * still catches what they would leak, only without naming the test, and
 * leak_scan_after_churn_26 always scans.
 */
static bool failslab_scans_kmemleak(void)
{
	return stress_scale(0, 1);
}

/*
 * The snapshot before a test.  A kernel built with kmemleak must let us
 * scan (a scan that cannot run proves nothing, so it fails the test);
 * only a kernel without it leaves .enabled false, and then the callers
 * have SKIPped already or say in their name that they check no leaks.
 */
static void kmemleak_before(struct __test_metadata *_metadata,
			    struct leaks *before)
{
	before->enabled = false;
	if (!kernel_has_kmemleak())
		return;
	ASSERT_LE(0, kmemleak_collect(before, NULL, false))
	{
		TH_LOG("kernel has kmemleak, but %s cannot scan: %m", KMEMLEAK);
	}
}

/*
 * kmemleak reports only objects older than 5 s, and only at a scan that
 * finds them as the scan before left them: scan twice, the second time
 * at least 6 s after the test's last allocation (the first scan, seconds
 * long under KASAN, counts towards that), and expect nothing that was
 * not reported before the test started.
 */
static void kmemleak_expect_clean(struct __test_metadata *_metadata,
				  const struct leaks *before)
{
	static struct leaks after;
	__u64 t0 = now_ns(), waited;
	int fresh;

	ASSERT_TRUE(before->enabled);
	ASSERT_LE(0, kmemleak_collect(&after, before, false));
	waited = now_ns() - t0;
	if (waited < 6000000000ULL)
		usleep((6000000000ULL - waited) / 1000);
	fresh = kmemleak_collect(&after, before, true);
	ASSERT_LE(0, fresh);
	EXPECT_EQ(0, fresh)
	{
		TH_LOG("kmemleak: %d new unreferenced objects", fresh);
	}
}

/* ---------------------------------------------------------------- failslab */

/* failslab knobs this test changes, and their values before it. */
static const char *const failslab_knobs[] = {
	"ignore-gfp-wait", "verbose",	  "probability", "interval",
	"times",	   "task-filter", "space",
};

#define NR_KNOBS (ARRAY_SIZE(failslab_knobs))

/*
 * fail-nth counts every fault-injection site a task passes, not only slab
 * allocations: with CONFIG_FAULT_INJECTION_USERCOPY (the 6.12 test
 * kernel) each copy_{from,to}_user() is one too.  Its stack dump per
 * failure is silenced like failslab's.
 */
#define FAIL_USERCOPY_VERBOSE "/sys/kernel/debug/fail_usercopy/verbose"

struct failslab {
	bool present;
	char saved[NR_KNOBS][32];
	char usercopy_verbose[32]; /* saved, "" when there is no fail_usercopy */
	int nth_fd; /* /proc/thread-self/fail-nth, kept open */
	int mif_fd; /* /proc/thread-self/make-it-fail, kept open */
};

/* Returns 0, or -1 with errno set (and the knob named on stderr). */
static int knob_set(const char *knob, const char *val)
{
	return fault_knob_set(FAILSLAB, knob, val);
}

/*
 * Built with fault injection (CONFIG_FAULT_INJECTION, which brings
 * fail-nth, and CONFIG_FAILSLAB)?  Any trace of it counts: a kernel that
 * has it must let the tests use all of it.
 */
static bool kernel_has_failslab(void)
{
	const char *trace = NULL;

	if (!access(FAILSLAB, F_OK))
		trace = FAILSLAB;
	else if (!access("/proc/thread-self/fail-nth", F_OK))
		trace = "/proc/thread-self/fail-nth";
	else if (kernel_has_symbol("setup_fault_attr"))
		trace = "setup_fault_attr()";
	if (trace)
		fprintf(stderr, "# fault injection found: %s\n", trace);
	return trace;
}

/*
 * Fail only this thread's slab allocations, also those that may sleep, and
 * quietly (no stack dump per failure in the kernel log).  Every knob must
 * be there and writable: a knob that cannot be set would leave the test
 * injecting nothing, or the wrong thing, and passing.
 */
static void failslab_setup(struct __test_metadata *_metadata,
			   struct failslab *f)
{
	char path[128];
	size_t i;

	f->nth_fd = -1;
	f->mif_fd = -1;
	f->present = true;
	for (i = 0; i < NR_KNOBS; i++) {
		snprintf(path, sizeof(path), "%s/%s", FAILSLAB,
			 failslab_knobs[i]);
		f->saved[i][0] = 0;
		ASSERT_LT(0, read_file(path, f->saved[i], sizeof(f->saved[i])))
		{
			TH_LOG("%s: %m", path);
		}
	}
	ASSERT_EQ(0, knob_set("ignore-gfp-wait", "N"));
	ASSERT_EQ(0, knob_set("probability", "0"));
	ASSERT_EQ(0, fault_knobs_task_only(FAILSLAB));
	f->usercopy_verbose[0] = 0;
	if (!access(FAIL_USERCOPY_VERBOSE, F_OK)) {
		ASSERT_LT(0, read_file(FAIL_USERCOPY_VERBOSE, f->usercopy_verbose,
				       sizeof(f->usercopy_verbose)));
		ASSERT_EQ(0, write_file(FAIL_USERCOPY_VERBOSE, "0"));
	}
	/* opened once: opening a file allocates, so not while failing */
	f->nth_fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, f->nth_fd)
	{
		TH_LOG("/proc/thread-self/fail-nth: %m");
	}
	f->mif_fd = open("/proc/thread-self/make-it-fail", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, f->mif_fd)
	{
		TH_LOG("/proc/thread-self/make-it-fail: %m");
	}
}

/* Let failslab fail this thread's allocations, or stop it. */
static int make_it_fail(struct failslab *f, bool on)
{
	return pwrite(f->mif_fd, on ? "1" : "0", 1, 0) == 1 ? 0 : -1;
}

static void failslab_restore(struct failslab *f)
{
	size_t i;

	if (!f->present)
		return;
	if (f->mif_fd >= 0) {
		make_it_fail(f, false);
		close(f->mif_fd);
	}
	if (f->nth_fd >= 0) {
		pwrite(f->nth_fd, "0", 1, 0);
		close(f->nth_fd);
	}
	for (i = 0; i < NR_KNOBS; i++)
		if (f->saved[i][0])
			knob_set(failslab_knobs[i], f->saved[i]);
	if (f->usercopy_verbose[0])
		write_file(FAIL_USERCOPY_VERBOSE, f->usercopy_verbose);
}

/*
 * Arm fail-nth: the @nth slab allocation of this thread from now fails.
 * Returns 0, or -1 if fail-nth refused it.
 */
static int fail_nth_arm(struct failslab *f, int nth)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%d", nth);

	return pwrite(f->nth_fd, buf, len, 0) == len ? 0 : -1;
}

/*
 * Disarm; returns 1 if the armed failure was injected, 0 if not, -1 if
 * fail-nth could not be read or disarmed.
 *
 * Reading and writing fail-nth copy to and from user space, which are
 * fault sites themselves where usercopy injection exists: while the
 * failure is still armed, the read (or the write of "0") may be the site
 * that reaches it and fail with EFAULT.  That consumes it, so fail-nth is
 * 0 afterwards, and it means the operation never reached it.
 */
static int fail_nth_disarm(struct failslab *f)
{
	char buf[16] = { 0 };
	int i;

	if (pread(f->nth_fd, buf, sizeof(buf) - 1, 0) <= 0)
		return errno == EFAULT ? 0 : -1;
	if (atoi(buf) == 0)
		return 1;
	for (i = 0; i < 3; i++) {
		if (pwrite(f->nth_fd, "0", 1, 0) == 1)
			return 0;
		if (errno != EFAULT)
			return -1;
	}
	return -1;
}

/* The counts nothing may leave changed once the objects are closed. */
struct counts {
	__u64 vms_alive, vcpus_alive, stats_fds_open, vm_vcpus, vm_fds;
	int next_fd;
};

/**
 * struct env - what the fault tests work on
 * @v: a VM with vCPU 0, the stats fds of both
 * @sys_stats: a system stats fd, open throughout
 * @sys: @sys_stats parsed
 * @vms: the VM's stats fd parsed
 * @vcpus: the vCPU's stats fd parsed
 * @fs: failslab state to restore
 * @debugfs_saved: the debugfs parameter, to restore
 * @before: kmemleak suspects before the test
 */
struct env {
	struct vm_env v;
	int sys_stats;
	struct sfile sys;
	struct sfile vms;
	struct sfile vcpus;
	struct failslab fs;
	struct leaks *before;
	bool debugfs_saved;
};

FIXTURE(fault)
{
	struct env env;
};

FIXTURE_SETUP(fault)
{
	struct env *e = &self->env;

	memset(e, 0, sizeof(*e));
	e->fs.nth_fd = -1;
	e->fs.mif_fd = -1;
	e->sys_stats = -1;
	ASSERT_VM_ENV(&e->v, -1, 1, NULL, VM_ENV_STATS);
	e->sys_stats = stats_fd(e->v.dev);
	ASSERT_GE(e->sys_stats, 0);
	ASSERT_EQ(0, sfile_parse(e->sys_stats, &e->sys));
	ASSERT_EQ(0, sfile_parse(e->v.vm_stats, &e->vms));
	ASSERT_EQ(0, sfile_parse(e->v.vcpu_stats[0], &e->vcpus));
	e->before = calloc(1, sizeof(*e->before));
	ASSERT_NE(NULL, e->before);
	e->debugfs_saved = debugfs_param_get();
}

FIXTURE_TEARDOWN(fault)
{
	struct env *e = &self->env;

	failslab_restore(&e->fs);
	debugfs_param_set(e->debugfs_saved);
	free(e->before);
	sfile_free(&e->sys);
	sfile_free(&e->vms);
	sfile_free(&e->vcpus);
	close_fd(&e->sys_stats);
	vm_env_close(&e->v);
}

/*
 * Two preads: this runs after every injected failure.  A failed read
 * ends the test: two failed reads must never compare equal.
 */
static void counts_get(struct __test_metadata *_metadata, struct env *e,
		       struct counts *c)
{
	ASSERT_EQ(0, sfile_read_data(e->sys_stats, &e->sys))
	{
		TH_LOG("system stats: %m");
	}
	ASSERT_EQ(0, sfile_read_data(e->v.vm_stats, &e->vms))
	{
		TH_LOG("VM stats: %m");
	}
	c->vms_alive = sfile_val(&e->sys, "vms_alive");
	c->vcpus_alive = sfile_val(&e->sys, "vcpus_alive");
	c->stats_fds_open = sfile_val(&e->sys, "stats_fds_open");
	c->vm_vcpus = sfile_val(&e->vms, "vcpus_created");
	c->vm_fds = sfile_val(&e->vms, "stats_fds_open");
	ASSERT_NE(STAT_MISSING, c->vms_alive);
	ASSERT_NE(STAT_MISSING, c->vcpus_alive);
	ASSERT_NE(STAT_MISSING, c->stats_fds_open);
	ASSERT_NE(STAT_MISSING, c->vm_vcpus);
	ASSERT_NE(STAT_MISSING, c->vm_fds);
	c->next_fd = next_fd();
	ASSERT_LE(0, c->next_fd);
}

static void expect_counts_eq(struct __test_metadata *_metadata,
			     const struct counts *a, const struct counts *b)
{
	EXPECT_EQ(a->vms_alive, b->vms_alive);
	EXPECT_EQ(a->vcpus_alive, b->vcpus_alive);
	EXPECT_EQ(a->stats_fds_open, b->stats_fds_open);
	EXPECT_EQ(a->vm_vcpus, b->vm_vcpus);
	EXPECT_EQ(a->vm_fds, b->vm_fds);
	EXPECT_EQ(a->next_fd, b->next_fd);
}

enum create_op { OP_VM, OP_VCPU, OP_VM_STATS, OP_VCPU_STATS, OP_SYS_STATS };

/* One creation; returns the new fd or -1 with errno. */
static int do_op(struct env *e, enum create_op op, __u32 vcpu_id)
{
	switch (op) {
	case OP_VM:
		return vm_create(e->v.dev);
	case OP_VCPU:
		return vcpu_create(e->v.vm, vcpu_id);
	case OP_VM_STATS:
		return stats_fd(e->v.vm);
	case OP_VCPU_STATS:
		return stats_fd(e->v.vcpu[0]);
	case OP_SYS_STATS:
		return stats_fd(e->v.dev);
	}
	return -1;
}

/*
 * A stats fd that an injected failure did not fail must be whole: the
 * header, size and descriptors of @ref (same schema), an id, and every
 * byte readable.  An allocation failure ignored on the way shows here as
 * a short, empty or garbled file.
 */
static void expect_stats_like(struct __test_metadata *_metadata, int fd,
			      const struct sfile *ref)
{
	unsigned char *buf;
	struct sfile s;

	ASSERT_EQ(0, sfile_parse(fd, &s))
	{
		TH_LOG("parse: %m");
	}
	EXPECT_EQ(0, memcmp(&ref->hdr, &s.hdr, sizeof(s.hdr)));
	EXPECT_EQ(ref->size, s.size);
	EXPECT_NE(0, s.id[0]);
	if (!memcmp(&ref->hdr, &s.hdr, sizeof(s.hdr)))
		EXPECT_EQ(0, memcmp(ref->descs, s.descs,
				    s.hdr.num_desc * s.stride));
	buf = malloc(s.size + 1);
	ASSERT_NE(NULL, buf);
	EXPECT_EQ((ssize_t)s.size, pread(fd, buf, s.size + 1, 0));
	EXPECT_EQ(0, sfile_read_data(fd, &s));
	free(buf);
	sfile_free(&s);
}

/*
 * What @op created although an allocation on its way failed: a VM or a
 * vCPU must give a whole stats fd, a stats fd must be one.
 */
static void expect_created_whole(struct __test_metadata *_metadata,
				 struct env *e, enum create_op op, int fd)
{
	int sfd;

	switch (op) {
	case OP_VM:
	case OP_VCPU:
		sfd = stats_fd(fd);
		ASSERT_LE(0, sfd)
		{
			TH_LOG("stats fd of what op %d created: %m", op);
		}
		expect_stats_like(_metadata, sfd,
				  op == OP_VM ? &e->vms : &e->vcpus);
		close(sfd);
		break;
	case OP_VM_STATS:
		expect_stats_like(_metadata, fd, &e->vms);
		break;
	case OP_VCPU_STATS:
		expect_stats_like(_metadata, fd, &e->vcpus);
		break;
	case OP_SYS_STATS:
		expect_stats_like(_metadata, fd, &e->sys);
		break;
	}
}

/*
 * Fail the @first, then every @step-th, fault site of @op (a slab
 * allocation, or on kernels with usercopy injection also a copy from or to
 * user space) until it completes without reaching the armed one.  Every
 * injected failure must be -ENOMEM for an allocation or -EFAULT for a
 * user copy (or, if it hit an allocation the path may do without, such as
 * its debugfs view, a success), with the counts unchanged once the result
 * is closed.  A created vCPU cannot be destroyed alone, so each vCPU
 * attempt uses a fresh id and the counts expect the successes.  Returns
 * the number of injected failures.
 */
static int fail_nth_sweep(struct __test_metadata *_metadata, struct env *e,
			  enum create_op op, int step, __u32 *vcpu_id)
{
	struct counts base, now;
	int nth, fd, err, injected, enomem = 0, ok = 0;

	counts_get(_metadata, e, &base);
	for (nth = 1; nth < 2000; nth += nth < 12 ? 1 : step) {
		ASSERT_EQ(0, fail_nth_arm(&e->fs, nth));
		fd = do_op(e, op, *vcpu_id);
		err = errno;
		injected = fail_nth_disarm(&e->fs);
		ASSERT_LE(0, injected)
		{
			TH_LOG("fail-nth: %m");
		}

		if (fd >= 0) {
			/* a success despite a failure: is it whole? */
			if (injected)
				expect_created_whole(_metadata, e, op, fd);
			close(fd);
			if (op == OP_VCPU) {
				(*vcpu_id)++;
				base.vm_vcpus++;
				base.vcpus_alive++;
			}
			ok++;
		} else {
			EXPECT_TRUE(err == ENOMEM || err == EFAULT)
			{
				TH_LOG("op %d, fault site %d: %s", op, nth,
				       strerror(err));
			}
			EXPECT_EQ(1, injected);
			enomem++;
		}
		counts_get(_metadata, e, &now);
		expect_counts_eq(_metadata, &base, &now);
		if (!injected) {
			/* it needed fewer than @nth allocations: done */
			EXPECT_GE(fd, 0);
			break;
		}
	}
	TH_LOG("op %d: allocations 1..%d failed (step %d): %d -ENOMEM, %d ok",
	       op, nth - 1, step, enomem, ok);
	EXPECT_LT(nth, 2000);
	return enomem;
}

/*
 * #18: failslab during VM, vCPU and stats fd creation, the systematic
 * way: each creation path with every one of its slab allocations failed in
 * turn (/proc/thread-self/fail-nth).  VM and vCPU creation also run with
 * the debugfs view on, where the dozens of allocations of the view (which
 * may fail without failing the creation) are sampled.  Then kmemleak
 * (failslab_scans_kmemleak()).
 */
TEST_F_TIMEOUT(fault, failslab_every_allocation_18, 600)
{
	struct env *e = &self->env;
	__u32 vcpu_id = 1;
	int op;

	if (!kernel_has_failslab())
		SKIP(return, "kernel built without FAULT_INJECTION/FAILSLAB");
	failslab_setup(_metadata, &e->fs);
	if (failslab_scans_kmemleak())
		kmemleak_before(_metadata, e->before);
	ASSERT_EQ(0, debugfs_param_set(false));
	for (op = OP_VM; op <= OP_SYS_STATS; op++)
		EXPECT_GT(fail_nth_sweep(_metadata, e, op, 1, &vcpu_id), 0);
	if (e->debugfs_saved) {
		/* the view's sites sampled: every 5th with STRESS, else 15th */
		int step = stress_scale(15, 5);

		ASSERT_EQ(0, debugfs_param_set(true));
		EXPECT_GT(fail_nth_sweep(_metadata, e, OP_VM, step, &vcpu_id),
			  0);
		EXPECT_GT(fail_nth_sweep(_metadata, e, OP_VCPU, step,
					 &vcpu_id), 0);
	}
	if (failslab_scans_kmemleak())
		kmemleak_expect_clean(_metadata, e->before);
}

/*
 * #18, the classic way: failslab's probability, interval and times, with
 * task-filter so that only this thread's allocations fail
 * (/proc/thread-self/make-it-fail around each call): a mix of all five
 * creations, each -ENOMEM or a success, the counts exact throughout.
 */
TEST_F_TIMEOUT(fault, failslab_random_18, 300)
{
	struct env *e = &self->env;
	int i, fd, err, enomem = 0, ok = 0, alive = 0, keep[64];
	struct counts base, now;
	__u32 vcpu_id = 1;
	unsigned int seed = getpid();
	int rounds = stress_scale(100, 400);

	if (!kernel_has_failslab())
		SKIP(return, "kernel built without FAULT_INJECTION/FAILSLAB");
	failslab_setup(_metadata, &e->fs);
	/* the debugfs view's failures are sampled above; here it is slow */
	ASSERT_EQ(0, debugfs_param_set(false));
	ASSERT_EQ(0, knob_set("probability", "20"));
	ASSERT_EQ(0, knob_set("interval", "1"));
	ASSERT_EQ(0, knob_set("times", "-1"));
	if (failslab_scans_kmemleak())
		kmemleak_before(_metadata, e->before);
	counts_get(_metadata, e, &base);
	srand(seed);
	TH_LOG("seed %u", seed);

	for (i = 0; i < rounds; i++) {
		enum create_op op = rand() % 5;

		ASSERT_EQ(0, make_it_fail(&e->fs, true));
		fd = do_op(e, op, vcpu_id);
		err = errno;
		ASSERT_EQ(0, make_it_fail(&e->fs, false));
		if (fd < 0) {
			EXPECT_EQ(ENOMEM, err)
			{
				TH_LOG("op %d: %s", op, strerror(err));
			}
			enomem++;
			continue;
		}
		ok++;
		/* it may have survived a failure: is it whole? */
		expect_created_whole(_metadata, e, op, fd);
		if (op == OP_VCPU) {
			vcpu_id++;
			base.vm_vcpus++;
			base.vcpus_alive++;
		}
		/* keep some results open for a while, then close them */
		if (alive < 64 && rand() % 2)
			keep[alive++] = fd;
		else
			close(fd);
		if (alive == 64 || i % 50 == 49) {
			while (alive)
				close(keep[--alive]);
			counts_get(_metadata, e, &now);
			expect_counts_eq(_metadata, &base, &now);
		}
	}
	while (alive)
		close(keep[--alive]);
	ASSERT_EQ(0, knob_set("probability", "0"));
	counts_get(_metadata, e, &now);
	expect_counts_eq(_metadata, &base, &now);
	TH_LOG("%d -ENOMEM, %d created", enomem, ok);
	EXPECT_GT(enomem, 0);
	EXPECT_GT(ok, 0);
	if (failslab_scans_kmemleak())
		kmemleak_expect_clean(_metadata, e->before);
}

/* Slab memory in kB, from /proc/meminfo. */
static long slab_kb(void)
{
	char buf[8192], *p;

	if (read_file("/proc/meminfo", buf, sizeof(buf)) <= 0)
		return -1;
	p = strstr(buf, "\nSlab:");
	return p ? strtol(p + 6, NULL, 10) : -1;
}

/* KASAN's quarantine holds freed objects back: slab cannot shrink then. */
static bool kernel_has_kasan(void)
{
	char line[256];
	bool found = false;
	FILE *f = fopen("/proc/kallsyms", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = !!strstr(line, " kasan_save_stack");
	fclose(f);
	return found;
}

static void settle_memory(void)
{
	sync();
	write_file("/proc/sys/vm/drop_caches", "3");
	usleep(200000);
}

/* One VM's life: vCPUs, runs, kicks, stats fds, closed in varying order. */
static void churn_one(struct __test_metadata *_metadata, int dev, int i)
{
	struct statsfd_vm_run run = { .io_exits = 3, .halt_exits = 1 };
	int vm, vcpu[2], sfd[2], j;

	vm = vm_create(dev);
	ASSERT_GE(vm, 0);
	for (j = 0; j < 2; j++) {
		vcpu[j] = vcpu_create(vm, j);
		ASSERT_GE(vcpu[j], 0);
	}
	ASSERT_EQ(0, vcpu_kick(vcpu[0]));
	ASSERT_EQ(0, vcpu_run(vcpu[0], &run));
	sfd[0] = stats_fd(vm);
	sfd[1] = stats_fd(vcpu[i % 2]);
	ASSERT_GE(sfd[0], 0);
	ASSERT_GE(sfd[1], 0);
	/* the last reference is the VM fd, a vCPU fd or a stats fd */
	switch (i % 3) {
	case 0:
		close(sfd[0]);
		close(sfd[1]);
		close(vcpu[0]);
		close(vcpu[1]);
		close(vm);
		break;
	case 1:
		close(vm);
		close(sfd[1]);
		close(sfd[0]);
		close(vcpu[0]);
		close(vcpu[1]);
		break;
	default:
		close(vcpu[0]);
		close(vcpu[1]);
		close(vm);
		close(sfd[0]);
		close(sfd[1]);
		break;
	}
}

/*
 * Without STATSFD_STRESS, enough cycles that a leak of one vCPU per VM is
 * well over the slab threshold below, in a few seconds on a plain kernel;
 * with it, the thousands of #26.  A debug kernel under TCG is slower than
 * either wants, so a time budget ends the loop there.
 */
#define CHURN_CYCLES stress_scale(200, 2000)
#define CHURN_BUDGET_NS (stress_scale(15, 150) * 1000000000ULL)

/*
 * #26: thousands of VMs and vCPUs created and destroyed (with
 * STATSFD_STRESS 2000 VMs with two vCPUs and two stats fds each, else 200,
 * or as many as fit in the time budget on a slow debug kernel; a few dozen
 * with the debugfs view, the rest without): vms_alive, vcpus_alive and
 * stats_fds_open return to their baseline, and (without KASAN, whose
 * quarantine keeps freed memory) slab memory returns to where it was.
 * kmemleak's verdict on the same churn is leak_scan_after_churn_26.
 */
TEST_F_TIMEOUT(fault, create_destroy_cycles_26, 600)
{
	struct env *e = &self->env;
	int i, cycles = CHURN_CYCLES;
	struct counts base, now;
	__u64 created, t_end;
	long slab0, slab1;

	ASSERT_EQ(0, debugfs_param_set(false));
	for (i = 0; i < 50; i++)
		churn_one(_metadata, e->v.dev, i);
	settle_memory();
	slab0 = slab_kb();
	counts_get(_metadata, e, &base);
	created = sys_stat("vms_created");

	ASSERT_EQ(0, debugfs_param_set(e->debugfs_saved));
	for (i = 0; i < 30; i++)
		churn_one(_metadata, e->v.dev, i);
	ASSERT_EQ(0, debugfs_param_set(false));
	t_end = now_ns() + CHURN_BUDGET_NS;
	for (; i < cycles && now_ns() < t_end; i++)
		churn_one(_metadata, e->v.dev, i);

	counts_get(_metadata, e, &now);
	expect_counts_eq(_metadata, &base, &now);
	EXPECT_EQ(created + i, sys_stat("vms_created"));
	settle_memory();
	slab1 = slab_kb();
	TH_LOG("%d of %d VMs with %d vCPUs: slab %ld kB before, %ld kB after",
	       i, cycles, 2 * i, slab0, slab1);
	EXPECT_GE(i, cycles / 4);
	if (kernel_has_kasan()) {
		TH_LOG("KASAN quarantine: slab growth not checked");
	} else {
		ASSERT_LT(0, slab0);
		ASSERT_LT(0, slab1);
		/*
		 * A leak of one 1.5 kB vCPU per VM would be 2 * 0.75 kB
		 * per cycle; 512 kB is what settling leaves as noise.
		 */
		EXPECT_LT(slab1 - slab0,
			  cycles * 3 / 4 > 512 ? cycles * 3 / 4 : 512);
		EXPECT_EQ(cycles, i);
	}
}

/*
 * #26, kmemleak's side: VMs churned with the debugfs view and without,
 * then nothing new unreferenced.  Its own test so that a kernel built
 * without kmemleak (the stock 6.1 kernel) SKIPs exactly this, by name;
 * a kernel that has it but will not scan FAILs it.
 */
TEST_F_TIMEOUT(fault, leak_scan_after_churn_26, 300)
{
	struct env *e = &self->env;
	int i;

	if (!kernel_has_kmemleak())
		SKIP(return, "kernel built without DEBUG_KMEMLEAK");
	kmemleak_before(_metadata, e->before);
	ASSERT_EQ(0, debugfs_param_set(true));
	for (i = 0; i < 30; i++)
		churn_one(_metadata, e->v.dev, i);
	ASSERT_EQ(0, debugfs_param_set(false));
	for (; i < 100; i++)
		churn_one(_metadata, e->v.dev, i);
	kmemleak_expect_clean(_metadata, e->before);
}

/* ------------------------------------------------------------ the module */

static int load_module(const char *params)
{
	int fd = open(STATSFD_VM_KO, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -1;
	ret = syscall(__NR_finit_module, fd, params, 0);
	close(fd);
	return ret;
}

/* If a refused rmmod was not refused after all, put the module back. */
static void reload_if_gone(void)
{
	if (access("/sys/module/statsfd_vm", F_OK))
		load_module("");
}

/*
 * Expect rmmod of the provider and of the core to be refused with
 * EWOULDBLOCK (the kernel's answer for a module in use); the modules stay.
 */
static void expect_rmmod_refused(struct __test_metadata *_metadata)
{
	errno = 0;
	EXPECT_EQ(-1, delete_module("statsfd_vm"));
	EXPECT_EQ(EWOULDBLOCK, errno);
	reload_if_gone();
	errno = 0;
	EXPECT_EQ(-1, delete_module("statsfd"));
	EXPECT_EQ(EWOULDBLOCK, errno);
	EXPECT_EQ(0, access("/sys/module/statsfd_vm", F_OK));
}

/*
 * #16: while a stats fd is open, even alone (every VM, vCPU and device fd
 * closed), it pins both modules: rmmod is refused and the fd reads on.
 * Closing it gives the references back.
 */
TEST(rmmod_refused_while_stats_fd_open_16)
{
	long long vm0 = module_refs("statsfd_vm"),
		  core0 = module_refs("statsfd");
	struct vm_env e;
	int sfd, sys_fd;

	/* both kernels have CONFIG_MODULE_UNLOAD: the guest rmmods them */
	ASSERT_LE(0, vm0);
	ASSERT_LE(0, core0);
	ASSERT_VM_ENV(&e, -1, 1, NULL, 0);
	ASSERT_EQ(0, vcpu_run_exits(e.vcpu[0], 5, 0, 0));
	sfd = stats_fd(e.vcpu[0]);
	ASSERT_GE(sfd, 0);
	sys_fd = stats_fd(e.dev);
	ASSERT_GE(sys_fd, 0);
	vm_env_close(&e);

	/* one reference on each module per stats fd, nothing else left */
	EXPECT_EQ(vm0 + 2, module_refs("statsfd_vm"));
	EXPECT_EQ(core0 + 2, module_refs("statsfd"));
	expect_rmmod_refused(_metadata);
	EXPECT_EQ(5, stat_get(sfd, "io_exits"));

	close(sys_fd);
	EXPECT_EQ(vm0 + 1, module_refs("statsfd_vm"));
	expect_rmmod_refused(_metadata);
	EXPECT_EQ(5, stat_get(sfd, "exits"));
	close(sfd);
	EXPECT_EQ(vm0, module_refs("statsfd_vm"));
	EXPECT_EQ(core0, module_refs("statsfd"));
}

/* #16: a VM fd (or vCPU fd) pins the provider as well. */
TEST(rmmod_refused_while_vm_fd_open_16)
{
	long long vm0 = module_refs("statsfd_vm");
	struct vm_env e;

	ASSERT_LE(0, vm0);
	ASSERT_VM_ENV(&e, -1, 1, NULL, 0);
	close_fd(&e.dev);
	EXPECT_EQ(vm0 + 2, module_refs("statsfd_vm"));
	expect_rmmod_refused(_metadata);
	close_fd(&e.vm);
	EXPECT_EQ(vm0 + 1, module_refs("statsfd_vm"));
	expect_rmmod_refused(_metadata);
	close_fd(&e.vcpu[0]);
	EXPECT_EQ(vm0, module_refs("statsfd_vm"));
	vm_env_close(&e);
}

/* The module's load-time parameters, to load it again as it was. */
static void module_params(char *buf, size_t size)
{
	char dbg[8] = "Y";

	read_file(STATSFD_VM_PARAMS "/debugfs", dbg, sizeof(dbg));
	dbg[strcspn(dbg, "\n")] = 0;
	snprintf(buf, size,
		 "debugfs=%s max_vms=%lld max_vcpus=%lld halt_poll_ns_max=%lld",
		 dbg, param_get("max_vms"), param_get("max_vcpus"),
		 param_get("halt_poll_ns_max"));
}

#define TEST_GID 4242

/* Opens the device as uid nobody, with @gid as its only group. */
static int open_as_nobody(gid_t gid)
{
	int status, dev;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		gid_t groups[1] = { gid };

		if (setgroups(1, groups) || setgid(GID_NOBODY) ||
		    setuid(UID_NOBODY))
			_exit(100);
		dev = dev_open();
		if (dev < 0)
			_exit(errno);
		_exit(ioctl(dev, STATSFD_VM_GET_API_VERSION, 0) ==
				      STATSFD_VM_API_VERSION ?
			      0 :
			      101);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/*
 * #16 (the other half) and the `group` parameter: with nothing open the
 * provider unloads; group=-2 is refused at load; group=4242 gives the node
 * mode 0660 and that group, so a member opens it and others do not.  Then
 * the module is loaded again with its original parameters.
 */
TEST(module_reload_with_group)
{
	char params[256], with_group[320], uevent[1024];
	struct stat st;

	/*
	 * The guest runs us as root, with the module file installed and
	 * the module loaded without a group; a reference left at this point
	 * is a leak (every earlier test has exited and closed its fds).
	 */
	ASSERT_EQ(0, geteuid());
	ASSERT_EQ(0, access(STATSFD_VM_KO, R_OK))
	{
		TH_LOG("%s: %m", STATSFD_VM_KO);
	}
	ASSERT_EQ(0, module_refs("statsfd_vm"))
	{
		TH_LOG("statsfd_vm still referenced with nothing open");
	}
	ASSERT_EQ(-1, param_get("group"));
	module_params(params, sizeof(params));
	TH_LOG("reloading statsfd_vm, then back to: %s", params);

	ASSERT_EQ(0, delete_module("statsfd_vm"))
	{
		TH_LOG("rmmod: %m");
	}
	EXPECT_EQ(-1, stat(STATSFD_VM_DEV, &st));

	errno = 0;
	EXPECT_EQ(-1, load_module("group=-2"));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_NE(0, access("/sys/module/statsfd_vm", F_OK));

	snprintf(with_group, sizeof(with_group), "%s group=%d", params,
		 TEST_GID);
	EXPECT_EQ(0, load_module(with_group))
	{
		TH_LOG("insmod: %m");
	}
	if (!stat(STATSFD_VM_DEV, &st)) {
		EXPECT_TRUE(S_ISCHR(st.st_mode));
		EXPECT_EQ(0660, st.st_mode & 07777);
		EXPECT_EQ(0, st.st_uid);
		EXPECT_EQ(TEST_GID, st.st_gid);
	} else {
		EXPECT_EQ(0, errno);
	}
	EXPECT_GT(read_file("/sys/class/statsfd_vm/statsfd_vm/uevent", uevent,
			    sizeof(uevent)),
		  0);
	EXPECT_NE(NULL, strstr(uevent, "DEVMODE=0660\n"));
	EXPECT_NE(NULL, strstr(uevent, "DEVGID=4242\n"));
	EXPECT_EQ(TEST_GID, param_get("group"));
	EXPECT_EQ(0, open_as_nobody(TEST_GID));
	EXPECT_EQ(EACCES, open_as_nobody(TEST_GID + 1));

	EXPECT_EQ(0, delete_module("statsfd_vm"));
	EXPECT_EQ(0, load_module(params))
	{
		TH_LOG("insmod: %m");
	}
	reload_if_gone();
	ASSERT_EQ(0, stat(STATSFD_VM_DEV, &st));
	EXPECT_EQ(0600, st.st_mode & 07777);
	EXPECT_EQ(0, st.st_gid);
	EXPECT_EQ(-1, param_get("group"));
	EXPECT_EQ(EACCES, open_as_nobody(TEST_GID));
}

TEST_HARNESS_MAIN
