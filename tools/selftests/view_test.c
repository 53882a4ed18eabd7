// SPDX-License-Identifier: GPL-2.0
/*
 * view_test - view fds (STATSFD_IOC_VIEW, statsfd-abi.rst "Views"):
 *
 * - every bad input, each errno its own test, on a system, a VM and a
 *   vCPU stats fd: EINVAL (unknown flags, reserved fields, count 0),
 *   E2BIG, EFAULT (the argument, the list, a name), ENOENT (a name, an
 *   index), ENAMETOOLONG, EEXIST, EMFILE, ENOTTY; a failure installs no
 *   fd and opens no stats file (stats_fds_open), and leaks nothing (the
 *   harness's kmemleak scan);
 * - a view is a complete stats file: the source's header format and id,
 *   the selected descriptors in the order asked, a compact data block;
 *   its values equal the full file's for an idle source (vCPU, VM with
 *   aggregates, the system), for views by name and by index, views of
 *   views, sample_ns and generation;
 * - a read of a view is one snapshot while its vCPU runs;
 * - fdinfo "statsfd-view:", O_RDONLY | O_CLOEXEC, mmap -> ENODEV; a view
 *   pins the VM (still reads once everything else is closed, polls
 *   EPOLLHUP) and polls like its source with its own generation.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>

#include "kselftest_harness.h"
#include "statsfd_vm_util.h"

#define IDLE POLLIN
#define CHANGED (POLLIN | POLLPRI | POLLERR)
#define HUNG (POLLIN | POLLHUP)

static int state(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLPRI };

	return poll(&p, 1, 0) == 1 ? p.revents : -1;
}

static int view_ioctl(int fd, __u32 flags, __u32 count, const void *list)
{
	struct statsfd_view_args args = {
		.flags = flags,
		.count = count,
		.list = (__u64)(uintptr_t)list,
	};

	return ioctl(fd, STATSFD_IOC_VIEW, &args);
}

/* A view of @fd selecting @names (NULL-terminated lists are not used). */
static int view_names(int fd, const char *const *names, __u32 n)
{
	__u64 list[64];
	__u32 i;

	if (n > 64)
		return -1;
	for (i = 0; i < n; i++)
		list[i] = (__u64)(uintptr_t)names[i];
	return view_ioctl(fd, 0, n, list);
}

static int view_index(int fd, const __u32 *idx, __u32 n)
{
	return view_ioctl(fd, STATSFD_VIEW_BY_INDEX, n, idx);
}

/* Index of stat @name in @s, or -1. */
static int desc_index(const struct sfile *s, const char *name)
{
	unsigned int i;

	for (i = 0; i < s->hdr.num_desc; i++)
		if (!strcmp(sfile_desc(s, i)->name, name))
			return i;
	return -1;
}

/*
 * @view is a view of @full selecting @names, in that order: its header,
 * id and descriptors are those of a complete stats file of its own, and
 * its values equal @full's, read just before (the source is idle), but
 * sample_ns: taken anew by the view's read, no earlier than @full's.
 */
static void expect_view_of(struct __test_metadata *_metadata, int full,
			   int view, const char *const *names, int n)
{
	struct sfile f, v;
	__u32 off = 0;
	__u64 t1;
	char *buf;
	int i, k;

	ASSERT_EQ(0, sfile_parse(full, &f));
	ASSERT_EQ(0, sfile_parse(view, &v));
	EXPECT_EQ(0, v.hdr.flags);
	EXPECT_EQ(f.hdr.name_size, v.hdr.name_size);
	EXPECT_EQ(n, v.hdr.num_desc);
	EXPECT_EQ(24, v.hdr.id_offset);
	EXPECT_EQ(f.hdr.data_offset, v.hdr.data_offset);
	EXPECT_EQ(0, memcmp(f.id, v.id, f.hdr.name_size));
	for (i = 0; i < n && i < (int)v.hdr.num_desc; i++) {
		const struct statsfd_desc *d = sfile_desc(&v, i);
		const struct statsfd_desc *o = sfile_find(&f, names[i]);

		ASSERT_NE(NULL, o)
		{
			TH_LOG("no %s in the full file", names[i]);
		}
		EXPECT_STREQ(names[i], d->name);
		EXPECT_EQ(o->flags, d->flags);
		EXPECT_EQ(o->exponent, d->exponent);
		EXPECT_EQ(o->size, d->size);
		EXPECT_EQ(o->bucket_size, d->bucket_size);
		/* the name zero-padded, as in the full file */
		EXPECT_EQ(0, memcmp(o->name, d->name, f.hdr.name_size));
		EXPECT_EQ(off, d->offset)
		{
			TH_LOG("%s", names[i]);
		}
		off += d->size * 8;
	}
	EXPECT_EQ(v.hdr.data_offset + off, v.hdr.desc_offset);
	EXPECT_EQ(off, v.data_size);
	EXPECT_EQ(v.hdr.desc_offset + n * v.stride, v.size);
	EXPECT_EQ((off_t)v.size, lseek(view, 0, SEEK_END));
	/* The file ends there. */
	buf = malloc(v.size + 64);
	ASSERT_NE(NULL, buf);
	EXPECT_EQ((ssize_t)v.size, pread(view, buf, v.size + 64, 0));
	free(buf);

	ASSERT_EQ(0, sfile_read_data(full, &f));
	ASSERT_EQ(0, sfile_read_data(view, &v));
	t1 = boottime_ns();
	for (i = 0; i < n && i < (int)v.hdr.num_desc; i++) {
		const struct statsfd_desc *d = sfile_desc(&v, i);
		const struct statsfd_desc *o = sfile_find(&f, names[i]);

		for (k = 0; k < d->size; k++) {
			__u64 got = v.data[d->offset / 8 + k];
			__u64 want = f.data[o->offset / 8 + k];

			if (!strcmp(names[i], STATSFD_STAT_SAMPLE_NS)) {
				EXPECT_LE(want, got);
				EXPECT_GE(t1, got);
				continue;
			}
			EXPECT_EQ(want, got)
			{
				TH_LOG("%s[%d]", names[i], k);
			}
		}
	}
	sfile_free(&f);
	sfile_free(&v);
}

/* The descriptor indices of @names in @fd's file. */
static void indices_of(struct __test_metadata *_metadata, int fd,
		       const char *const *names, int n, __u32 *idx)
{
	struct sfile s;
	int i;

	ASSERT_EQ(0, sfile_parse(fd, &s));
	for (i = 0; i < n; i++) {
		int k = desc_index(&s, names[i]);

		ASSERT_LE(0, k)
		{
			TH_LOG("no %s", names[i]);
		}
		idx[i] = k;
	}
	sfile_free(&s);
}

/* ---------------------------------------------------------------------
 * Bad input
 */

FIXTURE(bad)
{
	struct vm_env e;
	int fd; /* the stats fd under test */
	struct sfile s;
	char *none; /* a PROT_NONE page */
	char *edge; /* a page followed by none */
	long page;
	__u64 fds_open; /* the device's stats_fds_open after setup */
	bool debugfs; /* the debugfs parameter, to restore */
};

FIXTURE_VARIANT(bad)
{
	enum kind kind;
};

/* A variant is a definition, not a call: keep it on one line. */
/* clang-format off */
FIXTURE_VARIANT_ADD(bad, system) { .kind = SYSTEM };
FIXTURE_VARIANT_ADD(bad, vm) { .kind = VM };
FIXTURE_VARIANT_ADD(bad, vcpu) { .kind = VCPU };
/* clang-format on */

FIXTURE_SETUP(bad)
{
	struct statsfd_vm_run run = { .io_exits = 3 };

	self->fd = -1;
	self->page = sysconf(_SC_PAGESIZE);
	/* No text view: VMs come faster without (not what is tested here). */
	self->debugfs = debugfs_param_get();
	ASSERT_EQ(0, debugfs_param_set(false));
	ASSERT_VM_ENV(&self->e, -1, 2, &run, 0);
	self->fd = vm_env_kind_fd(&self->e, variant->kind, 1);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, sfile_parse(self->fd, &self->s));
	ASSERT_LE(3, self->s.hdr.num_desc);
	self->none = mmap(NULL, self->page, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->none);
	self->edge = mmap(NULL, 2 * self->page, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->edge);
	ASSERT_EQ(0, munmap(self->edge + self->page, self->page));
	self->fds_open = sys_stat("stats_fds_open");
}

FIXTURE_TEARDOWN(bad)
{
	if (self->none && self->none != MAP_FAILED)
		munmap(self->none, self->page);
	if (self->edge && self->edge != MAP_FAILED)
		munmap(self->edge, self->page);
	sfile_free(&self->s);
	close_fd(&self->fd);
	vm_env_close(&self->e);
	debugfs_param_set(self->debugfs);
}

/* Name of stat @i of the file under test. */
static const char *bad_name(FIXTURE_DATA(bad) * self, unsigned int i)
{
	return sfile_desc(&self->s, i)->name;
}

/*
 * STATSFD_IOC_VIEW with @args fails with @err, every time (a few
 * rounds, so that a leak would be worth kmemleak's notice), installing
 * no fd and opening no stats file.
 */
static void expect_fail(struct __test_metadata *_metadata,
			FIXTURE_DATA(bad) * self, const void *args, int err)
{
	int i, ret, next = next_fd();

	for (i = 0; i < 16; i++) {
		errno = 0;
		ret = ioctl(self->fd, STATSFD_IOC_VIEW, args);
		if (ret >= 0)
			close(ret);
		ASSERT_EQ(-1, ret);
		ASSERT_EQ(err, errno)
		{
			TH_LOG("errno %d (%s), want %d", errno,
			       strerror(errno), err);
		}
	}
	EXPECT_EQ(next, next_fd());
	EXPECT_EQ(self->fds_open, sys_stat("stats_fds_open"));
	/* The fd is as good as before. */
	EXPECT_EQ(IDLE, state(self->fd));
}

/* STATSFD_IOC_VIEW with @args makes a view (closed again). */
static void expect_view(struct __test_metadata *_metadata,
			FIXTURE_DATA(bad) * self, const void *args)
{
	int fd = ioctl(self->fd, STATSFD_IOC_VIEW, args);

	EXPECT_LE(0, fd)
	{
		TH_LOG("errno %d (%s)", errno, strerror(errno));
	}
	if (fd >= 0)
		close(fd);
}

static void args_names(struct statsfd_view_args *a, __u64 *list,
		       const char *const *names, __u32 n)
{
	__u32 i;

	memset(a, 0, sizeof(*a));
	for (i = 0; i < n; i++)
		list[i] = (__u64)(uintptr_t)names[i];
	a->count = n;
	a->list = (__u64)(uintptr_t)list;
}

static void args_index(struct statsfd_view_args *a, const __u32 *idx, __u32 n)
{
	memset(a, 0, sizeof(*a));
	a->flags = STATSFD_VIEW_BY_INDEX;
	a->count = n;
	a->list = (__u64)(uintptr_t)idx;
}

TEST_F(bad, unknown_flags_einval)
{
	static const __u32 idx[] = { 0 };
	struct statsfd_view_args a;

	args_index(&a, idx, 1);
	a.flags = 1U << 1;
	expect_fail(_metadata, self, &a, EINVAL);
	a.flags = STATSFD_VIEW_BY_INDEX | (1U << 31);
	expect_fail(_metadata, self, &a, EINVAL);
	a.flags = ~0U;
	expect_fail(_metadata, self, &a, EINVAL);
	/* The same with the one flag there is: a view. */
	a.flags = STATSFD_VIEW_BY_INDEX;
	expect_view(_metadata, self, &a);
}

TEST_F(bad, reserved_nonzero_einval)
{
	static const __u32 idx[] = { 0 };
	struct statsfd_view_args a;

	args_index(&a, idx, 1);
	a.reserved[0] = 1;
	expect_fail(_metadata, self, &a, EINVAL);
	a.reserved[0] = 0;
	a.reserved[1] = 1ULL << 63;
	expect_fail(_metadata, self, &a, EINVAL);
}

TEST_F(bad, count_zero_einval)
{
	const char *names[1] = { bad_name(self, 0) };
	struct statsfd_view_args a;
	__u64 list[1];

	args_names(&a, list, names, 1);
	a.count = 0;
	expect_fail(_metadata, self, &a, EINVAL);
	a.list = 0;
	expect_fail(_metadata, self, &a, EINVAL);
}

TEST_F(bad, count_above_num_desc_e2big)
{
	__u32 n = self->s.hdr.num_desc, i, *idx;
	struct statsfd_view_args a;

	idx = calloc(n + 1, sizeof(*idx));
	ASSERT_NE(NULL, idx);
	for (i = 0; i <= n; i++)
		idx[i] = i % n;
	args_index(&a, idx, n + 1);
	expect_fail(_metadata, self, &a, E2BIG);
	/* Before the list is looked at. */
	a.count = UINT32_MAX;
	a.list = 0;
	expect_fail(_metadata, self, &a, E2BIG);
	a.count = STATSFD_VIEW_COUNT_MAX + 1;
	expect_fail(_metadata, self, &a, E2BIG);
	free(idx);
}

TEST_F(bad, bad_args_pointer_efault)
{
	static const __u32 idx[] = { 0 };
	struct statsfd_view_args a;
	char *straddle;

	expect_fail(_metadata, self, NULL, EFAULT);
	expect_fail(_metadata, self, self->none, EFAULT);
	/* All but the last 8 bytes readable. */
	args_index(&a, idx, 1);
	straddle = self->edge + self->page - sizeof(a) + 8;
	memcpy(straddle, &a, sizeof(a) - 8);
	expect_fail(_metadata, self, straddle, EFAULT);
}

TEST_F(bad, bad_list_pointer_efault)
{
	const char *names[2] = { bad_name(self, 0), bad_name(self, 1) };
	struct statsfd_view_args a;
	__u64 list[2], *end;

	args_names(&a, list, names, 2);
	a.list = 0;
	expect_fail(_metadata, self, &a, EFAULT);
	a.list = (__u64)(uintptr_t)self->none;
	expect_fail(_metadata, self, &a, EFAULT);
	/* A good first entry, the second past the end of the mapping. */
	end = (__u64 *)(self->edge + self->page) - 1;
	*end = list[0];
	a.list = (__u64)(uintptr_t)end;
	expect_fail(_metadata, self, &a, EFAULT);

	/* The same for indices. */
	a.flags = STATSFD_VIEW_BY_INDEX;
	a.list = (__u64)(uintptr_t)self->none;
	expect_fail(_metadata, self, &a, EFAULT);
	*(__u32 *)(self->edge + self->page - 4) = 0;
	a.list = (__u64)(uintptr_t)(self->edge + self->page - 4);
	expect_fail(_metadata, self, &a, EFAULT);
}

TEST_F(bad, bad_name_pointer_efault)
{
	const char *names[2] = { bad_name(self, 0), NULL };
	struct statsfd_view_args a;
	__u64 list[2];

	args_names(&a, list, names, 2);
	expect_fail(_metadata, self, &a, EFAULT);
	list[1] = (__u64)(uintptr_t)self->none;
	expect_fail(_metadata, self, &a, EFAULT);
	/* A kernel address. */
	list[1] = 0xffffffff81000000ULL;
	expect_fail(_metadata, self, &a, EFAULT);
	/* A name running into the unmapped page before its NUL. */
	memcpy(self->edge + self->page - 3, "exi", 3);
	list[1] = (__u64)(uintptr_t)(self->edge + self->page - 3);
	expect_fail(_metadata, self, &a, EFAULT);
}

TEST_F(bad, unknown_name_enoent)
{
	const char *names[3] = { bad_name(self, 1), bad_name(self, 0),
				"no_such_stat" };
	char prefix[64], longer[64];
	struct statsfd_view_args a;
	__u64 list[3];

	args_names(&a, list, names, 3);
	expect_fail(_metadata, self, &a, ENOENT);
	/* A stat of another schema. */
	names[2] = variant->kind == SYSTEM ? "io_exits" : "vms_alive";
	args_names(&a, list, names, 3);
	expect_fail(_metadata, self, &a, ENOENT);
	/* The empty name, a prefix of a name, a name with more after it. */
	names[2] = "";
	args_names(&a, list, names, 3);
	expect_fail(_metadata, self, &a, ENOENT);
	snprintf(prefix, sizeof(prefix), "%s", bad_name(self, 0));
	prefix[strlen(prefix) - 1] = 0;
	names[2] = prefix;
	args_names(&a, list, names, 3);
	expect_fail(_metadata, self, &a, ENOENT);
	snprintf(longer, sizeof(longer), "%s_", bad_name(self, 2));
	names[2] = longer;
	args_names(&a, list, names, 3);
	expect_fail(_metadata, self, &a, ENOENT);
}

TEST_F(bad, index_out_of_range_enoent)
{
	__u32 idx[] = { 1, 0, self->s.hdr.num_desc };
	struct statsfd_view_args a;

	args_index(&a, idx, 3);
	expect_fail(_metadata, self, &a, ENOENT);
	idx[2] = UINT32_MAX;
	expect_fail(_metadata, self, &a, ENOENT);
	idx[2] = 1U << 31;
	expect_fail(_metadata, self, &a, ENOENT);
}

TEST_F(bad, name_without_nul_enametoolong)
{
	__u32 ns = self->s.hdr.name_size;
	const char *names[2] = { bad_name(self, 0), NULL };
	struct statsfd_view_args a;
	__u64 list[2];
	char *name;

	/* name_size characters and the NUL after them. */
	name = calloc(1, ns + 1);
	ASSERT_NE(NULL, name);
	memset(name, 'x', ns);
	names[1] = name;
	args_names(&a, list, names, 2);
	expect_fail(_metadata, self, &a, ENAMETOOLONG);
	/* A real name, then more: still name_size bytes without a NUL. */
	memcpy(name, bad_name(self, 0), strlen(bad_name(self, 0)));
	expect_fail(_metadata, self, &a, ENAMETOOLONG);
	/* Ending at the end of the mapping: never read past name_size. */
	memset(self->edge + self->page - ns, 'y', ns);
	list[1] = (__u64)(uintptr_t)(self->edge + self->page - ns);
	expect_fail(_metadata, self, &a, ENAMETOOLONG);
	/* One character fewer fits: then it is only unknown. */
	name[ns - 1] = 0;
	list[1] = (__u64)(uintptr_t)name;
	expect_fail(_metadata, self, &a, ENOENT);
	free(name);
}

TEST_F(bad, same_stat_twice_eexist)
{
	const char *names[3] = { bad_name(self, 0), bad_name(self, 1),
				bad_name(self, 0) };
	static const __u32 idx[] = { 2, 1, 0, 1 };
	struct statsfd_view_args a;
	__u64 list[3];

	args_names(&a, list, names, 3);
	expect_fail(_metadata, self, &a, EEXIST);
	args_index(&a, idx, 4);
	expect_fail(_metadata, self, &a, EEXIST);
}

TEST_F(bad, too_many_fds_emfile)
{
	static const __u32 idx[] = { 2, 0 };
	struct statsfd_view_args a;
	struct rlimit old, lim;
	int fd;

	args_index(&a, idx, 2);
	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &old));
	lim = old;
	lim.rlim_cur = next_fd();
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &lim));
	errno = 0;
	fd = ioctl(self->fd, STATSFD_IOC_VIEW, &a);
	EXPECT_EQ(-1, fd);
	EXPECT_EQ(EMFILE, errno);
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &old));
	EXPECT_EQ(self->fds_open, sys_stat("stats_fds_open"));
	/* With room again, the same arguments make a view. */
	expect_view(_metadata, self, &a);
}

TEST_F(bad, other_ioctl_enotty)
{
	static const __u32 idx[] = { 0 };
	struct statsfd_view_args a;

	args_index(&a, idx, 1);
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, _IOW(STATSFD_IOC_MAGIC, 0x02,
					   struct statsfd_view_args), &a));
	EXPECT_EQ(ENOTTY, errno);
	/* The right number with the wrong size is another ioctl. */
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, _IOW(STATSFD_IOC_MAGIC, 0x01, __u64), &a));
	EXPECT_EQ(ENOTTY, errno);
	errno = 0;
	EXPECT_EQ(-1, ioctl(self->fd, STATSFD_VM_GET_STATS_FD, 0));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(self->fds_open, sys_stat("stats_fds_open"));
}

/* ---------------------------------------------------------------------
 * Views of idle sources
 */

FIXTURE(views)
{
	struct vm_env e;
	bool debugfs;
};

FIXTURE_SETUP(views)
{
	struct statsfd_vm_run run = {
		.io_exits = 30,
		.mmio_exits = 7,
		.hypercall_exits = 5,
		.halt_exits = 3,
		.io_bytes = 16,
		.cycles_per_exit = 1000,
		.halt_timeout_ns = 20000,
	};

	self->debugfs = debugfs_param_get();
	ASSERT_EQ(0, debugfs_param_set(false));
	ASSERT_VM_ENV(&self->e, -1, 2, &run, VM_ENV_STATS);
}

FIXTURE_TEARDOWN(views)
{
	vm_env_close(&self->e);
	debugfs_param_set(self->debugfs);
}

static const char *const vcpu_some[] = {
	"halt_wait_hist", "exits", STATSFD_STAT_GENERATION, "io_exits",
	"run_exits_hist", STATSFD_STAT_SAMPLE_NS, "guest_cycles", "blocking",
};

#define NR_SOME ARRAY_SIZE(vcpu_some)

/* An idle vCPU: by name and by index, the full file's values. */
TEST_F(views, idle_vcpu_view_equals_full_file)
{
	int full = self->e.vcpu_stats[1], a, b;
	__u32 idx[NR_SOME];
	unsigned char *ia, *ib;
	struct sfile s;
	long long ns;
	size_t n;

	a = view_names(full, vcpu_some, NR_SOME);
	ASSERT_LE(0, a);
	expect_view_of(_metadata, full, a, vcpu_some, NR_SOME);
	EXPECT_EQ(30 + 7 + 5 + 3, stat_get(a, "exits"));

	indices_of(_metadata, full, vcpu_some, NR_SOME, idx);
	b = view_index(full, idx, NR_SOME);
	ASSERT_LE(0, b);
	expect_view_of(_metadata, full, b, vcpu_some, NR_SOME);
	/* The same file, byte for byte, but sample_ns. */
	ASSERT_EQ(0, sfile_parse(a, &s));
	ns = sfile_off(&s, STATSFD_STAT_SAMPLE_NS);
	n = s.size;
	sfile_free(&s);
	ASSERT_LT(0, ns);
	ia = malloc(n);
	ib = malloc(n);
	ASSERT_NE(NULL, ia);
	ASSERT_NE(NULL, ib);
	ASSERT_EQ((ssize_t)n, pread(a, ia, n, 0));
	ASSERT_EQ((ssize_t)n, pread(b, ib, n, 0));
	EXPECT_EQ(0, image_cmp(ib, ia, 0, n, ns));
	free(ia);
	free(ib);
	close(a);
	close(b);
}

/* Every stat of the VM, reversed: aggregates, sample_ns and generation. */
TEST_F(views, every_vm_stat_reversed_equals_full_file)
{
	int full = self->e.vm_stats, v, i, n;
	const char **names;
	__u32 *idx;
	struct sfile s;

	ASSERT_EQ(0, sfile_parse(full, &s));
	n = s.hdr.num_desc;
	names = calloc(n, sizeof(*names));
	idx = calloc(n, sizeof(*idx));
	ASSERT_NE(NULL, names);
	ASSERT_NE(NULL, idx);
	for (i = 0; i < n; i++) {
		idx[i] = n - 1 - i;
		names[i] = sfile_desc(&s, n - 1 - i)->name;
	}
	v = view_index(full, idx, n);
	ASSERT_LE(0, v);
	expect_view_of(_metadata, full, v, names, n);
	EXPECT_EQ(s.size, lseek(v, 0, SEEK_END));
	close(v);
	free(idx);
	free(names);
	sfile_free(&s);
}

/*
 * Views of views select among the view's stats, by its own indices and
 * names; the result is a view of the source.
 */
TEST_F(views, view_of_view_equals_full_file)
{
	static const __u32 b_idx[] = { 4, 0, 5 };
	static const char *const b_names[] = { "run_exits_hist",
					       "halt_wait_hist",
					       STATSFD_STAT_SAMPLE_NS };
	static const char *const c_names[] = { STATSFD_STAT_SAMPLE_NS,
					       "run_exits_hist" };
	static const char *const not_in_a[] = { "halt_exits" };
	int full = self->e.vcpu_stats[0], a, b, c;

	a = view_names(full, vcpu_some, NR_SOME);
	ASSERT_LE(0, a);
	b = view_index(a, b_idx, 3);
	ASSERT_LE(0, b);
	expect_view_of(_metadata, full, b, b_names, 3);
	c = view_names(b, c_names, 2);
	ASSERT_LE(0, c);
	expect_view_of(_metadata, full, c, c_names, 2);
	/* A stat of the source that the view does not have. */
	errno = 0;
	EXPECT_EQ(-1, view_names(a, not_in_a, 1));
	EXPECT_EQ(ENOENT, errno);
	close(c);
	close(b);
	close(a);
}

/* A VM's view with aggregates: equal to the full file, and to the vCPUs. */
TEST_F(views, view_with_aggregates_equals_full_file)
{
	static const char *const names[] = {
		"exits_sum", "runs_count_nonzero", "halt_wait_hist_sum",
		"exits_avg", "stats_fds_open", STATSFD_STAT_GENERATION,
		"exits_max", "vcpus_created", "io_bytes_sum",
	};
	int full = self->e.vm_stats, v;

	v = view_names(full, names, 9);
	ASSERT_LE(0, v);
	expect_view_of(_metadata, full, v, names, 9);
	EXPECT_EQ(2 * 45, stat_get(v, "exits_sum"));
	EXPECT_EQ(2, stat_get(v, "runs_count_nonzero"));
	EXPECT_EQ(2 * 30 * 16, stat_get(v, "io_bytes_sum"));
	EXPECT_EQ(2, stat_get(v, "vcpus_created"));
	close(v);
}

/* The system source (no update windows): a view of it too. */
TEST_F(views, system_view_equals_full_file)
{
	static const char *const names[] = { "vcpus_created_sum", "vms_alive",
					     "vms_created" };
	int sys = stats_fd(self->e.dev), v;

	ASSERT_LE(0, sys);
	v = view_names(sys, names, 3);
	ASSERT_LE(0, v);
	expect_view_of(_metadata, sys, v, names, 3);
	close(v);
	close(sys);
}

/* sample_ns and generation alone: no stat copied, still one snapshot. */
TEST_F(views, sample_ns_and_generation)
{
	static const char *const names[] = { STATSFD_STAT_GENERATION,
					     STATSFD_STAT_SAMPLE_NS };
	int full = self->e.vcpu_stats[0], v;
	__u64 val[2], t0, t1, first;

	v = view_names(full, names, 2);
	ASSERT_LE(0, v);
	expect_view_of(_metadata, full, v, names, 2);
	t0 = boottime_ns();
	ASSERT_EQ(16, pread(v, val, 16, 24 + 48));
	t1 = boottime_ns();
	EXPECT_EQ(stat_get(full, STATSFD_STAT_GENERATION), val[0]);
	EXPECT_LE(t0, val[1]);
	EXPECT_GE(t1, val[1]);
	first = val[1];
	usleep(1000);
	ASSERT_EQ(16, pread(v, val, 16, 24 + 48));
	EXPECT_LT(first, val[1]);
	close(v);
}

static bool fdinfo_has(int fd, const char *line)
{
	char path[64], buf[1024];

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return false;
	return !!strstr(buf, line);
}

TEST_F(views, fdinfo_flags_and_mmap)
{
	static const char *const names[] = { "exits", "io_exits", "runs" };
	static const char *const vm_names[] = { "runs_sum" };
	int full = self->e.vcpu_stats[0], v, vm_v;
	char line[128];
	struct sfile s;
	void *p;

	v = view_names(full, names, 3);
	ASSERT_LE(0, v);
	ASSERT_EQ(0, sfile_parse(full, &s));
	EXPECT_TRUE(fdinfo_has(v, "statsfd-view:\t3\n"));
	snprintf(line, sizeof(line), "statsfd-id:\t%s\n", s.id);
	EXPECT_TRUE(fdinfo_has(v, line));
	EXPECT_TRUE(fdinfo_has(v, "statsfd-schema:\tstatsfd_vm.vcpu\n"));
	EXPECT_FALSE(fdinfo_has(full, "statsfd-view:"));
	sfile_free(&s);

	/* Read-only, close-on-exec, like every stats fd. */
	EXPECT_EQ(O_RDONLY, fcntl(v, F_GETFL) & O_ACCMODE);
	EXPECT_EQ(FD_CLOEXEC, fcntl(v, F_GETFD) & FD_CLOEXEC);
	errno = 0;
	EXPECT_EQ(-1, write(v, "x", 1));
	EXPECT_EQ(EBADF, errno);

	/* A view is read with pread only; its source maps. */
	errno = 0;
	p = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, v, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(ENODEV, errno);
	vm_v = view_names(self->e.vm_stats, vm_names, 1);
	ASSERT_LE(0, vm_v);
	errno = 0;
	p = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ, MAP_PRIVATE, vm_v, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(ENODEV, errno);
	p = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, full, 0);
	EXPECT_NE(MAP_FAILED, p);
	if (p != MAP_FAILED)
		munmap(p, sysconf(_SC_PAGESIZE));
	close(vm_v);
	close(v);
}

/*
 * A view pins the VM like the stats fd it came from: with every other fd
 * closed it still reads the last values and polls EPOLLHUP; the VM goes
 * with the last view.
 */
TEST_F(views, view_pins_the_vm)
{
	static const char *const vcpu_names[] = { "exits", "io_bytes" };
	static const char *const vm_names[] = { "exits_sum",
						"vcpus_created" };
	__u64 alive, before[4], after[4];
	int v[2];

	v[0] = view_names(self->e.vcpu_stats[1], vcpu_names, 2);
	v[1] = view_names(self->e.vm_stats, vm_names, 2);
	ASSERT_LE(0, v[0]);
	ASSERT_LE(0, v[1]);
	ASSERT_EQ(16, pread(v[0], before, 16, 24 + 48));
	ASSERT_EQ(16, pread(v[1], before + 2, 16, 24 + 48));
	EXPECT_EQ(45, before[0]);
	EXPECT_EQ(30 * 16, before[1]);
	EXPECT_EQ(90, before[2]);
	EXPECT_EQ(2, before[3]);
	EXPECT_EQ(IDLE, state(v[0]));
	EXPECT_EQ(IDLE, state(v[1]));
	alive = sys_stat("vms_alive");

	vm_env_close(&self->e);
	EXPECT_EQ(alive, sys_stat("vms_alive"));
	ASSERT_EQ(16, pread(v[0], after, 16, 24 + 48));
	ASSERT_EQ(16, pread(v[1], after + 2, 16, 24 + 48));
	EXPECT_EQ(0, memcmp(before, after, sizeof(before)));
	EXPECT_EQ(HUNG, state(v[0]));
	EXPECT_EQ(HUNG, state(v[1]));

	close(v[1]);
	EXPECT_EQ(alive, sys_stat("vms_alive"));
	EXPECT_EQ(45, stat_get(v[0], "exits"));
	close(v[0]);
	EXPECT_EQ(alive - 1, sys_stat("vms_alive"));
}

/* A view polls like its source, with a generation of its own. */
TEST_F(views, view_polls_like_its_source)
{
	static const char *const vm_names[] = { "exits_avg" };
	static const char *const vcpu_names[] = { "exits" };
	int vm_v, vcpu_v, extra;
	__u64 val;

	vm_v = view_names(self->e.vm_stats, vm_names, 1);
	vcpu_v = view_names(self->e.vcpu_stats[0], vcpu_names, 1);
	ASSERT_LE(0, vm_v);
	ASSERT_LE(0, vcpu_v);
	EXPECT_EQ(IDLE, state(vm_v));

	extra = vcpu_create(self->e.vm, 2);
	ASSERT_LE(0, extra);
	EXPECT_EQ(CHANGED, state(vm_v));
	EXPECT_EQ(CHANGED, state(self->e.vm_stats));
	EXPECT_EQ(IDLE, state(vcpu_v));
	/* The source's fd read: the view's event stays. */
	EXPECT_EQ(8, pread(self->e.vm_stats, &val, 8, 0));
	EXPECT_EQ(IDLE, state(self->e.vm_stats));
	EXPECT_EQ(CHANGED, state(vm_v));
	/* Its descriptor only: still there; its data: gone. */
	EXPECT_EQ(8, pread(vm_v, &val, 8, 24 + 48 + 8));
	EXPECT_EQ(CHANGED, state(vm_v));
	EXPECT_EQ(8, pread(vm_v, &val, 8, 24 + 48));
	EXPECT_EQ(IDLE, state(vm_v));
	/* Three vCPUs now, one of them never ran. */
	EXPECT_EQ(90 / 3, val);
	close(extra);
	close(vcpu_v);
	close(vm_v);
}

/* ---------------------------------------------------------------------
 * A view of a running vCPU
 */

#define SNAP_IO 200
#define SNAP_MMIO 50
#define SNAP_HCALL 50
#define SNAP_IO_BYTES 8

struct snap_runner {
	pthread_t thread;
	int vcpu;
	atomic_int stop;
	unsigned long runs;
	unsigned long errors;
};

static void *snap_run_fn(void *arg)
{
	struct snap_runner *r = arg;

	while (!atomic_load(&r->stop)) {
		struct statsfd_vm_run run = {
			.io_exits = SNAP_IO,
			.mmio_exits = SNAP_MMIO,
			.hypercall_exits = SNAP_HCALL,
			.io_bytes = SNAP_IO_BYTES,
		};

		if (vcpu_run(r->vcpu, &run))
			r->errors++;
		else
			r->runs++;
	}
	return NULL;
}

/*
 * Each read of a view is one snapshot of the values it selects, also while
 * the vCPU runs: exits is the sum of the exits by reason, io_bytes follows
 * io_exits, generation and exits never go back.  Some reads land inside a
 * run (exits between two runs' totals): the race was there.
 */
TEST_F_TIMEOUT(views, view_read_is_one_snapshot, 120)
{
	static const char *const names[] = {
		"io_bytes", "halt_exits", "exits", "hypercall_exits",
		"signal_exits", "mmio_exits", "io_exits",
		STATSFD_STAT_GENERATION,
	};
	struct snap_runner r = { .vcpu = self->e.vcpu[0] };
	unsigned long reads = 0, mid_run = 0, bad = 0, back = 0;
	__u64 v[8], base, base_io, last_exits = 0, last_gen = 0, t_end;
	int view;

	view = view_names(self->e.vcpu_stats[0], names, 8);
	ASSERT_LE(0, view);
	ASSERT_EQ(64, pread(view, v, 64, 24 + 48));
	base = v[2];
	base_io = v[0];
	ASSERT_EQ(0, pthread_create(&r.thread, NULL, snap_run_fn, &r));
	t_end = now_ns() + stress_scale(1, 5) * 1000000000ULL;
	while (now_ns() < t_end || reads < 100) {
		if (pread(view, v, 64, 24 + 48) != 64) {
			bad++;
			break;
		}
		reads++;
		if (v[2] != v[1] + v[3] + v[4] + v[5] + v[6] ||
		    v[0] - base_io != (v[6] - 30) * SNAP_IO_BYTES)
			bad++;
		if (v[2] < last_exits || v[7] < last_gen)
			back++;
		if ((v[2] - base) % (SNAP_IO + SNAP_MMIO + SNAP_HCALL))
			mid_run++;
		last_exits = v[2];
		last_gen = v[7];
	}
	atomic_store(&r.stop, 1);
	pthread_join(r.thread, NULL);
	TH_LOG("%lu reads, %lu inside a run, %lu runs", reads, mid_run,
	       r.runs);
	EXPECT_EQ(0, bad);
	EXPECT_EQ(0, back);
	EXPECT_EQ(0, r.errors);
	EXPECT_LE(1, r.runs);
	EXPECT_LE(1, mid_run);
	close(view);
}

TEST_HARNESS_MAIN
