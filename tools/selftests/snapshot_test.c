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
 *	(c) the mapping, with the documented seq protocol and bounded
 *	    retries, of the whole area and of just the stats needed: a copy
 *	    that runs out of retries is no failure (the writer is allowed to
 *	    starve it, the ABI says to fall back to pread), it is counted and
 *	    reported, as are the retries;
 *	(d) pread() of the VM's data block: its sums, over one snapshot of
 *	    each vCPU.
 *
 * Every pread() must succeed while the vCPUs run flat out: the kernel has
 * the writer copy the values for a reader it starves.  The one excuse is
 * EAGAIN while the guest's CPUs stalled (the host did not run them, which
 * a thread on the runners' CPU measures): a writer stopped inside a
 * window for 100 ms is what the ABI answers EAGAIN for.  Once the vCPUs
 * are idle, generation is what their windows add up to and equals the
 * mapping's seq / 2.
 *
 * The control: the same readers and checks with the provider's
 * update_windows parameter N (the run loop then writes without windows)
 * must catch mixed values, or the checks could not fail.  The fixture
 * puts the parameter back from the parent process, whatever happens to
 * the test.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

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

/* EAGAINs (and stalls) whose times are kept, per reader (monitor). */
#define MAX_EAGAIN 256
#define MAX_STALLS 1024

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
};

/**
 * struct reader - one reader thread and what it found
 * @m: how it reads
 * @reads: reads made (a copy that ran out of retries included)
 * @bad: snapshots whose values break a relation
 * @errors: preads that failed or came back short
 * @eagain: of @errors, those that failed with EAGAIN
 * @stuck: of @eagain, those during which a writer provably never left
 *	one update window: the same odd seq in its mapping before and
 *	after the call (seq only grows).  The guest kernel never preempts
 *	a writer inside a window (PREEMPT_VOLUNTARY, and windows never
 *	sleep): only a stall of the guest CPU that runs it can do that
 * @eagain_at: when the first MAX_EAGAIN calls that failed with EAGAIN
 *	started and ended, to be matched with the stalls seen meanwhile
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
	unsigned long reads, bad, errors, eagain, stuck, retries, exhausted;
	__u64 eagain_at[MAX_EAGAIN][2];
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

static __u64 map_seq(const struct statsfd_mmap_header *mh)
{
	return __atomic_load_n(&mh->seq, __ATOMIC_ACQUIRE);
}

/*
 * pread() into @buf, indexed as the data block, of a vCPU's file (@src
 * its index) or the VM's (@src NR_VCPUS, whose sums read every vCPU);
 * 0 or -1 (counted).  An EAGAIN says how long the call took and how far
 * the writers it may have waited for got meanwhile.
 */
static int read_values(struct reader *r, int fd, const struct layout *l,
		       unsigned int first, unsigned int nr, unsigned int src)
{
	ssize_t want = nr * 8, ret;
	__u64 seq0[NR_VCPUS], seq1, t0 = now_ns();
	bool stuck = false;
	unsigned int i;

	for (i = 0; i < NR_VCPUS; i++)
		seq0[i] = map_seq(r->c->map[i]);
	ret = pread(fd, r->buf + first, want, l->data_off + first * 8);
	if (ret == want)
		return 0;
	r->errors++;
	if (ret >= 0 || errno != EAGAIN) {
		fprintf(stderr, "# %s: pread returned %zd: %s\n",
			method_name[r->m], ret, strerror(errno));
		return -1;
	}
	r->eagain++;
	for (i = 0; i < NR_VCPUS; i++) {
		if (src != NR_VCPUS && i != src)
			continue;
		seq1 = map_seq(r->c->map[i]);
		if (seq1 == seq0[i] && (seq1 & 1))
			stuck = true;
		if (r->eagain > 10)
			continue;
		fprintf(stderr,
			"# %s: EAGAIN after %llu ms; vCPU %u seq %llu -> %llu\n",
			method_name[r->m],
			(unsigned long long)(now_ns() - t0) / 1000000, i,
			(unsigned long long)seq0[i], (unsigned long long)seq1);
	}
	r->stuck += stuck;
	if (r->eagain <= MAX_EAGAIN) {
		r->eagain_at[r->eagain - 1][0] = t0;
		r->eagain_at[r->eagain - 1][1] = now_ns();
	}
	return -1;
}

static void read_block(struct reader *r, unsigned int v)
{
	const struct layout *l = &r->c->vcpu;
	__u64 t0, t1;

	t0 = boottime_ns();
	if (read_values(r, r->c->vcpu_fd[v], l, 0, l->data_size / 8, v))
		return;
	t1 = boottime_ns();
	if (!consistent(l, r->buf))
		note_bad(r, l, r->buf, v);
	note_key(r, v, r->buf[l->exits], 1);
	check_meta(r, v, r->buf[l->ns], r->buf[l->gen], t0, t1);
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
		if (read_values(r, fd, l, l->lo, l->hi - l->lo, v))
			return;
		if (!consistent(l, r->buf))
			note_bad(r, l, r->buf, v);
		note_key(r, v, r->buf[l->exits], 1);
		break;
	case 1:
		/* exits and the exits by reason are adjacent, in order */
		if (read_values(r, fd, l, l->exits, l->signal - l->exits + 1,
				v))
			return;
		if (!exits_add_up(l, r->buf))
			note_bad(r, l, r->buf, v);
		note_key(r, v, r->buf[l->exits], 1);
		break;
	default:
		t0 = boottime_ns();
		if (read_values(r, fd, l, l->ns, 2, v))
			return;
		t1 = boottime_ns();
		note_key(r, v, r->buf[l->gen], 1);
		check_meta(r, v, r->buf[l->ns], r->buf[l->gen], t0, t1);
		break;
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
	const struct layout *l = &r->c->vm;
	__u64 t0, t1;

	t0 = boottime_ns();
	if (read_values(r, r->c->vm_fd, l, 0, l->data_size / 8, NR_VCPUS))
		return;
	t1 = boottime_ns();
	if (!consistent(l, r->buf))
		note_bad(r, l, r->buf, NR_VCPUS);
	note_key(r, NR_VCPUS, r->buf[l->exits], 1);
	check_meta(r, NR_VCPUS, r->buf[l->ns], r->buf[l->gen], t0, t1);
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

/* Pins @thread to @cpu; 0 or an error number. */
static int pin(pthread_t thread, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(thread, sizeof(set), &set);
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

/* The totals of one consistency run. */
/*
 * A guest CPU that stops for this long (the host did not run it: TCG on a
 * loaded host) can make a reader give up with EAGAIN, as the ABI allows
 * for a writer that keeps a window open 100 ms: the writer stopped inside
 * its window.  Half of that is a stall here.
 */
#define STALL_NS 50000000ULL

/*
 * Sleeps 1 ms at a time on the runners' CPU and notes how much later than
 * that it woke: the guest's own scheduling delays it by a time slice at
 * most, a stall of the CPU by the stall, whose times it keeps.
 */
struct monitor {
	pthread_t thread;
	atomic_int *stop;
	__u64 max_gap_ns;
	unsigned long stalls;
	__u64 stall_at[MAX_STALLS][2];
};

static void *monitor_fn(void *arg)
{
	struct monitor *m = arg;
	__u64 prev = now_ns(), t, gap;

	while (!atomic_load(m->stop)) {
		usleep(1000);
		t = now_ns();
		gap = t - prev;
		if (gap > m->max_gap_ns)
			m->max_gap_ns = gap;
		if (gap > STALL_NS) {
			if (m->stalls < MAX_STALLS) {
				m->stall_at[m->stalls][0] = prev;
				m->stall_at[m->stalls][1] = t;
			}
			m->stalls++;
		}
		prev = t;
	}
	return NULL;
}

/*
 * EAGAINs of @r that no stall of the runners' CPU overlapped: the ones a
 * correct kernel does not return (those past MAX_EAGAIN, or past
 * MAX_STALLS stalls, count as such too).
 */
static unsigned long eagain_unexcused(const struct reader *r,
				      const struct monitor *m)
{
	unsigned long i, j, bad = 0;

	for (i = 0; i < r->eagain; i++) {
		bool excused = false;

		for (j = 0; i < MAX_EAGAIN && j < m->stalls && j < MAX_STALLS;
		     j++)
			if (m->stall_at[j][0] < r->eagain_at[i][1] &&
			    m->stall_at[j][1] > r->eagain_at[i][0])
				excused = true;
		bad += !excused;
	}
	return bad;
}

struct totals {
	struct reader r[NR_METHODS];
	struct runner w[NR_VCPUS];
	struct monitor mon;
	unsigned long reads, bad, errors, checked;
	__u64 secs_ms;
};

/*
 * The vCPUs run while one reader per method reads @quota times, the
 * mapping readers for as long as the others (or until @budget_s seconds
 * are over); then the vCPUs stop.  Everything is
 * counted in @t; the caller decides what must hold.
 */
static void consistency_run(struct __test_metadata *_metadata,
			    const struct vm_env *e, struct ctx *c,
			    struct totals *t, unsigned long quota,
			    unsigned int budget_s)
{
	int ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	atomic_int stop = 0;
	__u64 t0, deadline;
	unsigned int i;

	memset(t, 0, sizeof(*t));
	c->quota = quota;
	atomic_store(&c->preads_left, NR_METHODS - 2);
	for (i = 0; i < NR_VCPUS; i++) {
		t->w[i].vcpu = e->vcpu[i];
		t->w[i].stop = &stop;
		ASSERT_EQ(0, pthread_create(&t->w[i].thread, NULL, runner_fn,
					    &t->w[i]));
		/* the runners keep one CPU, the readers race from the rest */
		ASSERT_EQ(0, pin(t->w[i].thread, ncpus - 1));
	}
	t->mon.stop = &stop;
	ASSERT_EQ(0, pthread_create(&t->mon.thread, NULL, monitor_fn, &t->mon));
	ASSERT_EQ(0, pin(t->mon.thread, ncpus - 1));
	/* under way: the readers overlap the writers from the first read */
	deadline = now_ns() + 20000000000ULL;
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
	ASSERT_EQ(0, pthread_join(t->mon.thread, NULL));

	for (i = 0; i < NR_METHODS; i++) {
		struct reader *r = &t->r[i];

		TH_LOG("%-11s: %lu reads, %lu raced a write, %lu mixed, %lu errors",
		       method_name[i], r->reads, r->raced, r->bad, r->errors);
		TH_LOG("%-11s: %lu EAGAIN, %lu of them with a writer stuck",
		       method_name[i], r->eagain, r->stuck);
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
		EXPECT_LT(0, t->w[i].runs);
	}
	TH_LOG("%lu reads (%lu checked) in %llu.%03llu s, %lu mixed", t->reads,
	       t->checked, (unsigned long long)t->secs_ms / 1000,
	       (unsigned long long)t->secs_ms % 1000, t->bad);
	TH_LOG("runners' CPU: %lu stalls over %llu ms, the longest %llu ms",
	       t->mon.stalls, STALL_NS / 1000000,
	       (unsigned long long)t->mon.max_gap_ns / 1000000);
}

/*
 * Once the vCPUs are idle: each one's stats are exactly what its runs
 * did, and generation (its windows, none without them) equals the
 * mapping's seq / 2.
 */
static void check_idle(struct __test_metadata *_metadata, const struct ctx *c,
		       const struct totals *t, bool windows)
{
	const struct layout *l = &c->vcpu;
	__u64 *v = calloc(1, l->data_size);
	unsigned int i;

	ASSERT_NE(NULL, v);
	for (i = 0; i < NR_VCPUS; i++) {
		__u64 runs = t->w[i].runs, gen;

		ASSERT_EQ(l->data_size,
			  pread(c->vcpu_fd[i], v, l->data_size, l->data_off));
		EXPECT_EQ(runs * RUN_EXITS, v[l->exits]);
		EXPECT_EQ(runs * RUN_EXITS, v[l->io]);
		EXPECT_EQ(runs * RUN_EXITS * IO_BYTES, v[l->io_bytes]);
		EXPECT_EQ(runs * RUN_EXITS * CYCLES, v[l->cycles]);
		/*
		 * Per RUN: its start, then one window per stretch of at
		 * most 256 exits between two signal checks, the last one
		 * also closing the run (statsfd-vm-api.rst, 5.4).
		 */
		gen = windows ? runs * (1 + (RUN_EXITS + 255) / 256) : 0;
		EXPECT_EQ(gen, v[l->gen])
		{
			TH_LOG("vCPU %u: %llu runs", i,
			       (unsigned long long)runs);
		}
		EXPECT_EQ(v[l->gen],
			  __atomic_load_n(&c->map[i]->seq, __ATOMIC_ACQUIRE) /
				  2);
		EXPECT_EQ(v[l->exits], map_val(c->map[i], l->exits));
	}
	free(v);
}

/*
 * One read call, one window: over every method, no snapshot mixes two
 * windows, every pread of a whole data block succeeds (the writer serves
 * a reader it starves), sample_ns lies within its pread and never goes
 * back, generation never goes back.  At least a million reads with
 * STATSFD_STRESS=1 (a fifth of them per method, the mapping readers
 * going on as long as the others), 100,000 without.
 */
TEST_F_TIMEOUT(snap, reads_are_snapshots, 540)
{
	unsigned long want = stress_scale(100000, 1000000);
	unsigned int budget = stress_scale(150, 300);
	struct totals *t = calloc(1, sizeof(*t));
	unsigned int i;

	ASSERT_NE(NULL, t);
	ASSERT_EQ(0, windows_set(true));
	ASSERT_EQ('Y', windows_get());
	consistency_run(_metadata, &self->e, &self->c, t, want / NR_METHODS,
			budget);
	for (i = 0; i < NR_METHODS; i++) {
		const struct reader *r = &t->r[i];

		EXPECT_EQ(0, r->bad)
		{
			TH_LOG("%s: %s", method_name[i], r->first_bad);
		}
		/*
		 * Every pread completes while the vCPUs run flat out: the
		 * writer serves a reader it starves.  EAGAIN is excused only
		 * during a stall of the writers' CPU (see STALL_NS).
		 */
		EXPECT_EQ(0, r->errors - r->eagain);
		EXPECT_EQ(0, eagain_unexcused(r, &t->mon))
		{
			TH_LOG("%s: EAGAIN without a stall", method_name[i]);
		}
		EXPECT_EQ(0, r->ns_out);
		EXPECT_EQ(0, r->ns_back);
		EXPECT_EQ(0, r->gen_back);
		/* a race test that did not race proves nothing */
		EXPECT_LT(0, r->raced);
		/* a mapped copy may starve; one that never gets through is a bug */
		EXPECT_LT(r->exhausted, r->reads);
		/*
		 * Each method gets through at least a quarter of its share
		 * (the total below is the million reads): a VM read waits
		 * for a snapshot of every vCPU, so on a loaded host it is
		 * the slowest, and the budget may end its share early.
		 */
		EXPECT_LE(want / NR_METHODS / 4, r->reads)
		{
			TH_LOG("%s: the %u s budget ran out first",
			       method_name[i], budget);
		}
	}
	EXPECT_LE(want, t->reads);
	check_idle(_metadata, &self->c, t, true);
	free(t);
}

/*
 * The control: without update windows the very same readers and checks
 * catch mixed values, so the test above can fail.  generation does not
 * move then: there are no windows to count.
 */
TEST_F_TIMEOUT(snap, control_without_windows_mixes, 300)
{
	unsigned long want = stress_scale(20000, 100000);
	struct totals *t = calloc(1, sizeof(*t));

	ASSERT_NE(NULL, t);
	ASSERT_EQ(0, windows_set(false));
	ASSERT_EQ('N', windows_get());
	consistency_run(_metadata, &self->e, &self->c, t, want / NR_METHODS,
			60);
	EXPECT_LT(0, t->bad);
	EXPECT_EQ(0, t->errors);
	check_idle(_metadata, &self->c, t, false);
	ASSERT_EQ(0, windows_set(true));
	free(t);
}

TEST_HARNESS_MAIN
