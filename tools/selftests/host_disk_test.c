// SPDX-License-Identifier: GPL-2.0
/*
 * host_disk_test - a disk's stats fd has no side effect on the disk and
 * pins nothing (Documentation/statsfd-host-api.rst, 2 and 3.4): the
 * driver's module unloads with fds open, which then hang up; the disk is
 * never opened (a loop device, which refuses LOOP_CTL_REMOVE with EBUSY
 * while anyone has it open, is removed again and again while another
 * thread makes stats fds of it); its page cache is untouched by a
 * thousand stats fds.
 *
 * Runs as root in the test guest, after host_dev_test.  brd and loop are
 * stock modules on the 6.1 leg (unloaded here and loaded again from
 * /lib/kmods with the parameters check-guest.sh gives them) and built into
 * the 6.12 test kernel, where the unload tests skip (tools/testing/
 * skips.txt).  Loop devices it makes are loop78 and loop79.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

#include <linux/loop.h>

#include "host_util.h"
#include "kselftest_harness.h"

/* See sample_test.c: a false positive of kselftest_harness.h's longjmp. */
#pragma GCC diagnostic ignored "-Wclobbered"

#define KMODS		"/lib/kmods"

static int unload(const char *name)
{
	return syscall(SYS_delete_module, name, O_NONBLOCK) ? -errno : 0;
}

static int load(const char *name, const char *params)
{
	char path[128];
	int fd, ret;

	snprintf(path, sizeof(path), KMODS "/%s.ko", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
	close(fd);
	return ret;
}

/* Stats fds of the whole disks @names; each must poll no POLLHUP yet. */
static void open_disks(struct __test_metadata *_metadata,
		       const char *const *names, int n, int *fds)
{
	unsigned int major, minor;
	int i;

	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, host_sysfs_devt(names[i], &major, &minor))
			TH_LOG("no /sys/class/block/%s", names[i]);
		fds[i] = host_block_fd(major, minor);
		ASSERT_LE(0, fds[i]) TH_LOG("%s: %s", names[i],
					    strerror(-fds[i]));
		EXPECT_EQ(0, host_read_ok(fds[i]));
		EXPECT_EQ(0, host_poll(fds[i], 0) & POLLHUP);
	}
}

/*
 * Unloads the driver @mod with stats fds of its disks @names open: no
 * reference on the module is held, the unload succeeds (it used to fail
 * with EWOULDBLOCK), every fd hangs up without being read and still reads,
 * and the module is loaded again for the tests after this one.
 */
static void unload_with_fds(struct __test_metadata *_metadata,
			    const char *mod, const char *params,
			    const char *const *names, int n)
{
	int fds[8], i, r0, ret;

	ASSERT_GE(8, n);
	r0 = host_module_refcnt(mod);
	if (r0 < 0)
		SKIP(return, "%s is built into this kernel", mod);
	open_disks(_metadata, names, n, fds);
	EXPECT_EQ(r0, host_module_refcnt(mod));
	ret = unload(mod);
	EXPECT_EQ(0, ret) TH_LOG("unloading %s with stats fds open: %s", mod,
				 strerror(-ret));
	for (i = 0; i < n; i++) {
		if (!ret)
			EXPECT_NE(0, host_wait_hup(fds[i], 30) & POLLHUP)
				TH_LOG("%s's fd did not hang up", names[i]);
		EXPECT_EQ(0, host_read_ok(fds[i]));
		close(fds[i]);
	}
	if (!ret) {
		ret = load(mod, params);
		ASSERT_EQ(0, ret) TH_LOG("loading %s again: %s", mod,
					 strerror(-ret));
	}
}

TEST(rmmod_brd_with_fds_open)
{
	static const char *const names[] = { "ram0", "ram1" };

	/* As check-guest.sh loads it, for the tests that follow. */
	unload_with_fds(_metadata, "brd", "rd_nr=2 rd_size=8192", names, 2);
}

TEST(rmmod_loop_with_fds_open)
{
	static const char *const names[] = { "loop0", "loop1", "loop7" };

	unload_with_fds(_metadata, "loop", "", names, 3);
}

/* ----- a loop device: removed while stats fds of it are made ----- */

#define BUSY_NR		79

struct maker {
	unsigned int major, minor;
	atomic_int stop;
	atomic_int made;
	atomic_int bad;		/* an error other than ENODEV */
	atomic_int last_err;
};

static void *make_fds(void *arg)
{
	struct maker *m = arg;
	int fd;

	while (!atomic_load(&m->stop)) {
		fd = host_block_fd(m->major, m->minor);
		if (fd >= 0) {
			atomic_fetch_add(&m->made, 1);
			close(fd);
		} else if (fd != -ENODEV) {
			atomic_fetch_add(&m->bad, 1);
			atomic_store(&m->last_err, fd);
		}
	}
	return NULL;
}

/*
 * LOOP_CTL_REMOVE fails with EBUSY while anyone has the device open
 * (disk_openers()): with a thread making stats fds of it all the while,
 * the removal always succeeds only if making one never opens the disk.
 * Rounds: 100, 500 with STATSFD_STRESS=1, each making the device again,
 * for at most 60 s (200 s with it: a removal waits for RCU grace periods,
 * slow on the debug kernel), and at least 10.  The fd the main thread
 * keeps from each round hangs up.
 */
FIXTURE(busy) {};
FIXTURE_SETUP(busy) {}
FIXTURE_TEARDOWN(busy) {}

/* The harness's 30 s is short for 500 rounds in a loaded TCG guest. */
TEST_F_TIMEOUT(busy, loop_removed_while_fds_made_never_busy, 300)
{
	/*
	 * The developer's run: 30 rounds or 20 s (the debug guest makes
	 * about two a second); STRESS=1 (CI): 500 rounds or 200 s.
	 */
	int rounds = host_stress() ? 500 : 30, keep[500], n, i, ctl, ret;
	unsigned int seed = getpid(), busy = 0;
	time_t deadline = time(NULL) + (host_stress() ? 200 : 20);
	struct maker m = {};
	pthread_t t;

	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, ctl);
	ASSERT_EQ(BUSY_NR, ioctl(ctl, LOOP_CTL_ADD, BUSY_NR));
	ASSERT_EQ(0, host_sysfs_devt("loop79", &m.major, &m.minor));
	ASSERT_EQ(0, pthread_create(&t, NULL, make_fds, &m));
	for (n = 0; n < rounds && (n < 10 || time(NULL) < deadline); n++) {
		if (n) {
			ret = ioctl(ctl, LOOP_CTL_ADD, BUSY_NR);
			if (ret != BUSY_NR) {
				TH_LOG("round %d: LOOP_CTL_ADD: %s", n,
				       strerror(errno));
				break;
			}
		}
		keep[n] = host_block_fd(m.major, m.minor);
		if (keep[n] < 0) {
			TH_LOG("round %d: stats fd: %s", n, strerror(-keep[n]));
			break;
		}
		usleep(rand_r(&seed) % 2000);
		ret = ioctl(ctl, LOOP_CTL_REMOVE, BUSY_NR);
		if (ret && errno == EBUSY) {
			busy++;
			/* Only opens can make it busy: retry until it goes. */
			while (ioctl(ctl, LOOP_CTL_REMOVE, BUSY_NR) &&
			       errno == EBUSY)
				usleep(100);
		} else if (ret) {
			TH_LOG("round %d: LOOP_CTL_REMOVE: %s", n,
			       strerror(errno));
			n++;
			break;
		}
	}
	atomic_store(&m.stop, 1);
	pthread_join(t, NULL);
	/* After a failed round the device may still be there. */
	ioctl(ctl, LOOP_CTL_REMOVE, BUSY_NR);
	EXPECT_LE(10, n);
	EXPECT_EQ(0u, busy) TH_LOG("the disk was open at %u of %d removals",
				   busy, n);
	EXPECT_EQ(0, m.bad) TH_LOG("%d stats fds failed, last with %s", m.bad,
				   strerror(-m.last_err));
	EXPECT_LT(0, m.made);
	for (i = 0; i < n; i++) {
		if (keep[i] < 0)
			continue;
		EXPECT_NE(0, host_wait_hup(keep[i], 30) & POLLHUP)
			TH_LOG("round %d's fd did not hang up", i);
		EXPECT_EQ(0, host_read_ok(keep[i]));
		close(keep[i]);
	}
	TH_LOG("%d rounds, %d stats fds made meanwhile", n, m.made);
	close(ctl);
}

/* ----- page cache ----- */

#define CACHE_NR	78
#define CACHE_IMG	"/tmp/sfd-cache.img"
#define CACHE_SIZE	(1024 * 1024)

static int resident_pages(const void *map, size_t len)
{
	unsigned char vec[CACHE_SIZE / 4096];
	size_t i, pages = len / sysconf(_SC_PAGESIZE);
	int n = 0;

	if (pages > sizeof(vec) || mincore((void *)map, len, vec))
		return -1;
	for (i = 0; i < pages; i++)
		n += vec[i] & 1;
	return n;
}

/*
 * The disk's page cache, filled by reading the whole device, is all
 * still there after a thousand stats fds of it were made and closed.
 * LOOP_SET_FD reports a media change, which leaves a partition rescan
 * pending (GD_NEED_PART_SCAN) until the next open of the disk; that
 * rescan invalidates the disk's clean page cache (invalidate_bdev()), so
 * a stats fd that opened the disk, as they once did, emptied it here
 * although the test itself holds the disk open all along.  A fixture only
 * for the harness's timeout: its 30 s once ran out in a loaded debug guest.
 */
FIXTURE(cache) {};
FIXTURE_SETUP(cache) {}
FIXTURE_TEARDOWN(cache) {}

TEST_F_TIMEOUT(cache, page_cache_untouched_by_1000_fds, 300)
{
	static char buf[CACHE_SIZE];
	unsigned int major, minor;
	int ctl, img, dev, fd, i, before, after;
	void *map;

	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, ctl);
	ASSERT_EQ(CACHE_NR, ioctl(ctl, LOOP_CTL_ADD, CACHE_NR));
	img = open(CACHE_IMG, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ASSERT_LE(0, img);
	memset(buf, 0x5a, sizeof(buf));
	ASSERT_EQ(CACHE_SIZE, write(img, buf, CACHE_SIZE));
	dev = open("/dev/loop78", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, dev);
	ASSERT_EQ(0, ioctl(dev, LOOP_SET_FD, img));
	close(img);

	ASSERT_EQ(CACHE_SIZE, pread(dev, buf, CACHE_SIZE, 0));
	map = mmap(NULL, CACHE_SIZE, PROT_READ, MAP_SHARED, dev, 0);
	ASSERT_NE(MAP_FAILED, map);
	before = resident_pages(map, CACHE_SIZE);
	ASSERT_EQ(CACHE_SIZE / sysconf(_SC_PAGESIZE), before);

	ASSERT_EQ(0, host_sysfs_devt("loop78", &major, &minor));
	for (i = 0; i < 1000; i++) {
		fd = host_block_fd(major, minor);
		ASSERT_LE(0, fd) TH_LOG("stats fd %d: %s", i, strerror(-fd));
		close(fd);
	}
	after = resident_pages(map, CACHE_SIZE);
	EXPECT_EQ(before, after);

	munmap(map, CACHE_SIZE);
	EXPECT_EQ(0, ioctl(dev, LOOP_CLR_FD, 0));
	close(dev);
	EXPECT_EQ(0, ioctl(ctl, LOOP_CTL_REMOVE, CACHE_NR));
	close(ctl);
	unlink(CACHE_IMG);
}

TEST_HARNESS_MAIN
