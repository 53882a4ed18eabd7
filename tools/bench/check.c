// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench phase "check": no timing, a check of the bench module
 * (statsfd_bench.ko) that B1, B3 and B5 build their figures on.  It refuses
 * bad arguments, a stats fd outlives its set, and the file of a synthetic
 * schema has the descriptors and values documented in statsfd_bench.h,
 * with snapshots off and on (then sample_ns and generation follow the
 * values, published by one update window, and only a STATSFD_BENCH_MMAP
 * set maps them).  Each failed check
 * is named in the "failed" array.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/statsfd.h>

#include "bench.h"
#include "statsfd_bench.h"

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
 * The file of a snapshot set (@flags has STATSFD_BENCH_SNAPSHOT): the
 * values of @a as documented, then sample_ns and generation as the uapi
 * header describes them, generation 1 (the module publishes the values
 * with one window); mappable only with STATSFD_BENCH_MMAP, and then the
 * mapping is version 2, seq 1, and its copy 1 holds the same values.
 */
static void check_snapshot_set(int dev, struct statsfd_bench_set_args a,
			       const char *what)
{
	const struct statsfd_mmap_header *mh;
	struct statsfd_desc *sn, *gen;
	uint64_t *v = (uint64_t *)buf;
	bool values_ok = true, mmap_ok;
	char msg[128];
	struct sfile sf;
	size_t len = 0;
	uint32_t i;
	int set, fd;

	set = ioctl(dev, STATSFD_BENCH_CREATE_SET, &a);
	snprintf(msg, sizeof(msg), "%s set created", what);
	check(set >= 0, msg);
	if (set < 0)
		return;
	fd = ioctl(set, STATSFD_BENCH_GET_STATS_FD, 0);
	close(set);
	if (fd < 0)
		die("STATSFD_BENCH_GET_STATS_FD");
	sfile_open(&sf, fd);
	sn = sfile_find(&sf, STATSFD_STAT_SAMPLE_NS);
	gen = sfile_find(&sf, STATSFD_STAT_GENERATION);
	snprintf(msg, sizeof(msg), "%s: num_desc + 2, sample_ns then generation last",
		 what);
	check(sf.h.num_desc == a.num_desc + 2 && sn && gen &&
	      sn == sfile_desc(&sf, a.num_desc) &&
	      gen == sfile_desc(&sf, a.num_desc + 1), msg);
	snprintf(msg, sizeof(msg), "%s: sample_ns and generation after the values",
		 what);
	check(sn && gen && sn->offset == a.num_values * 8 &&
	      gen->offset == sn->offset + 8 && sn->size == 1 &&
	      gen->size == 1 &&
	      sn->flags == (STATSFD_TYPE_INSTANT | STATSFD_UNIT_SECONDS |
			    STATSFD_BASE_POW10) && sn->exponent == -9 &&
	      gen->flags == (STATSFD_TYPE_CUMULATIVE | STATSFD_UNIT_NONE |
			     STATSFD_BASE_POW10) &&
	      sf.data_size == a.num_values * 8 + 16 &&
	      sfile_plain_size(&sf) == a.num_values * 8, msg);
	check(pread(fd, buf, sf.data_size, sf.h.data_offset) ==
	      (ssize_t)sf.data_size, "snapshot data block readable");
	for (i = 0; i < a.num_values; i++)
		values_ok &= v[i] == i + 1;
	snprintf(msg, sizeof(msg), "%s: value j reads j + 1, generation 1, sample_ns set",
		 what);
	check(values_ok && v[a.num_values] > 0 && v[a.num_values + 1] == 1,
	      msg);

	mh = stats_map(fd, &len);
	if (!(a.flags & STATSFD_BENCH_MMAP)) {
		snprintf(msg, sizeof(msg), "%s: mmap is ENODEV", what);
		check(!mh && errno == ENODEV, msg);
	} else {
		snprintf(msg, sizeof(msg), "%s: mmap of the values area", what);
		check(mh, msg);
		mmap_ok = mh && mh->version == STATSFD_MMAP_VERSION &&
			  mh->header_size == sizeof(*mh) &&
			  mh->flags == STATSFD_MMAP_LATCH &&
			  mh->data_offset >= mh->header_size &&
			  mh->data_size == a.num_values * 8 &&
			  mh->copy_stride >= mh->data_size && mh->seq == 1;
		for (i = 0; mmap_ok && i < a.num_values; i++)
			mmap_ok = stats_map_values(mh, mh->seq)[i] == i + 1;
		snprintf(msg, sizeof(msg), "%s: mapped header and values as documented",
			 what);
		check(mmap_ok, msg);
	}
	if (mh)
		munmap((void *)mh, len);
	sfile_close(&sf);
}

/*
 * Bad arguments get EINVAL/ENOTTY, a stats fd outlives its set fd, and the
 * file of a synthetic schema is what B1, B3 and B5 take it to be: the
 * values spread over the descriptors as documented, each value j = j + 1.
 */
void phase_check(void)
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

	a = ok, a.flags = STATSFD_BENCH_FLAGS + 1;
	check(create_fails(dev, a, EINVAL), "unknown flag refused");
	a = ok, a.flags = STATSFD_BENCH_MMAP;
	check(create_fails(dev, a, EINVAL), "MMAP without SNAPSHOT refused");
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
	check(!sfile_find(&sf, STATSFD_STAT_SAMPLE_NS) &&
	      sfile_plain_size(&sf) == sf.data_size,
	      "no sample_ns without snapshots");
	check(!stats_map(fd, &(size_t){ 0 }) && errno == ENODEV,
	      "mmap without snapshots is ENODEV");
	sfile_close(&sf);

	a = ok, a.flags = STATSFD_BENCH_SNAPSHOT;
	check_snapshot_set(dev, a, "SNAPSHOT");
	a = ok, a.flags = STATSFD_BENCH_SNAPSHOT | STATSFD_BENCH_MMAP;
	check_snapshot_set(dev, a, "SNAPSHOT|MMAP");
	close(dev);

	jclose(']');
	jnum("checks", check_count);
	jnum("failures", check_failed);
	jend();
}
