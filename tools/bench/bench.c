// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench: measures statsfd against upstream KVM stats, /dev/zero and
 * text files, inside one QEMU guest (see tools/bench/README.md, issue 4).
 *
 * Every phase prints one line "BENCH-JSON {...}" on stdout with all of its
 * figures; the host turns those lines into Documentation/bench/.  Progress
 * and diagnostics go to stderr.  Nothing here asserts a timing: targets are
 * judged on the host and reported, never enforced.
 *
 * Method: each contender is an operation (usually one pread).  A round times
 * a short batch of calls of every contender back to back (a fraction of a
 * millisecond in all), in an order shuffled from round to round, so
 * that drift of the emulator and of the host hits all of them alike; the
 * figure of a contender is the median over rounds of its per-call mean,
 * after a warm-up.  Ratios are ratios of those medians.  Each contender
 * reads several instances into several user buffers in turn (NFD, NSLOT).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/kvm.h>
#include <linux/statsfd.h>
#include <linux/statsfd_vm.h>

#include "statsfd_bench.h"
#include "statsfd_msg.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define MAX_ROUNDS	512
#define MAX_CONT	32
#define BUF_SIZE	(1 << 20)
/*
 * Files of one kind a contender reads in turn: several instances of the same
 * schema at different kernel addresses, so that no figure depends on where
 * one object happened to land (under TCG, the emulated TLB makes some
 * address pairs of kernel object and user buffer slower than others).
 */
#define NFD		16
/*
 * For the same reason the destination of a read rotates over NSLOT user
 * buffers, SLOT_SIZE apart: an odd number of pages, so that each slot sits
 * at a different index of the emulated TLB.  Every contender cycles through
 * every (file, slot) pair.
 */
#define NSLOT		8
#define SLOT_SIZE	(21 * 4096)

static const char *dev_vm = "/dev/statsfd_vm";
static const char *dev_bench = "/dev/statsfd_bench";
/* Where the provider's text view may live, the core's directory first. */
static const char *const debugfs_roots[] = {
	"/sys/kernel/debug/statsfd/statsfd_vm",
	"/sys/kernel/debug/statsfd_vm",
};
static int rounds = 101;	/* odd, so the median is one sample */
static int warmup = 200;
static unsigned char *buf;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "statsfd-bench: ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(errno));
	exit(1);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* ---- minimal JSON writer: one object per phase, on one line ---- */

static char json[1 << 20];
static size_t json_len;
static bool json_need_comma;

static void jraw(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	json_len += vsnprintf(json + json_len, sizeof(json) - json_len, fmt, ap);
	va_end(ap);
	if (json_len >= sizeof(json))
		die("JSON buffer overflow");
}

static void jsep(void)
{
	if (json_need_comma)
		jraw(",");
	json_need_comma = false;
}

static void jkey(const char *key)
{
	jsep();
	if (key)
		jraw("\"%s\":", key);
}

static void jopen(const char *key, char bracket)
{
	jkey(key);
	jraw("%c", bracket);
}

static void jclose(char bracket)
{
	jraw("%c", bracket);
	json_need_comma = true;
}

static void jnum(const char *key, double v)
{
	jkey(key);
	if (v != v)
		jraw("null");
	else if (v == (double)(int64_t)v && v < 1e15 && v > -1e15)
		jraw("%lld", (long long)v);
	else
		jraw("%.6g", v);
	json_need_comma = true;
}

static void jstr(const char *key, const char *s)
{
	jkey(key);
	jraw("\"");
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			jraw("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			jraw("\\u%04x", *s);
		else
			jraw("%c", *s);
	}
	jraw("\"");
	json_need_comma = true;
}

static void jbool(const char *key, bool b)
{
	jkey(key);
	jraw(b ? "true" : "false");
	json_need_comma = true;
}

static void jbegin(const char *phase)
{
	json_len = 0;
	json_need_comma = false;
	jopen(NULL, '{');
	jstr("phase", phase);
}

static void jend(void)
{
	jclose('}');
	printf("BENCH-JSON %s\n", json);
	fflush(stdout);
}

/* ---- stats files ---- */

/**
 * struct sfile - an open stats fd (ours or KVM's) and its layout
 * @fd: the stats fd
 * @h: its header
 * @data_size: bytes of the data block (from the descriptors)
 * @file_size: bytes of the whole file
 * @desc: the descriptor block, read once
 */
struct sfile {
	int fd;
	struct statsfd_header h;
	uint32_t data_size;
	uint32_t file_size;
	unsigned char *desc;
};

static uint32_t max_u32(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

static struct statsfd_desc *sfile_desc(const struct sfile *s, uint32_t i)
{
	return (void *)(s->desc + i * (sizeof(struct statsfd_desc) +
				       s->h.name_size));
}

static void sfile_open(struct sfile *s, int fd)
{
	uint32_t stride, i;

	memset(s, 0, sizeof(*s));
	s->fd = fd;
	if (pread(fd, &s->h, sizeof(s->h), 0) != sizeof(s->h))
		die("pread header");
	stride = sizeof(struct statsfd_desc) + s->h.name_size;
	s->desc = malloc((size_t)stride * s->h.num_desc);
	if (!s->desc)
		die("malloc");
	if (pread(fd, s->desc, (size_t)stride * s->h.num_desc,
		  s->h.desc_offset) != (ssize_t)stride * s->h.num_desc)
		die("pread descriptors");
	for (i = 0; i < s->h.num_desc; i++) {
		struct statsfd_desc *d = sfile_desc(s, i);

		s->data_size = max_u32(s->data_size, d->offset + d->size * 8);
	}
	s->file_size = max_u32(s->h.data_offset + s->data_size,
			       s->h.desc_offset + stride * s->h.num_desc);
	s->file_size = max_u32(s->file_size, s->h.id_offset + s->h.name_size);
}

static void sfile_close(struct sfile *s)
{
	if (s->fd >= 0)
		close(s->fd);
	free(s->desc);
	s->fd = -1;
	s->desc = NULL;
}

static uint32_t sfile_num_values(const struct sfile *s)
{
	return s->data_size / 8;
}

/* ---- the contenders and the measuring loop ---- */

struct cont;
typedef void (*op_fn)(struct cont *c);

/**
 * struct cont - one contender: an operation timed in batches
 * @name: label in the JSON
 * @op: performs the operation once
 * @fds: files the operation reads, in turn
 * @nfds: number of @fds
 * @calls: operations so far; picks the file and the user buffer slot
 * @len: bytes per read
 * @off: file offset of the read
 * @arg: extra state of the operation
 * @batch: calls per timed batch
 * @sample: per-call ns of each round
 * @median: median of @sample
 * @p25: its lower quartile, what a run with less host noise would approach
 * @p75: its upper quartile
 * @sink: results folded in so the compiler keeps the work
 */
struct cont {
	const char *name;
	op_fn op;
	int fds[NFD];
	int nfds;
	unsigned long calls;
	size_t len;
	off_t off;
	void *arg;
	int batch;
	double sample[MAX_ROUNDS];
	double median, p25, p75;
	uint64_t sink;
};

static unsigned char *slots;

/* One pread of the contender's next file into its next buffer slot. */
static unsigned char *do_pread(struct cont *c)
{
	int fd = c->fds[c->calls % c->nfds];
	unsigned char *dst = slots + (c->calls / c->nfds % NSLOT) * SLOT_SIZE;

	c->calls++;
	if (c->len > SLOT_SIZE) {
		errno = E2BIG;
		die("read of %zu bytes does not fit a buffer slot", c->len);
	}
	if (pread(fd, dst, c->len, c->off) != (ssize_t)c->len)
		die("pread %s (%zu bytes at %lld)", c->name, c->len,
		    (long long)c->off);
	return dst;
}

static void op_pread(struct cont *c)
{
	do_pread(c);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The @q quantile (0..1) of @n samples, interpolated between ranks. */
static double quantile_of(const double *v, int n, double q)
{
	double tmp[MAX_ROUNDS], pos;
	int lo;

	memcpy(tmp, v, n * sizeof(*v));
	qsort(tmp, n, sizeof(*tmp), cmp_double);
	pos = q * (n - 1);
	lo = (int)pos;
	if (lo + 1 >= n)
		return tmp[n - 1];
	return tmp[lo] + (pos - lo) * (tmp[lo + 1] - tmp[lo]);
}

static double median_of(const double *v, int n)
{
	return quantile_of(v, n, 0.5);
}

/* A fixed-seed xorshift: the same run order every time the bench runs. */
static uint32_t rng_state = 2463534242u;

static uint32_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 17;
	rng_state ^= rng_state << 5;
	return rng_state;
}

/*
 * Time @n contenders over @nr rounds.  Each round runs them in a new random
 * order, so that none is favoured by its position in the round or by the
 * contender it follows.
 */
static void measure(struct cont *c, int n, int nr)
{
	int order[MAX_CONT];
	int r, i, k;

	if (nr > MAX_ROUNDS)
		nr = MAX_ROUNDS;
	for (i = 0; i < n; i++)
		for (k = 0; k < warmup; k++)
			c[i].op(&c[i]);
	for (i = 0; i < n; i++)
		order[i] = i;
	for (r = 0; r < nr; r++) {
		for (i = n - 1; i > 0; i--) {
			int j = rng() % (i + 1), t = order[i];

			order[i] = order[j];
			order[j] = t;
		}
		for (i = 0; i < n; i++) {
			struct cont *x = &c[order[i]];
			double t0 = now_ns();

			for (k = 0; k < x->batch; k++)
				x->op(x);
			x->sample[r] = (now_ns() - t0) / x->batch;
		}
	}
	for (i = 0; i < n; i++) {
		c[i].median = median_of(c[i].sample, nr);
		c[i].p25 = quantile_of(c[i].sample, nr, 0.25);
		c[i].p75 = quantile_of(c[i].sample, nr, 0.75);
	}
}

static struct cont *cont_add(struct cont *c, int *n, const char *name,
			     op_fn op, int fd, size_t len, off_t off, int batch)
{
	struct cont *x;

	if (*n >= MAX_CONT) {
		errno = E2BIG;
		die("too many contenders");
	}
	x = &c[(*n)++];
	memset(x, 0, sizeof(*x));
	x->name = name;
	x->op = op;
	x->fds[0] = fd;
	x->nfds = 1;
	x->len = len;
	x->off = off;
	x->batch = batch;
	return x;
}

/* Make @x read the @n files @fds in turn instead of its one file. */
static void cont_fds(struct cont *x, const int *fds, int n)
{
	memcpy(x->fds, fds, n * sizeof(*fds));
	x->nfds = n;
}

/* ---- providers: our VM device, KVM, the bench module ---- */

static int vm_dev(void)
{
	int fd = open(dev_vm, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		die("open %s", dev_vm);
	return fd;
}

static int vm_create(int dev)
{
	struct statsfd_vm_create_vm a = { 0 };
	int fd = ioctl(dev, STATSFD_VM_CREATE_VM, &a);

	if (fd < 0)
		die("STATSFD_VM_CREATE_VM");
	return fd;
}

static int vcpu_create(int vm, unsigned int id)
{
	struct statsfd_vm_create_vcpu a = { .vcpu_id = id };
	int fd = ioctl(vm, STATSFD_VM_CREATE_VCPU, &a);

	if (fd < 0)
		die("STATSFD_VM_CREATE_VCPU %u", id);
	return fd;
}

static int stats_fd(int fd)
{
	int sfd = ioctl(fd, STATSFD_VM_GET_STATS_FD, 0);

	if (sfd < 0)
		die("STATSFD_VM_GET_STATS_FD");
	return sfd;
}

/* A deterministic workload of exits only (no halts), so values are set. */
static int vcpu_run_exits(int vcpu, uint64_t exits)
{
	struct statsfd_vm_run run = {
		.io_exits = exits / 3,
		.mmio_exits = exits / 3,
		.hypercall_exits = exits - 2 * (exits / 3),
		.io_bytes = 4,
		.cycles_per_exit = 1000,
	};

	return ioctl(vcpu, STATSFD_VM_RUN, &run);
}

/**
 * struct kvm_vcpu_stats - an upstream KVM VM with NFD vCPUs and their stats
 * @kvm: /dev/kvm
 * @vm: KVM VM fd
 * @vcpu: KVM vCPU fds
 * @stats: the first vCPU's stats fd and layout
 * @fds: the stats fds of every vCPU (@fds[0] is @stats.fd)
 */
struct kvm_vcpu_stats {
	int kvm, vm, vcpu[NFD];
	struct sfile stats;
	int fds[NFD];
};

static bool kvm_open(struct kvm_vcpu_stats *k)
{
	int i;

	k->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (k->kvm < 0) {
		perror("statsfd-bench: open /dev/kvm");
		return false;
	}
	k->vm = ioctl(k->kvm, KVM_CREATE_VM, 0);
	if (k->vm < 0) {
		perror("statsfd-bench: KVM_CREATE_VM");
		return false;
	}
	for (i = 0; i < NFD; i++) {
		k->vcpu[i] = ioctl(k->vm, KVM_CREATE_VCPU, i);
		if (k->vcpu[i] < 0) {
			perror("statsfd-bench: KVM_CREATE_VCPU");
			return false;
		}
		k->fds[i] = ioctl(k->vcpu[i], KVM_GET_STATS_FD, 0);
		if (k->fds[i] < 0) {
			perror("statsfd-bench: KVM_GET_STATS_FD");
			return false;
		}
	}
	sfile_open(&k->stats, k->fds[0]);
	return true;
}

static void kvm_close(struct kvm_vcpu_stats *k)
{
	int i;

	sfile_close(&k->stats);
	for (i = 0; i < NFD; i++) {
		if (i)
			close(k->fds[i]);
		close(k->vcpu[i]);
	}
	close(k->vm);
	close(k->kvm);
}

/*
 * Sets of the bench module behind one contender.  Every set has its own
 * schema (and so its own header and descriptor block) at its own address:
 * NSET of them, each with NFD / NSET sources, spread those too.
 */
#define NSET		4

/**
 * struct bench_set - NSET identical sets of the bench module, NFD sources
 * @set: the set fds
 * @stats: stats fd and layout of the first source
 * @fds: stats fds of every source, sets interleaved (@fds[0] is @stats.fd)
 */
struct bench_set {
	int set[NSET];
	struct sfile stats;
	int fds[NFD];
};

static int bench_set_create(int dev, uint32_t num_desc, uint32_t num_values,
			    uint32_t num_sources)
{
	struct statsfd_bench_set_args a = {
		.num_desc = num_desc,
		.num_values = num_values,
		.num_sources = num_sources,
	};
	int fd = ioctl(dev, STATSFD_BENCH_CREATE_SET, &a);

	if (fd < 0)
		die("STATSFD_BENCH_CREATE_SET %ux%u x%u", num_desc, num_values,
		    num_sources);
	return fd;
}

static void bench_set_open(struct bench_set *b, int dev, uint32_t num_desc,
			   uint32_t num_values)
{
	int i, k;

	for (k = 0; k < NSET; k++) {
		b->set[k] = bench_set_create(dev, num_desc, num_values,
					     NFD / NSET);
		for (i = 0; i < NFD / NSET; i++) {
			int fd = ioctl(b->set[k], STATSFD_BENCH_GET_STATS_FD, i);

			if (fd < 0)
				die("STATSFD_BENCH_GET_STATS_FD");
			b->fds[i * NSET + k] = fd;
		}
	}
	sfile_open(&b->stats, b->fds[0]);
}

static void bench_set_close(struct bench_set *b)
{
	int i;

	sfile_close(&b->stats);
	for (i = 1; i < NFD; i++)
		close(b->fds[i]);
	for (i = 0; i < NSET; i++)
		close(b->set[i]);
}

static void jlayout(const char *key, const struct sfile *s)
{
	jopen(key, '{');
	jnum("num_desc", s->h.num_desc);
	jnum("name_size", s->h.name_size);
	jnum("data_offset", s->h.data_offset);
	jnum("desc_offset", s->h.desc_offset);
	jnum("data_size", s->data_size);
	jnum("file_size", s->file_size);
	jclose('}');
}

static void jcont(const struct cont *c)
{
	jopen(c->name, '{');
	jnum("ns", c->median);
	jnum("p25_ns", c->p25);
	jnum("p75_ns", c->p75);
	jnum("bytes", c->len);
	jnum("ns_per_byte", c->len ? c->median / c->len : 0.0 / 0.0);
	jclose('}');
}

/* ---- info: the guest and the contenders' layouts ---- */

static void read_line(const char *path, char *out, size_t size)
{
	FILE *f = fopen(path, "r");

	out[0] = 0;
	if (!f)
		return;
	if (fgets(out, size, f))
		out[strcspn(out, "\n")] = 0;
	fclose(f);
}

static void phase_info(void)
{
	char line[512];

	jbegin("info");
	read_line("/proc/version", line, sizeof(line));
	jstr("kernel", line);
	read_line("/proc/cmdline", line, sizeof(line));
	jstr("cmdline", line);
	read_line("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		  line, sizeof(line));
	jstr("clocksource", line);
	jnum("cpus", sysconf(_SC_NPROCESSORS_ONLN));
	jnum("rounds", rounds);
	jnum("warmup", warmup);
	{
		/* Cost of the timer itself, so it can be seen to be small. */
		double t0 = now_ns(), t1;
		int i;

		for (i = 0; i < 10000; i++)
			now_ns();
		t1 = now_ns();
		jnum("clock_gettime_ns", (t1 - t0) / 10000);
	}
	jend();
}

/* ---- check: the bench module does what the figures assume ---- */

static int check_count, check_failed;

static void check(bool ok, const char *what)
{
	check_count++;
	if (ok)
		return;
	check_failed++;
	fprintf(stderr, "check: FAILED: %s\n", what);
	jstr(NULL, what);
}

static bool create_fails(int dev, struct statsfd_bench_set_args a, int err)
{
	int fd = ioctl(dev, STATSFD_BENCH_CREATE_SET, &a);

	if (fd >= 0) {
		close(fd);
		return false;
	}
	return errno == err;
}

/*
 * Bad arguments get EINVAL/ENOTTY, a stats fd outlives its set fd, and the
 * file of a synthetic schema is what B1, B3 and B5 take it to be: the
 * values spread over the descriptors as documented, each value j = j + 1.
 */
static void phase_check(void)
{
	const struct statsfd_bench_set_args ok = {
		.num_desc = 7, .num_values = 100, .num_sources = 3,
	};
	struct statsfd_bench_set_args a;
	uint64_t *v = (uint64_t *)buf;
	uint32_t i, total = 0, expect_off = 0;
	bool values_ok = true, descs_ok = true;
	struct sfile sf;
	int dev, set, fd;

	dev = open(dev_bench, O_RDWR | O_CLOEXEC);
	if (dev < 0)
		die("open %s", dev_bench);
	jbegin("check");
	jopen("failed", '[');

	a = ok, a.flags = 1;
	check(create_fails(dev, a, EINVAL), "flags != 0 refused");
	a = ok, a.reserved[1] = 1;
	check(create_fails(dev, a, EINVAL), "reserved != 0 refused");
	a = ok, a.num_desc = 0;
	check(create_fails(dev, a, EINVAL), "0 descriptors refused");
	a = ok, a.num_desc = STATSFD_BENCH_DESC_MAX + 1;
	check(create_fails(dev, a, EINVAL), "too many descriptors refused");
	a = ok, a.num_values = a.num_desc - 1;
	check(create_fails(dev, a, EINVAL), "fewer values than descriptors refused");
	a = ok, a.num_desc = 1, a.num_values = 65536;
	check(create_fails(dev, a, EINVAL), "a histogram above 65535 buckets refused");
	a = ok, a.num_sources = 0;
	check(create_fails(dev, a, EINVAL), "0 sources refused");
	a = ok, a.num_sources = STATSFD_BENCH_SOURCES_MAX + 1;
	check(create_fails(dev, a, EINVAL), "too many sources refused");
	check(ioctl(dev, _IO(STATSFD_BENCH_IO, 0x7f), 0) < 0 && errno == ENOTTY,
	      "unknown device ioctl is ENOTTY");

	a = ok;
	set = ioctl(dev, STATSFD_BENCH_CREATE_SET, &a);
	if (set < 0)
		die("STATSFD_BENCH_CREATE_SET");
	check(ioctl(set, STATSFD_BENCH_GET_STATS_FD, 3) < 0 && errno == EINVAL,
	      "source index out of range is EINVAL");
	check(ioctl(set, STATSFD_BENCH_CREATE_SET, &a) < 0 && errno == ENOTTY,
	      "unknown set ioctl is ENOTTY");
	fd = ioctl(set, STATSFD_BENCH_GET_STATS_FD, 2);
	check(fd >= 0, "stats fd of the last source");
	check(fcntl(fd, F_GETFD) == FD_CLOEXEC, "stats fd is O_CLOEXEC");
	/* The stats fd must keep the set alive on its own. */
	close(set);
	sfile_open(&sf, fd);
	check(sf.h.num_desc == ok.num_desc, "num_desc as asked");
	check(sf.data_size == ok.num_values * 8, "data block as asked");
	for (i = 0; i < sf.h.num_desc; i++) {
		struct statsfd_desc *d = sfile_desc(&sf, i);
		uint32_t want = ok.num_values / ok.num_desc +
				(i < ok.num_values % ok.num_desc);
		uint32_t type = d->flags & STATSFD_TYPE_MASK;

		descs_ok &= d->size == want && d->offset == expect_off;
		descs_ok &= type == (want == 1 ? STATSFD_TYPE_CUMULATIVE :
					     STATSFD_TYPE_LINEAR_HIST);
		expect_off += d->size * 8;
		total += d->size;
	}
	check(descs_ok && total == ok.num_values,
	      "descriptors tile the values as documented");
	check(pread(fd, buf, sf.data_size, sf.h.data_offset) ==
	      (ssize_t)sf.data_size, "data block readable after the set fd closed");
	for (i = 0; i < ok.num_values; i++)
		values_ok &= v[i] == i + 1;
	check(values_ok, "value j reads j + 1");
	sfile_close(&sf);
	close(dev);

	jclose(']');
	jnum("checks", check_count);
	jnum("failures", check_failed);
	jend();
}

/* ---- B1: read cost, ours vs KVM vs /dev/zero ---- */

static void phase_b1(void)
{
	static const size_t sizes[] = { 8, 16, 32, 64, 128, 256, 512, 1024,
					 2048, 4096 };
	struct kvm_vcpu_stats k;
	struct bench_set shape, big;
	struct sfile ours;
	struct cont c[MAX_CONT];
	int dev, vm, vcpu[NFD], ours_fds[NFD], zero, bdev, n, j;
	bool have_kvm;
	size_t i, matched = 0;

	/* NFD vCPUs of one VM of ours, with values set by a short run. */
	dev = vm_dev();
	vm = vm_create(dev);
	for (j = 0; j < NFD; j++) {
		vcpu[j] = vcpu_create(vm, j);
		if (vcpu_run_exits(vcpu[j], 3000))
			die("STATSFD_VM_RUN");
		ours_fds[j] = stats_fd(vcpu[j]);
	}
	sfile_open(&ours, ours_fds[0]);
	zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (zero < 0)
		die("open /dev/zero");
	bdev = open(dev_bench, O_RDWR | O_CLOEXEC);
	if (bdev < 0)
		die("open %s", dev_bench);
	have_kvm = kvm_open(&k);
	/* Ours with exactly KVM's shape (same descriptor and value counts). */
	if (have_kvm)
		bench_set_open(&shape, bdev, k.stats.h.num_desc,
			       sfile_num_values(&k.stats));
	/* Ours with 4 KiB of values, for sizes beyond a vCPU's data. */
	bench_set_open(&big, bdev, 64, 512);

	jbegin("b1");
	jbool("kvm", have_kvm);
	jnum("instances_per_contender", NFD);
	jnum("rounds", 3 * rounds < MAX_ROUNDS ? 3 * rounds : MAX_ROUNDS);
	jlayout("ours_vcpu_layout", &ours);
	jlayout("ours_big_layout", &big.stats);
	if (have_kvm) {
		jlayout("kvm_vcpu_layout", &k.stats);
		jlayout("ours_kvm_shape_layout", &shape.stats);
	}

	/* Prefixes of the data block at matched byte counts. */
	jopen("sizes", '[');
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t sz = sizes[i];

		n = 0;
		cont_add(c, &n, "zero", op_pread, zero, sz, 0, 20);
		if (sz <= ours.data_size)
			cont_fds(cont_add(c, &n, "ours_vcpu", op_pread, -1, sz,
					  ours.h.data_offset, 20),
				 ours_fds, NFD);
		cont_fds(cont_add(c, &n, "ours_big", op_pread, -1, sz,
				  big.stats.h.data_offset, 20),
			 big.fds, NFD);
		if (have_kvm && sz <= k.stats.data_size)
			cont_fds(cont_add(c, &n, "kvm_vcpu", op_pread, -1, sz,
					  k.stats.h.data_offset, 20),
				 k.fds, NFD);
		fprintf(stderr, "b1: %zu bytes\n", sz);
		measure(c, n, 3 * rounds);
		jopen(NULL, '{');
		jnum("bytes", sz);
		for (j = 0; j < n; j++)
			jcont(&c[j]);
		jclose('}');
	}
	jclose(']');

	/*
	 * Whole data blocks: ours (the provider's vCPU), KVM's vCPU, ours with
	 * KVM's exact shape, the provider's vCPU cut to KVM's size, and
	 * /dev/zero at each size.
	 */
	n = 0;
	cont_fds(cont_add(c, &n, "ours_vcpu", op_pread, -1, ours.data_size,
			  ours.h.data_offset, 20), ours_fds, NFD);
	cont_add(c, &n, "zero_ours_size", op_pread, zero, ours.data_size, 0,
		 20);
	if (have_kvm) {
		cont_fds(cont_add(c, &n, "kvm_vcpu", op_pread, -1,
				  k.stats.data_size, k.stats.h.data_offset,
				  20), k.fds, NFD);
		cont_fds(cont_add(c, &n, "ours_kvm_shape", op_pread, -1,
				  shape.stats.data_size,
				  shape.stats.h.data_offset, 20),
			 shape.fds, NFD);
		cont_add(c, &n, "zero_kvm_size", op_pread, zero,
			 k.stats.data_size, 0, 20);
		matched = ours.data_size < k.stats.data_size ?
			  ours.data_size : k.stats.data_size;
		/* The larger of the two, cut to the smaller's size. */
		if (matched != ours.data_size)
			cont_fds(cont_add(c, &n, "ours_vcpu_matched", op_pread,
					  -1, matched, ours.h.data_offset,
					  20), ours_fds, NFD);
		if (matched != k.stats.data_size)
			cont_fds(cont_add(c, &n, "kvm_vcpu_matched", op_pread,
					  -1, matched, k.stats.h.data_offset,
					  20), k.fds, NFD);
	}
	fprintf(stderr, "b1: whole data blocks\n");
	measure(c, n, 3 * rounds);
	jopen("whole", '{');
	for (j = 0; j < n; j++)
		jcont(&c[j]);
	jclose('}');
	jnum("matched_bytes", matched);
	jend();

	bench_set_close(&big);
	if (have_kvm) {
		bench_set_close(&shape);
		kvm_close(&k);
	}
	close(bdev);
	close(zero);
	sfile_close(&ours);
	for (j = 0; j < NFD; j++) {
		if (j)
			close(ours_fds[j]);
		close(vcpu[j]);
	}
	close(vm);
	close(dev);
}

/* ---- B2: one pread vs one file per stat vs one text file ---- */

#define MAX_STAT_FILES	512

/**
 * struct text_view - the one-file-per-stat debugfs directory of a vCPU
 * @dir: its path
 * @n: number of stat files
 * @name: their names
 */
struct text_view {
	char dir[512];
	int n;
	char name[MAX_STAT_FILES][64];
};

/* Parse every unsigned number of a text buffer; returns their count. */
static unsigned int parse_numbers(const char *p, uint64_t *sum)
{
	unsigned int count = 0;
	char *end;

	for (;;) {
		while (*p && (*p < '0' || *p > '9'))
			p++;
		if (!*p)
			return count;
		*sum += strtoull(p, &end, 10);
		p = end;
		count++;
	}
}

/* Reads and parses one whole text file: open, read, parse, close. */
static unsigned int read_text_file(int dirfd, const char *path, uint64_t *sum)
{
	ssize_t len, total = 0;
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		die("open %s", path);
	while ((len = read(fd, buf + total, BUF_SIZE - 1 - total)) > 0)
		total += len;
	if (len < 0)
		die("read %s", path);
	close(fd);
	buf[total] = 0;
	return parse_numbers((char *)buf, sum);
}

struct text_arg {
	struct text_view *view;
	int dirfd;
	const char *file;
	unsigned int values;
};

static void op_per_file(struct cont *c)
{
	struct text_arg *t = c->arg;
	uint64_t sum = 0;
	unsigned int values = 0;
	int i;

	for (i = 0; i < t->view->n; i++)
		values += read_text_file(t->dirfd, t->view->name[i], &sum);
	t->values = values;
	c->sink += sum;
}

static void op_single_text(struct cont *c)
{
	struct text_arg *t = c->arg;
	uint64_t sum = 0;

	t->values = read_text_file(AT_FDCWD, t->file, &sum);
	c->sink += sum;
}

/* pread of the data block plus a pass over the values, as a reader would. */
static void op_pread_sum(struct cont *c)
{
	const uint64_t *v = (const uint64_t *)do_pread(c);
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < c->len / 8; i++)
		sum += v[i];
	c->sink += sum;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Finds the debugfs directory whose name is @leaf, at most 3 levels down. */
static bool find_dir(const char *root, const char *leaf, const char *must,
		     int depth, char *out, size_t size)
{
	struct dirent *de;
	bool found = false;
	DIR *d;

	d = opendir(root);
	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		char path[512];
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", root, de->d_name);
		if (stat(path, &st) || !S_ISDIR(st.st_mode))
			continue;
		if (!strcmp(de->d_name, leaf) && strstr(path, must)) {
			snprintf(out, size, "%s", path);
			found = true;
		} else if (depth > 0) {
			found = find_dir(path, leaf, must, depth - 1, out,
					 size);
		}
	}
	closedir(d);
	return found;
}

static bool text_view_open(struct text_view *v, const char *vm_id,
			   const char *leaf)
{
	struct dirent *de;
	DIR *d;

	size_t i;

	memset(v, 0, sizeof(*v));
	for (i = 0; i < ARRAY_SIZE(debugfs_roots); i++)
		if (find_dir(debugfs_roots[i], leaf, vm_id, 2, v->dir,
			     sizeof(v->dir)))
			break;
	if (i == ARRAY_SIZE(debugfs_roots))
		return false;
	d = opendir(v->dir);
	if (!d)
		return false;
	while ((de = readdir(d)) && v->n < MAX_STAT_FILES) {
		if (de->d_type != DT_REG)
			continue;
		snprintf(v->name[v->n++], sizeof(v->name[0]), "%.63s",
			 de->d_name);
	}
	closedir(d);
	qsort(v->name, v->n, sizeof(v->name[0]), cmp_name);
	return v->n > 0;
}

/* The id of a stats file, "vm-<pid>-<n>/vcpu-<id>", read from the file. */
static void sfile_id(const struct sfile *s, char *out, size_t size)
{
	size_t n = s->h.name_size < size ? s->h.name_size : size - 1;

	if (pread(s->fd, out, n, s->h.id_offset) != (ssize_t)n)
		die("pread id");
	out[n] = 0;
}

static void phase_b2(void)
{
	static struct text_view view;
	struct text_arg per_file = { 0 }, single = { 0 };
	const char *single_path = "/tmp/statsfd-bench-vcpu.txt";
	char id[256], vm_id[256], *slash;
	uint64_t sum_bin = 0, sum_text = 0, sum_single = 0;
	unsigned int values_text = 0, values_single;
	struct cont c[MAX_CONT];
	struct sfile ours;
	int dev, vm, vcpu, dirfd, n, i;
	FILE *f;

	dev = vm_dev();
	vm = vm_create(dev);
	vcpu = vcpu_create(vm, 0);
	if (vcpu_run_exits(vcpu, 3000))
		die("STATSFD_VM_RUN");
	sfile_open(&ours, stats_fd(vcpu));
	sfile_id(&ours, id, sizeof(id));
	snprintf(vm_id, sizeof(vm_id), "%s", id);
	slash = strchr(vm_id, '/');
	if (slash)
		*slash = 0;

	jbegin("b2");
	jstr("vcpu_id", id);
	jlayout("ours_vcpu_layout", &ours);
	if (!text_view_open(&view, vm_id, slash ? slash + 1 : "vcpu-0")) {
		fprintf(stderr, "b2: no debugfs text view for %s under %s\n",
			id, debugfs_roots[0]);
		jstr("error", "no debugfs text view found");
		jend();
		goto out;
	}
	jstr("text_dir", view.dir);
	jnum("text_files", view.n);

	/* The equivalent single text file: "name values...\n" per stat. */
	dirfd = open(view.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		die("open %s", view.dir);
	f = fopen(single_path, "w");
	if (!f)
		die("create %s", single_path);
	for (i = 0; i < view.n; i++) {
		values_text += read_text_file(dirfd, view.name[i], &sum_text);
		fprintf(f, "%s %s", view.name[i], (char *)buf);
	}
	fclose(f);
	values_single = read_text_file(AT_FDCWD, single_path, &sum_single);
	/* What a reader of each view parses (a name with digits would count). */
	jnum("text_values", values_text);
	jnum("single_file_numbers", values_single);
	if (pread(ours.fd, buf, ours.data_size, ours.h.data_offset) !=
	    ours.data_size)
		die("pread data");
	for (i = 0; i < (int)ours.data_size / 8; i++)
		sum_bin += ((uint64_t *)buf)[i];
	/* The vCPU is idle: both views must show the same values. */
	jnum("binary_values", ours.data_size / 8);
	jnum("binary_sum", sum_bin);
	jnum("text_sum", sum_text);
	jbool("views_agree", sum_bin == sum_text &&
	      values_text == ours.data_size / 8);

	per_file.view = &view;
	per_file.dirfd = dirfd;
	single.file = single_path;
	n = 0;
	cont_add(c, &n, "pread", op_pread_sum, ours.fd, ours.data_size,
		 ours.h.data_offset, 20)->arg = NULL;
	cont_add(c, &n, "per_file_text", op_per_file, -1, 0, 0, 2)->arg =
		&per_file;
	cont_add(c, &n, "single_text", op_single_text, -1, 0, 0, 20)->arg =
		&single;
	warmup = 20;
	fprintf(stderr, "b2: %d files\n", view.n);
	measure(c, n, rounds / 2 | 1);
	warmup = 200;
	for (i = 0; i < n; i++)
		jcont(&c[i]);
	close(dirfd);
	jend();
out:
	sfile_close(&ours);
	close(vcpu);
	close(vm);
	close(dev);
}

/* ---- B3: data-only vs whole file, and schema size ---- */

static void phase_b3(void)
{
	static const uint32_t descs[] = { 10, 20, 50, 100, 200, 500, 1000 };
	static char names[ARRAY_SIZE(descs)][2][32];
	const int nd = ARRAY_SIZE(descs);
	const uint32_t values = 1000;
	struct bench_set s[ARRAY_SIZE(descs)];
	static struct cont data[MAX_CONT], pair[2];
	double whole_ns[ARRAY_SIZE(descs)], beside_ns[ARRAY_SIZE(descs)];
	int bdev, n = 0, i;

	bdev = open(dev_bench, O_RDWR | O_CLOEXEC);
	if (bdev < 0)
		die("open %s", dev_bench);
	jbegin("b3");
	jnum("values", values);
	jnum("rounds", 3 * rounds < MAX_ROUNDS ? 3 * rounds : MAX_ROUNDS);
	jnum("instances_per_contender", NFD);
	for (i = 0; i < nd; i++) {
		bench_set_open(&s[i], bdev, descs[i], values);
		snprintf(names[i][0], 32, "data_%u", descs[i]);
		snprintf(names[i][1], 32, "whole_%u", descs[i]);
		cont_fds(cont_add(data, &n, names[i][0], op_pread, -1,
				  s[i].stats.data_size,
				  s[i].stats.h.data_offset, 10), s[i].fds, NFD);
	}

	/*
	 * The judged figure, data-only reads across schema sizes: only those
	 * contenders, in short rounds (well under a millisecond), so that
	 * host noise lands on all of them alike; three times the rounds.
	 */
	fprintf(stderr, "b3: data-only, %d schemas\n", n);
	measure(data, n, 3 * rounds);

	/* Then each whole-file read beside the data-only read of its file. */
	for (i = 0; i < nd; i++) {
		int m = 0;

		pair[0] = data[i];
		m = 1;
		cont_fds(cont_add(pair, &m, names[i][1], op_pread, -1,
				  s[i].stats.file_size, 0,
				  descs[i] > 200 ? 2 : 10), s[i].fds, NFD);
		fprintf(stderr, "b3: whole file, %u descriptors\n", descs[i]);
		measure(pair, 2, rounds);
		beside_ns[i] = pair[0].median;
		whole_ns[i] = pair[1].median;
	}

	jopen("schemas", '[');
	for (i = 0; i < nd; i++) {
		jopen(NULL, '{');
		jnum("num_desc", descs[i]);
		jlayout("layout", &s[i].stats);
		jnum("data_ns", data[i].median);
		jnum("data_p25_ns", data[i].p25);
		jnum("data_p75_ns", data[i].p75);
		jnum("whole_ns", whole_ns[i]);
		jnum("data_beside_whole_ns", beside_ns[i]);
		jclose('}');
		bench_set_close(&s[i]);
	}
	jclose(']');
	jend();
	close(bdev);
}

/* ---- B4: the run loop with stats vs compiled out ---- */

/*
 * The marginal cost of one exit: runs of @exits and of @exits / 5 exits
 * alternate, and (T(long) - T(short)) / (the exits in between) leaves out
 * what a run costs whatever its length (the ioctl, its checks, the final
 * histogram update), which would otherwise dilute the per-exit figures.
 */
static void phase_b4(const char *label, uint64_t exits)
{
	double sample[MAX_ROUNDS], whole[MAX_ROUNDS];
	uint64_t shorter = exits / 5;
	struct sfile st;
	uint64_t *v;
	int dev, vm, vcpu, r, nr = rounds / 2 | 1;
	uint64_t nonzero = 0;
	uint32_t i;

	dev = vm_dev();
	vm = vm_create(dev);
	vcpu = vcpu_create(vm, 0);
	for (r = 0; r < 3; r++)
		if (vcpu_run_exits(vcpu, exits))
			die("STATSFD_VM_RUN");
	for (r = 0; r < nr; r++) {
		double t0, t1, t2;

		t0 = now_ns();
		if (vcpu_run_exits(vcpu, exits))
			die("STATSFD_VM_RUN");
		t1 = now_ns();
		if (vcpu_run_exits(vcpu, shorter))
			die("STATSFD_VM_RUN");
		t2 = now_ns();
		sample[r] = ((t1 - t0) - (t2 - t1)) / (exits - shorter);
		whole[r] = (t1 - t0) / exits;
	}
	/* Compiled-out stats must leave the data block all zero. */
	sfile_open(&st, stats_fd(vcpu));
	if (pread(st.fd, buf, st.data_size, st.h.data_offset) != st.data_size)
		die("pread data");
	v = (uint64_t *)buf;
	for (i = 0; i < st.data_size / 8; i++)
		nonzero += v[i] != 0;

	jbegin("b4");
	jstr("label", label);
	jnum("exits_per_run", exits);
	jnum("exits_per_short_run", shorter);
	jnum("runs", nr);
	jnum("ns_per_exit", median_of(sample, nr));
	jnum("ns_per_exit_with_run_overhead", median_of(whole, nr));
	jopen("samples", '[');
	for (r = 0; r < nr; r++)
		jnum(NULL, sample[r]);
	jclose(']');
	jnum("nonzero_values", nonzero);
	jend();
	sfile_close(&st);
	close(vcpu);
	close(vm);
	close(dev);
}

/*
 * B4's yardstick: what one real exit costs in upstream KVM in this guest.
 * A 16-bit guest runs CPUID (always intercepted by KVM on SVM and handled
 * in the kernel, so the vCPU re-enters without returning to userspace) in a
 * loop of ESI iterations, then HLT, which exits to us (no in-kernel irqchip).  The cost of a run
 * with N exits minus that of a run with none, over N, is the round trip of
 * one in-kernel exit, KVM's own stats updates included.
 */
static const unsigned char kvm_cpuid_loop[] = {
	0x66, 0x31, 0xc0,	/* 0: xor eax, eax (ESI = N, set by us) */
	0x0f, 0xa2,		/* 3: cpuid */
	0x66, 0x4e,		/* 5: dec esi */
	0x75, 0xf7,		/* 7: jnz 0 */
	0xf4,			/* 9: hlt */
};
#define KVM_CODE_GPA	0x1000
#define KVM_HLT_OFFSET	9

static uint64_t kvm_stat_by_name(struct sfile *s, const char *name)
{
	uint64_t v = 0;
	uint32_t i;

	for (i = 0; i < s->h.num_desc; i++) {
		struct statsfd_desc *d = sfile_desc(s, i);

		if (!strcmp(d->name, name) &&
		    pread(s->fd, &v, 8, s->h.data_offset + d->offset) == 8)
			return v;
	}
	return 0;
}

static double kvm_run_cpuid(int vcpu, struct kvm_run *run, uint32_t n)
{
	struct kvm_regs regs = { .rflags = 2 };
	double t0, t1;

	regs.rip = KVM_CODE_GPA + (n ? 0 : KVM_HLT_OFFSET);
	regs.rsi = n;
	if (ioctl(vcpu, KVM_SET_REGS, &regs))
		die("KVM_SET_REGS");
	t0 = now_ns();
	if (ioctl(vcpu, KVM_RUN, 0))
		die("KVM_RUN");
	t1 = now_ns();
	if (run->exit_reason != KVM_EXIT_HLT) {
		errno = EPROTO;
		die("KVM_RUN exit reason %u, not HLT", run->exit_reason);
	}
	return t1 - t0;
}

static void phase_b4kvm(uint32_t exits)
{
	double with[MAX_ROUNDS], without[MAX_ROUNDS];
	struct kvm_userspace_memory_region mem = { 0 };
	struct kvm_sregs sregs;
	struct kvm_run *run;
	struct sfile st;
	uint64_t exits0, exits1;
	int kvm, vm, vcpu, r, nr = rounds / 4 | 1;
	unsigned char *guest;
	long run_size;

	jbegin("b4kvm");
	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0) {
		jstr("error", "no /dev/kvm");
		jend();
		return;
	}
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	guest = aligned_alloc(4096, 0x10000);
	if (vm < 0 || !guest)
		die("KVM_CREATE_VM");
	memset(guest, 0xf4, 0x10000);
	memcpy(guest + KVM_CODE_GPA, kvm_cpuid_loop, sizeof(kvm_cpuid_loop));
	mem.memory_size = 0x10000;
	mem.userspace_addr = (uintptr_t)guest;
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &mem))
		die("KVM_SET_USER_MEMORY_REGION");
	vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	run_size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (vcpu < 0 || run_size <= 0)
		die("KVM_CREATE_VCPU");
	run = mmap(NULL, run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
	if (run == MAP_FAILED)
		die("mmap kvm_run");
	if (ioctl(vcpu, KVM_GET_SREGS, &sregs))
		die("KVM_GET_SREGS");
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	if (ioctl(vcpu, KVM_SET_SREGS, &sregs))
		die("KVM_SET_SREGS");
	sfile_open(&st, ioctl(vcpu, KVM_GET_STATS_FD, 0));

	for (r = 0; r < 3; r++)
		kvm_run_cpuid(vcpu, run, exits);
	exits0 = kvm_stat_by_name(&st, "exits");
	for (r = 0; r < nr; r++) {
		with[r] = kvm_run_cpuid(vcpu, run, exits);
		without[r] = kvm_run_cpuid(vcpu, run, 0);
	}
	exits1 = kvm_stat_by_name(&st, "exits");

	jnum("exits_per_run", exits);
	jnum("runs", nr);
	jnum("run_ns", median_of(with, nr));
	jnum("empty_run_ns", median_of(without, nr));
	jnum("ns_per_exit",
	     (median_of(with, nr) - median_of(without, nr)) / exits);
	/* KVM's own "exits" stat proves the exits happened. */
	jnum("kvm_exits_counted", exits1 - exits0);
	jnum("kvm_exits_expected", (uint64_t)nr * (exits + 2));
	jend();
	sfile_close(&st);
	munmap(run, run_size);
	close(vcpu);
	close(vm);
	close(kvm);
	free(guest);
}

/* ---- B5: scale, memory, read-all, collector ---- */

/**
 * struct mem_snap - kernel memory figures at one moment
 * @kb: selected /proc/meminfo fields in kB
 * @slab_bytes: active_objs * objsize of each /proc/slabinfo cache
 * @slab_name: the caches' names
 * @nslab: number of caches
 */
struct mem_snap {
	long kb[8];
	long long slab_bytes[512];
	char slab_name[512][40];
	int nslab;
};

static const char *const mem_fields[] = {
	"MemFree", "Slab", "SUnreclaim", "SReclaimable", "VmallocUsed",
	"Percpu", "KernelStack", "PageTables",
};

static void mem_snap(struct mem_snap *m)
{
	char line[512];
	size_t i;
	FILE *f;

	/* Let deferred frees (RCU, fput task work) finish first. */
	sync();
	usleep(300000);
	memset(m, 0, sizeof(*m));
	f = fopen("/proc/meminfo", "r");
	if (!f)
		die("open /proc/meminfo");
	while (fgets(line, sizeof(line), f)) {
		for (i = 0; i < ARRAY_SIZE(mem_fields); i++) {
			size_t l = strlen(mem_fields[i]);

			if (!strncmp(line, mem_fields[i], l) && line[l] == ':')
				m->kb[i] = strtol(line + l + 1, NULL, 10);
		}
	}
	fclose(f);
	f = fopen("/proc/slabinfo", "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f) && m->nslab < 512) {
		char name[64];
		long active, total, objsize;

		if (line[0] == '#' || !strncmp(line, "slabinfo", 8))
			continue;
		if (sscanf(line, "%63s %ld %ld %ld", name, &active, &total,
			   &objsize) != 4)
			continue;
		snprintf(m->slab_name[m->nslab], 40, "%.39s", name);
		m->slab_bytes[m->nslab++] = (long long)active * objsize;
	}
	fclose(f);
}

struct slab_delta {
	const char *name;
	long long bytes;
};

static int cmp_delta(const void *a, const void *b)
{
	long long x = llabs(((const struct slab_delta *)a)->bytes);
	long long y = llabs(((const struct slab_delta *)b)->bytes);

	return (y > x) - (y < x);
}

/* JSON of @b - @a: meminfo in bytes per instance and the top slab caches. */
static void jmem_delta(const char *key, const struct mem_snap *a,
		       const struct mem_snap *b, long instances)
{
	static struct slab_delta d[512];
	int i, j, nd = 0;
	size_t k;

	jopen(key, '{');
	jnum("instances", instances);
	for (k = 0; k < ARRAY_SIZE(mem_fields); k++) {
		char name[64];
		long long delta = (b->kb[k] - a->kb[k]) * 1024LL;

		/* MemFree shrinks as memory is used: report it as used. */
		if (k == 0)
			delta = -delta;
		snprintf(name, sizeof(name), "%s_bytes",
			 k == 0 ? "MemUsed" : mem_fields[k]);
		jnum(name, delta);
		snprintf(name, sizeof(name), "%s_per_instance",
			 k == 0 ? "MemUsed" : mem_fields[k]);
		jnum(name, (double)delta / instances);
	}
	for (i = 0; i < b->nslab; i++) {
		long long before = 0;

		for (j = 0; j < a->nslab; j++)
			if (!strcmp(a->slab_name[j], b->slab_name[i]))
				before = a->slab_bytes[j];
		if (b->slab_bytes[i] != before) {
			d[nd].name = b->slab_name[i];
			d[nd++].bytes = b->slab_bytes[i] - before;
		}
	}
	qsort(d, nd, sizeof(d[0]), cmp_delta);
	jopen("slab_caches", '[');
	for (i = 0; i < nd && i < 10; i++) {
		jopen(NULL, '{');
		jstr("cache", d[i].name);
		jnum("bytes", d[i].bytes);
		jnum("per_instance", (double)d[i].bytes / instances);
		jclose('}');
	}
	jclose(']');
	jclose('}');
}

/*
 * Per-instance memory of the bench module's sources: a set with 1 source
 * and one with @count sources; the difference divided by @count - 1 is what
 * one more instance costs, the rest is the schema (descriptors) and cache.
 */
static void b5_bench_sources(int bdev, uint32_t num_desc, uint32_t values,
			     uint32_t count, struct mem_snap *m)
{
	char key[64];
	int one, many, *fds;
	uint32_t i;
	double per, base_one;

	mem_snap(&m[0]);
	one = bench_set_create(bdev, num_desc, values, 1);
	mem_snap(&m[1]);
	many = bench_set_create(bdev, num_desc, values, count);
	mem_snap(&m[2]);
	fds = calloc(count, sizeof(*fds));
	if (!fds)
		die("calloc");
	for (i = 0; i < count; i++) {
		fds[i] = ioctl(many, STATSFD_BENCH_GET_STATS_FD, i);
		if (fds[i] < 0)
			die("STATSFD_BENCH_GET_STATS_FD %u", i);
	}
	mem_snap(&m[3]);

	snprintf(key, sizeof(key), "bench_%ux%u", num_desc, values);
	jopen(key, '{');
	jnum("num_desc", num_desc);
	jnum("values", values);
	jnum("data_size", values * 8);
	jnum("desc_block_size", num_desc * (16 + STATSFD_NAME_SIZE_DEFAULT));
	jmem_delta("set_of_1", &m[0], &m[1], 1);
	jmem_delta("set_of_n", &m[1], &m[2], count);
	jmem_delta("stats_fds", &m[2], &m[3], count);
	/* Slab (kB) grows by one schema + count instances, then by 1 + 1. */
	per = (m[2].kb[1] - m[1].kb[1]) * 1024.0 / count;
	base_one = (m[1].kb[1] - m[0].kb[1]) * 1024.0;
	jnum("slab_per_instance", per);
	jnum("slab_schema_and_cache", base_one - per);
	jclose('}');

	for (i = 0; i < count; i++)
		close(fds[i]);
	free(fds);
	close(many);
	close(one);
}

/**
 * struct fleet - many VMs with vCPUs and a stats fd for each
 * @nvm: VMs
 * @nvcpu: vCPUs per VM
 * @vm: VM fds
 * @vcpu: vCPU fds, nvm * nvcpu
 * @vm_stats: stats fds of the VMs
 * @vcpu_stats: stats fds of the vCPUs
 */
struct fleet {
	int nvm, nvcpu;
	int *vm, *vcpu, *vm_stats, *vcpu_stats;
};

static void read_all(const struct fleet *f, uint32_t vm_off, uint32_t vm_len,
		     uint32_t vc_off, uint32_t vc_len, double *vm_ns,
		     double *vcpu_ns)
{
	double t0, t1, t2;
	int i;

	t0 = now_ns();
	for (i = 0; i < f->nvm; i++)
		if (pread(f->vm_stats[i], buf, vm_len, vm_off) != vm_len)
			die("pread VM stats");
	t1 = now_ns();
	for (i = 0; i < f->nvm * f->nvcpu; i++)
		if (pread(f->vcpu_stats[i], buf, vc_len, vc_off) != vc_len)
			die("pread vCPU stats");
	t2 = now_ns();
	*vm_ns = t1 - t0;
	*vcpu_ns = t2 - t1;
}

static double cpu_seconds(pid_t pid)
{
	char path[64], line[1024], *p;
	unsigned long utime, stime;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	p = strrchr(line, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			 &utime, &stime) != 2)
		return -1;
	return (double)(utime + stime) / sysconf(_SC_CLK_TCK);
}

/* Sum of every "key": N in a JSON text, and how many there were. */
static uint64_t json_sum(const char *json, const char *key, unsigned int *n)
{
	char pat[64];
	uint64_t sum = 0;
	const char *p = json;

	snprintf(pat, sizeof(pat), "\"%s\"", key);
	*n = 0;
	while ((p = strstr(p, pat))) {
		p += strlen(pat);
		while (*p == ' ' || *p == ':')
			p++;
		sum += strtoull(p, NULL, 10);
		(*n)++;
	}
	return sum;
}

/* One request and its reply on the collector's socket; reply malloc()ed. */
static char *collector_call(int sock, const char *json, const int *fds,
			    unsigned int nfds)
{
	unsigned int nrecv = 0;
	char *reply;
	size_t len;
	int ret;

	ret = statsfd_msg_send(sock, json, strlen(json), fds, nfds);
	if (ret) {
		errno = -ret;
		die("send to the collector");
	}
	ret = statsfd_msg_recv(sock, &reply, &len, NULL, &nrecv, 60000);
	if (ret) {
		errno = -ret;
		die("reply from the collector");
	}
	return reply;
}

/*
 * The collector daemon (H4's statsfd-collector, command in
 * $STATSFD_BENCH_COLLECTOR) reading every stats fd of the fleet at 2 reads
 * per second (--interval 500): the fleet registers each VM's fds as a VMM
 * would (one add-sources per VM, fds attached), then the daemon's CPU time
 * is read from /proc over @seconds, and its own read counters are checked.
 */
static void b5_collector(const struct fleet *f, int seconds)
{
	const char *cmd = getenv("STATSFD_BENCH_COLLECTOR");
	const char *sock_path = "/tmp/statsfd-bench-collector.sock";
	char json[4096], *reply;
	double cpu0, cpu1, t0, t1, treg;
	uint64_t reads0, reads1, errs;
	unsigned int nsrc, nerr;
	int fds[1 + 256];
	int status, i, j, sock = -1;
	pid_t pid;
	size_t len;

	jopen("collector", '{');
	if (!cmd || !*cmd) {
		jstr("error", "no collector in the guest (statsfd-collector not built)");
		jclose('}');
		return;
	}
	jstr("command", cmd);
	unlink(sock_path);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		/* Our fds are O_CLOEXEC: it gets them only by registration. */
		execlp(cmd, cmd, "--socket", sock_path, "--listen", "none",
		       "--interval", "500", "--max-sources", "65536",
		       (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 300 && sock < 0; i++) {
		sock = statsfd_msg_connect(sock_path);
		if (sock < 0)
			usleep(100000);
	}
	if (sock < 0) {
		kill(pid, SIGTERM);
		waitpid(pid, &status, 0);
		jstr("error", "collector socket never came up");
		jclose('}');
		return;
	}

	/* Register every VM as a VMM would: its stats fd and its vCPUs'. */
	t0 = now_ns();
	for (i = 0; i < f->nvm; i++) {
		len = snprintf(json, sizeof(json),
			       "{\"execute\":\"add-sources\",\"id\":%d,"
			       "\"arguments\":{\"provider\":\"statsfd_vm\","
			       "\"vm\":\"bench-%d\",\"sources\":"
			       "[{\"target\":\"vm\"}", i, i);
		fds[0] = f->vm_stats[i];
		for (j = 0; j < f->nvcpu && j < 256; j++) {
			len += snprintf(json + len, sizeof(json) - len,
					",{\"target\":\"vcpu\",\"vcpu\":%d}", j);
			fds[1 + j] = f->vcpu_stats[i * f->nvcpu + j];
		}
		snprintf(json + len, sizeof(json) - len, "]}}");
		reply = collector_call(sock, json, fds, 1 + j);
		if (!strstr(reply, "\"return\"")) {
			fprintf(stderr, "b5: add-sources refused: %s\n", reply);
			jstr("error", "add-sources refused");
			jstr("reply", reply);
			free(reply);
			goto out;
		}
		free(reply);
	}
	treg = now_ns() - t0;
	jnum("sources", f->nvm * (1 + f->nvcpu));
	jnum("register_ms", treg / 1e6);

	/* Let it settle into its read cycle, then measure. */
	sleep(3);
	reply = collector_call(sock, "{\"execute\":\"query-sources\"}",
			       NULL, 0);
	reads0 = json_sum(reply, "reads", &nsrc);
	free(reply);
	cpu0 = cpu_seconds(pid);
	t0 = now_ns();
	sleep(seconds);
	cpu1 = cpu_seconds(pid);
	t1 = now_ns();
	reply = collector_call(sock, "{\"execute\":\"query-sources\"}",
			       NULL, 0);
	reads1 = json_sum(reply, "reads", &nsrc);
	errs = json_sum(reply, "read-errors", &nerr);
	free(reply);

	jnum("pid", pid);
	jnum("window_s", (t1 - t0) / 1e9);
	jnum("cpu_s", cpu1 - cpu0);
	jnum("cpu_percent", 100.0 * (cpu1 - cpu0) / ((t1 - t0) / 1e9));
	jnum("sources_reported", nsrc);
	jnum("reads_in_window", reads1 - reads0);
	jnum("reads_per_source_per_s",
	     nsrc ? (reads1 - reads0) / ((t1 - t0) / 1e9) / nsrc : 0);
	jnum("read_errors", errs);
out:
	close(sock);
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	jclose('}');
}

static void phase_b5(int nvm, int nvcpu, int collector_seconds)
{
	static struct mem_snap m[6];
	struct sfile vm_s, vc_s;
	struct fleet f = { .nvm = nvm, .nvcpu = nvcpu };
	double vm_ns, vcpu_ns;
	int dev, bdev, i, j, n = nvm * nvcpu;
	uint32_t vcpu_desc, vcpu_values;
	struct rlimit rl;

	getrlimit(RLIMIT_NOFILE, &rl);
	f.vm = calloc(nvm, sizeof(int));
	f.vm_stats = calloc(nvm, sizeof(int));
	f.vcpu = calloc(n, sizeof(int));
	f.vcpu_stats = calloc(n, sizeof(int));
	if (!f.vm || !f.vm_stats || !f.vcpu || !f.vcpu_stats)
		die("calloc");

	jbegin("b5");
	jnum("vms", nvm);
	jnum("vcpus_per_vm", nvcpu);
	jnum("rlimit_nofile", rl.rlim_cur);

	/*
	 * Grow the fd table to its final size first: it never shrinks, and its
	 * growth is not the cost of a VM, a vCPU or a stats fd.
	 */
	i = dup2(2, 2 * (nvm + n) + 64);
	if (i < 0)
		die("dup2 to grow the fd table");
	close(i);
	dev = vm_dev();
	mem_snap(&m[0]);
	for (i = 0; i < nvm; i++) {
		f.vm[i] = vm_create(dev);
		for (j = 0; j < nvcpu; j++)
			f.vcpu[i * nvcpu + j] = vcpu_create(f.vm[i], j);
	}
	mem_snap(&m[1]);
	for (i = 0; i < nvm; i++) {
		f.vm_stats[i] = stats_fd(f.vm[i]);
		for (j = 0; j < nvcpu; j++)
			f.vcpu_stats[i * nvcpu + j] =
				stats_fd(f.vcpu[i * nvcpu + j]);
	}
	mem_snap(&m[2]);
	fprintf(stderr, "b5: %d VMs x %d vCPUs created\n", nvm, nvcpu);

	/* Every VM and vCPU is alike: one layout each is enough. */
	sfile_open(&vm_s, dup(f.vm_stats[0]));
	sfile_open(&vc_s, dup(f.vcpu_stats[0]));
	jlayout("vm_layout", &vm_s);
	jlayout("vcpu_layout", &vc_s);
	jmem_delta("vms_and_vcpus", &m[0], &m[1], nvm + n);
	jmem_delta("stats_fds", &m[1], &m[2], nvm + n);
	jmem_delta("total", &m[0], &m[2], nvm + n);

	/* Read every fd once; the first pass faults things in, keep 3. */
	jopen("read_all", '[');
	for (i = 0; i < 4; i++) {
		read_all(&f, vm_s.h.data_offset, vm_s.data_size,
			 vc_s.h.data_offset, vc_s.data_size, &vm_ns, &vcpu_ns);
		jopen(NULL, '{');
		jnum("pass", i);
		jnum("vm_fds_ms", vm_ns / 1e6);
		jnum("vcpu_fds_ms", vcpu_ns / 1e6);
		jnum("total_ms", (vm_ns + vcpu_ns) / 1e6);
		jnum("ns_per_vm_fd", vm_ns / nvm);
		jnum("ns_per_vcpu_fd", vcpu_ns / n);
		jclose('}');
	}
	jclose(']');
	if (collector_seconds > 0)
		b5_collector(&f, collector_seconds);
	vcpu_desc = vc_s.h.num_desc;
	vcpu_values = vc_s.data_size / 8;
	sfile_close(&vm_s);
	sfile_close(&vc_s);

	for (i = 0; i < n; i++)
		close(f.vcpu_stats[i]);
	for (i = 0; i < nvm; i++)
		close(f.vm_stats[i]);
	mem_snap(&m[3]);
	for (i = 0; i < n; i++)
		close(f.vcpu[i]);
	for (i = 0; i < nvm; i++)
		close(f.vm[i]);
	mem_snap(&m[4]);
	jmem_delta("after_closing_stats_fds", &m[0], &m[3], nvm + n);
	jmem_delta("after_closing_all", &m[0], &m[4], nvm + n);
	close(dev);

	/* The core's own per-instance cost, without a provider around it. */
	bdev = open(dev_bench, O_RDWR | O_CLOEXEC);
	if (bdev < 0)
		die("open %s", dev_bench);
	b5_bench_sources(bdev, 10, 1000, 4096, m);
	b5_bench_sources(bdev, 1000, 1000, 4096, m);
	b5_bench_sources(bdev, vcpu_desc, vcpu_values, 8192, m);
	close(bdev);
	jend();
	free(f.vm);
	free(f.vm_stats);
	free(f.vcpu);
	free(f.vcpu_stats);
}

/* ---- B6: aggregate read cost vs vCPU count ---- */

/**
 * struct vcpus_arg - the vCPU stats fds op_vcpus_sum() reads
 * @fds: stats fds of the VM's vCPUs
 * @count: how many of them
 */
struct vcpus_arg {
	const int *fds;
	int count;
};

static void op_vcpus_sum(struct cont *c)
{
	const struct vcpus_arg *a = c->arg;
	uint64_t *acc = (uint64_t *)(buf + BUF_SIZE / 2);
	const uint64_t *v = (const uint64_t *)buf;
	size_t n = c->len / 8, i;
	int k;

	/* What a reader without kernel aggregation does: read all, sum. */
	memset(acc, 0, c->len);
	for (k = 0; k < a->count; k++) {
		if (pread(a->fds[k], buf, c->len, c->off) != (ssize_t)c->len)
			die("pread vCPU stats");
		for (i = 0; i < n; i++)
			acc[i] += v[i];
	}
	c->sink += acc[0];
}

static void phase_b6(int max_vcpus)
{
	static const int counts[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256 };
	static int vcpu[256], vcpu_stats[256];
	struct vcpus_arg va;
	struct cont c[MAX_CONT];
	struct sfile vm_s, vc_s;
	int dev, vm, have = 0, n;
	size_t i;

	dev = vm_dev();
	vm = vm_create(dev);
	sfile_open(&vm_s, stats_fd(vm));
	vcpu[0] = vcpu_create(vm, 0);
	if (vcpu_run_exits(vcpu[0], 300))
		die("STATSFD_VM_RUN");
	vcpu_stats[0] = stats_fd(vcpu[0]);
	have = 1;
	sfile_open(&vc_s, dup(vcpu_stats[0]));
	jbegin("b6");
	jlayout("vm_layout", &vm_s);
	jlayout("vcpu_layout", &vc_s);
	jopen("counts", '[');
	for (i = 0; i < ARRAY_SIZE(counts) && counts[i] <= max_vcpus; i++) {
		while (have < counts[i]) {
			vcpu[have] = vcpu_create(vm, have);
			if (vcpu_run_exits(vcpu[have], 300))
				die("STATSFD_VM_RUN");
			vcpu_stats[have] = stats_fd(vcpu[have]);
			have++;
		}
		n = 0;
		cont_add(c, &n, "vm_pread", op_pread, vm_s.fd, vm_s.data_size,
			 vm_s.h.data_offset, counts[i] > 32 ? 10 : 50);
		va.fds = vcpu_stats;
		va.count = counts[i];
		cont_add(c, &n, "vcpus_pread_sum", op_vcpus_sum, -1,
			 vc_s.data_size, vc_s.h.data_offset,
			 counts[i] > 32 ? 1 : 10)->arg = &va;
		fprintf(stderr, "b6: %d vCPUs\n", counts[i]);
		measure(c, n, rounds);
		jopen(NULL, '{');
		jnum("vcpus", counts[i]);
		jnum("vm_pread_ns", c[0].median);
		jnum("vm_pread_p25_ns", c[0].p25);
		jnum("vm_pread_p75_ns", c[0].p75);
		jnum("vcpus_pread_sum_ns", c[1].median);
		jclose('}');
	}
	jclose(']');
	jend();
	for (i = 0; i < (size_t)have; i++) {
		close(vcpu_stats[i]);
		close(vcpu[i]);
	}
	sfile_close(&vc_s);
	sfile_close(&vm_s);
	close(vm);
	close(dev);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: statsfd-bench [-r rounds] PHASE [args]\n"
		"  info | check | b1 | b2 | b3 | b4 LABEL [EXITS] | b4kvm [EXITS] |\n"
		"  b5 [VMS VCPUS COLLECTOR_SECONDS] | b6 [MAX_VCPUS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *phase;
	int opt;

	while ((opt = getopt(argc, argv, "r:")) != -1) {
		if (opt != 'r')
			usage();
		rounds = atoi(optarg);
		if (rounds < 1 || rounds > MAX_ROUNDS)
			usage();
	}
	if (optind >= argc)
		usage();
	phase = argv[optind++];
	buf = aligned_alloc(4096, BUF_SIZE);
	if (!buf)
		die("aligned_alloc");
	memset(buf, 0, BUF_SIZE);
	slots = aligned_alloc(4096, NSLOT * SLOT_SIZE);
	if (!slots)
		die("aligned_alloc");
	memset(slots, 0, NSLOT * SLOT_SIZE);

	if (!strcmp(phase, "info"))
		phase_info();
	else if (!strcmp(phase, "check"))
		phase_check();
	else if (!strcmp(phase, "b1"))
		phase_b1();
	else if (!strcmp(phase, "b2"))
		phase_b2();
	else if (!strcmp(phase, "b3"))
		phase_b3();
	else if (!strcmp(phase, "b4") && optind < argc)
		phase_b4(argv[optind],
			 optind + 1 < argc ? strtoull(argv[optind + 1], NULL, 0)
					   : 30000);
	else if (!strcmp(phase, "b4kvm"))
		phase_b4kvm(optind < argc ? strtoul(argv[optind], NULL, 0)
					  : 2000);
	else if (!strcmp(phase, "b5"))
		phase_b5(optind < argc ? atoi(argv[optind]) : 1024,
			 optind + 1 < argc ? atoi(argv[optind + 1]) : 8,
			 optind + 2 < argc ? atoi(argv[optind + 2]) : 10);
	else if (!strcmp(phase, "b6"))
		phase_b6(optind < argc ? atoi(argv[optind]) : 256);
	else
		usage();
	return 0;
}
