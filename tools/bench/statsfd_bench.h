/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * Interface of the bench-only module statsfd_bench.ko (/dev/statsfd_bench),
 * shared by the module and the bench program.  Not a product ABI.
 *
 * The module is "another subsystem" using the statsfd core: it registers
 * synthetic schemas of any shape (N descriptors over V u64 values) so the
 * bench can compare schemas that differ only in their descriptor count, and
 * creates many sources of one schema to measure per-instance memory.
 */
#ifndef _STATSFD_BENCH_H
#define _STATSFD_BENCH_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define STATSFD_BENCH_IO		0xBA

/* Limits checked by STATSFD_BENCH_CREATE_SET. */
#define STATSFD_BENCH_DESC_MAX		4096
#define STATSFD_BENCH_VALUES_MAX	65536
#define STATSFD_BENCH_SOURCES_MAX	65536

/**
 * struct statsfd_bench_set_args - argument of STATSFD_BENCH_CREATE_SET
 * @num_desc: descriptors in the schema, 1 to STATSFD_BENCH_DESC_MAX
 * @num_values: u64 values in the data block, @num_desc to
 *	STATSFD_BENCH_VALUES_MAX; spread over the descriptors as evenly as
 *	possible: a descriptor with one value is a counter, one with more is
 *	a linear histogram
 * @num_sources: sources (instances) of the schema to create, 1 to
 *	STATSFD_BENCH_SOURCES_MAX
 * @flags: must be 0
 * @reserved: must be 0
 */
struct statsfd_bench_set_args {
	__u32 num_desc;
	__u32 num_values;
	__u32 num_sources;
	__u32 flags;
	__u64 reserved[2];
};

/*
 * On /dev/statsfd_bench: creates a schema and its sources, returns a set fd
 * that owns them.  Value j of every source starts at j + 1.
 */
#define STATSFD_BENCH_CREATE_SET	_IOW(STATSFD_BENCH_IO, 0x01, \
					     struct statsfd_bench_set_args)
/*
 * On a set fd, argument = source index: returns a stats fd for that source.
 * Stats fds keep the set alive after the set fd is closed.
 */
#define STATSFD_BENCH_GET_STATS_FD	_IO(STATSFD_BENCH_IO, 0xce)

#endif /* _STATSFD_BENCH_H */
