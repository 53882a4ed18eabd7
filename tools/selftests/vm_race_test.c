// SPDX-License-Identifier: GPL-2.0
/*
 * vm_race_test - stats fd readers racing the writers and the lifetime of
 * what they read (bad-inputs.md #15, #19, #20, #21, #25): readers hammer
 * pread() while vCPUs run, while vCPUs are created, and while the last
 * reference to a VM is dropped under them; no value is ever torn, no
 * cumulative counter goes backwards, every fd keeps its descriptor set,
 * and a reader never waits for a running vCPU nor slows it down.
 *
 * A race test that did not race proves nothing: each one counts the
 * overlaps it was written for (reads inside a run, preads in flight when
 * the last reference went, reads while VMs came and went) and asserts
 * there were some.  That needs two CPUs, which both test guests have.
 * Durations and rounds grow with STATSFD_STRESS=1.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "statsfd_vm_util.h"

#define NR_READERS 2

/*
 * Guest cycles per exit, the largest RUN accepts but one: the high half of
 * k * C changes every few k, and a read mixing the halves of k1 * C and
 * k2 * C is a multiple of C only if those high halves are equal (2^32 is
 * 4 mod C, so the mix is -4 * (hi2 - hi1) mod C).
 */
#define TORN_C (STATSFD_VM_CYCLES_PER_EXIT_MAX - 1)

/* One run of run_loop_fn(): 21000 exits of TORN_C guest cycles each. */
#define LOOP_EXITS 21000

/* Every race here needs a second CPU to race on. */
static void assert_two_cpus(struct __test_metadata *_metadata)
{
	ASSERT_LE(2, sysconf(_SC_NPROCESSORS_ONLN))
	{
		TH_LOG("one CPU online: the races below cannot overlap");
	}
}

struct reader {
	pthread_t thread;
	atomic_int *stop;
	int fd; /* a stats fd */
	off_t off; /* of guest_cycles (or its sum) in the file */
	off_t exits_off; /* of exits (or exits_sum) */
	unsigned long reads;
	unsigned long torn; /* values that are no multiple of TORN_C */
	unsigned long backwards; /* exits smaller than an earlier read */
	unsigned long errors;
	unsigned long mid_run; /* values from inside a run, not between */
	__u64 run_cycles; /* guest_cycles a whole run adds, 0: not counted */
	__u64 last;
};

/*
 * #20, #21: read guest_cycles (and exits) one u64 at a time and in bulk;
 * each value must be k * TORN_C: a torn read mixing the halves of
 * k1 * C and k2 * C is no multiple of C (see TORN_C).
 */
static void *torn_reader_fn(void *arg)
{
	struct reader *r = arg;
	__u64 v[2], exits = 0;

	while (!atomic_load(r->stop)) {
		if (pread(r->fd, &v[0], 8, r->off) != 8 ||
		    pread(r->fd, &v[1], 8, r->exits_off) != 8) {
			r->errors++;
			continue;
		}
		r->reads++;
		if (v[0] % TORN_C)
			r->torn++;
		if (v[1] < exits)
			r->backwards++;
		/* a value between two runs' totals: the read overlapped one */
		if (r->run_cycles && v[0] % r->run_cycles)
			r->mid_run++;
		exits = v[1];
		r->last = v[0];
	}
	return NULL;
}

static void *run_loop_fn(void *arg)
{
	struct reader *w = arg; /* reused: fd is the vCPU fd */
	struct statsfd_vm_run run = {
		.hypercall_exits = LOOP_EXITS - 1000,
		.io_exits = 1000,
		.cycles_per_exit = TORN_C,
	};

	while (!atomic_load(w->stop))
		if (vcpu_run(w->fd, &run))
			w->errors++;
		else
			w->reads++;
	return NULL;
}

static off_t stat_off(const struct sfile *s, const char *name)
{
	const struct statsfd_desc *d = sfile_find(s, name);

	return d ? s->hdr.data_offset + d->offset : -1;
}

/*
 * #20 and #21: a vCPU runs without pause while readers hammer its
 * guest_cycles and exits, on the vCPU fd and through the VM's aggregates:
 * no torn value, exits never go backwards, and every reader saw values
 * from inside a run (so its reads overlapped the writer's updates).
 */
TEST(no_torn_values_20_21)
{
	struct reader r[2 * NR_READERS], w = { 0 };
	atomic_int stop = 0;
	struct sfile vs, ms;
	struct vm_env e;
	__u64 t_end;
	int i;

	assert_two_cpus(_metadata);
	ASSERT_VM_ENV(&e, -1, 1, NULL, VM_ENV_STATS);
	ASSERT_EQ(0, sfile_parse(e.vcpu_stats[0], &vs));
	ASSERT_EQ(0, sfile_parse(e.vm_stats, &ms));

	for (i = 0; i < 2 * NR_READERS; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		r[i].stop = &stop;
		r[i].run_cycles = LOOP_EXITS * TORN_C;
		if (i < NR_READERS) {
			r[i].fd = e.vcpu_stats[0];
			r[i].off = stat_off(&vs, "guest_cycles");
			r[i].exits_off = stat_off(&vs, "exits");
		} else {
			r[i].fd = e.vm_stats;
			r[i].off = stat_off(&ms, "guest_cycles_sum");
			r[i].exits_off = stat_off(&ms, "exits_sum");
		}
		ASSERT_GT(r[i].off, 0);
		ASSERT_GT(r[i].exits_off, 0);
	}
	w.stop = &stop;
	w.fd = e.vcpu[0];
	ASSERT_EQ(0, pthread_create(&w.thread, NULL, run_loop_fn, &w));
	for (i = 0; i < 2 * NR_READERS; i++)
		ASSERT_EQ(0, pthread_create(&r[i].thread, NULL, torn_reader_fn,
					    &r[i]));

	t_end = now_ns() + stress_scale(2, 4) * 1000000000ULL;
	while (now_ns() < t_end)
		usleep(10000);
	atomic_store(&stop, 1);
	ASSERT_EQ(0, pthread_join(w.thread, NULL));
	for (i = 0; i < 2 * NR_READERS; i++) {
		ASSERT_EQ(0, pthread_join(r[i].thread, NULL));
		TH_LOG("reader %d: %lu reads, %lu inside a run, last %#llx", i,
		       r[i].reads, r[i].mid_run, (unsigned long long)r[i].last);
		EXPECT_GT(r[i].reads, 0);
		EXPECT_GT(r[i].mid_run, 0);
		EXPECT_EQ(0, r[i].torn);
		EXPECT_EQ(0, r[i].backwards);
		EXPECT_EQ(0, r[i].errors);
	}
	EXPECT_EQ(0, w.errors);
	EXPECT_GT(w.reads, 0);
	/* the final value is exact: runs * 21000 exits of C cycles */
	EXPECT_EQ(w.reads * LOOP_EXITS * TORN_C,
		  stat_get(e.vcpu_stats[0], "guest_cycles"));
	sfile_free(&vs);
	sfile_free(&ms);
	vm_env_close(&e);
}

struct halt_run {
	pthread_t thread;
	int vcpu;
	int ret;
};

static void *halt_fn(void *arg)
{
	struct halt_run *h = arg;
	struct statsfd_vm_run run = { .halt_exits = 1 };

	h->ret = vcpu_run(h->vcpu, &run);
	return NULL;
}

/* Reads every file of the debugfs directory @dir once; -1 on error. */
static int read_debugfs_dir(const char *dir)
{
	char path[512], buf[1024];
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || de->d_type == DT_DIR)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (read_file(path, buf, sizeof(buf)) < 0) {
			n = -1;
			break;
		}
		n++;
	}
	closedir(d);
	return n;
}

/* A reader of the stall measurement: hammers while @go, idles otherwise. */
struct stall_reader {
	pthread_t thread;
	atomic_int *go, *stop;
	int fd;
	struct sfile s;
	atomic_ulong reads;
	unsigned long errors;
};

static void *stall_reader_fn(void *arg)
{
	struct stall_reader *r = arg;

	while (!atomic_load(r->stop)) {
		if (!atomic_load(r->go)) {
			usleep(200);
			continue;
		}
		if (sfile_read_data(r->fd, &r->s))
			r->errors++;
		else
			atomic_fetch_add(&r->reads, 1);
	}
	return NULL;
}

/*
 * A timed run lasts at least this long, so that readers, whose whole-file
 * preads take far longer than one exit, overlap it many times over.
 */
#define STALL_RUN_NS (50 * 1000000ULL)

/*
 * The writer's side of #25: the per-exit time of a vCPU's run loop with
 * readers hammering its stats, against the same loop unloaded, measured
 * here in turns.  A writer that waited for readers (a lock or a seqcount
 * write side they hold, a retry on their account) would pay for every read
 * that overlaps an exit; two readers reading a whole file each take longer
 * than one exit, so that writer runs several times slower.
 *
 * Why 4x: the writer is pinned to CPU 0 and the readers to CPU 1, so
 * sharing a CPU costs the writer nothing; what is left is TCG and the
 * host (the other test guest runs at the same time), which move one run's
 * time by up to about 2x.  The minimum of each kind over several turns
 * filters most of that out; 4x is then well above noise and still well
 * below what a writer waiting on readers shows.  Returns the ratio, x100.
 */
static __u64 writer_stall_x100(struct __test_metadata *_metadata, int vcpu,
			       int fd)
{
	struct statsfd_vm_run run = { .hypercall_exits = 50000 };
	__u64 best[2] = { UINT64_MAX, UINT64_MAX }, cpu[2] = { 0, 0 };
	struct stall_reader r[NR_READERS];
	atomic_int go = 0, stop = 0;
	int turns = stress_scale(3, 6), t, i;

	ASSERT_EQ(0, pin(pthread_self(), 0));
	for (i = 0; i < NR_READERS; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		r[i].go = &go;
		r[i].stop = &stop;
		r[i].fd = fd;
		ASSERT_EQ(0, sfile_parse(fd, &r[i].s));
		ASSERT_EQ(0, pthread_create(&r[i].thread, NULL, stall_reader_fn,
					    &r[i]));
		ASSERT_EQ(0, pin(r[i].thread, 1));
	}
	/*
	 * Unmeasured runs, doubling until one lasts STALL_RUN_NS: an exit is
	 * a few nanoseconds on some kernels, microseconds on others.
	 */
	for (;;) {
		__u64 w0 = now_ns();

		ASSERT_EQ(0, vcpu_run(vcpu, &run));
		if (now_ns() - w0 >= STALL_RUN_NS ||
		    run.hypercall_exits >= 1ULL << 30)
			break;
		run.hypercall_exits *= 2;
	}

	for (t = 0; t < 2 * turns; t++) {
		int loaded = t & 1;
		unsigned long reads0 = 0, reads1 = 0;
		struct timespec c0, c1;
		__u64 w0, w1;

		atomic_store(&go, loaded);
		for (i = 0; loaded && i < NR_READERS; i++) {
			/* each reader is reading before the clock starts */
			reads0 = atomic_load(&r[i].reads);
			while (atomic_load(&r[i].reads) < reads0 + 2)
				usleep(100);
		}
		reads0 = 0;
		for (i = 0; i < NR_READERS; i++)
			reads0 += atomic_load(&r[i].reads);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
		w0 = now_ns();
		ASSERT_EQ(0, vcpu_run(vcpu, &run));
		w1 = now_ns();
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
		for (i = 0; i < NR_READERS; i++)
			reads1 += atomic_load(&r[i].reads);
		atomic_store(&go, 0);
		/* a loaded turn whose readers did not read proves nothing */
		if (loaded)
			ASSERT_LT(reads0, reads1)
			{
				TH_LOG("turn %d: run of %llu us", t,
				       (unsigned long long)(w1 - w0) / 1000);
			}
		if (w1 - w0 < best[loaded]) {
			best[loaded] = w1 - w0;
			cpu[loaded] = (c1.tv_sec - c0.tv_sec) * 1000000000ULL +
				      c1.tv_nsec - c0.tv_nsec;
		}
	}
	atomic_store(&stop, 1);
	for (i = 0; i < NR_READERS; i++) {
		ASSERT_EQ(0, pthread_join(r[i].thread, NULL));
		EXPECT_EQ(0, r[i].errors);
		sfile_free(&r[i].s);
	}
	TH_LOG("%llu exits a run, best of %d: %llu us alone, %llu us read",
	       (unsigned long long)run.hypercall_exits, turns,
	       (unsigned long long)best[0] / 1000,
	       (unsigned long long)best[1] / 1000);
	TH_LOG("writer CPU time: %llu us alone, %llu us read",
	       (unsigned long long)cpu[0] / 1000,
	       (unsigned long long)cpu[1] / 1000);
	ASSERT_LT(0, best[0]);
	return best[1] * 100 / best[0];
}

/*
 * #25: readers and the vCPU never wait for each other.  While a vCPU
 * sleeps in an unbounded halt, inside RUN with its mutex held, thousands
 * of reads of its stats (binary, aggregates, debugfs) all complete; only a
 * kick ends the halt (a reader that waited for the vCPU would hang here).
 * And a running vCPU's per-exit time with readers hammering its stats
 * stays within 4x of its time alone (writer_stall_x100() says why 4x).
 */
TEST(readers_never_wait_for_the_vcpu_25)
{
	struct halt_run h = { 0 };
	struct vm_env e;
	char dir[300];
	struct sfile s;
	struct stat st;
	__u64 start, ratio;
	int i;

	assert_two_cpus(_metadata);
	ASSERT_VM_ENV(&e, -1, 1, NULL, VM_ENV_STATS);
	ASSERT_EQ(0, sfile_parse(e.vcpu_stats[0], &s));
	/* the module is loaded with its default debugfs=Y */
	snprintf(dir, sizeof(dir), "%s/%s", STATSFD_VM_DEBUGFS, s.id);
	ASSERT_EQ(0, stat(dir, &st))
	{
		TH_LOG("no debugfs view %s: %m", dir);
	}

	h.vcpu = e.vcpu[0];
	ASSERT_EQ(0, pthread_create(&h.thread, NULL, halt_fn, &h));
	start = now_ns();
	while (stat_get(e.vcpu_stats[0], "blocking") != 1) {
		ASSERT_LT(now_ns() - start, 20000000000ULL);
		usleep(1000);
	}

	start = now_ns();
	for (i = 0; i < 2000; i++) {
		ASSERT_EQ(0, sfile_read_data(e.vcpu_stats[0], &s));
		ASSERT_EQ(1, sfile_val(&s, "blocking"));
		ASSERT_EQ(1, stat_get(e.vm_stats, "blocking_count_nonzero"));
	}
	for (i = 0; i < 20; i++)
		ASSERT_LT(0, read_debugfs_dir(dir));
	TH_LOG("reads during the halt took %llu us",
	       (unsigned long long)(now_ns() - start) / 1000);

	ASSERT_EQ(0, vcpu_kick(e.vcpu[0]));
	ASSERT_EQ(0, pthread_join(h.thread, NULL));
	EXPECT_EQ(0, h.ret);
	EXPECT_EQ(1, stat_get(e.vcpu_stats[0], "halt_wakeup"));

	ratio = writer_stall_x100(_metadata, e.vcpu[0], e.vcpu_stats[0]);
	TH_LOG("writer's per-exit time with readers: %llu.%02llux alone",
	       (unsigned long long)ratio / 100,
	       (unsigned long long)ratio % 100);
	EXPECT_LE(ratio, 400);
	sfile_free(&s);
	vm_env_close(&e);
}

/*
 * The fds readers read, replaced under them: each slot holds a stats fd,
 * or /dev/null once the stats file has been dropped.  @gen counts the
 * replacements; readers acknowledge a generation in @seen before the main
 * thread may reuse the fd numbers.
 *
 * Proof that a pread was in flight when the last reference went: a reader
 * sets @busy to a fresh sequence number before each pread and clears it
 * after; right after swapping /dev/null into every slot, the main thread
 * copies each non-zero @busy into @caught.  A pread whose number was
 * caught and that returned the stats file's bytes took its reference
 * before the swap (after it, the slot held /dev/null) and returned after
 * the swap: the file's last reference was that pread's.
 */
struct churn {
	atomic_int stop;
	atomic_int gen;
	atomic_int seen[NR_READERS];
	atomic_ulong busy[NR_READERS];
	atomic_ulong caught[NR_READERS];
	unsigned long overlapped[NR_READERS];
	int fds[3];
	size_t size[3]; /* file size of each slot's schema */
	unsigned char *desc[3]; /* the descriptor block each must show */
	size_t desc_off[3], desc_len[3];
	unsigned long reads[NR_READERS], zero[NR_READERS], bad[NR_READERS];
};

struct churn_reader {
	pthread_t thread;
	struct churn *c;
	int idx;
};

/*
 * #15: read each slot whole; a read either sees a stats file whose
 * descriptors are the schema's, byte for byte, or /dev/null (0 bytes).
 */
static void *churn_reader_fn(void *arg)
{
	struct churn_reader *cr = arg;
	struct churn *c = cr->c;
	unsigned char *buf = malloc(65536);
	unsigned long seq = 0;
	int slot, gen;

	while (buf && !atomic_load(&c->stop)) {
		gen = atomic_load(&c->gen);
		for (slot = 0; slot < 3; slot++) {
			ssize_t ret;

			atomic_store(&c->busy[cr->idx], ++seq);
			ret = pread(c->fds[slot], buf, 65536, 0);
			atomic_store(&c->busy[cr->idx], 0);
			if (ret == 0) {
				c->zero[cr->idx]++;
			} else if (ret != (ssize_t)c->size[slot] ||
				   memcmp(buf + c->desc_off[slot],
					  c->desc[slot], c->desc_len[slot])) {
				c->bad[cr->idx]++;
			} else if (atomic_load(&c->caught[cr->idx]) == seq) {
				c->overlapped[cr->idx]++;
			}
			c->reads[cr->idx]++;
		}
		atomic_store(&c->seen[cr->idx], gen);
	}
	free(buf);
	return NULL;
}

static void churn_wait_readers(struct churn *c, int gen)
{
	int i;

	for (i = 0; i < NR_READERS; i++)
		while (atomic_load(&c->seen[i]) < gen && !atomic_load(&c->stop))
			usleep(100);
}

/*
 * #15: drop the last reference to a VM (and its vCPUs) while other threads
 * are inside pread() on its stats fds: dup2() swaps /dev/null in, the
 * stats file is released when the last pread on it returns, and no read
 * ever sees freed memory (KASAN would report it) or a wrong file.
 */
FIXTURE(slow)
{
	int dev; /* /dev/statsfd_vm */
	bool debugfs; /* the debugfs parameter, to restore */
};

FIXTURE_SETUP(slow)
{
	self->debugfs = debugfs_param_get();
	self->dev = dev_open();
	ASSERT_GE(self->dev, 0)
	{
		TH_LOG("open %s: %m", STATSFD_VM_DEV);
	}
}

FIXTURE_TEARDOWN(slow)
{
	debugfs_param_set(self->debugfs);
	close(self->dev);
}

/* The descriptor block of @fd, for comparing later reads against. */
static void ref_desc(struct __test_metadata *_metadata, int fd, struct churn *c,
		     int slot)
{
	struct sfile s;

	ASSERT_EQ(0, sfile_parse(fd, &s));
	c->size[slot] = s.size;
	c->desc_off[slot] = s.hdr.desc_offset;
	c->desc_len[slot] = s.hdr.num_desc * s.stride;
	c->desc[slot] = malloc(c->desc_len[slot]);
	ASSERT_NE(NULL, c->desc[slot]);
	memcpy(c->desc[slot], s.descs, c->desc_len[slot]);
	sfile_free(&s);
}

TEST_F_TIMEOUT(slow, vm_destroyed_during_pread_15, 300)
{
	struct churn_reader cr[NR_READERS];
	struct statsfd_vm_run run = { .io_exits = 10, .hypercall_exits = 5 };
	int devnull, i, iter = 0, min_iter = stress_scale(100, 400);
	unsigned long overlapped = 0;
	__u64 alive, t_end;
	struct vm_env v;
	struct churn *c;

	assert_two_cpus(_metadata);
	c = calloc(1, sizeof(*c));
	ASSERT_NE(NULL, c);
	/* no debugfs view: more VMs dropped under the readers per second */
	ASSERT_EQ(0, debugfs_param_set(false));
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ASSERT_GE(devnull, 0);
	alive = sys_stat("vms_alive");

	/* reference descriptors: slot 0 a VM, slots 1 and 2 vCPUs */
	ASSERT_VM_ENV(&v, self->dev, 1, NULL, VM_ENV_STATS);
	ref_desc(_metadata, v.vm_stats, c, 0);
	ref_desc(_metadata, v.vcpu_stats[0], c, 1);
	ref_desc(_metadata, v.vcpu_stats[0], c, 2);
	vm_env_close(&v);

	for (i = 0; i < 3; i++) {
		c->fds[i] = dup(devnull);
		ASSERT_GE(c->fds[i], 0);
	}
	for (i = 0; i < NR_READERS; i++) {
		cr[i].c = c;
		cr[i].idx = i;
		ASSERT_EQ(0, pthread_create(&cr[i].thread, NULL,
					    churn_reader_fn, &cr[i]));
	}

	/*
	 * At least @min_iter VMs, and on until a pread was caught in
	 * flight, within a generous time bound; then asserted below.
	 */
	t_end = now_ns() + stress_scale(30, 60) * 1000000000ULL;
	while (now_ns() < t_end && (iter < min_iter || !overlapped)) {
		ASSERT_VM_ENV(&v, self->dev, 2, &run, VM_ENV_STATS);
		ASSERT_EQ(c->fds[0], dup2(v.vm_stats, c->fds[0]));
		ASSERT_EQ(c->fds[1], dup2(v.vcpu_stats[0], c->fds[1]));
		ASSERT_EQ(c->fds[2], dup2(v.vcpu_stats[1], c->fds[2]));
		/* from now on only the slots hold the VM */
		vm_env_close(&v);
		atomic_fetch_add(&c->gen, 1);
		churn_wait_readers(c, atomic_load(&c->gen));
		if (iter & 1)
			usleep(iter % 7 * 50);
		/* drop the last references, readers still inside pread() */
		for (i = 0; i < 3; i++)
			ASSERT_EQ(c->fds[i], dup2(devnull, c->fds[i]));
		for (i = 0; i < NR_READERS; i++) {
			unsigned long b = atomic_load(&c->busy[i]);

			if (b)
				atomic_store(&c->caught[i], b);
		}
		atomic_fetch_add(&c->gen, 1);
		churn_wait_readers(c, atomic_load(&c->gen));
		/* the readers have moved on: their counts are settled */
		for (overlapped = 0, i = 0; i < NR_READERS; i++)
			overlapped += c->overlapped[i];
		iter++;
	}
	atomic_store(&c->stop, 1);
	for (i = 0; i < NR_READERS; i++) {
		ASSERT_EQ(0, pthread_join(cr[i].thread, NULL));
		TH_LOG("reader %d: %lu reads, %lu of /dev/null, %lu in flight at the drop",
		       i, c->reads[i], c->zero[i], c->overlapped[i]);
		EXPECT_EQ(0, c->bad[i]);
		EXPECT_GT(c->reads[i], c->zero[i]);
	}
	TH_LOG("%d VMs dropped under readers", iter);
	EXPECT_GT(iter, 10);
	/* the window this test is about was really hit */
	EXPECT_GT(overlapped, 0);
	/* every VM was freed, by whichever thread let go last */
	EXPECT_EQ(alive, sys_stat("vms_alive"));
	for (i = 0; i < 3; i++) {
		close(c->fds[i]);
		free(c->desc[i]);
	}
	close(devnull);
	free(c);
}

struct life_reader {
	pthread_t thread;
	atomic_int *stop;
	int fd; /* stats fd, or -1 for the debugfs reader */
	const char *name; /* a cumulative counter that never drops */
	unsigned char *desc; /* the descriptors every read must show */
	size_t size, desc_off, desc_len;
	off_t val_off;
	unsigned long reads, bad, backwards;
	unsigned long changes; /* reads that saw the value move */
};

/* #19: the file keeps its size and descriptors; @name never drops. */
static void *life_reader_fn(void *arg)
{
	struct life_reader *r = arg;
	unsigned char *buf = malloc(r->size + 64);
	__u64 last = 0, v;

	while (buf && !atomic_load(r->stop)) {
		ssize_t ret = pread(r->fd, buf, r->size + 64, 0);

		r->reads++;
		if (ret != (ssize_t)r->size ||
		    memcmp(buf + r->desc_off, r->desc, r->desc_len)) {
			r->bad++;
			continue;
		}
		memcpy(&v, buf + r->val_off, 8);
		if (v < last)
			r->backwards++;
		if (v != last)
			r->changes++;
		last = v;
	}
	free(buf);
	return NULL;
}

/* Reads whatever debugfs view exists while VMs come and go. */
static void *debugfs_reader_fn(void *arg)
{
	struct life_reader *r = arg;
	char path[512];
	struct dirent *de;
	DIR *d;

	while (!atomic_load(r->stop)) {
		d = opendir(STATSFD_VM_DEBUGFS);
		if (!d) {
			r->bad++;
			return NULL;
		}
		while ((de = readdir(d)) && !atomic_load(r->stop)) {
			if (strncmp(de->d_name, "vm-", 3))
				continue;
			snprintf(path, sizeof(path), "%s/%s",
				 STATSFD_VM_DEBUGFS, de->d_name);
			/* may vanish under us: errors are fine, oopses not */
			if (read_debugfs_dir(path) < 0)
				r->changes++;
			snprintf(path, sizeof(path), "%s/%s/vcpu-0",
				 STATSFD_VM_DEBUGFS, de->d_name);
			read_debugfs_dir(path);
			r->reads++;
		}
		closedir(d);
	}
	return NULL;
}

static void life_reader_init(struct __test_metadata *_metadata,
			     struct life_reader *r, atomic_int *stop, int fd,
			     const char *name)
{
	struct sfile s;

	memset(r, 0, sizeof(*r));
	r->stop = stop;
	r->fd = fd;
	r->name = name;
	ASSERT_EQ(0, sfile_parse(fd, &s));
	r->size = s.size;
	r->desc_off = s.hdr.desc_offset;
	r->desc_len = s.hdr.num_desc * s.stride;
	r->desc = malloc(r->desc_len);
	ASSERT_NE(NULL, r->desc);
	memcpy(r->desc, s.descs, r->desc_len);
	r->val_off = stat_off(&s, name);
	ASSERT_GT(r->val_off, 0);
	sfile_free(&s);
}

/*
 * #19: readers of a VM's and of the system's stats race vCPU creation,
 * VM creation and VM destruction (which add and remove the children the
 * aggregates are computed over) and the debugfs view coming and going:
 * each fd keeps its descriptor set, sums over a growing set never drop,
 * and each reader saw its counter move while it read (the reads did
 * overlap the creations).
 */
TEST_F_TIMEOUT(slow, readers_race_creation_and_destruction_19, 300)
{
	struct statsfd_vm_run run = { .mmio_exits = 3 };
	struct life_reader r[4];
	int vm, vm_fd, sys_fd, vcpus[64], nvcpu = 0, i, n = 0;
	long long max_vcpus = param_get("max_vcpus");
	atomic_int stop = 0;
	__u64 alive, t_end;
	struct stat st;

	assert_two_cpus(_metadata);
	ASSERT_GT(max_vcpus, 0);
	/* the module is loaded with its default debugfs=Y: views come and go */
	ASSERT_EQ(0, debugfs_param_set(true));
	ASSERT_EQ(0, stat(STATSFD_VM_DEBUGFS, &st))
	{
		TH_LOG("no debugfs view %s: %m", STATSFD_VM_DEBUGFS);
	}
	alive = sys_stat("vms_alive");
	vm = vm_create(self->dev);
	ASSERT_GE(vm, 0);
	vm_fd = stats_fd(vm);
	sys_fd = stats_fd(self->dev);
	ASSERT_GE(vm_fd, 0);
	ASSERT_GE(sys_fd, 0);

	life_reader_init(_metadata, &r[0], &stop, vm_fd, "exits_sum");
	life_reader_init(_metadata, &r[1], &stop, vm_fd, "vcpus_created");
	life_reader_init(_metadata, &r[2], &stop, sys_fd, "vms_created");
	memset(&r[3], 0, sizeof(r[3]));
	r[3].stop = &stop;
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, pthread_create(&r[i].thread, NULL, life_reader_fn,
					    &r[i]));
	ASSERT_EQ(0,
		  pthread_create(&r[3].thread, NULL, debugfs_reader_fn, &r[3]));

	t_end = now_ns() + stress_scale(3, 8) * 1000000000ULL;
	while (now_ns() < t_end) {
		int other = vm_create(self->dev), ov;

		ASSERT_GE(other, 0);
		ov = vcpu_create(other, 0);
		ASSERT_GE(ov, 0);
		ASSERT_EQ(0, vcpu_run(ov, &run));
		if (nvcpu < 64 && nvcpu < max_vcpus) {
			vcpus[nvcpu] = vcpu_create(vm, nvcpu);
			ASSERT_GE(vcpus[nvcpu], 0);
			ASSERT_EQ(0, vcpu_run(vcpus[nvcpu], &run));
			nvcpu++;
		} else {
			ASSERT_EQ(0, vcpu_run(vcpus[n % nvcpu], &run));
		}
		close(ov);
		close(other);
		n++;
	}
	atomic_store(&stop, 1);
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, pthread_join(r[i].thread, NULL));
		TH_LOG("reader %d (%s): %lu reads, %lu %s", i,
		       r[i].name ? r[i].name : "debugfs", r[i].reads,
		       r[i].changes,
		       r[i].name ? "saw it move" : "views gone under it");
		EXPECT_EQ(0, r[i].bad);
		EXPECT_EQ(0, r[i].backwards);
		EXPECT_GT(r[i].reads, 0);
		/* the debugfs reader's count depends on timing alone */
		if (i < 3)
			EXPECT_GT(r[i].changes, 1);
		free(r[i].desc);
	}
	TH_LOG("%d VMs created and destroyed, %d vCPUs added", n, nvcpu);
	EXPECT_EQ((__u64)nvcpu, stat_get(vm_fd, "vcpus_created"));
	EXPECT_EQ(3ULL * n, stat_get(vm_fd, "exits_sum"));
	for (i = 0; i < nvcpu; i++)
		close(vcpus[i]);
	close(vm);
	close(vm_fd);
	close(sys_fd);
	EXPECT_EQ(alive, sys_stat("vms_alive"));
}

TEST_HARNESS_MAIN
