// SPDX-License-Identifier: GPL-2.0
/*
 * read_fault_test - reads of a stats fd whose copies to user space fail.
 *
 * The aggregate read used to retry a faulting copy for as long as
 * fault_in_writeable() succeeded: with fail_usercopy failing every copy
 * the reader spun in the kernel and not even SIGKILL ended it.  Now a
 * read assembles its snapshot in the file's buffer and copies it out
 * once, so a copy that fails makes the read short, or EFAULT when nothing
 * was copied:
 *
 * - with fail_usercopy failing every copy of a reader (probability 100,
 *   task-filter, the reader's make-it-fail), reads of a VM's aggregates,
 *   of its data block and of the whole file all return EFAULT, at once,
 *   while the VM's vCPUs run flat out;
 * - with /proc/thread-self/fail-nth failing the n-th copy of one read,
 *   the read returns exactly the blocks before it, and those bytes are
 *   right;
 * - a reader looping on the aggregates under fail_usercopy dies at once
 *   of SIGKILL.
 *
 * The readers are child processes that fail their own copies: a process
 * whose copies from user space fail cannot even write its make-it-fail
 * back to 0, nor report through a pipe; they report through shared
 * memory and their exit status.  A read that never returns is caught by
 * a deadline and a SIGKILL, and fails the test.
 *
 * A kernel built without fault injection (the stock 6.1 kernel) SKIPs
 * every test (tools/testing/skips.txt); one that has it but does not let
 * this test use it FAILs them.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "statsfd_vm_util.h"

#define FAIL_USERCOPY "/sys/kernel/debug/fail_usercopy"

/* fail_usercopy knobs this test changes, and their values before it. */
static const char *const knobs[] = {
	"probability", "interval", "times", "space", "verbose", "task-filter",
};

#define NR_KNOBS ARRAY_SIZE(knobs)

/*
 * Built with usercopy fault injection (CONFIG_FAULT_INJECTION_USERCOPY)?
 * Any trace of it counts: a kernel that has it must let the tests use it.
 */
static bool kernel_has_fail_usercopy(void)
{
	const char *trace = NULL;

	if (!access(FAIL_USERCOPY, F_OK))
		trace = FAIL_USERCOPY;
	else if (kernel_has_symbol("should_fail_usercopy"))
		trace = "should_fail_usercopy()";
	if (trace)
		fprintf(stderr, "# usercopy fault injection found: %s\n",
			trace);
	return trace;
}

static int knob_set(const char *knob, const char *val)
{
	return fault_knob_set(FAIL_USERCOPY, knob, val);
}

/* What the readers write back: shared memory, no copy to or from user. */
struct shared {
	atomic_ulong reads; /* reads that returned */
	atomic_ulong wrong; /* reads that returned something unexpected */
	atomic_int ready; /* the reader failed its copies and is reading */
	long ret[16]; /* fail-nth: what each read returned, -errno on error */
	int match[16]; /* fail-nth: the bytes returned equal the model's */
	__u64 max_ns; /* the longest read */
};

/* A vCPU in RUN after RUN, until told to stop. */
struct runner {
	pthread_t thread;
	int vcpu;
	atomic_int stop;
	unsigned long runs;
};

static void *runner_fn(void *arg)
{
	struct runner *w = arg;

	while (!atomic_load(&w->stop)) {
		struct statsfd_vm_run run = {
			.io_exits = 5000,
			.hypercall_exits = 5000,
			.io_bytes = 8,
			.cycles_per_exit = 3,
		};

		if (!vcpu_run(w->vcpu, &run))
			w->runs++;
	}
	return NULL;
}

#define NR_VCPUS 2

FIXTURE(ufault)
{
	bool present; /* the kernel has usercopy fault injection */
	char saved[NR_KNOBS][32];
	struct vm_env e; /* a VM with NR_VCPUS vCPUs that have run */
	struct sfile s; /* the VM's stats fd, parsed and read */
	unsigned char *image; /* its whole file, read once */
	long long mask; /* file offset of its sample_ns */
	long long aggs; /* file offset of its first aggregate */
	struct shared *sh; /* shared with the readers */
	struct runner w[NR_VCPUS];
};

FIXTURE_SETUP(ufault)
{
	struct statsfd_vm_run run = { .io_exits = 20, .mmio_exits = 3 };
	char path[128];
	unsigned int i;

	self->present = kernel_has_fail_usercopy();
	if (!self->present)
		return;
	for (i = 0; i < NR_KNOBS; i++) {
		snprintf(path, sizeof(path), "%s/%s", FAIL_USERCOPY, knobs[i]);
		ASSERT_LT(0, read_file(path, self->saved[i],
				       sizeof(self->saved[i])))
		{
			TH_LOG("%s: %m", path);
		}
		self->saved[i][strcspn(self->saved[i], "\n")] = 0;
	}
	/* only tasks that ask for it fail, every copy, quietly */
	ASSERT_EQ(0, fault_knobs_task_only(FAIL_USERCOPY));
	ASSERT_EQ(0, knob_set("probability", "100"));

	ASSERT_VM_ENV(&self->e, -1, NR_VCPUS, &run, VM_ENV_STATS);
	ASSERT_EQ(0, sfile_parse(self->e.vm_stats, &self->s));
	self->mask = sfile_off(&self->s, STATSFD_STAT_SAMPLE_NS);
	self->aggs = sfile_off(&self->s, "exits_sum");
	ASSERT_LE(0, self->mask);
	ASSERT_LE(0, self->aggs);
	self->image = calloc(1, self->s.size);
	ASSERT_NE(NULL, self->image);
	ASSERT_EQ(self->s.size,
		  pread(self->e.vm_stats, self->image, self->s.size, 0));
	self->sh = mmap(NULL, sizeof(*self->sh), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->sh);
}

/* In the parent: the knobs go back even if the test crashed. */
FIXTURE_TEARDOWN_PARENT(ufault)
{
	unsigned int i;

	if (!self->present)
		return;
	for (i = 0; i < NR_KNOBS; i++)
		if (self->saved[i][0])
			EXPECT_EQ(0, knob_set(knobs[i], self->saved[i]));
}

/* Every vCPU of @e runs from now on, so aggregates race their writers. */
static void start_runners(struct __test_metadata *_metadata,
			  const struct vm_env *e, struct runner *w)
{
	unsigned int i;

	for (i = 0; i < NR_VCPUS; i++) {
		w[i].vcpu = e->vcpu[i];
		atomic_store(&w[i].stop, 0);
		ASSERT_EQ(0,
			  pthread_create(&w[i].thread, NULL, runner_fn, &w[i]));
	}
}

static void stop_runners(struct __test_metadata *_metadata, struct runner *w)
{
	unsigned int i;

	for (i = 0; i < NR_VCPUS; i++)
		atomic_store(&w[i].stop, 1);
	for (i = 0; i < NR_VCPUS; i++) {
		ASSERT_EQ(0, pthread_join(w[i].thread, NULL));
		EXPECT_LT(0, w[i].runs);
	}
}

/*
 * Make every copy to or from user space of the calling task fail: its
 * make-it-fail, with the knobs set above.  The write's own copy happens
 * before the flag is set.  0 or -1.
 */
static int fail_my_copies(void)
{
	return write_file("/proc/thread-self/make-it-fail", "1");
}

/*
 * Wait up to @secs seconds for @pid; if it is still there, SIGKILL it,
 * reap it and return -1 (a read never returned), else its status.
 */
static int wait_or_kill(pid_t pid, int secs, int *status)
{
	__u64 deadline = now_ns() + secs * 1000000000ULL;

	while (now_ns() < deadline) {
		if (waitpid(pid, status, WNOHANG) == pid)
			return 0;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, status, 0);
	return -1;
}

#define FAILING_READS 300

/*
 * With every copy failing, reads of the aggregates alone, of the data
 * block and of the whole file return EFAULT at once, while the vCPUs
 * run: the aggregates are computed, the copy fails, the read ends.
 */
TEST_F_TIMEOUT(ufault, agg_read_under_fail_usercopy_terminates, 120)
{
	const struct statsfd_header *h = &self->s.hdr;
	struct {
		off_t off;
		size_t len;
	} ranges[] = {
		{ self->aggs, self->mask - self->aggs },
		{ h->data_offset, self->s.data_size },
		{ 0, self->s.size },
	};
	int status, fd = self->e.vm_stats;
	unsigned char *buf;
	pid_t pid;

	if (!self->present)
		SKIP(return, "kernel built without FAULT_INJECTION_USERCOPY");
	buf = malloc(self->s.size);
	ASSERT_NE(NULL, buf);
	start_runners(_metadata, &self->e, self->w);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		unsigned int i;

		if (fail_my_copies())
			_exit(2);
		for (i = 0; i < FAILING_READS; i++) {
			size_t k = i % ARRAY_SIZE(ranges);
			__u64 t0 = now_ns(), dt;
			ssize_t ret;

			errno = 0;
			ret = pread(fd, buf, ranges[k].len, ranges[k].off);
			dt = now_ns() - t0;
			if (dt > self->sh->max_ns)
				self->sh->max_ns = dt;
			if (ret != -1 || errno != EFAULT)
				atomic_fetch_add(&self->sh->wrong, 1);
			atomic_fetch_add(&self->sh->reads, 1);
		}
		_exit(0);
	}
	EXPECT_EQ(0, wait_or_kill(pid, 60, &status))
	{
		TH_LOG("the reader was still reading after 60 s: %lu reads returned",
		       atomic_load(&self->sh->reads));
	}
	stop_runners(_metadata, self->w);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
	{
		TH_LOG("reader status %#x", status);
	}
	EXPECT_EQ(FAILING_READS, atomic_load(&self->sh->reads));
	EXPECT_EQ(0, atomic_load(&self->sh->wrong));
	TH_LOG("%lu reads, all EFAULT; the longest took %llu us",
	       atomic_load(&self->sh->reads),
	       (unsigned long long)self->sh->max_ns / 1000);
	/* the fd reads as before, for a task whose copies do not fail */
	EXPECT_EQ(self->s.size, pread(fd, buf, self->s.size, 0));
	free(buf);
}

/*
 * fail-nth: the n-th fault site of the reader from now fails, for n = 1,
 * 2, ...: once n reaches the copies of one read of the whole file, the
 * read returns exactly the blocks before the failing copy (it copies
 * header, id, data with the aggregates and descriptors, one copy each):
 * EFAULT, then the header, then header and id, then everything up to the
 * descriptors, each with the right bytes; past the last copy, the whole
 * file.  The read's first fault site is its first copy: it allocates
 * nothing and copies nothing else.  fail-nth is armed with pwrite() on an
 * fd kept open: a close() between arming and reading would pass fault
 * sites of its own.
 */
#define NTH_MAX 16

TEST_F(ufault, nth_copy_fails_short_read)
{
	const struct statsfd_header *h = &self->s.hdr;
	const long want[] = { -EFAULT, h->id_offset, h->data_offset,
			      h->desc_offset };
	long full = self->s.size;
	unsigned char *buf;
	unsigned int n, k;
	int status;
	pid_t pid;

	if (!self->present)
		SKIP(return, "kernel built without FAULT_INJECTION_USERCOPY");
	ASSERT_LE(NTH_MAX, ARRAY_SIZE(self->sh->ret));
	buf = malloc(self->s.size);
	ASSERT_NE(NULL, buf);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int nth_fd =
			open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
		char nth[8];

		if (nth_fd < 0)
			_exit(2);
		for (n = 1; n <= NTH_MAX; n++) {
			int len = snprintf(nth, sizeof(nth), "%u", n);
			ssize_t ret;

			memset(buf, 0, self->s.size);
			if (pwrite(nth_fd, nth, len, 0) != len)
				_exit(3);
			errno = 0;
			ret = pread(self->e.vm_stats, buf, self->s.size, 0);
			self->sh->ret[n - 1] = ret < 0 ? -errno : ret;
			self->sh->match[n - 1] = ret < 0 ||
						 !image_cmp(buf, self->image, 0,
							    ret, self->mask);
			/*
			 * A failure not reached stays armed: disarm it (the
			 * write's own copy may be the site that consumes it).
			 */
			pwrite(nth_fd, "0", 1, 0);
			pwrite(nth_fd, "0", 1, 0);
		}
		_exit(0);
	}
	ASSERT_EQ(0, wait_or_kill(pid, 60, &status));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
	{
		TH_LOG("child status %#x", status);
	}
	for (n = 0; n < NTH_MAX; n++) {
		TH_LOG("fail-nth %u: read returned %ld", n + 1,
		       self->sh->ret[n]);
		EXPECT_TRUE(self->sh->match[n])
		{
			TH_LOG("fail-nth %u: wrong bytes returned", n + 1);
		}
	}
	for (k = 0; k < ARRAY_SIZE(want); k++)
		EXPECT_EQ(want[k], self->sh->ret[k])
		{
			TH_LOG("copy %u of the read", k + 1);
		}
	/* past the read's copies, none fails */
	for (n = ARRAY_SIZE(want); n < NTH_MAX; n++)
		EXPECT_EQ(full, self->sh->ret[n]);
	free(buf);
}

/*
 * A reader looping on the aggregates, every copy failing, while the
 * vCPUs run: its reads keep returning, and SIGKILL ends it at once.
 */
TEST_F_TIMEOUT(ufault, sigkill_ends_a_reader, 120)
{
	off_t off = self->aggs;
	size_t len = self->mask - self->aggs;
	int status, fd = self->e.vm_stats;
	unsigned long before, after;
	__u64 deadline, sent;
	unsigned char *buf;
	pid_t pid;

	if (!self->present)
		SKIP(return, "kernel built without FAULT_INJECTION_USERCOPY");
	buf = malloc(len);
	ASSERT_NE(NULL, buf);
	start_runners(_metadata, &self->e, self->w);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (fail_my_copies())
			_exit(2);
		atomic_store(&self->sh->ready, 1);
		for (;;) {
			if (pread(fd, buf, len, off) != -1 || errno != EFAULT)
				atomic_fetch_add(&self->sh->wrong, 1);
			atomic_fetch_add(&self->sh->reads, 1);
		}
	}
	/* its reads return, again and again */
	deadline = now_ns() + 30000000000ULL;
	while (atomic_load(&self->sh->reads) < 100 && now_ns() < deadline)
		usleep(1000);
	before = atomic_load(&self->sh->reads);
	EXPECT_LE(100, before)
	{
		TH_LOG("ready %d", atomic_load(&self->sh->ready));
	}

	sent = now_ns();
	ASSERT_EQ(0, kill(pid, SIGKILL));
	EXPECT_EQ(0, wait_or_kill(pid, 5, &status))
	{
		TH_LOG("still there 5 s after SIGKILL");
	}
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
	{
		TH_LOG("reader status %#x", status);
	}
	after = atomic_load(&self->sh->reads);
	stop_runners(_metadata, self->w);
	EXPECT_EQ(0, atomic_load(&self->sh->wrong));
	TH_LOG("%lu reads returned before SIGKILL, dead %llu ms after it",
	       after, (unsigned long long)(now_ns() - sent) / 1000000);
	/* nothing read after it died */
	usleep(10000);
	EXPECT_EQ(after, atomic_load(&self->sh->reads));
	free(buf);
}

TEST_HARNESS_MAIN
