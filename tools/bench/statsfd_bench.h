/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * Interface of the bench-only module statsfd_bench.ko (/dev/statsfd_bench),
 * shared by the module and the bench program.  Not a product ABI.
 *
 * The module is "another subsystem" using the statsfd core: it registers
 * synthetic schemas of any shape (N descriptors over V u64 values) so the
 * bench can compare schemas that differ only in their descriptor count, and
 * creates many sources of one schema to measure per-instance memory.  A set
 * may ask for update windows and a mappable values area (the schema flags
 * STATSFD_SCHEMA_SNAPSHOT and STATSFD_SCHEMA_MMAP), so that the same shapes
 * can be measured with snapshots on and off.
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

/*
 * Flags of STATSFD_BENCH_CREATE_SET.  STATSFD_BENCH_SNAPSHOT creates the
 * schema with STATSFD_SCHEMA_SNAPSHOT: the sources are snapshot sources
 * of the values in their own objects, which the core publishes to a
 * values area of its own, and the data block ends with the "sample_ns" and
 * "generation" stats, after the num_values values.  STATSFD_BENCH_MMAP
 * adds STATSFD_SCHEMA_MMAP (values in whole pages, mmap() of a stats fd
 * allowed) and requires STATSFD_BENCH_SNAPSHOT.  The module publishes the
 * values with one update window when it creates a source, and opens none
 * after: generation stays 1 (seq 1 in the mapping, whose copy 1 holds
 * them).
 */
#define STATSFD_BENCH_SNAPSHOT		(1u << 0)
#define STATSFD_BENCH_MMAP		(1u << 1)
#define STATSFD_BENCH_FLAGS		(STATSFD_BENCH_SNAPSHOT | \
					 STATSFD_BENCH_MMAP)

/**
 * struct statsfd_bench_set_args - argument of STATSFD_BENCH_CREATE_SET
 * @num_desc: descriptors in the schema, 1 to STATSFD_BENCH_DESC_MAX
 * @num_values: u64 values in the data block, @num_desc to
 *	STATSFD_BENCH_VALUES_MAX; spread over the descriptors as evenly as
 *	possible: a descriptor with one value is a counter, one with more is
 *	a linear histogram
 * @num_sources: sources (instances) of the schema to create, 1 to
 *	STATSFD_BENCH_SOURCES_MAX
 * @flags: STATSFD_BENCH_SNAPSHOT, optionally with STATSFD_BENCH_MMAP, or 0;
 *	anything else, or STATSFD_BENCH_MMAP alone, is EINVAL
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
 * that owns them.  Value j of every source starts at j + 1 (and never
 * changes).
 */
#define STATSFD_BENCH_CREATE_SET	_IOW(STATSFD_BENCH_IO, 0x01, \
					     struct statsfd_bench_set_args)
/*
 * On a set fd, argument = source index: returns a stats fd for that source.
 * Stats fds keep the set alive after the set fd is closed.
 */
#define STATSFD_BENCH_GET_STATS_FD	_IO(STATSFD_BENCH_IO, 0xce)

#endif /* _STATSFD_BENCH_H */
