/* SPDX-License-Identifier: GPL-2.0 */
/*
 * statsfd KUnit: fixtures shared by the suites (schemas, sources, user
 * buffers, stats files and reference images built independently of the core).
 */
#ifndef _STATSFD_KUNIT_H
#define _STATSFD_KUNIT_H

#include <kunit/test.h>
#include <linux/atomic.h>
#include <linux/statsfd.h>

#include "core/internal.h"

/*
 * STATSFD_KUNIT_SUITE() - define and register the suite of one file
 * @suite: the suite's name, an identifier; its cases are @suite##_cases
 * @init_fn: run before each case, or NULL
 *
 * tools/testing/manifest.py reads these lines for the cases a run owes.
 * The definition and its registration are one line here: dropping it
 * leaves the case array and every case unused, which the -Werror build
 * refuses, so a suite cannot go missing from the manifest quietly.
 */
#define STATSFD_KUNIT_SUITE(suite, init_fn)		\
	static struct kunit_suite suite##_suite = {	\
		.name = #suite,				\
		.init = init_fn,			\
		.test_cases = suite##_cases,		\
	};						\
	kunit_test_suites(&suite##_suite)

/* A vCPU-like child: every kind of stat the macros can declare. */
struct statsfd_kunit_child {
	u64 exits;
	u64 blocking;
	u64 max_run;
	u64 wait_ns;
	u64 lin[4];
	u64 log[6];
	u64 io_bytes;
	u64 cycles;
};

/* A VM-like parent: two counters of its own plus aggregates over children. */
struct statsfd_kunit_parent {
	u64 created;
	u64 alive;
};

/*
 * The layout the core must produce for the two schemas, written out by
 * hand (not computed by any core code) so the tests compare against an
 * independent model.
 */
#define SFK_NAME_SIZE		48
#define SFK_DATA_OFFSET		(24 + SFK_NAME_SIZE)
#define SFK_STRIDE		(16 + SFK_NAME_SIZE)

#define SFK_CHILD_NUM_DESCS	8
#define SFK_CHILD_DATA_SIZE	128
#define SFK_CHILD_DESC_OFFSET	200
#define SFK_CHILD_FILE_SIZE	712

#define SFK_PARENT_NUM_DESCS	12
#define SFK_PARENT_STATS_SIZE	16
#define SFK_PARENT_DATA_SIZE	160
#define SFK_PARENT_DESC_OFFSET	232
#define SFK_PARENT_FILE_SIZE	1000

/*
 * The same two schemas with update windows: the child with
 * STATSFD_SCHEMA_SNAPSHOT | STATSFD_SCHEMA_MMAP (like a vCPU), the parent
 * with STATSFD_SCHEMA_SNAPSHOT alone.  Each data block ends with sample_ns
 * and generation (16 bytes, after the aggregates), and each descriptor
 * block with their two descriptors.
 */
#define SFK_SNAP_CHILD_NUM_DESCS	10
#define SFK_SNAP_CHILD_META		128	/* sample_ns; generation at +8 */
#define SFK_SNAP_CHILD_DATA_SIZE	144
#define SFK_SNAP_CHILD_DESC_OFFSET	216
#define SFK_SNAP_CHILD_FILE_SIZE	856

#define SFK_SNAP_PARENT_NUM_DESCS	14
#define SFK_SNAP_PARENT_META		160
#define SFK_SNAP_PARENT_DATA_SIZE	176
#define SFK_SNAP_PARENT_DESC_OFFSET	248
#define SFK_SNAP_PARENT_FILE_SIZE	1144

/*
 * An expected serialized descriptor is written as a struct
 * statsfd_desc_def: the same fields, with the offset and flags the file
 * must show.
 */

/* The plain schemas' SFK_*_NUM_DESCS descriptors: the snapshot tables' first. */
extern const struct statsfd_desc_def *const statsfd_kunit_child_expect;
extern const struct statsfd_desc_def *const statsfd_kunit_parent_expect;
extern const struct statsfd_schema_def statsfd_kunit_child_tmpl;
extern const struct statsfd_schema_def statsfd_kunit_parent_tmpl;
extern const struct statsfd_desc_def statsfd_kunit_snap_child_expect[];
extern const struct statsfd_desc_def statsfd_kunit_snap_parent_expect[];
extern const struct statsfd_schema_def statsfd_kunit_snap_child_tmpl;
extern const struct statsfd_schema_def statsfd_kunit_snap_parent_tmpl;

/* A source whose ops count the references a stats file takes and drops. */
struct statsfd_kunit_src {
	struct statsfd_source src;
	atomic_t gets;
	atomic_t puts;
};

extern const struct statsfd_source_ops statsfd_kunit_ops;

/* The most children a struct statsfd_kunit_family has. */
#define SFK_FAMILY_MAX	4

/*
 * A VM-like parent of the plain schemas and its vCPU-like children, their
 * live values in the struct (statsfd_kunit_family()).
 */
struct statsfd_kunit_family {
	struct statsfd_kunit_parent pstats;
	struct statsfd_kunit_child cstats[SFK_FAMILY_MAX];
	struct statsfd_kunit_src *parent;
	struct statsfd_kunit_src *child[SFK_FAMILY_MAX];
};

struct statsfd_schema *statsfd_kunit_schema(struct kunit *test,
					    const struct statsfd_schema_def *tmpl,
					    const struct statsfd_schema *child);
struct statsfd_kunit_src *
statsfd_kunit_source(struct kunit *test, const struct statsfd_schema *schema,
		     const void *stats, const char *id);
char __user *statsfd_kunit_ubuf(struct kunit *test, size_t size,
				unsigned long prot);
struct file *statsfd_kunit_file(struct kunit *test,
				struct statsfd_kunit_src *s);
ssize_t statsfd_kunit_read(struct kunit *test, struct file *file,
			   char __user *ubuf, void *kbuf, size_t len,
			   loff_t pos);
void *statsfd_kunit_image(struct kunit *test,
			  const struct statsfd_desc_def *expect, u32 num_desc,
			  u32 data_size, const char *id, const void *data);
struct seq_file;
struct dentry;
void statsfd_kunit_seq(struct kunit *test, struct seq_file *m, size_t size);
void statsfd_kunit_debugfs_seq(struct kunit *test, struct dentry *dir,
			       const char *stat, struct seq_file *m);
const char *statsfd_kunit_fdinfo(struct kunit *test, struct file *file);
void statsfd_kunit_fill_child(struct statsfd_kunit_child *c, u64 seed);
void statsfd_kunit_family(struct kunit *test, struct statsfd_kunit_family *f,
			  const char *id, unsigned int nr,
			  unsigned int nr_added);
void statsfd_kunit_parent_data(const struct statsfd_kunit_parent *p,
			       const struct statsfd_kunit_child *const *c,
			       unsigned int n, u64 *data);

#endif /* _STATSFD_KUNIT_H */
