// SPDX-License-Identifier: GPL-2.0
/*
 * stats_fd_test - a stats fd against the bad inputs and faults of
 * bad-inputs.md (#1-#13, #22, #23), each case its own test, each test run
 * on a system, a VM and a vCPU stats fd; and a randomized pread fuzzer
 * checked against a model of the file.
 *
 * The model is the whole file read once from a quiesced source (nothing
 * runs while a test reads): every later read, of any range, must return
 * exactly its bytes, except sample_ns: the VM and vCPU sources have update
 * windows, and every read takes their sample_ns anew (found by name in
 * the descriptors, and masked in every comparison with the model; their
 * generation does not move while nothing runs, and is compared).
 */
#define _GNU_SOURCE
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <grp.h>
#include <sys/syscall.h>

#include "kselftest_harness.h"
#include "statsfd_vm_util.h"

/*
 * A buffer may end here and still pass the VFS's access_ok() on x86-64,
 * 6.1 and 6.12 alike (the top of user space, less a guard page).
 */
#define USER_TOP (0x7ffffffff000ULL - 4096)

/*
 * pread(2) without the C library's compile-time checks, for the calls
 * that pass bad buffers and sizes on purpose.
 */
static ssize_t raw_pread(int fd, void *buf, size_t len, off_t off)
{
	return syscall(__NR_pread64, fd, buf, len, off);
}

FIXTURE(sfd)
{
	struct vm_env e; /* a VM with vCPUs 0 and 1, both have run */
	int fd; /* the stats fd under test */
	struct sfile s; /* @fd parsed */
	unsigned char *image; /* the whole file, read once */
	size_t size; /* its size */
	long long mask; /* file offset of sample_ns, or -1 */
	long page; /* page size */
};

FIXTURE_VARIANT(sfd)
{
	enum kind kind;
};

/* A variant is a definition, not a call: keep it on one line. */
/* clang-format off */
FIXTURE_VARIANT_ADD(sfd, system) { .kind = SYSTEM };
FIXTURE_VARIANT_ADD(sfd, vm) { .kind = VM };
FIXTURE_VARIANT_ADD(sfd, vcpu) { .kind = VCPU };
/* clang-format on */

FIXTURE_SETUP(sfd)
{
	struct statsfd_vm_run run = {
		.io_exits = 300,
		.mmio_exits = 7,
		.hypercall_exits = 99,
		.halt_exits = 3,
		.io_bytes = 17,
		.cycles_per_exit = 12345,
		.halt_poll_ns = 1000,
		.halt_timeout_ns = 10000,
	};
	ssize_t ret;

	self->page = sysconf(_SC_PAGESIZE);
	self->fd = -1;
	ASSERT_VM_ENV(&self->e, -1, 2, &run, 0);
	self->fd = vm_env_kind_fd(&self->e, variant->kind, 1);
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, sfile_parse(self->fd, &self->s));
	self->mask = sfile_off(&self->s, STATSFD_STAT_SAMPLE_NS);
	/* the system source has no update windows, the others do */
	ASSERT_EQ(variant->kind == SYSTEM, self->mask < 0);
	self->size = self->s.size;
	self->image = calloc(1, self->size + 1);
	ASSERT_NE(NULL, self->image);
	ret = pread(self->fd, self->image, self->size + 1, 0);
	ASSERT_EQ(self->size, ret);
}

FIXTURE_TEARDOWN(sfd)
{
	free(self->image);
	sfile_free(&self->s);
	close_fd(&self->fd);
	vm_env_close(&self->e);
}

/*
 * pread(@off, @len) returns exactly the model's bytes (and count), but
 * for sample_ns at file offset @mask.
 */
static void expect_slice(struct __test_metadata *_metadata, int fd,
			 const unsigned char *image, size_t size,
			 long long mask, off_t off, size_t len)
{
	unsigned char buf[512];
	size_t want;
	ssize_t ret;

	ASSERT_LE(len, sizeof(buf));
	memset(buf, 0xa5, sizeof(buf));
	want = (size_t)off >= size ? 0 : size - off;
	if (want > len)
		want = len;
	ret = pread(fd, buf, len, off);
	ASSERT_EQ(want, ret)
	{
		TH_LOG("pread(off %lld, len %zu)", (long long)off, len);
	}
	EXPECT_EQ(0, image_cmp(buf, image, off, want, mask))
	{
		TH_LOG("bytes differ at off %lld len %zu", (long long)off, len);
	}
	/* nothing past the count was written */
	if (want < len)
		EXPECT_EQ(0xa5, buf[want]);
}

/* The file size follows from the header and the descriptors. */
TEST_F(sfd, whole_file_is_the_four_blocks)
{
	const struct statsfd_header *h = &self->s.hdr;

	EXPECT_EQ(24, h->id_offset);
	EXPECT_EQ(0, h->data_offset % 8);
	EXPECT_EQ((24 + h->name_size + 7) / 8 * 8, h->data_offset);
	EXPECT_EQ(h->data_offset + self->s.data_size, h->desc_offset);
	EXPECT_EQ(h->desc_offset + h->num_desc * self->s.stride, self->size);
	EXPECT_EQ(0, memcmp(self->image, h, sizeof(*h)));
}

/* #1: a negative offset is -EINVAL. */
TEST_F(sfd, pread_negative_offset_1)
{
	char buf[8];

	errno = 0;
	EXPECT_EQ(-1, pread(self->fd, buf, sizeof(buf), -1));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, pread(self->fd, buf, sizeof(buf), LLONG_MIN));
	EXPECT_EQ(EINVAL, errno);
}

/* #2: at the file size, and past it, a read returns 0. */
TEST_F(sfd, pread_at_file_size_2)
{
	char buf[8];

	EXPECT_EQ(0, pread(self->fd, buf, sizeof(buf), self->size));
	EXPECT_EQ(0, pread(self->fd, buf, sizeof(buf), self->size + 1));
	EXPECT_EQ(0, pread(self->fd, buf, sizeof(buf), self->size + 4096));
	expect_slice(_metadata, self->fd, self->image, self->size, self->mask,
		     self->size - 1, 8);
}

/*
 * #3: offsets near LLONG_MAX return 0, without overflow.  Where offset +
 * length itself would pass LLONG_MAX, the VFS refuses the read (-EINVAL)
 * before the stats fd sees it.
 */
TEST_F(sfd, pread_near_llong_max_3)
{
	char buf[8];

	EXPECT_EQ(0, pread(self->fd, buf, 8, LLONG_MAX - 8));
	EXPECT_EQ(0, pread(self->fd, buf, 8, LLONG_MAX - 4096));
	EXPECT_EQ(0, pread(self->fd, buf, 1, LLONG_MAX - 1));
	EXPECT_EQ(0, pread(self->fd, buf, 0, LLONG_MAX));
	errno = 0;
	EXPECT_EQ(-1, pread(self->fd, buf, 8, LLONG_MAX));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, pread(self->fd, buf, 8, (off_t)UINT32_MAX + 1));
	EXPECT_EQ(0, pread(self->fd, buf, 8, (off_t)UINT32_MAX - 3));
}

/* #4: a zero-length read returns 0 anywhere, even with a NULL buffer. */
TEST_F(sfd, zero_length_4)
{
	char buf[8];
	off_t offs[] = { 0,
			 1,
			 24,
			 self->s.hdr.data_offset,
			 self->s.hdr.desc_offset,
			 self->size,
			 self->size + 9 };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(offs); i++) {
		EXPECT_EQ(0, pread(self->fd, buf, 0, offs[i]));
		EXPECT_EQ(0, raw_pread(self->fd, NULL, 0, offs[i]));
	}
	EXPECT_EQ(0, read(self->fd, buf, 0));
}

/*
 * #5: a huge length from offset 0 reads exactly the file.  The largest
 * length the VFS lets through (the buffer must lie in user space) is used;
 * SIZE_MAX itself fails access_ok() in the VFS with -EFAULT.
 */
TEST_F(sfd, huge_length_is_short_read_5)
{
	unsigned char *buf = malloc(self->size);
	size_t len;

	ASSERT_NE(NULL, buf);
	len = USER_TOP - (uintptr_t)buf;
	EXPECT_EQ(self->size, raw_pread(self->fd, buf, len, 0));
	EXPECT_EQ(0, image_cmp(buf, self->image, 0, self->size, self->mask));
	EXPECT_EQ(self->size - 24, raw_pread(self->fd, buf, len, 24));
	EXPECT_EQ(0,
		  image_cmp(buf, self->image, 24, self->size - 24, self->mask));
	errno = 0;
	EXPECT_EQ(-1, raw_pread(self->fd, buf, SIZE_MAX, 0));
	EXPECT_EQ(EFAULT, errno);
	free(buf);
}

/* #6: reads across every block boundary equal the whole-file read. */
TEST_F(sfd, straddling_block_boundaries_6)
{
	const struct statsfd_header *h = &self->s.hdr;
	off_t bounds[] = {
		sizeof(*h), /* header | id */
		h->id_offset + h->name_size, /* id | (padding) */
		h->data_offset, /* id | data */
		h->desc_offset, /* data | descriptors */
		h->desc_offset + self->s.stride, /* descriptor | descriptor */
		self->size, /* descriptors | EOF */
	};
	size_t i, len;
	int before;

	for (i = 0; i < ARRAY_SIZE(bounds); i++)
		for (before = 1; before <= 12; before++)
			for (len = 1; len <= 40; len++)
				expect_slice(_metadata, self->fd, self->image,
					     self->size, self->mask,
					     bounds[i] - before, len);
}

/* #7: unaligned offsets and lengths inside the data block. */
TEST_F(sfd, unaligned_data_slices_7)
{
	off_t d = self->s.hdr.data_offset;
	size_t len;
	off_t off;

	expect_slice(_metadata, self->fd, self->image, self->size, self->mask,
		     d + 3, 5);
	for (off = d; off < d + 24; off++)
		for (len = 1; len <= 25; len++)
			expect_slice(_metadata, self->fd, self->image,
				     self->size, self->mask, off, len);
	/* the last bytes of the data block, unaligned */
	d = self->s.hdr.desc_offset;
	for (off = d - 13; off < d; off++)
		expect_slice(_metadata, self->fd, self->image, self->size,
			     self->mask, off, 11);
}

/* The start of each block, where a bad buffer is tried. */
static void block_starts(const struct sfile *s, off_t *offs)
{
	offs[0] = 0;
	offs[1] = s->hdr.id_offset;
	offs[2] = s->hdr.data_offset;
	offs[3] = s->hdr.data_offset + 3;
	offs[4] = s->hdr.desc_offset;
}

/* #8: NULL, unmapped and read-only buffers are -EFAULT in every block. */
TEST_F(sfd, bad_buffers_efault_8)
{
	void *unmapped, *ro;
	off_t offs[5];
	int i;

	unmapped = mmap(NULL, self->page, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, unmapped);
	ASSERT_EQ(0, munmap(unmapped, self->page));
	ro = mmap(NULL, self->page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		  0);
	ASSERT_NE(MAP_FAILED, ro);

	block_starts(&self->s, offs);
	for (i = 0; i < 5; i++) {
		errno = 0;
		EXPECT_EQ(-1, raw_pread(self->fd, NULL, 16, offs[i]));
		EXPECT_EQ(EFAULT, errno)
		{
			TH_LOG("NULL at %lld", (long long)offs[i]);
		}
		errno = 0;
		EXPECT_EQ(-1, raw_pread(self->fd, unmapped, 16, offs[i]));
		EXPECT_EQ(EFAULT, errno);
		errno = 0;
		EXPECT_EQ(-1, raw_pread(self->fd, ro, 16, offs[i]));
		EXPECT_EQ(EFAULT, errno);
		/* a kernel address is not a user buffer either */
		errno = 0;
		EXPECT_EQ(-1, raw_pread(self->fd, (void *)0xffffffff81000000ULL,
					16, offs[i]));
		EXPECT_EQ(EFAULT, errno);
	}
	/* the read-only page is still all zero */
	for (i = 0; i < self->page; i++)
		if (((unsigned char *)ro)[i])
			break;
	EXPECT_EQ(self->page, i);
	munmap(ro, self->page);
	/* and the fd still reads fine */
	expect_slice(_metadata, self->fd, self->image, self->size, self->mask,
		     0, 64);
}

/*
 * #9: a buffer that runs into a PROT_NONE page part way.  The read returns
 * a short count of correct bytes (the fault stops it; a u64 of the data
 * block is copied whole or not at all, so the count may stop up to 7 bytes
 * short of the page), or -EFAULT when nothing could be copied; the same
 * read twice gives the same answer.
 */
/* Room before the PROT_NONE page: past a u64 and a 64-byte slice. */
#define MAX_ROOM 80

TEST_F(sfd, buffer_into_prot_none_9)
{
	unsigned char *map, *guard;
	off_t offs[5];
	size_t room;
	int i;

	map = mmap(NULL, 2 * self->page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	guard = map + self->page;
	ASSERT_EQ(0, mprotect(guard, self->page, PROT_NONE));

	/* every buffer below starts inside the page before the guard */
	ASSERT_LE(MAX_ROOM, self->page);
	block_starts(&self->s, offs);
	for (i = 0; i < 5; i++) {
		for (room = 0; room <= MAX_ROOM; room++) {
			size_t len = self->size - offs[i];
			unsigned char *buf = guard - room;
			ssize_t ret, again;
			int err;

			errno = 0;
			ret = raw_pread(self->fd, buf, len, offs[i]);
			err = errno;
			if (ret < 0) {
				EXPECT_EQ(EFAULT, err);
				EXPECT_LT(room, 8)
				{
					TH_LOG("off %lld room %zu: no progress",
					       (long long)offs[i], room);
				}
			} else {
				EXPECT_LE(ret, room);
				EXPECT_GE(ret + 8, room > len ? len : room)
				{
					TH_LOG("off %lld room %zu: ret %zd",
					       (long long)offs[i], room, ret);
				}
				EXPECT_EQ(0,
					  image_cmp(buf, self->image, offs[i],
						    ret, self->mask));
			}
			again = raw_pread(self->fd, buf, len, offs[i]);
			EXPECT_EQ(ret, again);
		}
	}
	munmap(map, 2 * self->page);
}

/*
 * #10: write, pwrite, writev, writable mmap, ioctl and reopening are
 * refused.  A read-only mmap() depends on the source: the VM and vCPU
 * sources are mappable, the system source is not (ENODEV).  A writable
 * shared mapping is EACCES for every stats fd (the VFS refuses it on an
 * O_RDONLY file); a writable private one is EACCES where mmap() is
 * allowed, ENODEV where it is not.  mmap_test checks mappings in depth.
 */
TEST_F(sfd, write_mmap_ioctl_refused_10)
{
	char buf[8] = { 0 };
	struct iovec iov = { buf, sizeof(buf) };
	bool mappable = variant->kind != SYSTEM;
	const struct statsfd_mmap_header *mh;
	void *map;
	int cmds[] = { STATSFD_VM_GET_STATS_FD, STATSFD_VM_KICK,
		       _IO(0xAE, 0xce) /* KVM_GET_STATS_FD */, FIONREAD };
	char path[64];
	size_t i;
	int v = 0;

	errno = 0;
	EXPECT_EQ(-1, write(self->fd, buf, sizeof(buf)));
	EXPECT_EQ(EBADF, errno);
	/*
	 * pwrite: EBADF on 6.1 and 6.12 alike (checked on both), as for a
	 * regular file opened O_RDONLY.  The core gives the fd FMODE_PWRITE
	 * with FMODE_PREAD (src/compat.h: anon_inode_getfile_fmode() on 6.12,
	 * the same bits set right after anon_inode_getfile() on 6.1), so
	 * ksys_pwrite64() gets past its ESPIPE check and vfs_write() refuses
	 * a file without FMODE_WRITE.  KVM's stats fd, FMODE_PREAD only, says
	 * ESPIPE here.
	 */
	errno = 0;
	EXPECT_EQ(-1, pwrite(self->fd, buf, sizeof(buf), 0));
	EXPECT_EQ(EBADF, errno)
	{
		TH_LOG("pwrite: %s", strerror(errno));
	}
	errno = 0;
	EXPECT_EQ(-1, writev(self->fd, &iov, 1));
	EXPECT_EQ(EBADF, errno);

	for (i = 0; i < 2; i++) {
		int flags = i ? MAP_PRIVATE : MAP_SHARED;

		errno = 0;
		map = mmap(NULL, self->page, PROT_READ, flags, self->fd, 0);
		if (mappable) {
			ASSERT_NE(MAP_FAILED, map)
			{
				TH_LOG("mmap(PROT_READ, %s): %m",
				       i ? "MAP_PRIVATE" : "MAP_SHARED");
			}
			mh = map;
			EXPECT_EQ(STATSFD_MMAP_VERSION, mh->version);
			EXPECT_EQ(0, munmap(map, self->page));
		} else {
			EXPECT_EQ(MAP_FAILED, map);
			EXPECT_EQ(ENODEV, errno);
		}
	}
	errno = 0;
	map = mmap(NULL, self->page, PROT_READ | PROT_WRITE, MAP_SHARED,
		   self->fd, 0);
	EXPECT_EQ(MAP_FAILED, map);
	EXPECT_EQ(EACCES, errno);
	errno = 0;
	map = mmap(NULL, self->page, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		   self->fd, 0);
	EXPECT_EQ(MAP_FAILED, map);
	EXPECT_EQ(mappable ? EACCES : ENODEV, errno);

	for (i = 0; i < ARRAY_SIZE(cmds); i++) {
		errno = 0;
		EXPECT_EQ(-1, ioctl(self->fd, cmds[i], &v));
		EXPECT_EQ(ENOTTY, errno)
		{
			TH_LOG("cmd %#x", cmds[i]);
		}
	}

	/* nor can it be reopened, for writing or at all */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", self->fd);
	errno = 0;
	EXPECT_EQ(-1, open(path, O_RDWR | O_CLOEXEC));
	EXPECT_EQ(ENXIO, errno);
	errno = 0;
	EXPECT_EQ(-1, open(path, O_RDONLY | O_CLOEXEC));
	EXPECT_EQ(ENXIO, errno);
	expect_slice(_metadata, self->fd, self->image, self->size, self->mask,
		     0, 64);
}

/*
 * #11: read() walks the file from f_pos; lseek() moves f_pos within
 * [0, file size] (SEEK_SET, SEEK_CUR, SEEK_END), -EINVAL outside it;
 * pread() neither uses nor moves f_pos.
 */
TEST_F(sfd, read_and_lseek_11)
{
	unsigned char buf[64];
	off_t size = self->size;

	EXPECT_EQ(10, read(self->fd, buf, 10));
	EXPECT_EQ(0, memcmp(buf, self->image, 10));
	EXPECT_EQ(10, read(self->fd, buf, 10));
	EXPECT_EQ(0, memcmp(buf, self->image + 10, 10));
	EXPECT_EQ(20, lseek(self->fd, 0, SEEK_CUR));

	/* pread ignores and keeps f_pos */
	EXPECT_EQ(8, pread(self->fd, buf, 8, 0));
	EXPECT_EQ(20, lseek(self->fd, 0, SEEK_CUR));

	EXPECT_EQ(self->s.hdr.data_offset,
		  lseek(self->fd, self->s.hdr.data_offset, SEEK_SET));
	EXPECT_EQ(16, read(self->fd, buf, 16));
	EXPECT_EQ(0, memcmp(buf, self->image + self->s.hdr.data_offset, 16));
	EXPECT_EQ(self->s.hdr.data_offset + 8, lseek(self->fd, -8, SEEK_CUR));

	EXPECT_EQ(size, lseek(self->fd, 0, SEEK_END));
	EXPECT_EQ(0, read(self->fd, buf, sizeof(buf)));
	EXPECT_EQ(size - 8, lseek(self->fd, -8, SEEK_END));
	EXPECT_EQ(8, read(self->fd, buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, self->image + size - 8, 8));
	EXPECT_EQ(0, read(self->fd, buf, sizeof(buf)));

	/* outside the file, or an unknown whence: -EINVAL, f_pos kept */
	errno = 0;
	EXPECT_EQ(-1, lseek(self->fd, size + 1, SEEK_SET));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, lseek(self->fd, -1, SEEK_SET));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, lseek(self->fd, 1, SEEK_END));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, lseek(self->fd, 0, 42));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(size, lseek(self->fd, 0, SEEK_CUR));

	/* read() twice from the start reads the same bytes */
	EXPECT_EQ(0, lseek(self->fd, 0, SEEK_SET));
	EXPECT_EQ(self->size, read(self->fd, self->image, self->size));
	EXPECT_EQ(0, lseek(self->fd, 0, SEEK_SET));
	EXPECT_EQ(32, read(self->fd, buf, 32));
	EXPECT_EQ(0, memcmp(buf, self->image, 32));
}

/*
 * #12: a dup()'d fd and a fork()'d child read the same file; they share
 * the file description, so read() shares f_pos, pread() does not care.
 */
TEST_F(sfd, dup_and_fork_12)
{
	unsigned char buf[64];
	int fd2, status;
	pid_t pid;

	fd2 = dup(self->fd);
	ASSERT_GE(fd2, 0);
	expect_slice(_metadata, fd2, self->image, self->size, self->mask, 0,
		     64);
	EXPECT_EQ(8, read(self->fd, buf, 8));
	EXPECT_EQ(8, read(fd2, buf, 8));
	EXPECT_EQ(0, memcmp(buf, self->image + 8, 8));

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		unsigned char *all = malloc(self->size);

		if (!all || pread(fd2, all, self->size, 0) != self->size ||
		    image_cmp(all, self->image, 0, self->size, self->mask))
			_exit(1);
		if (read(self->fd, buf, 8) != 8 ||
		    memcmp(buf, self->image + 16, 8))
			_exit(2);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* the child's read() moved the shared f_pos */
	EXPECT_EQ(24, lseek(fd2, 0, SEEK_CUR));
	expect_slice(_metadata, self->fd, self->image, self->size, self->mask,
		     self->s.hdr.data_offset, 64);
	close(fd2);
}

/* What the unprivileged child found wrong, one bit each. */
#define NOBODY_READ (NOBODY_CHECK << 0) /* pread failed or differed */
#define NOBODY_WRITE (NOBODY_CHECK << 1) /* write was not EBADF */
#define NOBODY_MMAP (NOBODY_CHECK << 2) /* mmap did not do what the source allows */
#define NOBODY_IOCTL (NOBODY_CHECK << 3) /* ioctl was not ENOTTY */
#define NOBODY_DEV (NOBODY_CHECK << 4) /* opening the device was not EACCES */
#define NOBODY_REOPEN (NOBODY_CHECK << 5) /* /proc/self/fd reopen succeeded */
#define NOBODY_CHMOD (NOBODY_CHECK << 6) /* fchmod succeeded */

/*
 * What a mapping of @fd must show: the values of @image's data block
 * (file offset @data_offset), the first data_size bytes of it.  0 or
 * NOBODY_MMAP.
 */
static int nobody_map(int fd, const unsigned char *image, off_t data_offset)
{
	const struct statsfd_mmap_header *mh;
	size_t len, i;
	__u64 v;
	int bad = 0;

	mh = stats_map(fd, &len);
	if (mh == MAP_FAILED)
		return NOBODY_MMAP;
	if (mh->version != STATSFD_MMAP_VERSION)
		bad = NOBODY_MMAP;
	for (i = 0; !bad && i < mh->data_size / 8; i++) {
		memcpy(&v, image + data_offset + 8 * i, 8);
		if (map_val(mh, i) != v)
			bad = NOBODY_MMAP;
	}
	munmap((void *)mh, len);
	errno = 0;
	if (mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) !=
		    MAP_FAILED ||
	    errno != EACCES)
		bad = NOBODY_MMAP;
	return bad;
}

/* What the child needs: the parent's image, and whether it maps. */
struct nobody_arg {
	FIXTURE_DATA(sfd) * self;
	bool mappable;
};

/* In the child: nothing of the test's but the socket. */
static void nobody_forget(void *arg)
{
	struct nobody_arg *a = arg;

	close(a->self->fd);
	vm_env_close(&a->self->e);
}

/* In the child, as nobody: @fd reads (and maps, if it may), nothing else. */
static int nobody_check(int fd, void *arg)
{
	const struct nobody_arg *a = arg;
	const unsigned char *image = a->self->image;
	size_t size = a->self->size;
	long long mask = a->self->mask;
	unsigned char *buf = malloc(size + 8);
	char path[64];
	int bad = 0, dev;

	if (!buf || pread(fd, buf, size + 8, 0) != size ||
	    image_cmp(buf, image, 0, size, mask))
		bad |= NOBODY_READ;
	errno = 0;
	if (write(fd, buf, 8) != -1 || errno != EBADF)
		bad |= NOBODY_WRITE;
	errno = 0;
	if (a->mappable)
		bad |= nobody_map(fd, image, a->self->s.hdr.data_offset);
	else if (mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) != MAP_FAILED ||
		 errno != ENODEV)
		bad |= NOBODY_MMAP;
	errno = 0;
	if (ioctl(fd, STATSFD_VM_GET_STATS_FD, 0) != -1 || errno != ENOTTY)
		bad |= NOBODY_IOCTL;
	errno = 0;
	dev = open(STATSFD_VM_DEV, O_RDWR | O_CLOEXEC);
	if (dev >= 0 || errno != EACCES)
		bad |= NOBODY_DEV;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (open(path, O_RDONLY | O_CLOEXEC) >= 0)
		bad |= NOBODY_REOPEN;
	if (fchmod(fd, 0666) == 0)
		bad |= NOBODY_CHMOD;
	/* reads still work after all that */
	if (pread(fd, buf, size, 0) != size ||
	    image_cmp(buf, image, 0, size, mask))
		bad |= NOBODY_READ;
	return bad;
}

/*
 * #13: the fd passed over SCM_RIGHTS to a process that dropped to uid
 * nobody, and holds nothing else of ours: reads succeed (and a read-only
 * mapping, where the source allows one), nothing else does.
 */
TEST_F(sfd, scm_rights_to_nobody_13)
{
	struct nobody_arg a = { self, variant->kind != SYSTEM };

	expect_nobody_clean(_metadata, self->fd, nobody_forget, nobody_check,
			    &a);
}

/*
 * #22: every byte the file does not assign a value to is zero: the id and
 * each name after their NUL, the padding between blocks, and the padding
 * inside the descriptors.  Nothing of kernel memory leaks out.
 */
TEST_F(sfd, padding_and_names_zero_22)
{
	const struct statsfd_header *h = &self->s.hdr;
	size_t i, end, len;
	unsigned int d;

	len = strnlen((char *)self->image + h->id_offset, h->name_size);
	ASSERT_LT(len, h->name_size);
	for (i = h->id_offset + len; i < h->id_offset + h->name_size; i++)
		EXPECT_EQ(0, self->image[i])
		{
			TH_LOG("id byte %zu", i);
		}
	for (i = h->id_offset + h->name_size; i < h->data_offset; i++)
		EXPECT_EQ(0, self->image[i])
		{
			TH_LOG("gap byte %zu", i);
		}
	end = h->data_offset + self->s.data_size;
	for (i = end; i < h->desc_offset; i++)
		EXPECT_EQ(0, self->image[i])
		{
			TH_LOG("gap byte %zu", i);
		}

	for (d = 0; d < h->num_desc; d++) {
		const unsigned char *p =
			self->image + h->desc_offset + d * self->s.stride;
		const struct statsfd_desc *desc = (const void *)p;

		len = strnlen(desc->name, h->name_size);
		ASSERT_LT(len, h->name_size);
		EXPECT_NE(0, len);
		for (i = len; i < h->name_size; i++)
			EXPECT_EQ(0, desc->name[i])
			{
				TH_LOG("%s: name byte %zu", desc->name, i);
			}
		EXPECT_EQ(0, desc->flags & STATSFD_DESC_FLAGS_RESERVED);
	}
}

/*
 * #23: the header and descriptors are the same bytes on every read, from
 * a dup()'d fd, from a second fd on the same source and from an fd on
 * another source of the same schema.
 */
TEST_F(sfd, descriptors_identical_23)
{
	const struct statsfd_header *h = &self->s.hdr;
	size_t dlen = h->num_desc * self->s.stride;
	unsigned char *a = malloc(dlen), *b = malloc(dlen);
	int fds[3], i, vm2 = -1;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	fds[0] = dup(self->fd);
	switch (variant->kind) {
	case SYSTEM:
		fds[1] = stats_fd(self->e.dev);
		fds[2] = stats_fd(self->e.dev);
		break;
	case VM:
		fds[1] = stats_fd(self->e.vm);
		vm2 = vm_create(self->e.dev);
		fds[2] = stats_fd(vm2);
		break;
	case VCPU:
		fds[1] = stats_fd(self->e.vcpu[1]);
		fds[2] = stats_fd(self->e.vcpu[0]);
		break;
	}
	ASSERT_EQ(dlen, pread(self->fd, a, dlen, h->desc_offset));
	EXPECT_EQ(0, memcmp(a, self->image + h->desc_offset, dlen));
	for (i = 0; i < 3; i++) {
		struct statsfd_header h2;

		ASSERT_GE(fds[i], 0);
		ASSERT_EQ(sizeof(h2), pread(fds[i], &h2, sizeof(h2), 0));
		EXPECT_EQ(0, memcmp(h, &h2, sizeof(h2)));
		ASSERT_EQ(dlen, pread(fds[i], b, dlen, h->desc_offset));
		EXPECT_EQ(0, memcmp(a, b, dlen))
		{
			TH_LOG("fd %d", i);
		}
		close(fds[i]);
	}
	if (vm2 >= 0)
		close(vm2);
	free(a);
	free(b);
}

/*
 * A randomized pread fuzzer checked against the model: random offsets
 * (inside, at and past the end, near block boundaries) and lengths
 * (including 0 and more than the file), into random buffer positions.
 */
TEST_F(sfd, random_preads_match_model)
{
	const struct statsfd_header *h = &self->s.hdr;
	off_t hot[] = { 0,
			24,
			h->id_offset + h->name_size,
			h->data_offset,
			h->desc_offset,
			self->size };
	unsigned char *buf = malloc(self->size + 256);
	unsigned int seed = getpid() ^ time(NULL);
	int i, rounds = stress_scale(2000, 20000);

	ASSERT_NE(NULL, buf);
	TH_LOG("seed %u, %d rounds", seed, rounds);
	srand(seed);
	for (i = 0; i < rounds; i++) {
		off_t off;
		size_t len, want, shift = rand() % 16;
		ssize_t ret;

		switch (rand() % 4) {
		case 0:
			off = rand() % (self->size + 64);
			break;
		case 1:
			off = hot[rand() % 6] + rand() % 17 - 8;
			if (off < 0)
				off = 0;
			break;
		case 2:
			off = h->data_offset + rand() % self->s.data_size;
			break;
		default:
			off = ((off_t)rand() << 31 | rand()) & LLONG_MAX;
			off &= ~((off_t)1 << 62); /* keep off + len legal */
			break;
		}
		len = rand() % 3 ? rand() % 96 : rand() % (self->size + 200);
		want = (size_t)off >= self->size ? 0 : self->size - off;
		if (want > len)
			want = len;
		ret = pread(self->fd, buf + shift, len, off);
		ASSERT_EQ(want, ret)
		{
			TH_LOG("#%d off %lld len %zu", i, (long long)off, len);
		}
		ASSERT_EQ(0, image_cmp(buf + shift, self->image, off, want,
				       self->mask))
		{
			TH_LOG("#%d off %lld len %zu", i, (long long)off, len);
		}
	}
	free(buf);
}

TEST_HARNESS_MAIN
