// SPDX-License-Identifier: GPL-2.0
/*
 * snapshot_test - every read of a source with update windows is one
 * snapshot (issue 11, item 7).
 *
 * vCPUs run without pause, taking only I/O exits of a fixed io_bytes and
 * cycles_per_exit (no halts, no signals), so inside every update window
 * of a vCPU
 *
 *	exits == io_exits + mmio_exits + hypercall_exits + halt_exits
 *		 + signal_exits
 *	io_bytes == io_exits * IO_BYTES
 *	guest_cycles == exits * CYCLES
 *
 * and the same between the VM's sums.  Readers check those relations on
 * every snapshot they take, a million in all with STATSFD_STRESS=1 (fewer
 * without), through
 *
 *	(a) pread() of a vCPU's whole data block, also checking sample_ns
 *	    against CLOCK_BOOTTIME around the call and that sample_ns and
 *	    generation never go down;
 *	(b) pread() of just the stats the relations need (and of sample_ns
 *	    and generation alone);
 *	(c) the mapping, with the documented latch protocol and bounded
 *	    retries, of the whole area and of just the stats needed: a copy
 *	    that runs out of retries is no failure (a writer publishing
 *	    windows back to back may starve it, the ABI says to fall back to
 *	    pread), it is counted and reported, as are the retries;
 *	(d) pread() of the VM's data block: its sums, over one snapshot of
 *	    each vCPU.
 *
 * Every pread() must succeed while the vCPUs run flat out, and while they
 * are starved inside their windows by a CPU hog (SCHED_IDLE behind a busy
 * thread on their CPU) or stopped (SIGSTOP, ptrace): a reader never waits
 * for a writer.  Once the vCPUs are idle, generation is what their
 * windows add up to and equals the mapping's seq.
 *
 * The control: the same readers and checks, the mapped ones copying the
 * copy the writer fills instead of the one seq selects, must catch mixed
 * values, or the checks could not fail.  The provider's update_windows
 * parameter N publishes nothing; the fixture puts it back to Y from the
 * parent process, whatever happens to the test.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "statsfd_vm_util.h"

#define NR_VCPUS 2
/* Per I/O exit, odd and prime, so a mixed product rarely matches. */
#define IO_BYTES 13
#define CYCLES 7
/* Exits of one RUN: a RUN lasts some milliseconds. */
#define RUN_EXITS 20000
/* Tries of one copy from the mapping, as the ABI's example program. */
#define MAP_TRIES 1000

#define UPDATE_WINDOWS STATSFD_VM_PARAMS "/update_windows"

enum method {
	M_BLOCK, /* (a) pread of a vCPU's data block */
	M_SLICE, /* (b) pread of the stats needed */
	M_MAP_ALL, /* (c) the whole mapped area */
	M_MAP_FEW, /* (c) the mapped stats needed */
	M_VM, /* (d) pread of the VM's data block */
	NR_METHODS,
};

static const char *const method_name[NR_METHODS] = {
	"pread block", "pread slice", "map all", "map needed", "VM sums",
};

/* Where the values a check needs are: indices (data block offset / 8). */
struct layout {
	unsigned int exits, io, mmio, hcall, halt, signal, io_bytes, cycles;
	unsigned int ns, gen;
	unsigned int lo, hi; /* the values [lo, hi) cover all of the above */
	unsigned int data_off; /* header.data_offset */
	unsigned int data_size; /* the whole data block */
};

/* Index of stat @name@suffix in @s, or -1 (and a message). */
static int stat_idx(const struct sfile *s, const char *name, const char *suffix)
{
	const struct statsfd_desc *d;
	char full[64];

	snprintf(full, sizeof(full), "%s%s", name, suffix);
	d = sfile_find(s, full);
	if (!d) {
		fprintf(stderr, "# no stat %s in %s\n", full, s->id);
		return -1;
	}
	return d->offset / 8;
}

/*
 * The layout of a vCPU's file (@suffix "") or of a VM's (@suffix "_sum":
 * the sums of the same stats).  Returns 0, or -1 if a stat is missing.
 */
static int layout_init(struct layout *l, const struct sfile *s,
		       const char *suffix)
{
	static const char *const names[] = { "exits",	   "io_exits",
					     "mmio_exits", "hypercall_exits",
					     "halt_exits", "signal_exits",
					     "io_bytes",   "guest_cycles" };
	unsigned int *fields[] = { &l->exits,	 &l->io,    &l->mmio,
				   &l->hcall,	 &l->halt,  &l->signal,
				   &l->io_bytes, &l->cycles };
	size_t i;
	int idx;

	l->lo = UINT32_MAX;
	l->hi = 0;
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		idx = stat_idx(s, names[i], suffix);
		if (idx < 0)
			return -1;
		*fields[i] = idx;
		if ((unsigned int)idx < l->lo)
			l->lo = idx;
		if ((unsigned int)idx + 1 > l->hi)
			l->hi = idx + 1;
	}
	idx = stat_idx(s, STATSFD_STAT_SAMPLE_NS, "");
	if (idx < 0)
		return -1;
	l->ns = idx;
	idx = stat_idx(s, STATSFD_STAT_GENERATION, "");
	if (idx < 0)
		return -1;
	l->gen = idx;
	l->data_off = s->hdr.data_offset;
	l->data_size = s->data_size;
	return 0;
}

/* The relations of one window, on values indexed as the data block. */
static bool consistent(const struct layout *l, const __u64 *v)
{
	__u64 exits = v[l->exits];

	return exits == v[l->io] + v[l->mmio] + v[l->hcall] + v[l->halt] +
				v[l->signal] &&
	       v[l->io_bytes] == v[l->io] * IO_BYTES &&
	       v[l->cycles] == exits * CYCLES;
}

/*
 * The relations of one window when RUNs may end on a signal: a signal
 * exit counts in exits, but the guest ran no cycles for it
 * (statsfd-vm-api.rst, 5.3).
 */
static bool consistent_signals(const struct layout *l, const __u64 *v)
{
	__u64 exits = v[l->exits];

	return exits == v[l->io] + v[l->mmio] + v[l->hcall] + v[l->halt] +
				v[l->signal] &&
	       v[l->io_bytes] == v[l->io] * IO_BYTES &&
	       v[l->cycles] == (exits - v[l->signal]) * CYCLES;
}

/* Only the first relation, for a read of exits and the reasons alone. */
static bool exits_add_up(const struct layout *l, const __u64 *v)
{
	return v[l->exits] ==
	       v[l->io] + v[l->mmio] + v[l->hcall] + v[l->halt] + v[l->signal];
}

/* What the readers share: the files, their layouts, when to stop. */
struct ctx {
	int vcpu_fd[NR_VCPUS]; /* stats fds of the vCPUs */
	int vm_fd; /* stats fd of the VM */
	struct layout vcpu, vm;
	const struct statsfd_mmap_header *map[NR_VCPUS];
	unsigned long quota; /* reads per reader, at least */
	__u64 deadline; /* now_ns() after which readers stop anyway */
	atomic_int preads_left; /* pread readers short of their quota */
	bool raw; /* the control: mapped readers ignore the protocol */
};

/**
 * struct reader - one reader thread and what it found
 * @m: how it reads
 * @reads: reads made (a copy that ran out of retries included)
 * @bad: snapshots whose values break a relation
 * @errors: preads that failed or came back short
 * @retries: tries of mapped copies beyond the first
 * @exhausted: mapped copies that ran out of their MAP_TRIES tries
 * @raced: snapshots that show the writer at work: one that differs from
 *	the reader's previous one of the same source (the writer wrote in
 *	between), or a mapped copy that needed more than one try (a window
 *	overlapped a try)
 * @ns_out: sample_ns outside the CLOCK_BOOTTIME times around its pread
 * @ns_back: sample_ns below that of an earlier read of the same source
 * @gen_back: generation below that of an earlier read of the same source
 * @last_ns: per vCPU (and the VM, last), the latest sample_ns seen
 * @last_gen: the same for generation
 * @last_key: the same for the value that tells a change (exits, or
 *	generation for a read without exits)
 * @first_bad: the first broken snapshot, for the log
 */
struct reader {
	pthread_t thread;
	struct ctx *c;
	enum method m;
	unsigned long reads, bad, errors, retries, exhausted;
	unsigned long raced, ns_out, ns_back, gen_back;
	__u64 last_ns[NR_VCPUS + 1], last_gen[NR_VCPUS + 1];
	__u64 last_key[NR_VCPUS + 1];
	char first_bad[192];
	__u64 *buf;
};

static void note_bad(struct reader *r, const struct layout *l, const __u64 *v,
		     unsigned int src)
{
	if (r->bad++)
		return;
	snprintf(r->first_bad, sizeof(r->first_bad),
		 "source %u: exits %llu io %llu mmio %llu hc %llu halt %llu sig %llu bytes %llu cyc %llu",
		 src, (unsigned long long)v[l->exits],
		 (unsigned long long)v[l->io], (unsigned long long)v[l->mmio],
		 (unsigned long long)v[l->hcall],
		 (unsigned long long)v[l->halt],
		 (unsigned long long)v[l->signal],
		 (unsigned long long)v[l->io_bytes],
		 (unsigned long long)v[l->cycles]);
}

/*
 * Count a snapshot of @src whose @key differs from the previous one's, or
 * that took @tries > 1.
 */
static void note_key(struct reader *r, unsigned int src, __u64 key, int tries)
{
	if (key != r->last_key[src] || tries > 1)
		r->raced++;
	r->last_key[src] = key;
}

/*
 * sample_ns within [@t0, @t1] and, like generation, not below what the
 * last read of source @src (a vCPU, or NR_VCPUS for the VM) returned.
 */
static void check_meta(struct reader *r, unsigned int src, __u64 ns, __u64 gen,
		       __u64 t0, __u64 t1)
{
	if (ns < t0 || ns > t1)
		r->ns_out++;
	if (ns < r->last_ns[src])
		r->ns_back++;
	if (gen < r->last_gen[src])
		r->gen_back++;
	r->last_ns[src] = ns;
	r->last_gen[src] = gen;
}

/*
 * pread() into @buf, indexed as the data block, of a vCPU's file or the
 * VM's (whose sums read every vCPU); 0 or -1 (counted).  No error is
 * excused: a read never waits for, nor gives up on, a writer.
 */
static int read_values(struct reader *r, int fd, const struct layout *l,
		       unsigned int first, unsigned int nr)
{
	ssize_t want = nr * 8, ret;

	ret = pread(fd, r->buf + first, want, l->data_off + first * 8);
	if (ret == want)
		return 0;
	if (r->errors++ < 10)
		fprintf(stderr, "# %s: pread returned %zd: %s\n",
			method_name[r->m], ret, strerror(errno));
	return -1;
}

/*
 * One pread of the whole data block of source @who (a vCPU, or NR_VCPUS
 * for the VM) through @fd, laid out as @l, checked like every copy.
 */
static void read_data_block(struct reader *r, int fd, const struct layout *l,
			    unsigned int who)
{
	__u64 t0, t1;

	t0 = boottime_ns();
	if (read_values(r, fd, l, 0, l->data_size / 8))
		return;
	t1 = boottime_ns();
	if (!consistent(l, r->buf))
		note_bad(r, l, r->buf, who);
	note_key(r, who, r->buf[l->exits], 1);
	check_meta(r, who, r->buf[l->ns], r->buf[l->gen], t0, t1);
}

static void read_block(struct reader *r, unsigned int v)
{
	read_data_block(r, r->c->vcpu_fd[v], &r->c->vcpu, v);
}

/*
 * Three kinds of partial reads in turn: the span of the stats the
 * relations need, exits and the reasons alone, sample_ns and generation
 * alone.
 */
static void read_slice(struct reader *r, unsigned int v)
{
	const struct layout *l = &r->c->vcpu;
	int fd = r->c->vcpu_fd[v];
	__u64 t0, t1;

	switch (r->reads % 3) {
	case 0:
		if (read_values(r, fd, l, l->lo, l->hi - l->lo))
			return;
		if (!consistent(l, r->buf))
			note_bad(r, l, r->buf, v);
		note_key(r, v, r->buf[l->exits], 1);
		break;
	case 1:
		/* exits and the exits by reason are adjacent, in order */
		if (read_values(r, fd, l, l->exits, l->signal - l->exits + 1))
			return;
		if (!exits_add_up(l, r->buf))
			note_bad(r, l, r->buf, v);
		note_key(r, v, r->buf[l->exits], 1);
		break;
	default:
		t0 = boottime_ns();
		if (read_values(r, fd, l, l->ns, 2))
			return;
		t1 = boottime_ns();
		note_key(r, v, r->buf[l->gen], 1);
		check_meta(r, v, r->buf[l->ns], r->buf[l->gen], t0, t1);
		break;
	}
}

/*
 * The control's copy: the copy of the values that seq does not select,
 * which the writer fills at the end of every window, without the
 * protocol.
 */
static void map_raw_copy(const struct statsfd_mmap_header *h,
			 const unsigned int *idx, unsigned int n, __u64 *out)
{
	__u64 seq = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
	const __u64 *vals = map_copy_base(h, seq + 1);
	unsigned int i, all = h->data_size / 8;

	for (i = 0; i < (idx ? n : all); i++) {
		unsigned int k = idx ? idx[i] : i;

		out[k] = __atomic_load_n(&vals[k], __ATOMIC_RELAXED);
	}
}

static void read_map(struct reader *r, unsigned int v, bool all)
{
	const struct layout *l = &r->c->vcpu;
	const unsigned int idx[] = {
		l->exits, l->io,     l->mmio,	  l->hcall,
		l->halt,  l->signal, l->io_bytes, l->cycles
	};
	__u64 gen;
	int tries;

	if (r->c->raw) {
		map_raw_copy(r->c->map[v], all ? NULL : idx, ARRAY_SIZE(idx),
			     r->buf);
		if (!consistent(l, r->buf))
			note_bad(r, l, r->buf, v);
		note_key(r, v, r->buf[l->exits], 1);
		return;
	}
	tries = map_copy(r->c->map[v], all ? NULL : idx, ARRAY_SIZE(idx),
			 r->buf, MAP_TRIES, &gen);
	if (!tries) {
		r->exhausted++;
		r->retries += MAP_TRIES - 1;
		return;
	}
	r->retries += tries - 1;
	if (!consistent(l, r->buf))
		note_bad(r, l, r->buf, v);
	note_key(r, v, r->buf[l->exits], tries);
	if (gen < r->last_gen[v])
		r->gen_back++;
	r->last_gen[v] = gen;
}

static void read_vm(struct reader *r)
{
	read_data_block(r, r->c->vm_fd, &r->c->vm, NR_VCPUS);
}

/*
 * Whether reader @r goes on: until its quota, and then, for a reader of
 * the mapping (many times faster than a pread), for as long as any pread
 * reader goes on, so that the mapped copies, too, overlap the writers
 * from first to last.  The deadline ends them all.
 */
static bool reader_goes_on(const struct reader *r, struct ctx *c)
{
	bool map = r->m == M_MAP_ALL || r->m == M_MAP_FEW;

	if (!(r->reads % 256) && now_ns() >= c->deadline)
		return false;
	return r->reads < c->quota || (map && atomic_load(&c->preads_left));
}

static void *reader_fn(void *arg)
{
	struct reader *r = arg;
	struct ctx *c = r->c;

	while (reader_goes_on(r, c)) {
		unsigned int v = r->reads % NR_VCPUS;

		switch (r->m) {
		case M_BLOCK:
			read_block(r, v);
			break;
		case M_SLICE:
			read_slice(r, v);
			break;
		case M_MAP_ALL:
			read_map(r, v, true);
			break;
		case M_MAP_FEW:
			read_map(r, v, false);
			break;
		default:
			read_vm(r);
			break;
		}
		r->reads++;
	}
	if (r->m != M_MAP_ALL && r->m != M_MAP_FEW)
		atomic_fetch_sub(&c->preads_left, 1);
	return NULL;
}

/* A vCPU in RUN after RUN, nothing but I/O exits, until told to stop. */
struct runner {
	pthread_t thread;
	int vcpu;
	atomic_int *stop;
	unsigned long runs;
	unsigned long errors;
};

static void *runner_fn(void *arg)
{
	struct runner *w = arg;

	while (!atomic_load(w->stop)) {
		struct statsfd_vm_run run = {
			.io_exits = RUN_EXITS,
			.io_bytes = IO_BYTES,
			.cycles_per_exit = CYCLES,
		};

		if (vcpu_run(w->vcpu, &run) || run.exits_done != RUN_EXITS)
			w->errors++;
		else
			w->runs++;
	}
	return NULL;
}

/* Pins @thread to every CPU but the last (the runners' CPU). */
static int pin_readers(pthread_t thread, int ncpus)
{
	cpu_set_t set;
	int cpu;

	CPU_ZERO(&set);
	for (cpu = 0; cpu < ncpus - 1; cpu++)
		CPU_SET(cpu, &set);
	return pthread_setaffinity_np(thread, sizeof(set), &set);
}

/* The update_windows parameter: 'Y', 'N', or 0 if unreadable. */
static char windows_get(void)
{
	char buf[8] = "";

	read_file(UPDATE_WINDOWS, buf, sizeof(buf));
	return buf[0];
}

static int windows_set(bool on)
{
	return write_file(UPDATE_WINDOWS, on ? "Y" : "N");
}

FIXTURE(snap)
{
	struct vm_env e; /* a VM with NR_VCPUS vCPUs and their stats fds */
	struct sfile vcpu_s, vm_s; /* vCPU 0's and the VM's file, parsed */
	struct ctx c;
	size_t map_len[NR_VCPUS];
};

FIXTURE_SETUP(snap)
{
	unsigned int i;

	/* the default, which the teardown puts back */
	ASSERT_EQ('Y', windows_get())
	{
		TH_LOG("%s: %m", UPDATE_WINDOWS);
	}
	/* every race here needs a second CPU to race on */
	ASSERT_LE(2, sysconf(_SC_NPROCESSORS_ONLN));
	ASSERT_VM_ENV(&self->e, -1, NR_VCPUS, NULL, VM_ENV_STATS);
	ASSERT_EQ(0, sfile_parse(self->e.vcpu_stats[0], &self->vcpu_s));
	ASSERT_EQ(0, sfile_parse(self->e.vm_stats, &self->vm_s));
	ASSERT_EQ(0, layout_init(&self->c.vcpu, &self->vcpu_s, ""));
	ASSERT_EQ(0, layout_init(&self->c.vm, &self->vm_s, "_sum"));
	self->c.vm_fd = self->e.vm_stats;
	for (i = 0; i < NR_VCPUS; i++) {
		self->c.vcpu_fd[i] = self->e.vcpu_stats[i];
		self->c.map[i] =
			stats_map(self->c.vcpu_fd[i], &self->map_len[i]);
		ASSERT_NE(MAP_FAILED, self->c.map[i])
		{
			TH_LOG("mmap of vCPU %u: %m", i);
		}
	}
}

/*
 * In the parent (FIXTURE_TEARDOWN_PARENT): runs even when the test
 * failed or crashed, and puts update_windows back to its default, Y.
 * Nothing else: the test's fds and mappings went with its process (the
 * fd numbers in @self mean nothing here).
 */
FIXTURE_TEARDOWN_PARENT(snap)
{
	EXPECT_EQ(0, windows_set(true));
	EXPECT_EQ('Y', windows_get());
}

/* How the writers run while the readers read. */
enum writers {
	W_RUNNING, /* flat out, alone on their CPU */
	W_STARVED, /* SCHED_IDLE behind a busy thread on their CPU */
};

/* Spins on the runners' CPU until told to stop (W_STARVED). */
static void *hog_fn(void *arg)
{
	atomic_int *stop = arg;

	/* An atomic load each pass: the loop cannot be optimized away. */
	while (!atomic_load_explicit(stop, memory_order_relaxed))
		;
	return NULL;
}

/* A runner that gets the CPU only when the hog leaves it idle. */
static void *idle_runner_fn(void *arg)
{
	struct sched_param sp = { .sched_priority = 0 };

	if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp))
		((struct runner *)arg)->errors++;
	return runner_fn(arg);
}

struct totals {
	struct reader r[NR_METHODS];
	struct runner w[NR_VCPUS];
	pthread_t hog;
	unsigned long reads, bad, errors, checked;
	__u64 secs_ms;
};

/*
 * The vCPUs run (as @how says) while one reader per method reads @quota
 * times, the mapping readers for as long as the others (or until
 * @budget_s seconds are over); then the vCPUs stop.  Everything is
 * counted in @t; the caller decides what must hold.
 */
static void consistency_run(struct __test_metadata *_metadata,
			    const struct vm_env *e, struct ctx *c,
			    struct totals *t, unsigned long quota,
			    unsigned int budget_s, enum writers how)
{
	int ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	atomic_int stop = 0;
	__u64 t0, deadline;
	unsigned int i;

	memset(t, 0, sizeof(*t));
	c->quota = quota;
	atomic_store(&c->preads_left, NR_METHODS - 2);
	if (how == W_STARVED) {
		ASSERT_EQ(0, pthread_create(&t->hog, NULL, hog_fn, &stop));
		ASSERT_EQ(0, pin(t->hog, ncpus - 1));
	}
	for (i = 0; i < NR_VCPUS; i++) {
		t->w[i].vcpu = e->vcpu[i];
		t->w[i].stop = &stop;
		ASSERT_EQ(0, pthread_create(&t->w[i].thread, NULL,
					    how == W_STARVED ? idle_runner_fn :
							       runner_fn,
					    &t->w[i]));
		/* the runners keep one CPU, the readers race from the rest */
		ASSERT_EQ(0, pin(t->w[i].thread, ncpus - 1));
	}
	/* under way: the readers overlap the writers from the first read */
	deadline = now_ns() + 60000000000ULL;
	for (i = 0; i < NR_VCPUS; i++)
		while (stat_get(e->vcpu_stats[i], "io_exits") == 0 &&
		       now_ns() < deadline)
			usleep(1000);
	for (i = 0; i < NR_VCPUS; i++)
		ASSERT_NE(0, stat_get(e->vcpu_stats[i], "io_exits"));

	t0 = now_ns();
	c->deadline = t0 + budget_s * 1000000000ULL;
	for (i = 0; i < NR_METHODS; i++) {
		struct reader *r = &t->r[i];

		r->c = c;
		r->m = i;
		r->buf = calloc(1, c->vcpu.data_size + c->vm.data_size);
		ASSERT_NE(NULL, r->buf);
		ASSERT_EQ(0, pthread_create(&r->thread, NULL, reader_fn, r));
		ASSERT_EQ(0, pin_readers(r->thread, ncpus));
	}
	for (i = 0; i < NR_METHODS; i++)
		ASSERT_EQ(0, pthread_join(t->r[i].thread, NULL));
	t->secs_ms = (now_ns() - t0) / 1000000;
	atomic_store(&stop, 1);
	for (i = 0; i < NR_VCPUS; i++)
		ASSERT_EQ(0, pthread_join(t->w[i].thread, NULL));
	if (how == W_STARVED)
		ASSERT_EQ(0, pthread_join(t->hog, NULL));

	for (i = 0; i < NR_METHODS; i++) {
		struct reader *r = &t->r[i];

		TH_LOG("%-11s: %lu reads, %lu raced a write, %lu mixed, %lu errors",
		       method_name[i], r->reads, r->raced, r->bad, r->errors);
		TH_LOG("%-11s: %lu retries, %lu out of retries", method_name[i],
		       r->retries, r->exhausted);
		TH_LOG("%-11s: sample_ns %lu outside the call, %lu backwards",
		       method_name[i], r->ns_out, r->ns_back);
		TH_LOG("%-11s: generation %lu backwards", method_name[i],
		       r->gen_back);
		if (r->bad)
			TH_LOG("%-11s: first mixed snapshot: %s",
			       method_name[i], r->first_bad);
		t->reads += r->reads;
		t->bad += r->bad;
		t->errors += r->errors;
		t->checked += r->reads - r->errors - r->exhausted;
		free(r->buf);
		r->buf = NULL;
	}
	for (i = 0; i < NR_VCPUS; i++) {
		TH_LOG("vCPU %u: %lu runs of %d exits, %lu failed", i,
		       t->w[i].runs, RUN_EXITS, t->w[i].errors);
		EXPECT_EQ(0, t->w[i].errors);
	}
	TH_LOG("%lu reads (%lu checked) in %llu.%03llu s, %lu mixed", t->reads,
	       t->checked, (unsigned long long)t->secs_ms / 1000,
	       (unsigned long long)t->secs_ms % 1000, t->bad);
}

/*
 * Once the vCPUs are idle: each one's stats are exactly what its runs
 * did, and generation (its windows) equals the mapping's seq.  A run
 * that a runner stopped mid-way (the starved ones are told to stop while
 * inside RUN) is not counted in runs but did its exits: only what the
 * stats say about one another is checked then.
 */
static void check_idle(struct __test_metadata *_metadata, const struct ctx *c,
		       const struct totals *t, bool exact)
{
	const struct layout *l = &c->vcpu;
	__u64 *v = calloc(1, l->data_size);
	unsigned int i;

	ASSERT_NE(NULL, v);
	for (i = 0; i < NR_VCPUS; i++) {
		__u64 runs = t->w[i].runs;

		ASSERT_EQ(l->data_size,
			  pread(c->vcpu_fd[i], v, l->data_size, l->data_off));
		EXPECT_TRUE(consistent(l, v));
		EXPECT_EQ(v[l->exits], v[l->io]);
		if (exact) {
			EXPECT_EQ(runs * RUN_EXITS, v[l->exits]);
			EXPECT_EQ(runs * RUN_EXITS * IO_BYTES, v[l->io_bytes]);
			/*
			 * Per RUN: its start, then one window per stretch
			 * of at most 256 exits between two signal checks,
			 * the last one also closing the run
			 * (statsfd-vm-api.rst, 5.4).
			 */
			EXPECT_EQ(runs * (1 + (RUN_EXITS + 255) / 256),
				  v[l->gen])
			{
				TH_LOG("vCPU %u: %llu runs", i,
				       (unsigned long long)runs);
			}
		}
		EXPECT_EQ(v[l->gen],
			  __atomic_load_n(&c->map[i]->seq, __ATOMIC_ACQUIRE));
		EXPECT_EQ(v[l->exits], map_val(c->map[i], l->exits));
	}
	free(v);
}

/* What every consistency run must show, whatever the writers did. */
static void expect_snapshots(struct __test_metadata *_metadata,
			     const struct totals *t, unsigned long want)
{
	unsigned int i;

	for (i = 0; i < NR_METHODS; i++) {
		const struct reader *r = &t->r[i];

		EXPECT_EQ(0, r->bad)
		{
			TH_LOG("%s: %s", method_name[i], r->first_bad);
		}
		/* no read waits for, or gives up on, a writer */
		EXPECT_EQ(0, r->errors);
		EXPECT_EQ(0, r->ns_out);
		EXPECT_EQ(0, r->ns_back);
		EXPECT_EQ(0, r->gen_back);
		/* a mapped copy may starve; one that never gets through is a bug */
		EXPECT_LT(r->exhausted, r->reads);
		/*
		 * Each method gets through at least a quarter of its share
		 * (the total below is the million reads): a VM read copies
		 * a snapshot of every vCPU, so on a loaded host it is the
		 * slowest, and the budget may end its share early.
		 */
		EXPECT_LE(want / NR_METHODS / 4, r->reads);
	}
}

/*
 * One read call, one window: over every method, no snapshot mixes two
 * windows, every pread of a whole data block succeeds, sample_ns lies
 * within its pread and never goes back, generation never goes back.  At
 * least a million reads with STATSFD_STRESS=1 (a fifth of them per
 * method, the mapping readers going on as long as the others), 30,000
 * without: the preads are what takes time on the debug guest (6,000 per
 * method there still race the writers thousands of times each, and the
 * control below mixes within far fewer reads).
 */
TEST_F_TIMEOUT(snap, reads_are_snapshots, 540)
{
	unsigned long want = stress_scale(30000, 1000000);
	unsigned int budget = stress_scale(150, 300);
	struct totals *t = calloc(1, sizeof(*t));
	unsigned int i;

	ASSERT_NE(NULL, t);
	consistency_run(_metadata, &self->e, &self->c, t, want / NR_METHODS,
			budget, W_RUNNING);
	expect_snapshots(_metadata, t, want);
	/* a race test that did not race proves nothing */
	for (i = 0; i < NR_METHODS; i++)
		EXPECT_LT(0, t->r[i].raced);
	for (i = 0; i < NR_VCPUS; i++)
		EXPECT_LT(0, t->w[i].runs);
	EXPECT_LE(want, t->reads);
	check_idle(_metadata, &self->c, t, true);
	free(t);
}

/*
 * The writers starved on their CPU: SCHED_IDLE behind a thread that never
 * sleeps, so they are preempted anywhere, inside their update windows
 * too, and stay off the CPU for long stretches.  The readers on the other
 * CPUs still get every read, each of one window, without waiting for a
 * writer to run again.  The writers must still have published windows
 * meanwhile, or nothing was raced.
 */
TEST_F_TIMEOUT(snap, reads_behind_starved_writers, 300)
{
	unsigned long want = stress_scale(20000, 200000);
	unsigned int budget = stress_scale(40, 120);
	struct totals *t = calloc(1, sizeof(*t));
	__u64 seq0[NR_VCPUS];
	unsigned int i;

	ASSERT_NE(NULL, t);
	for (i = 0; i < NR_VCPUS; i++)
		seq0[i] = __atomic_load_n(&self->c.map[i]->seq,
					  __ATOMIC_ACQUIRE);
	consistency_run(_metadata, &self->e, &self->c, t, want / NR_METHODS,
			budget, W_STARVED);
	expect_snapshots(_metadata, t, want);
	for (i = 0; i < NR_VCPUS; i++)
		EXPECT_LT(seq0[i], __atomic_load_n(&self->c.map[i]->seq,
						   __ATOMIC_ACQUIRE));
	check_idle(_metadata, &self->c, t, false);
	free(t);
}

/*
 * The control: the mapped readers copy the copy the writer fills instead
 * of the one seq selects, and no longer check seq.  The very same checks
 * then catch mixed values, so the tests above can fail.  10,000 preads
 * (100,000 with STATSFD_STRESS), the mapped readers copying all the
 * while: their raw copies mixed 495,865 times in 10 million on the KCSAN
 * guest with twice the preads.
 */
TEST_F_TIMEOUT(snap, control_without_the_protocol_mixes, 300)
{
	unsigned long want = stress_scale(10000, 100000);
	struct totals *t = calloc(1, sizeof(*t));

	ASSERT_NE(NULL, t);
	self->c.raw = true;
	consistency_run(_metadata, &self->e, &self->c, t, want / NR_METHODS,
			60, W_RUNNING);
	EXPECT_LT(0, t->r[M_MAP_ALL].bad + t->r[M_MAP_FEW].bad);
	/* the readers that kept the protocol saw no mix */
	EXPECT_EQ(0, t->r[M_BLOCK].bad + t->r[M_SLICE].bad + t->r[M_VM].bad);
	EXPECT_EQ(0, t->errors);
	check_idle(_metadata, &self->c, t, true);
	free(t);
}

/*
 * update_windows N: the run loop opens no window, so nothing it does is
 * published: a read shows the values and generation of before.  Back to
 * Y, the next window publishes everything the vCPU counted, both runs.
 */
TEST_F(snap, windows_off_publish_nothing)
{
	struct statsfd_vm_run run = {
		.io_exits = 1000,
		.io_bytes = IO_BYTES,
		.cycles_per_exit = CYCLES,
	};
	const struct layout *l = &self->c.vcpu;
	__u64 *v = calloc(1, l->data_size);
	int fd = self->c.vcpu_fd[0];

	ASSERT_NE(NULL, v);
	ASSERT_EQ(0, windows_set(false));
	ASSERT_EQ('N', windows_get());
	ASSERT_EQ(0, vcpu_run(self->e.vcpu[0], &run));
	ASSERT_EQ(1000, run.exits_done);
	ASSERT_EQ(l->data_size, pread(fd, v, l->data_size, l->data_off));
	EXPECT_EQ(0, v[l->exits]);
	EXPECT_EQ(0, v[l->gen]);
	EXPECT_EQ(0, self->c.map[0]->seq);

	ASSERT_EQ(0, windows_set(true));
	ASSERT_EQ(0, vcpu_run(self->e.vcpu[0], &run));
	ASSERT_EQ(l->data_size, pread(fd, v, l->data_size, l->data_off));
	EXPECT_EQ(2000, v[l->exits]);
	EXPECT_EQ(2000 * IO_BYTES, v[l->io_bytes]);
	/* the run's start, 4 stretches of at most 256 exits */
	EXPECT_EQ(1 + (1000 + 255) / 256, v[l->gen]);
	EXPECT_EQ(v[l->gen], self->c.map[0]->seq);
	free(v);
}

/* How a stopped writer is stopped. */
enum stopper { BY_SIGSTOP, BY_PTRACE };

/* The child: vCPU 0 in RUN after RUN until killed. */
static void stopped_child(int vcpu)
{
	for (;;) {
		struct statsfd_vm_run run = {
			.io_exits = RUN_EXITS,
			.io_bytes = IO_BYTES,
			.cycles_per_exit = CYCLES,
		};

		/* a stop or SIGCONT ends a RUN early (EINTR): run on */
		vcpu_run(vcpu, &run);
	}
}

/* Stops @pid and waits until it is stopped; 0 or -1. */
static int stop_writer(pid_t pid, enum stopper how)
{
	int status;

	if (how == BY_SIGSTOP ? kill(pid, SIGSTOP) :
				ptrace(PTRACE_INTERRUPT, pid, 0, 0))
		return -1;
	if (waitpid(pid, &status, WUNTRACED) != pid || !WIFSTOPPED(status))
		return -1;
	return 0;
}

static int resume_writer(pid_t pid, enum stopper how)
{
	return how == BY_SIGSTOP ? kill(pid, SIGCONT) :
				   ptrace(PTRACE_CONT, pid, 0, 0);
}

/*
 * The writer, a process of its own running vCPU 0, stopped between two
 * exits (SIGSTOP, or a ptrace interrupt) over and over: while it stands
 * still every read succeeds at once, the mapped copy at its first try,
 * and every read of the stopped vCPU returns the very same snapshot: a
 * reader has nothing to wait for.
 */
static void stopped_writer_rounds(struct __test_metadata *_metadata,
				  const struct vm_env *e, const struct ctx *c,
				  enum stopper how)
{
	const struct layout *l = &c->vcpu, *lv = &c->vm;
	unsigned int rounds = stress_scale(20, 200), round, k;
	__u64 *v = calloc(1, l->data_size), *first = calloc(1, l->data_size);
	__u64 *vm = calloc(1, lv->data_size), gen = 0, seq0;
	int fd = c->vcpu_fd[0], status;
	pid_t pid;

	ASSERT_NE(NULL, v);
	ASSERT_NE(NULL, first);
	ASSERT_NE(NULL, vm);
	seq0 = c->map[0]->seq;
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		stopped_child(e->vcpu[0]);
	if (how == BY_PTRACE)
		ASSERT_EQ(0, ptrace(PTRACE_SEIZE, pid, 0, 0));
	for (round = 0; round < rounds; round++) {
		usleep(2000 + rand() % 5000);
		ASSERT_EQ(0, stop_writer(pid, how));
		for (k = 0; k < 20; k++) {
			ASSERT_EQ(l->data_size,
				  pread(fd, v, l->data_size, l->data_off));
			EXPECT_TRUE(consistent_signals(l, v));
			if (!k)
				memcpy(first, v, l->data_size);
			/* all but sample_ns: nothing moved */
			v[l->ns] = first[l->ns];
			EXPECT_EQ(0, memcmp(first, v, l->data_size));
			EXPECT_EQ(1, map_copy(c->map[0], NULL, 0, v, 1,
					      &gen));
			EXPECT_EQ(first[l->gen], gen);
			EXPECT_TRUE(consistent_signals(l, v));
			ASSERT_EQ(lv->data_size, pread(c->vm_fd, vm,
						       lv->data_size,
						       lv->data_off));
			EXPECT_TRUE(consistent_signals(lv, vm));
		}
		ASSERT_EQ(0, resume_writer(pid, how));
	}
	EXPECT_EQ(0, kill(pid, SIGKILL));
	EXPECT_EQ(pid, waitpid(pid, &status, 0));
	/* the writer did publish between the stops */
	EXPECT_LT(seq0, c->map[0]->seq);
	free(vm);
	free(first);
	free(v);
}

TEST_F_TIMEOUT(snap, reads_behind_a_sigstopped_writer, 300)
{
	stopped_writer_rounds(_metadata, &self->e, &self->c, BY_SIGSTOP);
}

TEST_F_TIMEOUT(snap, reads_behind_a_ptrace_stopped_writer, 300)
{
	stopped_writer_rounds(_metadata, &self->e, &self->c, BY_PTRACE);
}

TEST_HARNESS_MAIN
