// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench's shared part (declared in bench.h): die() and the clock,
 * the one-line JSON writer, stats files and their layout, the contenders and
 * the measuring loop, and the providers the phases measure (our VM device,
 * upstream KVM, the bench module).  It measures nothing by itself.
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
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/kvm.h>
#include <linux/statsfd.h>
#include <linux/statsfd_vm.h>

#include "bench.h"
#include "statsfd_bench.h"
#include "../testing/lib/stats_file.h"

static const char *dev_vm = "/dev/statsfd_vm";
const char *dev_bench = "/dev/statsfd_bench";
int rounds = 101;	/* odd, so the median is one sample */
int warmup = 200;
unsigned char *buf;
unsigned char *slots;

void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "statsfd-bench: ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(errno));
	exit(1);
}

double now_ns(void)
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

void jopen(const char *key, char bracket)
{
	jkey(key);
	jraw("%c", bracket);
}

void jclose(char bracket)
{
	jraw("%c", bracket);
	json_need_comma = true;
}

void jnum(const char *key, double v)
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

void jstr(const char *key, const char *s)
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

void jbool(const char *key, bool b)
{
	jkey(key);
	jraw(b ? "true" : "false");
	json_need_comma = true;
}

void jbegin(const char *phase)
{
	json_len = 0;
	json_need_comma = false;
	jopen(NULL, '{');
	jstr("phase", phase);
}

void jend(void)
{
	jclose('}');
	printf("BENCH-JSON %s\n", json);
	fflush(stdout);
}

/* ---- stats files ---- */

/* The layout comes from the selftests' parser (tools/testing/lib/stats_file.h). */
struct statsfd_desc *sfile_desc(const struct sfile *s, uint32_t i)
{
	return stats_desc(&s->h, s->desc, i);
}

void sfile_open(struct sfile *s, int fd)
{
	char *desc;

	memset(s, 0, sizeof(*s));
	s->fd = fd;
	if (stats_layout_read(fd, &s->h, &desc))
		die("pread header and descriptors");
	s->desc = (unsigned char *)desc;
	s->data_size = stats_data_size(&s->h, s->desc);
	s->file_size = stats_file_size(&s->h, s->data_size);
}

void sfile_close(struct sfile *s)
{
	if (s->fd >= 0)
		close(s->fd);
	free(s->desc);
	s->fd = -1;
	s->desc = NULL;
}

uint32_t sfile_num_values(const struct sfile *s)
{
	return s->data_size / 8;
}

struct statsfd_desc *sfile_find(const struct sfile *s, const char *name)
{
	return stats_find(&s->h, s->desc, name);
}

uint32_t sfile_plain_size(const struct sfile *s)
{
	uint32_t i, end = s->data_size;

	for (i = 0; i < s->h.num_desc; i++) {
		struct statsfd_desc *d = sfile_desc(s, i);

		if (((d->flags & STATSFD_AGG_MASK) ||
		     !strcmp(d->name, STATSFD_STAT_SAMPLE_NS)) &&
		    d->offset < end)
			end = d->offset;
	}
	return end;
}

/* ---- the contenders and the measuring loop ---- */

/* One pread of the contender's next file into its next buffer slot. */
unsigned char *do_pread(struct cont *c)
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

void op_pread(struct cont *c)
{
	do_pread(c);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The @q quantile (0..1) of @n samples, interpolated between ranks. */
double quantile_of(const double *v, int n, double q)
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

double median_of(const double *v, int n)
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
void measure(struct cont *c, int n, int nr)
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

struct cont *cont_add(struct cont *c, int *n, const char *name,
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
void cont_fds(struct cont *x, const int *fds, int n)
{
	memcpy(x->fds, fds, n * sizeof(*fds));
	x->nfds = n;
}

/* ---- providers: our VM device, KVM, the bench module ---- */

int vm_dev(void)
{
	int fd = open(dev_vm, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		die("open %s", dev_vm);
	return fd;
}

int vm_create(int dev)
{
	struct statsfd_vm_create_vm a = { 0 };
	int fd = ioctl(dev, STATSFD_VM_CREATE_VM, &a);

	if (fd < 0)
		die("STATSFD_VM_CREATE_VM");
	return fd;
}

int vcpu_create(int vm, unsigned int id)
{
	struct statsfd_vm_create_vcpu a = { .vcpu_id = id };
	int fd = ioctl(vm, STATSFD_VM_CREATE_VCPU, &a);

	if (fd < 0)
		die("STATSFD_VM_CREATE_VCPU %u", id);
	return fd;
}

int stats_fd(int fd)
{
	int sfd = ioctl(fd, STATSFD_VM_GET_STATS_FD, 0);

	if (sfd < 0)
		die("STATSFD_VM_GET_STATS_FD");
	return sfd;
}

bool write_param(const char *path, const char *val)
{
	size_t len = strlen(val);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	ok = write(fd, val, len) == (ssize_t)len;
	close(fd);
	return ok;
}

const struct statsfd_mmap_header *stats_map(int fd, size_t *len)
{
	size_t page = sysconf(_SC_PAGESIZE), need;
	const struct statsfd_mmap_header *h;
	struct statsfd_mmap_header first;

	h = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED)
		return NULL;
	*len = page;
	/*
	 * A header this reader does not know how to use (uapi statsfd.h):
	 * version 2's two copies and latch, nothing else.
	 */
	first = *h;
	if (first.version < 2 || first.flags != STATSFD_MMAP_LATCH ||
	    first.header_size < sizeof(first) ||
	    first.data_offset < first.header_size || first.data_offset % 8 ||
	    first.data_size % 8 || first.copy_stride < first.data_size ||
	    first.copy_stride % 8) {
		munmap((void *)h, page);
		errno = EPROTO;
		return NULL;
	}
	/* Both copies. */
	need = (size_t)first.data_offset + first.copy_stride + first.data_size;
	if (need <= page)
		return h;
	munmap((void *)h, page);
	*len = (need + page - 1) / page * page;
	h = mmap(NULL, *len, PROT_READ, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED)
		return NULL;
	if (h->data_offset != first.data_offset ||
	    h->data_size != first.data_size ||
	    h->copy_stride != first.copy_stride || h->flags != first.flags) {
		munmap((void *)h, *len);
		errno = EPROTO;
		return NULL;
	}
	return h;
}

const uint64_t *stats_map_values(const struct statsfd_mmap_header *h,
				 uint64_t seq)
{
	return (const uint64_t *)((const char *)h + h->data_offset +
				  (seq & 1) * (size_t)h->copy_stride);
}

/* A deterministic workload of exits only (no halts), so values are set. */
int vcpu_run_exits(int vcpu, uint64_t exits)
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

double vcpu_exit_ns(int vcpu, uint64_t exits, uint64_t shorter, double *whole)
{
	double t0, t1, t2;

	t0 = now_ns();
	if (vcpu_run_exits(vcpu, exits))
		die("STATSFD_VM_RUN");
	t1 = now_ns();
	if (vcpu_run_exits(vcpu, shorter))
		die("STATSFD_VM_RUN");
	t2 = now_ns();
	*whole = (t1 - t0) / exits;
	return ((t1 - t0) - (t2 - t1)) / (exits - shorter);
}

bool kvm_open(struct kvm_vcpu_stats *k)
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

void kvm_close(struct kvm_vcpu_stats *k)
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

int bench_set_create(int dev, uint32_t num_desc, uint32_t num_values,
		     uint32_t num_sources, uint32_t flags)
{
	struct statsfd_bench_set_args a = {
		.num_desc = num_desc,
		.num_values = num_values,
		.num_sources = num_sources,
		.flags = flags,
	};
	int fd = ioctl(dev, STATSFD_BENCH_CREATE_SET, &a);

	if (fd < 0)
		die("STATSFD_BENCH_CREATE_SET %ux%u x%u flags %#x", num_desc,
		    num_values, num_sources, flags);
	return fd;
}

void bench_set_open(struct bench_set *b, int dev, uint32_t num_desc,
		    uint32_t num_values, uint32_t flags)
{
	int i, k;

	for (k = 0; k < NSET; k++) {
		b->set[k] = bench_set_create(dev, num_desc, num_values,
					     NFD / NSET, flags);
		for (i = 0; i < NFD / NSET; i++) {
			int fd = ioctl(b->set[k], STATSFD_BENCH_GET_STATS_FD, i);

			if (fd < 0)
				die("STATSFD_BENCH_GET_STATS_FD");
			b->fds[i * NSET + k] = fd;
		}
	}
	sfile_open(&b->stats, b->fds[0]);
}

void bench_set_close(struct bench_set *b)
{
	int i;

	sfile_close(&b->stats);
	for (i = 1; i < NFD; i++)
		close(b->fds[i]);
	for (i = 0; i < NSET; i++)
		close(b->set[i]);
}

/* ---- JSON of a file's layout and of a measured contender ---- */

void jlayout(const char *key, const struct sfile *s)
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

void jcont(const struct cont *c)
{
	jopen(c->name, '{');
	jnum("ns", c->median);
	jnum("p25_ns", c->p25);
	jnum("p75_ns", c->p75);
	jnum("bytes", c->len);
	jnum("ns_per_byte", c->len ? c->median / c->len : 0.0 / 0.0);
	jclose('}');
}

void jconts(const char *key, const struct cont *c, int n)
{
	int i;

	jopen(key, '{');
	for (i = 0; i < n; i++)
		jcont(&c[i]);
	jclose('}');
}
