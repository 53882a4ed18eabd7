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
 * Without failslab or kmemleak (the stock 6.1 kernel) those parts SKIP.
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

/* The snapshot before a test; .enabled false without kmemleak. */
static void kmemleak_before(struct leaks *before)
{
	kmemleak_collect(before, NULL, false);
}

/*
 * kmemleak reports only objects older than 5 s: wait that long, scan
 * twice (a second scan confirms what the first found) and expect nothing
 * that was not reported before the test started.
 */
static void kmemleak_expect_clean(struct __test_metadata *_metadata,
				  const struct leaks *before)
{
	static struct leaks after;
	int fresh;

	if (!before->enabled) {
		TH_LOG("kmemleak not available: leak scan skipped");
		return;
	}
	sleep(6);
	kmemleak_collect(&after, before, false);
	fresh = kmemleak_collect(&after, before, true);
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

struct failslab {
	bool present;
	char saved[NR_KNOBS][32];
	int nth_fd; /* /proc/thread-self/fail-nth, kept open */
	int mif_fd; /* /proc/thread-self/make-it-fail, kept open */
};

static int knob_set(const char *knob, const char *val)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", FAILSLAB, knob);
	return write_file(path, val);
}

/*
 * Fail only this thread's slab allocations, also those that may sleep, and
 * quietly (no stack dump per failure in the kernel log).
 */
static bool failslab_setup(struct failslab *f)
{
	char path[128];
	size_t i;

	f->nth_fd = -1;
	f->mif_fd = -1;
	f->present = !access(FAILSLAB "/probability", W_OK) &&
		     !access("/proc/thread-self/fail-nth", W_OK);
	if (!f->present)
		return false;
	for (i = 0; i < NR_KNOBS; i++) {
		snprintf(path, sizeof(path), "%s/%s", FAILSLAB,
			 failslab_knobs[i]);
		if (read_file(path, f->saved[i], sizeof(f->saved[i])) < 0)
			f->saved[i][0] = 0;
	}
	if (knob_set("ignore-gfp-wait", "N") || knob_set("verbose", "0") ||
	    knob_set("probability", "0") || knob_set("task-filter", "Y") ||
	    knob_set("space", "0") || knob_set("interval", "1") ||
	    knob_set("times", "-1"))
		return false;
	/* opened once: opening a file allocates, so not while failing */
	f->nth_fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	f->mif_fd = open("/proc/thread-self/make-it-fail", O_RDWR | O_CLOEXEC);
	return f->nth_fd >= 0 && f->mif_fd >= 0;
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
}

/* Arm fail-nth: the @nth slab allocation of this thread from now fails. */
static void fail_nth_arm(struct failslab *f, int nth)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%d", nth);

	pwrite(f->nth_fd, buf, len, 0);
}

/* Disarm; returns true if the armed failure was injected. */
static bool fail_nth_disarm(struct failslab *f)
{
	char buf[16] = { 0 };
	bool injected;

	pread(f->nth_fd, buf, sizeof(buf) - 1, 0);
	injected = atoi(buf) == 0;
	pwrite(f->nth_fd, "0", 1, 0);
	return injected;
}

/* The counts nothing may leave changed once the objects are closed. */
struct counts {
	__u64 vms_alive, vcpus_alive, stats_fds_open, vm_vcpus, vm_fds;
	int next_fd;
};

/**
 * struct env - what the fault tests work on
 * @dev: /dev/statsfd_vm
 * @vm: a VM with vCPU 0
 * @vcpu: that vCPU
 * @vm_stats: stats fd of @vm
 * @sys_stats: a system stats fd, open throughout
 * @sys: @sys_stats parsed
 * @vms: @vm_stats parsed
 * @fs: failslab state to restore
 * @debugfs_saved: the debugfs parameter, to restore
 * @before: kmemleak suspects before the test
 */
struct env {
	int dev;
	int vm;
	int vcpu;
	int vm_stats;
	int sys_stats;
	struct sfile sys;
	struct sfile vms;
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
	e->dev = dev_open();
	ASSERT_GE(e->dev, 0)
	{
		TH_LOG("open %s: %m", STATSFD_VM_DEV);
	}
	e->vm = vm_create(e->dev);
	ASSERT_GE(e->vm, 0);
	e->vcpu = vcpu_create(e->vm, 0);
	ASSERT_GE(e->vcpu, 0);
	e->vm_stats = stats_fd(e->vm);
	ASSERT_GE(e->vm_stats, 0);
	e->sys_stats = stats_fd(e->dev);
	ASSERT_GE(e->sys_stats, 0);
	ASSERT_EQ(0, sfile_parse(e->sys_stats, &e->sys));
	ASSERT_EQ(0, sfile_parse(e->vm_stats, &e->vms));
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
	close(e->sys_stats);
	close(e->vm_stats);
	close(e->vcpu);
	close(e->vm);
	close(e->dev);
}

/* Two preads: this runs after every injected failure. */
static void counts_get(struct env *e, struct counts *c)
{
	memset(c, 0xff, sizeof(*c));
	if (!sfile_read_data(e->sys_stats, &e->sys)) {
		c->vms_alive = sfile_val(&e->sys, "vms_alive");
		c->vcpus_alive = sfile_val(&e->sys, "vcpus_alive");
		c->stats_fds_open = sfile_val(&e->sys, "stats_fds_open");
	}
	if (!sfile_read_data(e->vm_stats, &e->vms)) {
		c->vm_vcpus = sfile_val(&e->vms, "vcpus_created");
		c->vm_fds = sfile_val(&e->vms, "stats_fds_open");
	}
	c->next_fd = next_fd();
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
		return vm_create(e->dev);
	case OP_VCPU:
		return vcpu_create(e->vm, vcpu_id);
	case OP_VM_STATS:
		return stats_fd(e->vm);
	case OP_VCPU_STATS:
		return stats_fd(e->vcpu);
	case OP_SYS_STATS:
		return stats_fd(e->dev);
	}
	return -1;
}

/*
 * Fail the @first, then every @step-th, slab allocation of @op until it
 * completes without reaching the armed one.  Every injected failure must
 * be -ENOMEM (or, if it hit an allocation the path may do without, such as
 * its debugfs view, a success), with the counts unchanged once the result
 * is closed.  A created vCPU cannot be destroyed alone, so each vCPU
 * attempt uses a fresh id and the counts expect the successes.  Returns
 * the number of -ENOMEM failures.
 */
static int fail_nth_sweep(struct __test_metadata *_metadata, struct env *e,
			  enum create_op op, int step, __u32 *vcpu_id)
{
	struct counts base, now;
	int nth, fd, err, enomem = 0, ok = 0;
	bool injected;

	counts_get(e, &base);
	for (nth = 1; nth < 2000; nth += nth < 12 ? 1 : step) {
		fail_nth_arm(&e->fs, nth);
		fd = do_op(e, op, *vcpu_id);
		err = errno;
		injected = fail_nth_disarm(&e->fs);

		if (fd >= 0) {
			close(fd);
			if (op == OP_VCPU) {
				(*vcpu_id)++;
				base.vm_vcpus++;
				base.vcpus_alive++;
			}
			ok++;
		} else {
			EXPECT_EQ(ENOMEM, err)
			{
				TH_LOG("op %d, allocation %d: %s", op, nth,
				       strerror(err));
			}
			EXPECT_TRUE(injected);
			enomem++;
		}
		counts_get(e, &now);
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
 * may fail without failing the creation) are sampled.  Then kmemleak.
 */
TEST_F_TIMEOUT(fault, failslab_every_allocation_18, 600)
{
	struct env *e = &self->env;
	__u32 vcpu_id = 1;
	int op;

	if (!failslab_setup(&e->fs))
		SKIP(return, "no failslab or fail-nth in this kernel");
	kmemleak_before(e->before);
	ASSERT_EQ(0, debugfs_param_set(false));
	for (op = OP_VM; op <= OP_SYS_STATS; op++)
		EXPECT_GT(fail_nth_sweep(_metadata, e, op, 1, &vcpu_id), 0);
	if (e->debugfs_saved) {
		ASSERT_EQ(0, debugfs_param_set(true));
		EXPECT_GT(fail_nth_sweep(_metadata, e, OP_VM, 5, &vcpu_id), 0);
		EXPECT_GT(fail_nth_sweep(_metadata, e, OP_VCPU, 5, &vcpu_id),
			  0);
	}
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

	if (!failslab_setup(&e->fs))
		SKIP(return, "no failslab in this kernel");
	/* the debugfs view's failures are sampled above; here it is slow */
	ASSERT_EQ(0, debugfs_param_set(false));
	ASSERT_EQ(0, knob_set("probability", "20"));
	ASSERT_EQ(0, knob_set("interval", "1"));
	ASSERT_EQ(0, knob_set("times", "-1"));
	kmemleak_before(e->before);
	counts_get(e, &base);
	srand(seed);
	TH_LOG("seed %u", seed);

	for (i = 0; i < 400; i++) {
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
			counts_get(e, &now);
			expect_counts_eq(_metadata, &base, &now);
		}
	}
	while (alive)
		close(keep[--alive]);
	ASSERT_EQ(0, knob_set("probability", "0"));
	counts_get(e, &now);
	expect_counts_eq(_metadata, &base, &now);
	TH_LOG("%d -ENOMEM, %d created", enomem, ok);
	EXPECT_GT(enomem, 0);
	EXPECT_GT(ok, 0);
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

#define CHURN_CYCLES 2000
/* Enough for the 2000 on a plain kernel; a debug kernel under TCG stops. */
#define CHURN_BUDGET_NS (150 * 1000000000ULL)

/*
 * #26: thousands of VMs and vCPUs created and destroyed (2000 VMs with two
 * vCPUs and two stats fds each, or as many as fit in 150 s on a slow debug
 * kernel; a few dozen with the debugfs view, the rest without): vms_alive,
 * vcpus_alive and stats_fds_open return to their baseline, kmemleak finds
 * nothing, and (without KASAN, whose quarantine keeps freed memory) slab
 * memory returns to where it was.
 */
TEST_F_TIMEOUT(fault, create_destroy_cycles_26, 600)
{
	struct env *e = &self->env;
	struct counts base, now;
	__u64 created, t_end;
	long slab0, slab1;
	int i;

	kmemleak_before(e->before);
	ASSERT_EQ(0, debugfs_param_set(false));
	for (i = 0; i < 50; i++)
		churn_one(_metadata, e->dev, i);
	settle_memory();
	slab0 = slab_kb();
	counts_get(e, &base);
	created = sys_stat("vms_created");

	ASSERT_EQ(0, debugfs_param_set(e->debugfs_saved));
	for (i = 0; i < 30; i++)
		churn_one(_metadata, e->dev, i);
	ASSERT_EQ(0, debugfs_param_set(false));
	t_end = now_ns() + CHURN_BUDGET_NS;
	for (; i < CHURN_CYCLES && now_ns() < t_end; i++)
		churn_one(_metadata, e->dev, i);

	counts_get(e, &now);
	expect_counts_eq(_metadata, &base, &now);
	EXPECT_EQ(created + i, sys_stat("vms_created"));
	settle_memory();
	slab1 = slab_kb();
	TH_LOG("%d VMs with %d vCPUs: slab %ld kB before, %ld kB after", i,
	       2 * i, slab0, slab1);
	EXPECT_GE(i, 500);
	if (kernel_has_kasan()) {
		TH_LOG("KASAN quarantine: slab growth not checked");
	} else if (slab0 > 0 && slab1 > 0) {
		/* a leak of one 1.5 kB vCPU per VM would be 3 MB */
		EXPECT_LT(slab1 - slab0, 1536);
		EXPECT_EQ(CHURN_CYCLES, i);
	}
	kmemleak_expect_clean(_metadata, e->before);
}

/* ------------------------------------------------------------ the module */

static long long module_refs(const char *module)
{
	char path[128], buf[32];

	snprintf(path, sizeof(path), "/sys/module/%s/refcnt", module);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	return atoll(buf);
}

static int delete_module(const char *name)
{
	return syscall(__NR_delete_module, name, O_NONBLOCK);
}

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
	int dev, vm, vcpu, sfd, sys_fd;

	if (vm0 < 0 || core0 < 0)
		SKIP(return, "no /sys/module/*/refcnt (CONFIG_MODULE_UNLOAD)");
	dev = dev_open();
	ASSERT_GE(dev, 0);
	vm = vm_create(dev);
	ASSERT_GE(vm, 0);
	vcpu = vcpu_create(vm, 0);
	ASSERT_GE(vcpu, 0);
	ASSERT_EQ(0, vcpu_run_exits(vcpu, 5, 0, 0));
	sfd = stats_fd(vcpu);
	ASSERT_GE(sfd, 0);
	sys_fd = stats_fd(dev);
	ASSERT_GE(sys_fd, 0);
	close(vcpu);
	close(vm);
	close(dev);

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
	int dev, vm, vcpu;

	if (vm0 < 0)
		SKIP(return, "no /sys/module/*/refcnt (CONFIG_MODULE_UNLOAD)");
	dev = dev_open();
	ASSERT_GE(dev, 0);
	vm = vm_create(dev);
	ASSERT_GE(vm, 0);
	vcpu = vcpu_create(vm, 0);
	ASSERT_GE(vcpu, 0);
	close(dev);
	EXPECT_EQ(vm0 + 2, module_refs("statsfd_vm"));
	expect_rmmod_refused(_metadata);
	close(vm);
	EXPECT_EQ(vm0 + 1, module_refs("statsfd_vm"));
	expect_rmmod_refused(_metadata);
	close(vcpu);
	EXPECT_EQ(vm0, module_refs("statsfd_vm"));
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

	if (geteuid() != 0 || access(STATSFD_VM_KO, R_OK))
		SKIP(return, "needs root and %s", STATSFD_VM_KO);
	if (module_refs("statsfd_vm") != 0)
		SKIP(return, "statsfd_vm in use, not reloading it");
	if (param_get("group") != -1)
		SKIP(return, "statsfd_vm was loaded with a group");
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
