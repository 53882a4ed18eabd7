// SPDX-License-Identifier: GPL-2.0
/*
 * sample_test - samples/statsfd, the example provider built out of tree
 * against the installed statsfd SDK: loads it, drives its device, and
 * checks its stats fds (computed per-CPU queue sources, device totals over
 * them), its ioctl's every error, the fd it copies out before installing
 * and its debugfs view; the last test unloads it.
 *
 * Runs as root in the test guest, where the module is
 * /lib/statsfd/statsfd_sample.ko.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/statsfd.h>

#include "statsfd_sample.h"
#include "stats_file.h"
#include "kselftest_harness.h"

/*
 * GCC 12 inlines some of these test bodies into the harness's wrapper and
 * then warns that the wrapper's own "child" may be clobbered by its
 * longjmp(): a false positive in kselftest_harness.h, which only reads
 * "child" on the path that did not jump.
 */
#pragma GCC diagnostic ignored "-Wclobbered"

#define SAMPLE_KO	"/lib/statsfd/statsfd_sample.ko"
#define SAMPLE_DEV	"/dev/statsfd_sample"
#define SAMPLE_DEBUGFS	"/sys/kernel/debug/statsfd/statsfd_sample"
#define LOGHIST_BUCKETS	8

/* Load the module unless a previous test did. */
static int sample_load(void)
{
	int fd, ret;

	if (access(SAMPLE_DEV, F_OK) == 0)
		return 0;
	fd = open(SAMPLE_KO, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, "", 0);
	ret = ret && errno != EEXIST ? -errno : 0;
	close(fd);
	return ret;
}

static int get_fd(int dev, uint32_t target)
{
	struct statsfd_sample_fd_args args = { .target = target, .fd = -1 };

	if (ioctl(dev, STATSFD_SAMPLE_GET_STATS_FD, &args))
		return -errno;
	return args.fd;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* The values of stat @name, or NULL. */
static const uint64_t *sfile_stat(const struct stats_image *f,
				  const char *name, unsigned int *size)
{
	const struct statsfd_desc *d = stats_image_find(f, name);

	if (!d)
		return NULL;
	if (size)
		*size = d->size;
	return stats_image_values(f, d);
}

static uint64_t stat1(int fd, const char *name)
{
	static struct stats_image f;
	const uint64_t *v;

	if (stats_image_read(fd, &f))
		return UINT64_MAX;
	v = sfile_stat(&f, name, NULL);
	return v ? *v : UINT64_MAX;
}

static int fls64(uint64_t v)
{
	return v ? 64 - __builtin_clzll(v) : 0;
}

FIXTURE(sample) {
	int dev;
	int qfd[STATSFD_SAMPLE_NR_QUEUES];
	int dfd;
};

FIXTURE_SETUP(sample)
{
	int i, ret = sample_load();

	if (ret)
		TH_LOG("loading %s: %s", SAMPLE_KO, strerror(-ret));
	ASSERT_EQ(0, ret);
	self->dev = open(SAMPLE_DEV, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, self->dev);
	self->dfd = get_fd(self->dev, STATSFD_SAMPLE_TARGET_DEVICE);
	ASSERT_LE(0, self->dfd);
	for (i = 0; i < STATSFD_SAMPLE_NR_QUEUES; i++) {
		self->qfd[i] = get_fd(self->dev, STATSFD_SAMPLE_TARGET_QUEUE0 + i);
		ASSERT_LE(0, self->qfd[i]);
	}
}

FIXTURE_TEARDOWN(sample)
{
	int i;

	for (i = 0; i < STATSFD_SAMPLE_NR_QUEUES; i++)
		close(self->qfd[i]);
	close(self->dfd);
	close(self->dev);
}

/* Ids and descriptors, in the order the sample declares them. */
TEST_F(sample, stats_files_describe_device_and_queues)
{
	static const char *const dev_names[] = {
		"opens", "packets_sum", "packets_max", "bytes_sum",
		"size_hist_sum", "sample_ns", "generation",
	};
	static const char *const q_names[] = { "packets", "bytes", "size_hist" };
	static struct stats_image f;
	unsigned int i;

	ASSERT_EQ(0, stats_image_read(self->dfd, &f));
	EXPECT_EQ(0u, f.h.flags);
	EXPECT_STREQ("statsfd_sample", f.buf + f.h.id_offset);
	ASSERT_EQ(7u, f.h.num_desc);
	for (i = 0; i < f.h.num_desc; i++)
		EXPECT_STREQ(dev_names[i], stats_image_desc(&f, i)->name);
	EXPECT_EQ(LOGHIST_BUCKETS, stats_image_desc(&f, 4)->size);

	ASSERT_EQ(0, stats_image_read(self->qfd[1], &f));
	EXPECT_STREQ("statsfd_sample/queue-1", f.buf + f.h.id_offset);
	ASSERT_EQ(3u, f.h.num_desc);
	for (i = 0; i < f.h.num_desc; i++)
		EXPECT_STREQ(q_names[i], stats_image_desc(&f, i)->name);
	EXPECT_EQ(STATSFD_TYPE_LOG_HIST,
		  stats_image_desc(&f, 2)->flags & STATSFD_TYPE_MASK);
	EXPECT_EQ(STATSFD_UNIT_BYTES, stats_image_desc(&f, 1)->flags & STATSFD_UNIT_MASK);
}

/*
 * Packets written from every CPU are summed per queue at read time, and
 * the device totals are the queues' sums and maximum.
 */
TEST_F(sample, writes_on_every_cpu_are_counted_exactly)
{
	static struct stats_image before[2], after[2], dbefore, dafter;
	static char payload[4096];
	uint64_t want_pk[2] = { 0 }, want_by[2] = { 0 };
	uint64_t want_h[2][LOGHIST_BUCKETS] = { { 0 } };
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	const uint64_t *a, *b;
	unsigned int q, i, n;
	cpu_set_t set;
	long cpu;

	for (q = 0; q < 2; q++)
		ASSERT_EQ(0, stats_image_read(self->qfd[q], &before[q]));
	ASSERT_EQ(0, stats_image_read(self->dfd, &dbefore));
	for (cpu = 0; cpu < ncpus; cpu++) {
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		ASSERT_EQ(0, sched_setaffinity(0, sizeof(set), &set));
		for (i = 0; i < 20; i++) {
			size_t len = (size_t)(cpu * 131 + i * 97) % sizeof(payload);
			int bucket = fls64(len);

			ASSERT_EQ((ssize_t)len, write(self->dev, payload, len));
			q = len % 2;
			want_pk[q]++;
			want_by[q] += len;
			want_h[q][bucket < LOGHIST_BUCKETS ? bucket :
				  LOGHIST_BUCKETS - 1]++;
		}
	}
	for (q = 0; q < 2; q++) {
		ASSERT_EQ(0, stats_image_read(self->qfd[q], &after[q]));
		EXPECT_EQ(want_pk[q], *sfile_stat(&after[q], "packets", NULL) -
				      *sfile_stat(&before[q], "packets", NULL));
		EXPECT_EQ(want_by[q], *sfile_stat(&after[q], "bytes", NULL) -
				      *sfile_stat(&before[q], "bytes", NULL));
		a = sfile_stat(&after[q], "size_hist", &n);
		b = sfile_stat(&before[q], "size_hist", NULL);
		ASSERT_EQ(LOGHIST_BUCKETS, n);
		for (i = 0; i < n; i++)
			EXPECT_EQ(want_h[q][i], a[i] - b[i]);
	}
	ASSERT_EQ(0, stats_image_read(self->dfd, &dafter));
	EXPECT_EQ(*sfile_stat(&after[0], "packets", NULL) +
		  *sfile_stat(&after[1], "packets", NULL),
		  *sfile_stat(&dafter, "packets_sum", NULL));
	EXPECT_EQ(*sfile_stat(&after[0], "bytes", NULL) +
		  *sfile_stat(&after[1], "bytes", NULL),
		  *sfile_stat(&dafter, "bytes_sum", NULL));
	EXPECT_EQ(*sfile_stat(&after[0], "packets", NULL) >
		  *sfile_stat(&after[1], "packets", NULL) ?
		  *sfile_stat(&after[0], "packets", NULL) :
		  *sfile_stat(&after[1], "packets", NULL),
		  *sfile_stat(&dafter, "packets_max", NULL));
	a = sfile_stat(&dafter, "size_hist_sum", NULL);
	for (i = 0; i < LOGHIST_BUCKETS; i++)
		EXPECT_EQ(sfile_stat(&after[0], "size_hist", NULL)[i] +
			  sfile_stat(&after[1], "size_hist", NULL)[i], a[i]);
}

/* Opens and closes the sample device @n times: 0, or -1 at a failed open. */
static int open_close(int n)
{
	int fd;

	while (n--) {
		fd = open(SAMPLE_DEV, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		close(fd);
	}
	return 0;
}

/* The device's own counter: one per open, whoever opens. */
TEST_F(sample, opens_are_counted)
{
	uint64_t before = stat1(self->dfd, "opens");

	ASSERT_NE(UINT64_MAX, before);
	ASSERT_EQ(0, open_close(3));
	EXPECT_EQ(before + 3, stat1(self->dfd, "opens"));
}

/*
 * The device is a snapshot source of the sample's own stats struct: each
 * open is one window, which publishes the struct's new count, so the
 * windows counted (generation) and the opens move together.
 */
TEST_F(sample, each_open_is_one_window)
{
	uint64_t opens = stat1(self->dfd, "opens");
	uint64_t gen = stat1(self->dfd, "generation");

	ASSERT_NE(UINT64_MAX, opens);
	ASSERT_NE(UINT64_MAX, gen);
	ASSERT_EQ(0, open_close(4));
	EXPECT_EQ(opens + 4, stat1(self->dfd, "opens"));
	EXPECT_EQ(gen + 4, stat1(self->dfd, "generation"));
}

/* Every bad argument, its errno, and no fd left behind by any of them. */
TEST_F(sample, get_stats_fd_rejects_bad_arguments)
{
	struct statsfd_sample_fd_args args;
	int before = count_fds();

	ASSERT_LT(0, before);
	memset(&args, 0, sizeof(args));
	args.flags = 1;
	EXPECT_EQ(-1, ioctl(self->dev, STATSFD_SAMPLE_GET_STATS_FD, &args));
	EXPECT_EQ(EINVAL, errno);
	memset(&args, 0, sizeof(args));
	args.reserved = 1;
	EXPECT_EQ(-1, ioctl(self->dev, STATSFD_SAMPLE_GET_STATS_FD, &args));
	EXPECT_EQ(EINVAL, errno);
	memset(&args, 0, sizeof(args));
	args.target = STATSFD_SAMPLE_TARGET_MAX + 1;
	EXPECT_EQ(-1, ioctl(self->dev, STATSFD_SAMPLE_GET_STATS_FD, &args));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, ioctl(self->dev, STATSFD_SAMPLE_GET_STATS_FD, NULL));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->dev, _IO(STATSFD_SAMPLE_IOC_MAGIC, 0x41), 0));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(before, count_fds());
}

/*
 * Arguments readable but not writable: the fd number cannot be copied
 * out, so the file made for it is dropped and its fd slot freed; nothing
 * appears in the table (the point of statsfd_source_getfile()).
 */
TEST_F(sample, failed_copy_out_installs_no_fd)
{
	struct statsfd_sample_fd_args *ro;
	int before = count_fds();
	int fd;

	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	EXPECT_EQ(-1, ioctl(self->dev, STATSFD_SAMPLE_GET_STATS_FD, ro));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(before, count_fds());
	munmap(ro, 4096);
	/* The next fd gets the lowest free number, as if nothing happened. */
	fd = get_fd(self->dev, STATSFD_SAMPLE_TARGET_QUEUE0);
	EXPECT_LE(0, fd);
	EXPECT_EQ(before + 1, count_fds());
	close(fd);
}

/* Read-only, close-on-exec, and nothing to map for a computed source. */
TEST_F(sample, stats_fd_modes)
{
	void *p;

	EXPECT_EQ(O_RDONLY, fcntl(self->qfd[0], F_GETFL) & O_ACCMODE);
	EXPECT_TRUE(fcntl(self->qfd[0], F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(-1, write(self->qfd[0], "x", 1));
	EXPECT_EQ(EBADF, errno);
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, self->qfd[0], 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(ENODEV, errno);
}

/* The debugfs view: ids with '/' become '!' in directory names. */
TEST_F(sample, debugfs_view_shows_computed_values)
{
	char path[256], text[64];
	uint64_t fd_value, text_value;
	FILE *f;

	ASSERT_EQ(7, write(self->dev, "1234567", 7));
	snprintf(path, sizeof(path), "%s/statsfd_sample!queue-1/packets",
		 SAMPLE_DEBUGFS);
	f = fopen(path, "r");
	if (!f)
		TH_LOG("%s: %m", path);
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(text, sizeof(text), f));
	fclose(f);
	text_value = strtoull(text, NULL, 10);
	fd_value = stat1(self->qfd[1], "packets");
	/* No write in between: the same sum either way. */
	EXPECT_EQ(fd_value, text_value);
	EXPECT_LT(0u, text_value);
}

/*
 * Last: a stats fd pins the module; once every fd is closed it unloads.
 * Its own fixture, defined after "sample", so that it runs after every
 * test of that fixture (the harness runs fixtures in the order they are
 * defined, the fixture-less TEST()s first).
 */
FIXTURE(unload) {};
FIXTURE_SETUP(unload) {}
FIXTURE_TEARDOWN(unload) {}

TEST_F(unload, waits_for_stats_fds)
{
	int dev, fd;

	ASSERT_EQ(0, sample_load());
	dev = open(SAMPLE_DEV, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, dev);
	fd = get_fd(dev, STATSFD_SAMPLE_TARGET_DEVICE);
	ASSERT_LE(0, fd);
	close(dev);
	EXPECT_EQ(-1, syscall(SYS_delete_module, "statsfd_sample", O_NONBLOCK));
	EXPECT_EQ(EWOULDBLOCK, errno);
	EXPECT_NE(UINT64_MAX, stat1(fd, "packets_sum"));
	close(fd);
	EXPECT_EQ(0, syscall(SYS_delete_module, "statsfd_sample", O_NONBLOCK));
	EXPECT_NE(0, access(SAMPLE_DEV, F_OK));
}

TEST_HARNESS_MAIN
