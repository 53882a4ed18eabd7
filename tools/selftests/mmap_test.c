// SPDX-License-Identifier: GPL-2.0
/*
 * mmap_test - the read-only mapping of a stats fd's values, on a VM and on a vCPU stats fd:
 *
 * - every bad input, each its own test with its errno: PROT_WRITE shared
 *   and private (EACCES), mprotect() to PROT_WRITE (EACCES), PROT_EXEC
 *   (EACCES), mremap() growth (EFAULT), an offset or a length past the
 *   area (EINVAL), the usual mmap() checks (EINVAL), a write through the
 *   mapping (SIGSEGV), and the system fd, which is not mappable (ENODEV);
 * - the header as documented, data_size the plain stats of the
 *   descriptors; the values equal pread()'s on an idle source and follow
 *   it without remapping, also after MADV_DONTNEED;
 * - lifetime: fork() (the child reads the same live pages), SCM_RIGHTS to
 *   a uid-nobody process that maps the fd, every fd closed (the mapping
 *   reads on, values frozen), munmap() (only then is the VM freed and its
 *   stats file gone), rmmod refused while mapped.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <grp.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "statsfd_vm_util.h"

FIXTURE(map)
{
	struct vm_env e; /* a VM with vCPU 0, which has run; kicked once */
	int sys; /* a system stats fd, opened before the VM */
	struct sfile sys_s; /* @sys parsed */
	__u64 vms0, vcpus0, fds0; /* vms_alive, vcpus_alive, stats_fds_open */
	int fd; /* the stats fd under test */
	struct sfile s; /* @fd parsed */
	size_t plain; /* bytes of plain stats, from the descriptors */
	size_t area; /* bytes of the values area, whole pages */
	long page;
};

FIXTURE_VARIANT(map)
{
	enum kind kind;
};

/* clang-format off */
FIXTURE_VARIANT_ADD(map, vm) { .kind = VM };
FIXTURE_VARIANT_ADD(map, vcpu) { .kind = VCPU };
/* clang-format on */

/* What @fd's source counts: a vCPU's exits, a VM's kicks. */
static const char *key_stat(enum kind kind)
{
	return kind == VCPU ? "exits" : "kicks";
}

/* Move the source under test: a run of the vCPU, a kick on the VM. */
static int poke(struct vm_env *e, enum kind kind)
{
	return kind == VCPU ? vcpu_run_exits(e->vcpu[0], 3, 2, 1) :
			      vcpu_kick(e->vcpu[0]);
}

/* A stat of the source's own, in the values area (not sample_ns...). */
static bool is_plain(const struct statsfd_desc *d)
{
	return !(d->flags & STATSFD_AGG_MASK) &&
	       strcmp(d->name, STATSFD_STAT_SAMPLE_NS) &&
	       strcmp(d->name, STATSFD_STAT_GENERATION);
}

FIXTURE_SETUP(map)
{
	struct statsfd_vm_run run = {
		.io_exits = 5,
		.mmio_exits = 3,
		.hypercall_exits = 2,
		.io_bytes = 4,
		.cycles_per_exit = 10,
	};
	unsigned int i;
	int dev;

	self->page = sysconf(_SC_PAGESIZE);
	self->fd = -1;
	self->sys = -1;
	dev = dev_open();
	ASSERT_LE(0, dev);
	self->sys = stats_fd(dev);
	ASSERT_LE(0, self->sys);
	ASSERT_EQ(0, sfile_parse(self->sys, &self->sys_s));
	ASSERT_EQ(0, sfile_read_data(self->sys, &self->sys_s));
	self->vms0 = sfile_val(&self->sys_s, "vms_alive");
	self->vcpus0 = sfile_val(&self->sys_s, "vcpus_alive");
	self->fds0 = sfile_val(&self->sys_s, "stats_fds_open");

	ASSERT_VM_ENV(&self->e, dev, 1, &run, 0);
	self->e.own_dev = true;
	ASSERT_EQ(0, vcpu_kick(self->e.vcpu[0]));
	self->fd = vm_env_kind_fd(&self->e, variant->kind, 0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, sfile_parse(self->fd, &self->s));
	ASSERT_EQ(0, sfile_read_data(self->fd, &self->s));

	/* the plain stats, which the area holds, tile [0, plain) */
	for (i = 0; i < self->s.hdr.num_desc; i++) {
		const struct statsfd_desc *d = sfile_desc(&self->s, i);
		size_t end = d->offset + 8 * d->size;

		if (is_plain(d) && end > self->plain)
			self->plain = end;
	}
	ASSERT_LT(0, self->plain);
	self->area =
		(64 + self->plain + self->page - 1) / self->page * self->page;
}

FIXTURE_TEARDOWN(map)
{
	sfile_free(&self->s);
	sfile_free(&self->sys_s);
	close_fd(&self->fd);
	close_fd(&self->sys);
	vm_env_close(&self->e);
}

/* Map @len bytes at @off of @fd; errno set on MAP_FAILED. */
static void *map_at(int fd, size_t len, int prot, int flags, off_t off)
{
	errno = 0;
	return mmap(NULL, len, prot, flags, fd, off);
}

/*
 * Every plain value of the mapping @mh equals the data last read into
 * @s; returns the number of values that differ (and prints them).
 */
static int map_diff(const struct statsfd_mmap_header *mh, const struct sfile *s)
{
	unsigned int i, k;
	int bad = 0;

	for (i = 0; i < s->hdr.num_desc; i++) {
		const struct statsfd_desc *d = sfile_desc(s, i);

		if (!is_plain(d))
			continue;
		for (k = 0; k < d->size; k++) {
			__u64 want = s->data[d->offset / 8 + k];
			__u64 got = map_val(mh, d->offset / 8 + k);

			if (got == want)
				continue;
			fprintf(stderr, "# %s[%u]: mapped %llu, pread %llu\n",
				d->name, k, (unsigned long long)got,
				(unsigned long long)want);
			bad++;
		}
	}
	return bad;
}

/* ------------------------------------------------------------ bad inputs */

/* A writable mapping (@flags), with and without PROT_READ: EACCES. */
static void expect_map_write_eacces(struct __test_metadata *_metadata,
				    int fd, long page, int flags)
{
	static const int prots[] = { PROT_READ | PROT_WRITE, PROT_WRITE };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(prots); i++) {
		EXPECT_EQ(MAP_FAILED, map_at(fd, page, prots[i], flags, 0));
		EXPECT_EQ(EACCES, errno)
		{
			TH_LOG("prot %#x", prots[i]);
		}
	}
}

/* A writable shared mapping: the fd is O_RDONLY, the VFS says EACCES. */
TEST_F(map, prot_write_shared_eacces)
{
	expect_map_write_eacces(_metadata, self->fd, self->page, MAP_SHARED);
}

/* A writable private mapping would be a copy one could write: EACCES. */
TEST_F(map, prot_write_private_eacces)
{
	expect_map_write_eacces(_metadata, self->fd, self->page, MAP_PRIVATE);
}

/* A read-only mapping never becomes writable, shared or private. */
TEST_F(map, mprotect_write_eacces)
{
	int flags[] = { MAP_SHARED, MAP_PRIVATE };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(flags); i++) {
		const struct statsfd_mmap_header *mh;

		mh = map_at(self->fd, self->page, PROT_READ, flags[i], 0);
		ASSERT_NE(MAP_FAILED, mh);
		errno = 0;
		EXPECT_EQ(-1, mprotect((void *)mh, self->page,
				       PROT_READ | PROT_WRITE));
		EXPECT_EQ(EACCES, errno)
		{
			TH_LOG("%s", i ? "MAP_PRIVATE" : "MAP_SHARED");
		}
		/* still there, still read-only and readable */
		EXPECT_EQ(STATSFD_MMAP_VERSION, mh->version);
		EXPECT_EQ(0, mprotect((void *)mh, self->page, PROT_READ));
		EXPECT_EQ(0, munmap((void *)mh, self->page));
	}
}

/*
 * Nor executable: PROT_EXEC at mmap() is EACCES, shared or private, and
 * so is mprotect() adding it.
 */
TEST_F(map, prot_exec_eacces)
{
	int flags[] = { MAP_SHARED, MAP_PRIVATE };
	const struct statsfd_mmap_header *mh;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(flags); i++) {
		EXPECT_EQ(MAP_FAILED,
			  map_at(self->fd, self->page, PROT_READ | PROT_EXEC,
				 flags[i], 0));
		EXPECT_EQ(EACCES, errno);
		mh = map_at(self->fd, self->page, PROT_READ, flags[i], 0);
		ASSERT_NE(MAP_FAILED, mh);
		errno = 0;
		EXPECT_EQ(-1, mprotect((void *)mh, self->page,
				       PROT_READ | PROT_EXEC));
		EXPECT_EQ(EACCES, errno);
		EXPECT_EQ(STATSFD_MMAP_VERSION, mh->version);
		EXPECT_EQ(0, munmap((void *)mh, self->page));
	}
}

/*
 * The mapping never grows: mremap() to a larger size is EFAULT, in place
 * (with room after it) and moving alike; shrinking it is allowed.
 */
TEST_F(map, mremap_growth_efault)
{
	size_t len = self->area;
	void *room, *m, *r;

	/* reserve room for in-place growth, so only the mapping can refuse */
	room = mmap(NULL, len + self->page, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, room);
	m = mmap(room, len, PROT_READ, MAP_SHARED | MAP_FIXED, self->fd, 0);
	ASSERT_EQ(room, m);
	ASSERT_EQ(0, munmap((char *)room + len, self->page));

	errno = 0;
	EXPECT_EQ(MAP_FAILED, mremap(m, len, len + self->page, 0));
	EXPECT_EQ(EFAULT, errno);
	errno = 0;
	EXPECT_EQ(MAP_FAILED, mremap(m, len, len + self->page, MREMAP_MAYMOVE));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(STATSFD_MMAP_VERSION,
		  ((const struct statsfd_mmap_header *)m)->version);
	if (len > (size_t)self->page) {
		r = mremap(m, len, self->page, 0);
		EXPECT_EQ(m, r);
		len = self->page;
	}
	EXPECT_EQ(0, munmap(m, len));
}

/* An offset at or past the end of the area: EINVAL. */
TEST_F(map, offset_beyond_area_einval)
{
	off_t offs[] = { self->area, self->area + self->page, (off_t)1 << 40 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(offs); i++) {
		EXPECT_EQ(MAP_FAILED, map_at(self->fd, self->page, PROT_READ,
					     MAP_SHARED, offs[i]));
		EXPECT_EQ(EINVAL, errno)
		{
			TH_LOG("offset %lld", (long long)offs[i]);
		}
	}
}

/* A length that runs past the end of the area: EINVAL; the area maps. */
TEST_F(map, length_beyond_area_einval)
{
	void *m;

	EXPECT_EQ(MAP_FAILED, map_at(self->fd, self->area + self->page,
				     PROT_READ, MAP_SHARED, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED,
		  map_at(self->fd, 64 * self->page, PROT_READ, MAP_PRIVATE, 0));
	EXPECT_EQ(EINVAL, errno);
	/* the last page of the area, and two pages from there */
	m = map_at(self->fd, self->page, PROT_READ, MAP_SHARED,
		   self->area - self->page);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(0, munmap(m, self->page));
	EXPECT_EQ(MAP_FAILED, map_at(self->fd, 2 * self->page, PROT_READ,
				     MAP_SHARED, self->area - self->page));
	EXPECT_EQ(EINVAL, errno);
	/* exactly the area is fine */
	m = map_at(self->fd, self->area, PROT_READ, MAP_SHARED, 0);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(0, munmap(m, self->area));
}

/* What every mmap() checks first: length 0, an unaligned offset, no type. */
TEST_F(map, usual_mmap_checks_einval)
{
	EXPECT_EQ(MAP_FAILED, map_at(self->fd, 0, PROT_READ, MAP_SHARED, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED,
		  map_at(self->fd, self->page, PROT_READ, MAP_SHARED, 8));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, map_at(self->fd, self->page, PROT_READ, 0, 0));
	EXPECT_EQ(EINVAL, errno);
}

/* A store through the mapping is a SIGSEGV; the value stays. */
TEST_F(map, write_through_mapping_segv)
{
	const struct statsfd_mmap_header *mh;
	int status;
	__u64 before;
	pid_t pid;

	mh = map_at(self->fd, self->page, PROT_READ, MAP_SHARED, 0);
	ASSERT_NE(MAP_FAILED, mh);
	before = map_val(mh, 0);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		__u64 *v = (void *)((char *)mh + mh->data_offset);

		__atomic_store_n(v, before + 1, __ATOMIC_RELAXED);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
	{
		TH_LOG("child status %#x", status);
	}
	EXPECT_EQ(before, map_val(mh, 0));
	EXPECT_EQ(before, self->s.data[0]);
	munmap((void *)mh, self->page);
}

/*
 * The system source has no values area: ENODEV for every mmap() that
 * reaches it, EACCES for a writable shared one (the VFS refuses that
 * first, on the O_RDONLY fd).
 */
TEST(system_fd_enodev)
{
	long page = sysconf(_SC_PAGESIZE);
	int dev, fd, flags[] = { MAP_SHARED, MAP_PRIVATE };
	unsigned int i;

	dev = dev_open();
	ASSERT_LE(0, dev);
	fd = stats_fd(dev);
	ASSERT_LE(0, fd);
	for (i = 0; i < ARRAY_SIZE(flags); i++) {
		errno = 0;
		EXPECT_EQ(MAP_FAILED,
			  mmap(NULL, page, PROT_READ, flags[i], fd, 0));
		EXPECT_EQ(ENODEV, errno);
		errno = 0;
		EXPECT_EQ(MAP_FAILED, mmap(NULL, page, PROT_READ, flags[i], fd,
					   100 * page));
		EXPECT_EQ(ENODEV, errno);
	}
	errno = 0;
	EXPECT_EQ(MAP_FAILED,
		  mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0));
	EXPECT_EQ(ENODEV, errno);
	errno = 0;
	EXPECT_EQ(MAP_FAILED,
		  mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
	EXPECT_EQ(EACCES, errno);
	close(fd);
	close(dev);
}

/* ------------------------------------------------------- header, values */

/*
 * The header of version 2, field by field; data_size is the plain stats
 * of the descriptors (up to the first aggregate, or to sample_ns without
 * aggregates); two copies of them, copy_stride apart; the rest of the
 * area is zero; seq is generation.
 */
TEST_F(map, header_fields)
{
	const struct statsfd_mmap_header *mh;
	const struct statsfd_desc *d;
	long long gen_off = sfile_off(&self->s, STATSFD_STAT_GENERATION);
	const unsigned char *p;
	unsigned int i;
	size_t len;

	ASSERT_LE(0, gen_off);
	mh = stats_map(self->fd, &len);
	ASSERT_NE(MAP_FAILED, mh);
	EXPECT_EQ(self->area, len);
	EXPECT_EQ(STATSFD_MMAP_VERSION, mh->version);
	EXPECT_EQ(2, mh->version);
	EXPECT_EQ(64, mh->header_size);
	EXPECT_EQ(sizeof(*mh), mh->header_size);
	EXPECT_LE(mh->header_size, mh->data_offset);
	EXPECT_EQ(0, mh->data_offset % 8);
	/* 64 today, as documented (readers use the field) */
	EXPECT_EQ(64, mh->data_offset);
	EXPECT_EQ(self->plain, mh->data_size);
	EXPECT_EQ(0, mh->data_size % 8);
	EXPECT_EQ(STATSFD_MMAP_LATCH, mh->flags);
	/* the second copy after the first, inside the area */
	EXPECT_LE(mh->data_size, mh->copy_stride);
	EXPECT_EQ(0, mh->copy_stride % 8);
	EXPECT_LE(mh->data_offset + mh->copy_stride + mh->data_size,
		  self->area);
	for (i = 0; i < ARRAY_SIZE(mh->reserved); i++)
		EXPECT_EQ(0, mh->reserved[i]);

	/* the plain stats end where the first other stat begins */
	for (i = 0; i < self->s.hdr.num_desc; i++) {
		d = sfile_desc(&self->s, i);
		if (!is_plain(d))
			break;
	}
	ASSERT_LT(i, self->s.hdr.num_desc);
	EXPECT_EQ(d->offset, mh->data_size)
	{
		TH_LOG("first stat not in the area: %s", d->name);
	}
	/* a vCPU has no aggregates: sample_ns follows its stats */
	EXPECT_TRUE(variant->kind == VCPU ?
			    !strcmp(d->name, STATSFD_STAT_SAMPLE_NS) :
			    !!(d->flags & STATSFD_AGG_MASK))
	{
		TH_LOG("first stat after the area: %s", d->name);
	}

	/* idle: the generation a read returns */
	EXPECT_EQ(self->s.data[(gen_off - self->s.hdr.data_offset) / 8],
		  mh->seq);
	EXPECT_NE(0, mh->seq);

	/* nothing between the copies, nor after the second */
	p = (const unsigned char *)mh;
	for (len = mh->data_offset + mh->data_size;
	     len < mh->data_offset + mh->copy_stride; len++)
		if (p[len])
			break;
	EXPECT_EQ(mh->data_offset + mh->copy_stride, len);
	for (len = mh->data_offset + mh->copy_stride + mh->data_size;
	     len < self->area; len++)
		if (p[len])
			break;
	EXPECT_EQ(self->area, len);
	munmap((void *)mh, self->area);
}

/*
 * On an idle source every mapped value equals pread()'s, shared or
 * private; after the source moves, the same mappings show the new values
 * (the writer publishes into the mapped pages), with seq the new
 * generation.
 */
TEST_F(map, values_match_pread_idle)
{
	const struct statsfd_mmap_header *sh, *ph;
	long long gen_off = sfile_off(&self->s, STATSFD_STAT_GENERATION);
	unsigned int gen_i = (gen_off - self->s.hdr.data_offset) / 8;
	const char *key = key_stat(variant->kind);
	__u64 key0 = sfile_val(&self->s, key);
	int round;

	ASSERT_LE(0, gen_off);
	sh = map_at(self->fd, self->area, PROT_READ, MAP_SHARED, 0);
	ASSERT_NE(MAP_FAILED, sh);
	ph = map_at(self->fd, self->area, PROT_READ, MAP_PRIVATE, 0);
	ASSERT_NE(MAP_FAILED, ph);
	ASSERT_NE(0, key0);
	for (round = 0; round < 3; round++) {
		if (round)
			ASSERT_EQ(0, poke(&self->e, variant->kind));
		ASSERT_EQ(0, sfile_read_data(self->fd, &self->s));
		EXPECT_EQ(0, map_diff(sh, &self->s));
		EXPECT_EQ(0, map_diff(ph, &self->s));
		EXPECT_EQ(self->s.data[gen_i], sh->seq);
		EXPECT_EQ(sh->seq, ph->seq);
	}
	/* and the pokes did move it */
	EXPECT_LT(key0, sfile_val(&self->s, key));
	munmap((void *)sh, self->area);
	munmap((void *)ph, self->area);
}

/*
 * madvise(MADV_DONTNEED) zaps the pages of the mapping; the next access
 * faults them back in (the kernel inserts the area's pages again), with
 * the live values, shared and private mappings alike.  A kernel built
 * without the madvise() syscall (CONFIG_ADVISE_SYSCALLS unset: the 6.12
 * test kernel) cannot zap them from user space: SKIP, allowed for that
 * leg in tools/testing/skips.txt.
 */
TEST_F(map, dontneed_faults_back_in)
{
	int flags[] = { MAP_SHARED, MAP_PRIVATE };
	const struct statsfd_mmap_header *mh;
	unsigned int i;

	/* mm/madvise.c, do_madvise() in it, is built with the syscall */
	if (!kernel_has_symbol("do_madvise"))
		SKIP(return, "kernel built without ADVISE_SYSCALLS");
	for (i = 0; i < ARRAY_SIZE(flags); i++) {
		mh = map_at(self->fd, self->area, PROT_READ, flags[i], 0);
		ASSERT_NE(MAP_FAILED, mh);
		ASSERT_EQ(0, madvise((void *)mh, self->area, MADV_DONTNEED))
		{
			TH_LOG("madvise: %m");
		}
		EXPECT_EQ(STATSFD_MMAP_VERSION, mh->version);
		EXPECT_EQ(0, map_diff(mh, &self->s));
		/* and it is the live page again, not a copy */
		ASSERT_EQ(0, madvise((void *)mh, self->area, MADV_DONTNEED));
		ASSERT_EQ(0, poke(&self->e, variant->kind));
		ASSERT_EQ(0, sfile_read_data(self->fd, &self->s));
		EXPECT_EQ(0, map_diff(mh, &self->s))
		{
			TH_LOG("%s", i ? "MAP_PRIVATE" : "MAP_SHARED");
		}
		EXPECT_EQ(0, munmap((void *)mh, self->area));
	}
}

/* ------------------------------------------------------------- lifetime */

/*
 * fork(): the child has the same mapping, of the same live pages: it sees
 * the parent's values, then what the source does after the fork.
 */
TEST_F(map, fork_child_reads_mapping)
{
	const struct statsfd_mmap_header *mh;
	const char *key = key_stat(variant->kind);
	unsigned int key_i = sfile_find(&self->s, key)->offset / 8;
	__u64 key0 = sfile_val(&self->s, key);
	int go[2], done[2], status;
	char c;
	pid_t pid;

	mh = map_at(self->fd, self->area, PROT_READ, MAP_SHARED, 0);
	ASSERT_NE(MAP_FAILED, mh);
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(go[1]);
		close(done[0]);
		if (map_diff(mh, &self->s))
			_exit(1);
		if (write(done[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(2);
		/* the parent moved the source and unmapped its copy */
		if (map_val(mh, key_i) <= key0)
			_exit(3);
		if (sfile_read_data(self->fd, &self->s) ||
		    map_diff(mh, &self->s))
			_exit(4);
		_exit(0);
	}
	close(go[0]);
	close(done[1]);
	/* the child has checked the values of before */
	ASSERT_EQ(1, read(done[0], &c, 1));
	ASSERT_EQ(0, poke(&self->e, variant->kind));
	EXPECT_LT(key0, map_val(mh, key_i));
	EXPECT_EQ(0, munmap((void *)mh, self->area));
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
	{
		TH_LOG("child failed at step %d", WEXITSTATUS(status));
	}
	close(go[1]);
	close(done[0]);
}

/* What the uid-nobody child found wrong, one bit each. */
#define NOBODY_MAP (NOBODY_CHECK << 0) /* PROT_READ mmap failed */
#define NOBODY_HEADER (NOBODY_CHECK << 1) /* header not version 2 */
#define NOBODY_VALUES (NOBODY_CHECK << 2) /* values differ from the sender's pread */
#define NOBODY_WRITE (NOBODY_CHECK << 3) /* PROT_WRITE mmap not EACCES */
#define NOBODY_MPROTECT (NOBODY_CHECK << 4) /* mprotect(PROT_WRITE) not EACCES */

/* In the child: nothing of the test's but the socket. */
static void nobody_forget(void *arg)
{
	FIXTURE_DATA(map) * self = arg;

	close(self->fd);
	close(self->sys);
	vm_env_close(&self->e);
}

/* In the child, as nobody: @fd maps the values, read-only. */
static int nobody_maps(int fd, void *arg)
{
	FIXTURE_DATA(map) * self = arg;
	const struct statsfd_mmap_header *mh;
	int bad = 0;
	size_t len;

	mh = stats_map(fd, &len);
	if (mh == MAP_FAILED)
		return NOBODY_MAP;
	if (mh->version != STATSFD_MMAP_VERSION)
		bad |= NOBODY_HEADER;
	if (map_diff(mh, &self->s))
		bad |= NOBODY_VALUES;
	errno = 0;
	if (mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) !=
		    MAP_FAILED ||
	    errno != EACCES)
		bad |= NOBODY_WRITE;
	errno = 0;
	if (mprotect((void *)mh, len, PROT_READ | PROT_WRITE) != -1 ||
	    errno != EACCES)
		bad |= NOBODY_MPROTECT;
	munmap((void *)mh, len);
	return bad;
}

/*
 * The stats fd passed over SCM_RIGHTS to a process that dropped to uid
 * nobody and holds nothing else of ours: it maps the values, read-only.
 */
TEST_F(map, scm_rights_nobody_maps)
{
	expect_nobody_clean(_metadata, self->fd, nobody_forget, nobody_maps,
			    self);
}

/* Close the stats fd, the vCPU fd, the VM fd and the device. */
static void close_all(int *fd, struct vm_env *e)
{
	close_fd(fd);
	vm_env_close(e);
}

/*
 * Close the stats fd, the vCPU and VM fds and the device: the mapping
 * still reads, the values of the last pread, frozen (nothing can write
 * them any more); and the VM lives on, with its stats file.
 */
TEST_F(map, closed_fds_mapping_frozen)
{
	const struct statsfd_mmap_header *mh;
	long long gen_off = sfile_off(&self->s, STATSFD_STAT_GENERATION);
	__u64 seq;

	ASSERT_LE(0, gen_off);
	mh = map_at(self->fd, self->area, PROT_READ, MAP_SHARED, 0);
	ASSERT_NE(MAP_FAILED, mh);
	ASSERT_EQ(0, sfile_read_data(self->fd, &self->s));
	seq = mh->seq;
	close_all(&self->fd, &self->e);

	EXPECT_EQ(0, map_diff(mh, &self->s));
	EXPECT_EQ(seq, mh->seq);
	EXPECT_EQ(self->s.data[(gen_off - self->s.hdr.data_offset) / 8],
		  mh->seq);
	usleep(100000);
	EXPECT_EQ(0, map_diff(mh, &self->s));
	EXPECT_EQ(seq, mh->seq);
	EXPECT_EQ(STATSFD_MMAP_VERSION, mh->version);
	EXPECT_EQ(self->vms0 + 1, stat_get(self->sys, "vms_alive"));
	munmap((void *)mh, self->area);
}

/*
 * The mapping holds the stats file, and the file the VM: with every fd
 * closed, the VM, its vCPU and the file are still counted; munmap() lets
 * them go, the counts back to where they were before the VM.
 */
TEST_F(map, munmap_frees_vm)
{
	const struct statsfd_mmap_header *mh;
	struct sfile *sys = &self->sys_s;

	mh = map_at(self->fd, self->area, PROT_READ, MAP_PRIVATE, 0);
	ASSERT_NE(MAP_FAILED, mh);
	close_all(&self->fd, &self->e);

	ASSERT_EQ(0, sfile_read_data(self->sys, sys));
	EXPECT_EQ(self->vms0 + 1, sfile_val(sys, "vms_alive"));
	EXPECT_EQ(self->vcpus0 + 1, sfile_val(sys, "vcpus_alive"));
	EXPECT_EQ(self->fds0 + 1, sfile_val(sys, "stats_fds_open"));
	EXPECT_EQ(STATSFD_MMAP_VERSION, mh->version);

	ASSERT_EQ(0, munmap((void *)mh, self->area));
	ASSERT_EQ(0, sfile_read_data(self->sys, sys));
	EXPECT_EQ(self->vms0, sfile_val(sys, "vms_alive"));
	EXPECT_EQ(self->vcpus0, sfile_val(sys, "vcpus_alive"));
	EXPECT_EQ(self->fds0, sfile_val(sys, "stats_fds_open"));
}

/* If a refused rmmod was not refused after all, put the module back. */
static void reload_if_gone(void)
{
	int fd;

	if (!access("/sys/module/statsfd_vm", F_OK))
		return;
	fd = open(STATSFD_VM_KO, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	syscall(__NR_finit_module, fd, "", 0);
	close(fd);
}

/*
 * A mapping alone (every fd closed) pins the provider and the core, as an
 * open stats fd does (vm_fault_test's #16): delete_module() is refused
 * (EWOULDBLOCK; EBUSY accepted), both modules stay.  munmap() gives the
 * references back; the modules are not unloaded here (vm_fault_test's
 * module_reload_with_group does that, once).
 */
TEST_F(map, rmmod_refused_while_mapped)
{
	const struct statsfd_mmap_header *mh;
	long long vm_refs, core_refs;
	static const char *const mods[] = { "statsfd_vm", "statsfd" };
	unsigned int i;

	mh = map_at(self->fd, self->area, PROT_READ, MAP_SHARED, 0);
	ASSERT_NE(MAP_FAILED, mh);
	close_fd(&self->sys);
	close_all(&self->fd, &self->e);
	vm_refs = module_refs("statsfd_vm");
	core_refs = module_refs("statsfd");
	ASSERT_LT(0, vm_refs);
	ASSERT_LT(0, core_refs);

	for (i = 0; i < ARRAY_SIZE(mods); i++) {
		errno = 0;
		EXPECT_EQ(-1, delete_module(mods[i]));
		EXPECT_TRUE(errno == EWOULDBLOCK || errno == EBUSY)
		{
			TH_LOG("delete_module(%s): %m", mods[i]);
		}
		reload_if_gone();
	}
	EXPECT_EQ(0, access("/sys/module/statsfd_vm", F_OK));
	EXPECT_EQ(0, access("/sys/module/statsfd", F_OK));
	EXPECT_EQ(STATSFD_MMAP_VERSION, mh->version);

	ASSERT_EQ(0, munmap((void *)mh, self->area));
	EXPECT_EQ(vm_refs - 1, module_refs("statsfd_vm"));
	EXPECT_EQ(core_refs - 1, module_refs("statsfd"));
}

TEST_HARNESS_MAIN
