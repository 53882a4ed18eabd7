/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the statsfd_vm selftests: the device, VMs, vCPUs and
 * runs, struct sfile over the shared stats-file parser
 * (tools/testing/lib/stats_file.h), module parameters.
 *
 * Only static inline functions, so that every test program can include it
 * and use what it needs (-Werror would reject unused static functions).
 */
#ifndef STATSFD_VM_UTIL_H
#define STATSFD_VM_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/statsfd.h>
#include <linux/statsfd_vm.h>

#include "fd_pass.h"
#include "stats_file.h"

/*
 * kselftest_harness.h's TEST_F() wrapper keeps a local across the
 * setjmp() that ASSERT_*() longjmp()s to; when GCC inlines a large test
 * body into it, -Wextra's -Wclobbered flags that harness local (never our
 * code).  Silence just that warning in the files that include us.
 */
#pragma GCC diagnostic ignored "-Wclobbered"

/*
 * Context for a failed check goes in the harness's optional handler, a
 * block right after EXPECT_*() or ASSERT_*() that runs only on failure:
 *
 *	EXPECT_EQ(0, x)
 *	{
 *		TH_LOG("stat %s", name);
 *	}
 */

#define STATSFD_VM_DEV "/dev/statsfd_vm"
#define STATSFD_VM_PARAMS "/sys/module/statsfd_vm/parameters"
#define STATSFD_VM_DEBUGFS "/sys/kernel/debug/statsfd/statsfd_vm"
#define STATSFD_VM_KO "/lib/statsfd/statsfd_vm.ko"

#define UID_NOBODY 65534
#define GID_NOBODY 65534

/* What stat_get() returns for a stat the file does not have. */
#define STAT_MISSING 0xdeadbeefdeadbeefULL

#ifndef BIT
#define BIT(n) (1U << (n))
#endif

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

#define HIST_BUCKETS 32
#define RUN_HIST_BUCKET 64

static inline int dev_open(void)
{
	return open(STATSFD_VM_DEV, O_RDWR | O_CLOEXEC);
}

static inline int vm_create(int dev)
{
	struct statsfd_vm_create_vm args = { 0 };

	return ioctl(dev, STATSFD_VM_CREATE_VM, &args);
}

static inline int vcpu_create(int vm, __u32 id)
{
	struct statsfd_vm_create_vcpu args = { .vcpu_id = id };

	return ioctl(vm, STATSFD_VM_CREATE_VCPU, &args);
}

static inline int stats_fd(int fd)
{
	return ioctl(fd, STATSFD_VM_GET_STATS_FD, 0);
}

/* RUN writes run->exits_done back, on success and on EINTR. */
static inline int vcpu_run(int vcpu, struct statsfd_vm_run *run)
{
	return ioctl(vcpu, STATSFD_VM_RUN, run);
}

static inline int vcpu_kick(int vcpu)
{
	return ioctl(vcpu, STATSFD_VM_KICK, 0);
}

/*
 * How many rounds a heavy loop runs: @normal in a plain `make check`, which
 * must stay quick while still taking every path of the loop, @stress when
 * the guest exports STATSFD_STRESS=1 (`make check STRESS=1`, as CI runs).
 * Only counts depend on it, never which tests exist: the expected-results
 * manifest is derived from the binaries' test lists.
 */
static inline int stress_scale(int normal, int stress)
{
	const char *s = getenv("STATSFD_STRESS");

	return s && *s && strcmp(s, "0") ? stress : normal;
}

/* A run of @io, @mmio and @hcall exits, no halt. */
static inline int vcpu_run_exits(int vcpu, __u64 io, __u64 mmio, __u64 hcall)
{
	struct statsfd_vm_run run = {
		.io_exits = io,
		.mmio_exits = mmio,
		.hypercall_exits = hcall,
	};

	return vcpu_run(vcpu, &run);
}

/* close() @fd if open and mark it closed, so a later cleanup skips it. */
static inline void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* The kinds of source: the device's own, a VM, a vCPU. */
enum kind { SYSTEM, VM, VCPU };

#define VM_ENV_MAX_VCPUS 4

/* vm_env_open() flags */
#define VM_ENV_STATS BIT(0) /* open the stats fds of the VM and each vCPU */

/**
 * struct vm_env - the device, a VM, its vCPUs and their stats fds
 * @dev: /dev/statsfd_vm
 * @own_dev: @dev was opened by vm_env_open(), vm_env_close() closes it
 * @vm: the VM
 * @nr_vcpus: how many vCPUs @vm has, ids 0 to @nr_vcpus - 1
 * @vcpu: their fds
 * @vm_stats: the stats fd of @vm, or -1 without VM_ENV_STATS
 * @vcpu_stats: the stats fds of @vcpu, or -1 without VM_ENV_STATS
 * @err: what failed, with errno's text, for TH_LOG()
 *
 * Every fd is -1 once closed (close_fd()), so a test may drop some in the
 * order it is about and leave the rest to vm_env_close().
 */
struct vm_env {
	int dev;
	bool own_dev;
	int vm;
	unsigned int nr_vcpus;
	int vcpu[VM_ENV_MAX_VCPUS];
	int vm_stats;
	int vcpu_stats[VM_ENV_MAX_VCPUS];
	char err[128];
};

static inline void vm_env_close(struct vm_env *e)
{
	unsigned int i;

	for (i = 0; i < VM_ENV_MAX_VCPUS; i++) {
		close_fd(&e->vcpu_stats[i]);
		close_fd(&e->vcpu[i]);
	}
	close_fd(&e->vm_stats);
	close_fd(&e->vm);
	if (e->own_dev)
		close_fd(&e->dev);
}

/* Records what failed in @e->err, closes what was opened, returns -1. */
static inline int vm_env_fail(struct vm_env *e, const char *what, int n)
{
	int err = errno;

	snprintf(e->err, sizeof(e->err), "%s %d: %s", what, n, strerror(err));
	vm_env_close(e);
	errno = err;
	return -1;
}

/**
 * vm_env_open() - the setup most statsfd_vm tests start from
 * @e: filled in; on failure every fd is closed and @e->err says why
 * @dev: an open /dev/statsfd_vm, or -1 to open one for @e
 * @nr_vcpus: vCPUs to create, ids 0 to @nr_vcpus - 1
 * @run: if not NULL, each vCPU runs a copy of it once
 * @flags: VM_ENV_STATS
 *
 * Return: 0, or -1 with errno set.
 */
static inline int vm_env_open(struct vm_env *e, int dev, unsigned int nr_vcpus,
			      const struct statsfd_vm_run *run,
			      unsigned int flags)
{
	unsigned int i;

	memset(e, 0, sizeof(*e));
	e->vm = -1;
	e->vm_stats = -1;
	for (i = 0; i < VM_ENV_MAX_VCPUS; i++) {
		e->vcpu[i] = -1;
		e->vcpu_stats[i] = -1;
	}
	if (nr_vcpus > VM_ENV_MAX_VCPUS) {
		errno = E2BIG;
		return vm_env_fail(e, "vCPUs wanted", nr_vcpus);
	}
	e->own_dev = dev < 0;
	e->dev = e->own_dev ? dev_open() : dev;
	if (e->dev < 0)
		return vm_env_fail(e, "open " STATSFD_VM_DEV, 0);
	e->vm = vm_create(e->dev);
	if (e->vm < 0)
		return vm_env_fail(e, "create VM", 0);
	for (i = 0; i < nr_vcpus; i++) {
		struct statsfd_vm_run r;

		e->vcpu[i] = vcpu_create(e->vm, i);
		if (e->vcpu[i] < 0)
			return vm_env_fail(e, "create vCPU", i);
		e->nr_vcpus++;
		if (!run)
			continue;
		r = *run;
		if (vcpu_run(e->vcpu[i], &r))
			return vm_env_fail(e, "run vCPU", i);
	}
	if (!(flags & VM_ENV_STATS))
		return 0;
	e->vm_stats = stats_fd(e->vm);
	if (e->vm_stats < 0)
		return vm_env_fail(e, "stats fd of VM", 0);
	for (i = 0; i < nr_vcpus; i++) {
		e->vcpu_stats[i] = stats_fd(e->vcpu[i]);
		if (e->vcpu_stats[i] < 0)
			return vm_env_fail(e, "stats fd of vCPU", i);
	}
	return 0;
}

#ifdef __KSELFTEST_HARNESS_H
/*
 * vm_env_open() or fail the test saying which step failed; a macro because
 * ASSERT_*() needs the test's _metadata.
 */
#define ASSERT_VM_ENV(e, dev, nr_vcpus, run, flags)                       \
	do {                                                              \
		struct vm_env *__e = (e);                                 \
									  \
		ASSERT_EQ(0, vm_env_open(__e, dev, nr_vcpus, run, flags)) \
		{                                                         \
			TH_LOG("%s", __e->err);                           \
		}                                                         \
	} while (0)

/*
 * What a child that dropped to uid nobody found wrong, one bit each: the
 * first two are expect_nobody_clean()'s, a test's own @check returns the
 * bits from NOBODY_CHECK up.
 */
#define NOBODY_DROP BIT(0) /* could not become nobody */
#define NOBODY_RECV BIT(1) /* no fd received */
#define NOBODY_CHECK BIT(2)

/* In the child, as nobody: @check the fd that comes over @sk. */
static inline int nobody_recv_check(int sk, int (*check)(int fd, void *arg),
				    void *arg)
{
	int fd = recv_fd(sk);

	return fd < 0 ? NOBODY_RECV : check(fd, arg);
}

/*
 * @fd passed over SCM_RIGHTS to a child process that dropped to uid nobody
 * and holds nothing else of ours (@forget closes, in the child, what the
 * test holds): @check(its fd, @arg) must find nothing wrong (return 0).
 * The bits come back over the socket: an exit status has too few.
 */
static inline void expect_nobody_clean(struct __test_metadata *_metadata,
				       int fd, void (*forget)(void *arg),
				       int (*check)(int fd, void *arg),
				       void *arg)
{
	int sk[2], status, bad = -1;
	pid_t pid;

	/* the guest runs every test as root: dropping to nobody needs it */
	ASSERT_EQ(0, geteuid());
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sk));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		forget(arg);
		close(sk[0]);
		if (setgroups(0, NULL) || setgid(GID_NOBODY) ||
		    setuid(UID_NOBODY) || getuid() != UID_NOBODY)
			bad = NOBODY_DROP;
		else
			bad = nobody_recv_check(sk[1], check, arg);
		_exit(write(sk[1], &bad, sizeof(bad)) == sizeof(bad) ? 0 : 1);
	}
	close(sk[1]);
	ASSERT_EQ(0, send_fd(sk[0], fd));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(sizeof(bad), read(sk[0], &bad, sizeof(bad)));
	EXPECT_EQ(0, bad)
	{
		TH_LOG("child failures: %#x", bad);
	}
	close(sk[0]);
}
#endif

/* The stats fd of @e's source of @kind (for VCPU, vCPU @vcpu's); or -1. */
static inline int vm_env_kind_fd(const struct vm_env *e, enum kind kind,
				 unsigned int vcpu)
{
	switch (kind) {
	case SYSTEM:
		return stats_fd(e->dev);
	case VM:
		return stats_fd(e->vm);
	case VCPU:
		return stats_fd(e->vcpu[vcpu]);
	}
	return -1;
}

/**
 * struct sfile - a stats fd's immutable part, parsed with pread() only
 * @hdr: the header
 * @id: the id string (name_size bytes)
 * @descs: the raw descriptor block
 * @stride: bytes per descriptor, 16 + name_size
 * @data_size: bytes of the data block, from the descriptors
 * @size: bytes of the whole file
 * @data: the data block as last read by sfile_read_data()
 */
struct sfile {
	struct statsfd_header hdr;
	char *id;
	char *descs;
	size_t stride;
	size_t data_size;
	size_t size;
	__u64 *data;
};

static inline struct statsfd_desc *sfile_desc(const struct sfile *s,
					      unsigned int i)
{
	return stats_desc(&s->hdr, s->descs, i);
}

static inline void sfile_free(struct sfile *s)
{
	free(s->id);
	free(s->descs);
	free(s->data);
	memset(s, 0, sizeof(*s));
}

/* Returns 0, or -1 with errno set (EIO for a short read). */
static inline int sfile_pread_all(int fd, void *buf, size_t len, off_t off)
{
	return stats_pread_all(fd, buf, len, off);
}

/* Parse header, id and descriptors of @fd into @s.  Returns 0 or -1. */
static inline int sfile_parse(int fd, struct sfile *s)
{
	memset(s, 0, sizeof(*s));
	if (stats_layout_read(fd, &s->hdr, &s->descs))
		return -1;
	s->stride = stats_desc_stride(&s->hdr);
	s->id = calloc(1, s->hdr.name_size + 1);
	if (!s->id)
		goto fail;
	if (sfile_pread_all(fd, s->id, s->hdr.name_size, s->hdr.id_offset))
		goto fail;
	s->data_size = stats_data_size(&s->hdr, s->descs);
	s->size = stats_file_size(&s->hdr, s->data_size);
	s->data = calloc(1, s->data_size ? s->data_size : 8);
	if (!s->data)
		goto fail;
	return 0;
fail:
	sfile_free(s);
	if (!errno)
		errno = ENOMEM;
	return -1;
}

static inline struct statsfd_desc *sfile_find(const struct sfile *s,
					      const char *name)
{
	return stats_find(&s->hdr, s->descs, name);
}

/* Read the whole data block of @fd into s->data.  Returns 0 or -1. */
static inline int sfile_read_data(int fd, struct sfile *s)
{
	return sfile_pread_all(fd, s->data, s->data_size, s->hdr.data_offset);
}

/* Value @idx of stat @name in the data last read, or STAT_MISSING. */
static inline __u64 sfile_val_at(const struct sfile *s, const char *name,
				 unsigned int idx)
{
	const struct statsfd_desc *d = sfile_find(s, name);

	if (!d || idx >= d->size) {
		fprintf(stderr, "# no stat %s[%u] in %s\n", name, idx, s->id);
		return STAT_MISSING;
	}
	return s->data[d->offset / sizeof(__u64) + idx];
}

static inline __u64 sfile_val(const struct sfile *s, const char *name)
{
	return sfile_val_at(s, name, 0);
}

/* Sum of the buckets of histogram @name in the data last read. */
static inline __u64 sfile_hist_sum(const struct sfile *s, const char *name)
{
	const struct statsfd_desc *d = sfile_find(s, name);
	__u64 sum = 0;
	unsigned int i;

	if (!d)
		return STAT_MISSING;
	for (i = 0; i < d->size; i++)
		sum += s->data[d->offset / sizeof(__u64) + i];
	return sum;
}

/*
 * File offset of the values of stat @name, or -1 if @s has no such stat:
 * for finding sample_ns and generation by name, never by position.
 */
static inline long long sfile_off(const struct sfile *s, const char *name)
{
	const struct statsfd_desc *d = sfile_find(s, name);

	return d ? (long long)s->hdr.data_offset + d->offset : -1;
}

/*
 * Compare @len bytes read at file offset @off (in @buf) with the same
 * bytes of the model @image, as memcmp() does, except the 8 bytes at file
 * offset @mask (-1: none).  The mask is sample_ns (sfile_off()), which
 * every read of a source with update windows takes anew; everything else,
 * generation included, must be the same bytes on every read of a
 * quiesced source.
 */
static inline int image_cmp(const void *buf, const unsigned char *image,
			    long long off, size_t len, long long mask)
{
	const unsigned char *b = buf;
	size_t i;

	for (i = 0; i < len; i++) {
		long long pos = off + (long long)i;

		if (mask >= 0 && pos >= mask && pos < mask + 8)
			continue;
		if (b[i] != image[pos])
			return b[i] < image[pos] ? -1 : 1;
	}
	return 0;
}

/* One stat of @fd, read afresh: parses the file, then preads the value. */
static inline __u64 stat_get(int fd, const char *name)
{
	const struct statsfd_desc *d;
	struct sfile s;
	__u64 val = STAT_MISSING;

	if (sfile_parse(fd, &s))
		return STAT_MISSING;
	d = sfile_find(&s, name);
	if (d && sfile_pread_all(fd, &val, sizeof(val),
				 s.hdr.data_offset + d->offset))
		val = STAT_MISSING;
	if (!d)
		fprintf(stderr, "# no stat %s in %s\n", name, s.id);
	sfile_free(&s);
	return val;
}

/* A system-wide stat, through a fresh system stats fd. */
static inline __u64 sys_stat(const char *name)
{
	__u64 val = STAT_MISSING;
	int dev, fd;

	dev = dev_open();
	if (dev < 0)
		return STAT_MISSING;
	fd = stats_fd(dev);
	if (fd >= 0) {
		val = stat_get(fd, name);
		close(fd);
	}
	close(dev);
	return val;
}

/* Read a module parameter of statsfd_vm; returns -1 if unreadable. */
static inline long long param_get(const char *name)
{
	char path[128], buf[32];
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", STATSFD_VM_PARAMS, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -1;
	buf[len] = 0;
	return strtoll(buf, NULL, 0);
}

/* Write a module parameter of statsfd_vm; returns 0 or -1. */
static inline int param_set(const char *name, long long val)
{
	char path[128], buf[32];
	int fd, len, ret;

	snprintf(path, sizeof(path), "%s/%s", STATSFD_VM_PARAMS, name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = snprintf(buf, sizeof(buf), "%lld", val);
	ret = write(fd, buf, len) == len ? 0 : -1;
	close(fd);
	return ret;
}

/* Write @val to the file @path (debugfs, procfs knobs); 0 or -1. */
static inline int write_file(const char *path, const char *val)
{
	ssize_t len = strlen(val);
	int fd, ret;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ret = write(fd, val, len) == len ? 0 : -1;
	close(fd);
	return ret;
}

/* Read up to @size - 1 bytes of @path into @buf; returns length or -1. */
static inline ssize_t read_file(const char *path, char *buf, size_t size)
{
	ssize_t len;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, size - 1);
	close(fd);
	if (len >= 0)
		buf[len] = 0;
	return len;
}

/*
 * Writes @val to the fault-injection knob @dir/@knob: 0, or -1 with errno
 * set (and the knob named on stderr).
 */
static inline int fault_knob_set(const char *dir, const char *knob,
				 const char *val)
{
	char path[128];
	int ret;

	snprintf(path, sizeof(path), "%s/%s", dir, knob);
	ret = write_file(path, val);
	if (ret)
		fprintf(stderr, "# %s <- %s: %s\n", path, val, strerror(errno));
	return ret;
}

/*
 * The knobs of fault-injection @dir that every statsfd fault test sets
 * alike: only the tasks that ask for it (make-it-fail) fail, every time
 * from the first try, quietly.  0, or -1 (the knob named on stderr).
 */
static inline int fault_knobs_task_only(const char *dir)
{
	static const char *const knobs[][2] = {
		{ "verbose", "0" },  { "task-filter", "Y" }, { "space", "0" },
		{ "interval", "1" }, { "times", "-1" },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(knobs); i++)
		if (fault_knob_set(dir, knobs[i][0], knobs[i][1]))
			return -1;
	return 0;
}

/* The reference count of module @module, or -1 (not loaded). */
static inline long long module_refs(const char *module)
{
	char path[128], buf[32];

	snprintf(path, sizeof(path), "/sys/module/%s/refcnt", module);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	return atoll(buf);
}

/* delete_module(2) without waiting: 0, or -1 with errno. */
static inline int delete_module(const char *name)
{
	return syscall(__NR_delete_module, name, O_NONBLOCK);
}

/* The debugfs parameter: does a new VM get a debugfs view? */
static inline bool debugfs_param_get(void)
{
	char buf[8] = "";

	read_file(STATSFD_VM_PARAMS "/debugfs", buf, sizeof(buf));
	return buf[0] == 'Y';
}

static inline int debugfs_param_set(bool on)
{
	return write_file(STATSFD_VM_PARAMS "/debugfs", on ? "Y" : "N");
}

static inline __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* CLOCK_BOOTTIME, the clock of sample_ns. */
static inline __u64 boottime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/**
 * stats_map() - map the values area of stats fd @fd, read-only, shared
 * @fd: a stats fd of a mappable source
 * @len: set to the length mapped
 *
 * As documented: the first page, whose header says whether the values go
 * on past it; then the whole area if they do.
 *
 * Return: the area, or MAP_FAILED with errno set.
 */
static inline const struct statsfd_mmap_header *stats_map(int fd, size_t *len)
{
	size_t page = sysconf(_SC_PAGESIZE), need;
	const struct statsfd_mmap_header *h;

	h = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED)
		return h;
	*len = page;
	need = (size_t)h->data_offset + h->copy_stride + h->data_size;
	if (need <= page)
		return h;
	munmap((void *)h, page);
	*len = (need + page - 1) / page * page;
	return mmap(NULL, *len, PROT_READ, MAP_SHARED, fd, 0);
}

/* Copy @n (0 or 1) of the values in the mapping @h. */
static inline const __u64 *map_copy_base(const struct statsfd_mmap_header *h,
					 __u64 n)
{
	return (const void *)((const char *)h + h->data_offset +
			      (n & 1) * h->copy_stride);
}

/*
 * Value @i of the mapping @h (its data block offset is 8 * @i), from the
 * copy seq selects: what the last published window left.  One value
 * needs no protocol; several that must agree need map_copy().
 */
static inline __u64 map_val(const struct statsfd_mmap_header *h, size_t i)
{
	__u64 seq = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);

	return __atomic_load_n(&map_copy_base(h, seq)[i], __ATOMIC_RELAXED);
}

/**
 * map_copy() - copy values of a mapping as one snapshot
 * @h: the mapping
 * @idx: indices of the values wanted (data block offset / 8), or NULL for
 *	every value of the area
 * @n: number of entries of @idx (ignored when @idx is NULL)
 * @out: where value i goes, at @out[i]
 * @tries: how many times to try at most
 * @gen: set to the generation of the copy, seq
 *
 * The documented reader protocol (statsfd_mmap_copy() in the uapi
 * header, here for scattered values): seq loaded with acquire, the values
 * of copy (seq & 1) with relaxed 8-byte loads, an acquire fence, seq
 * again; the copy holds if seq did not change.
 *
 * Return: the number of tries the copy took (1 when the first one held),
 * or 0 if the writer published a window during each of the @tries.
 */
static inline int map_copy(const struct statsfd_mmap_header *h,
			   const unsigned int *idx, unsigned int n, __u64 *out,
			   int tries, __u64 *gen)
{
	unsigned int i, all = h->data_size / sizeof(__u64);
	const __u64 *vals;
	__u64 s1;
	int t;

	for (t = 1; t <= tries; t++) {
		s1 = __atomic_load_n(&h->seq, __ATOMIC_ACQUIRE);
		vals = map_copy_base(h, s1);
		if (idx) {
			for (i = 0; i < n; i++)
				out[idx[i]] = __atomic_load_n(&vals[idx[i]],
							      __ATOMIC_RELAXED);
		} else {
			for (i = 0; i < all; i++)
				out[i] = __atomic_load_n(&vals[i],
							 __ATOMIC_RELAXED);
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&h->seq, __ATOMIC_RELAXED) == s1) {
			*gen = s1;
			return t;
		}
	}
	return 0;
}

/*
 * Pins @thread to @cpu; 0 or an error number (the
 * caller defines _GNU_SOURCE, as every test program does).
 */
static inline int pin(pthread_t thread, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(thread, sizeof(set), &set);
}

/*
 * Whether the running kernel has function or variable @name, from
 * /proc/kallsyms: what a kernel was built with, told apart from a debugfs
 * file that is merely missing.
 */
static inline bool kernel_has_symbol(const char *name)
{
	char line[256], sym[200];
	bool found = false;
	FILE *f = fopen("/proc/kallsyms", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%*s %*s %199s", sym) == 1 &&
			!strcmp(sym, name);
	fclose(f);
	return found;
}

/* The lowest free fd number: nothing may change it on a failed ioctl. */
static inline int next_fd(void)
{
	int fd = open("/", O_RDONLY | O_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return fd;
}

static inline const char *agg_suffix(__u32 kind)
{
	switch (kind) {
	case STATSFD_AGG_SUM:
		return "sum";
	case STATSFD_AGG_MINIMUM:
		return "min";
	case STATSFD_AGG_MAXIMUM:
		return "max";
	case STATSFD_AGG_AVERAGE:
		return "avg";
	case STATSFD_AGG_COUNT_NONZERO:
		return "count_nonzero";
	}
	return NULL;
}

/*
 * A sum that keeps what removed children counted (statsfd-abi.rst): the
 * sum of a cumulative stat, or of a histogram.
 */
static inline bool agg_retires(const struct statsfd_desc *d)
{
	__u32 type = d->flags & STATSFD_TYPE_MASK;

	return (d->flags & STATSFD_AGG_MASK) == STATSFD_AGG_SUM &&
	       (type == STATSFD_TYPE_CUMULATIVE ||
		type == STATSFD_TYPE_LINEAR_HIST ||
		type == STATSFD_TYPE_LOG_HIST);
}

/*
 * Check every aggregate of @parent (its data last read) against the values
 * of its @n children (their data last read), computed here from their
 * definitions: sum modulo 2^64 (bucket by bucket for histograms), min, max,
 * the floor of the exact mean, the number of non-zero values; 0 over an
 * empty set.  With @live_only, the sums that keep removed children's
 * counts (agg_retires()) are skipped: for a parent that has lost children,
 * only the other aggregates depend on the present children alone.  Prints
 * each mismatch; returns how many there were, or -1 if an aggregate is
 * malformed.
 */
static inline int agg_check_ex(const struct sfile *parent,
			       const struct sfile *children, unsigned int n,
			       bool live_only)
{
	unsigned int i, c, k;
	int bad = 0;

	for (i = 0; i < parent->hdr.num_desc; i++) {
		const struct statsfd_desc *d = sfile_desc(parent, i);
		__u32 kind = d->flags & STATSFD_AGG_MASK;
		const char *suffix = agg_suffix(kind);
		char field[STATSFD_NAME_SIZE_DEFAULT * 4];
		size_t flen;

		if (!kind || (live_only && agg_retires(d)))
			continue;
		flen = strlen(d->name);
		if (!suffix || flen <= strlen(suffix) + 1 ||
		    flen >= sizeof(field) ||
		    strcmp(d->name + flen - strlen(suffix), suffix) ||
		    d->name[flen - strlen(suffix) - 1] != '_') {
			fprintf(stderr, "# malformed aggregate %s\n", d->name);
			return -1;
		}
		memcpy(field, d->name, flen - strlen(suffix) - 1);
		field[flen - strlen(suffix) - 1] = 0;

		for (k = 0; k < d->size; k++) {
			unsigned __int128 sum = 0;
			__u64 min = UINT64_MAX, max = 0, nonzero = 0, want;
			__u64 got = parent->data[d->offset / 8 + k];

			for (c = 0; c < n; c++) {
				__u64 v = sfile_val_at(&children[c], field, k);

				if (v == STAT_MISSING)
					return -1;
				sum += v;
				min = v < min ? v : min;
				max = v > max ? v : max;
				nonzero += !!v;
			}
			switch (kind) {
			case STATSFD_AGG_SUM:
				want = (__u64)sum;
				break;
			case STATSFD_AGG_MINIMUM:
				want = n ? min : 0;
				break;
			case STATSFD_AGG_MAXIMUM:
				want = max;
				break;
			case STATSFD_AGG_AVERAGE:
				want = n ? (__u64)(sum / n) : 0;
				break;
			default:
				want = nonzero;
				break;
			}
			if (got != want) {
				fprintf(stderr,
					"# %s: %s[%u] = %llu, children say %llu\n",
					parent->id, d->name, k,
					(unsigned long long)got,
					(unsigned long long)want);
				bad++;
			}
		}
	}
	return bad;
}

/* agg_check_ex() of a parent that never lost a child: every aggregate. */
static inline int agg_check(const struct sfile *parent,
			    const struct sfile *children, unsigned int n)
{
	return agg_check_ex(parent, children, n, false);
}

#endif /* STATSFD_VM_UTIL_H */
