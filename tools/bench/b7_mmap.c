// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench phase "b7": reading a vCPU's values through a read-only
 * mapping of its stats fd against one pread of the same bytes.
 *
 * The judged pair: a consistent copy of all of one vCPU's plain values out
 * of the mapping with the documented latch protocol of version 2 of the
 * area (Documentation/statsfd-abi.rst, "Mapping the values", and
 * statsfd_mmap_copy() in the uapi header: an acquire load of seq, one
 * relaxed 8-byte load per value from copy seq & 1, an acquire fence, seq
 * again; here with bounded retries and pread as the fallback) against one
 * pread of the data block's plain-values span, the same bytes (the mapping
 * has neither sample_ns nor generation).  Beside them, for context: the
 * uapi header's statsfd_mmap_copy() itself (which also checks the header
 * on every call), the pread of the whole data block (values, sample_ns,
 * generation), the same protocol with memcpy() as the copy, the
 * protocol's own cost (no value copied), and one value through each path.
 * The vCPUs are idle: nothing writes them while they are measured.
 *
 * The extra figure: the same mapped read while a thread keeps running a
 * vCPU (a tight loop of exits, one update window per stretch of them),
 * with the retries (a copy is thrown away only when the writer published
 * a window during it), the reads that gave up and fell back to pread, and
 * a check that every consistent copy holds together (exits equals the sum
 * of exits by reason).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/statsfd.h>

#include "bench.h"

/*
 * Consistent copies to attempt before falling back to pread(), as the ABI
 * document's example does.
 */
#define B7_MAP_TRIES	1000

/**
 * struct b7_map - the mapping of one vCPU's stats fd
 * @h: the values area (header first)
 * @len: bytes mapped
 * @fd: the stats fd, for the fallback pread
 * @data_offset: the stats file's data_offset, for the fallback pread
 */
struct b7_map {
	const struct statsfd_mmap_header *h;
	size_t len;
	int fd;
	uint32_t data_offset;
};

/**
 * struct b7_state - what a mapped contender reads and counts
 * @maps: the NFD mappings it reads in turn
 * @value: index of the value that the one-value contenders read
 * @retries: copies thrown away because seq changed during them
 * @fallbacks: reads that ran out of tries and used pread()
 */
struct b7_state {
	struct b7_map maps[NFD];
	uint32_t value;
	uint64_t retries, fallbacks;
};

/*
 * The documented reader protocol, statsfd_mmap_copy()'s with bounded
 * tries: copy the @h->data_size bytes of values into @dst as of one
 * update window.  Return: the tries thrown away, or -1 if all
 * B7_MAP_TRIES were.
 */
static int map_copy(const struct statsfd_mmap_header *h, uint64_t *dst)
{
	size_t n = h->data_size / sizeof(uint64_t), i;
	const uint64_t *vals;
	uint64_t s1;
	int t;

	for (t = 0; t < B7_MAP_TRIES; t++) {
		s1 = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
		vals = stats_map_values(h, s1);
		for (i = 0; i < n; i++)
			dst[i] = __atomic_load_n(&vals[i], __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&h->seq, __ATOMIC_RELAXED) == s1)
			return t;
	}
	return -1;
}

/* The same with memcpy() as the copy: not the documented 8-byte loads. */
static int map_copy_memcpy(const struct statsfd_mmap_header *h, void *dst)
{
	uint64_t s1;
	int t;

	for (t = 0; t < B7_MAP_TRIES; t++) {
		s1 = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
		memcpy(dst, stats_map_values(h, s1), h->data_size);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&h->seq, __ATOMIC_RELAXED) == s1)
			return t;
	}
	return -1;
}

/* The contender's next mapping and destination slot, as do_pread() picks. */
static const struct b7_map *next_map(struct cont *c, unsigned char **dst)
{
	struct b7_state *st = c->arg;
	const struct b7_map *m = &st->maps[c->calls % NFD];

	*dst = slots + (c->calls / NFD % NSLOT) * SLOT_SIZE;
	c->calls++;
	return m;
}

static void count(struct cont *c, const struct b7_map *m, int t, void *dst)
{
	struct b7_state *st = c->arg;

	if (t >= 0) {
		st->retries += t;
		return;
	}
	st->retries += B7_MAP_TRIES;
	st->fallbacks++;
	if (pread(m->fd, dst, m->h->data_size, m->data_offset) !=
	    (ssize_t)m->h->data_size)
		die("fallback pread");
}

static void op_map_seq(struct cont *c)
{
	unsigned char *dst;
	const struct b7_map *m = next_map(c, &dst);

	count(c, m, map_copy(m->h, (uint64_t *)dst), dst);
}

/* The uapi header's reader, unbounded, checking the header each call. */
static void op_map_uapi(struct cont *c)
{
	unsigned char *dst;
	const struct b7_map *m = next_map(c, &dst);

	if (statsfd_mmap_copy(m->h, dst, 0, m->h->data_size, NULL))
		die("statsfd_mmap_copy refused the area");
}

static void op_map_memcpy(struct cont *c)
{
	unsigned char *dst;
	const struct b7_map *m = next_map(c, &dst);

	count(c, m, map_copy_memcpy(m->h, dst), dst);
}

/* The protocol alone: both loads of seq and the fence, no value copied. */
static void op_map_seq_only(struct cont *c)
{
	unsigned char *dst;
	const struct b7_map *m = next_map(c, &dst);
	uint64_t s1;

	do {
		s1 = __atomic_load_n(&m->h->seq, __ATOMIC_ACQUIRE);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	} while (__atomic_load_n(&m->h->seq, __ATOMIC_RELAXED) != s1);
	*(uint64_t *)dst = s1;
}

/*
 * One value: seq (acquire) picks the copy, then a single aligned 8-byte
 * load, untorn; no second load of seq, since one value cannot be mixed
 * with another (at worst it is already the next window's).
 */
static void op_map_one(struct cont *c)
{
	struct b7_state *st = c->arg;
	unsigned char *dst;
	const struct b7_map *m = next_map(c, &dst);
	const uint64_t *vals;

	vals = stats_map_values(m->h, __atomic_load_n(&m->h->seq,
						      __ATOMIC_ACQUIRE));
	*(uint64_t *)dst = __atomic_load_n(&vals[st->value], __ATOMIC_RELAXED);
}

/* ---- the extra figure: a vCPU running in another thread ---- */

struct b7_writer {
	int vcpu;
	bool stop;
	uint64_t runs;
};

static void *writer_main(void *arg)
{
	struct b7_writer *w = arg;

	while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
		if (vcpu_run_exits(w->vcpu, 20000))
			die("STATSFD_VM_RUN (writer thread)");
		w->runs++;
	}
	return NULL;
}

/*
 * Offsets (in u64s) of exits and of the exits by reason, to check that a
 * copy holds together: exits == io + mmio + hypercall + halt + signal.
 */
struct b7_sum_check {
	uint32_t exits, parts[5];
};

static bool sum_check_init(struct b7_sum_check *k, const struct sfile *s)
{
	static const char *const parts[] = { "io_exits", "mmio_exits",
		"hypercall_exits", "halt_exits", "signal_exits" };
	struct statsfd_desc *d = sfile_find(s, "exits");
	size_t i;

	if (!d)
		return false;
	k->exits = d->offset / 8;
	for (i = 0; i < ARRAY_SIZE(parts); i++) {
		d = sfile_find(s, parts[i]);
		if (!d)
			return false;
		k->parts[i] = d->offset / 8;
	}
	return true;
}

static bool sum_holds(const struct b7_sum_check *k, const uint64_t *v)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(k->parts); i++)
		sum += v[k->parts[i]];
	return v[k->exits] == sum;
}

/*
 * For @seconds, read vCPU @vcpu's values through @m in a loop while a
 * thread runs it, then as long again with pread() of the same bytes.
 */
static void b7_busy(int vcpu, const struct b7_map *m, const struct sfile *s,
		    int seconds)
{
	struct b7_writer w = { .vcpu = vcpu };
	struct b7_sum_check k = { 0 };
	uint64_t *v = (uint64_t *)buf;
	uint64_t reads = 0, retried = 0, retries = 0, fallbacks = 0;
	uint64_t max_retries = 0, torn = 0, preads = 0, ptorn = 0;
	uint64_t seq0, seq1;
	double t0, t1, t2, end;
	bool checkable = sum_check_init(&k, s);
	pthread_t th;
	int t;

	jopen("busy", '{');
	if (seconds <= 0) {
		jstr("error", "not run");
		jclose('}');
		return;
	}
	if (pthread_create(&th, NULL, writer_main, &w))
		die("pthread_create");
	/* Let the writer get going. */
	usleep(100000);
	seq0 = __atomic_load_n(&m->h->seq, __ATOMIC_RELAXED);
	t0 = now_ns();
	end = t0 + seconds * 0.5e9;
	do {
		t = map_copy(m->h, v);
		reads++;
		if (t < 0) {
			fallbacks++;
			retries += B7_MAP_TRIES;
			if (pread(m->fd, v, m->h->data_size, m->data_offset) !=
			    (ssize_t)m->h->data_size)
				die("fallback pread");
		} else {
			retries += t;
			retried += t > 0;
			if ((uint64_t)t > max_retries)
				max_retries = t;
		}
		torn += checkable && !sum_holds(&k, v);
	} while ((t1 = now_ns()) < end);
	end = t1 + seconds * 0.5e9;
	do {
		if (pread(m->fd, v, m->h->data_size, m->data_offset) !=
		    (ssize_t)m->h->data_size)
			die("pread (busy)");
		preads++;
		ptorn += checkable && !sum_holds(&k, v);
	} while ((t2 = now_ns()) < end);
	seq1 = __atomic_load_n(&m->h->seq, __ATOMIC_RELAXED);
	__atomic_store_n(&w.stop, true, __ATOMIC_RELAXED);
	pthread_join(th, NULL);

	jnum("seconds", (t2 - t0) / 1e9);
	jnum("writer_runs", w.runs);
	jnum("writer_windows", seq1 - seq0);
	jnum("mapped_reads", reads);
	jnum("mapped_ns_per_read", (t1 - t0) / reads);
	jnum("reads_retried", retried);
	jnum("retries", retries);
	jnum("retries_per_read", (double)retries / reads);
	jnum("max_retries_of_a_consistent_read", max_retries);
	jnum("fallbacks_to_pread", fallbacks);
	jnum("pread_reads", preads);
	jnum("pread_ns_per_read", (t2 - t1) / preads);
	jbool("sum_checked", checkable);
	jnum("mapped_inconsistent", torn);
	jnum("pread_inconsistent", ptorn);
	jclose('}');
}

void phase_b7(int busy_seconds)
{
	static struct b7_state st;
	struct sfile s[NFD];
	struct cont c[MAX_CONT];
	int dev, vm, vcpu[NFD], fds[NFD], n = 0, i;
	uint32_t plain, one_off;
	uint64_t *a = (uint64_t *)buf, *b = a + BUF_SIZE / 16;
	bool same = true;
	struct statsfd_desc *gen;

	/* NFD vCPUs with values set by a short run, then idle. */
	dev = vm_dev();
	vm = vm_create(dev);
	for (i = 0; i < NFD; i++) {
		vcpu[i] = vcpu_create(vm, i);
		if (vcpu_run_exits(vcpu[i], 3000 + i))
			die("STATSFD_VM_RUN");
		fds[i] = stats_fd(vcpu[i]);
		sfile_open(&s[i], fds[i]);
		st.maps[i].h = stats_map(fds[i], &st.maps[i].len);
		if (!st.maps[i].h)
			die("mmap of a vCPU stats fd");
		st.maps[i].fd = fds[i];
		st.maps[i].data_offset = s[i].h.data_offset;
	}
	plain = sfile_plain_size(&s[0]);
	/* "exits", the first stat, is the one value read alone. */
	one_off = sfile_find(&s[0], "exits") ? sfile_find(&s[0], "exits")->offset
					     : 0;
	st.value = one_off / 8;

	jbegin("b7");
	jnum("instances_per_contender", NFD);
	jnum("rounds", 3 * rounds < MAX_ROUNDS ? 3 * rounds : MAX_ROUNDS);
	jlayout("vcpu_layout", &s[0]);
	jopen("mmap_header", '{');
	jnum("version", st.maps[0].h->version);
	jnum("header_size", st.maps[0].h->header_size);
	jnum("data_offset", st.maps[0].h->data_offset);
	jnum("data_size", st.maps[0].h->data_size);
	jnum("flags", st.maps[0].h->flags);
	jnum("copy_stride", st.maps[0].h->copy_stride);
	jnum("mapped_bytes", st.maps[0].len);
	jclose('}');
	jnum("plain_values_bytes", plain);
	jnum("map_tries", B7_MAP_TRIES);

	/*
	 * Check first: on an idle vCPU a mapped copy is byte for byte what
	 * pread returns, and pread's generation is seq.
	 */
	for (i = 0; i < NFD; i++) {
		if (map_copy(st.maps[i].h, a) < 0 ||
		    pread(fds[i], b, s[i].data_size, s[i].h.data_offset) !=
		    (ssize_t)s[i].data_size)
			die("b7 check read");
		gen = sfile_find(&s[i], STATSFD_STAT_GENERATION);
		same &= st.maps[i].h->data_size == plain &&
			!memcmp(a, b, plain) && gen &&
			b[gen->offset / 8] == st.maps[i].h->seq;
	}
	jbool("mapped_equals_pread", same);

	/*
	 * The judged pair and its context, side by side.  Batches keep each
	 * timed batch well above the clock's cost (info: ~65 ns) and all of
	 * them of a few tens of microseconds, so that host noise is as
	 * likely to hit one contender's batch as another's.
	 */
	cont_add(c, &n, "mmap_seq", op_map_seq, -1, plain, 0, 40)->arg = &st;
	cont_fds(cont_add(c, &n, "pread_values", op_pread, -1, plain,
			  s[0].h.data_offset, 5), fds, NFD);
	cont_fds(cont_add(c, &n, "pread_data_block", op_pread, -1,
			  s[0].data_size, s[0].h.data_offset, 5), fds, NFD);
	cont_add(c, &n, "mmap_uapi_copy", op_map_uapi, -1, plain, 0,
		 40)->arg = &st;
	cont_add(c, &n, "mmap_seq_memcpy", op_map_memcpy, -1, plain, 0,
		 40)->arg = &st;
	cont_add(c, &n, "mmap_seq_only", op_map_seq_only, -1, 0, 0,
		 200)->arg = &st;
	cont_add(c, &n, "mmap_one_value", op_map_one, -1, 8, 0, 200)->arg = &st;
	cont_fds(cont_add(c, &n, "pread_one_value", op_pread, -1, 8,
			  s[0].h.data_offset + one_off, 10), fds, NFD);
	fprintf(stderr, "b7: idle vCPUs, %d contenders\n", n);
	measure(c, n, 3 * rounds);
	jconts("idle", c, n);
	jnum("idle_retries", st.retries);
	jnum("idle_fallbacks", st.fallbacks);

	fprintf(stderr, "b7: a vCPU running in another thread, %d s\n",
		busy_seconds);
	b7_busy(vcpu[0], &st.maps[0], &s[0], busy_seconds);
	jend();

	for (i = 0; i < NFD; i++) {
		munmap((void *)st.maps[i].h, st.maps[i].len);
		sfile_close(&s[i]);
		close(vcpu[i]);
	}
	close(vm);
	close(dev);
}
