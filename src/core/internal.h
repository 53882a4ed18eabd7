/* SPDX-License-Identifier: GPL-2.0 */
/*
 * statsfd core: declarations shared by the core's files and its KUnit tests.
 */
#ifndef _STATSFD_CORE_INTERNAL_H
#define _STATSFD_CORE_INTERNAL_H

#include <linux/align.h>
#include <linux/cache.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/statsfd.h>
#include <linux/time64.h>
#include <linux/types.h>
#include <linux/wait.h>

#include "compat.h"

struct dentry;
struct file;
struct seq_file;
struct vm_area_struct;

/**
 * struct statsfd_agg - how one aggregate of a schema is computed
 * @kind: STATSFD_AGG_SUM .. STATSFD_AGG_MAX
 * @child_offset: byte offset of the aggregated values in a child's stats
 * @size: number of u64 values (more than 1 only for a histogram sum)
 * @index: u64 index of the first value in the aggregate area of the data
 *	block, i.e. (descriptor offset - stats_size) / 8
 * @retire: a sum of a cumulative stat or of a histogram: a child that is
 *	removed leaves its values behind in the parent's retired total, so
 *	the sum never goes down
 */
struct statsfd_agg {
	u32 kind;
	u32 child_offset;
	u32 size;
	u32 index;
	bool retire;
};

struct statsfd_debugfs;

/**
 * struct statsfd_debugfs_file - what one file of the debugfs view shows
 * @view: the view the file is part of, and through it the source
 * @index: the stat, an index into the source's schema->def->descs
 *
 * The file's i_private; one per stat, in struct statsfd_debugfs.  A read
 * reaches the view from here, not from the source: the source learns of
 * its view only once every file is created, and a reader may open one as
 * soon as it exists.
 */
struct statsfd_debugfs_file {
	struct statsfd_debugfs *view;
	u32 index;
};

/**
 * struct statsfd_debugfs - the debugfs text view of one source
 * @dir: the source's directory
 * @src: the source
 * @buf_lock: serializes the readers of @buf
 * @buf: for a computed source, where a read computes the values; for a
 *	snapshot source, where it copies the published ones (stats_size
 *	bytes); NULL for a plain source, read in place.  Allocated with the
 *	view, so that a source without one costs nothing for it.
 * @num: number of entries in @files, the schema's num_descs
 * @files: i_private of each stat file
 */
struct statsfd_debugfs {
	struct dentry *dir;
	struct statsfd_source *src;
	struct mutex buf_lock;		/* buf */
	u64 *buf;
	u32 num;
	struct statsfd_debugfs_file files[] __counted_by(num);
};

/**
 * struct statsfd_source_priv - the core's part of a source
 * @src: the source this is the private part of
 * @schema: the initialized schema
 * @ops: lifetime callbacks and, for a computed source, @fill
 * @id: the id string, schema name_size bytes, NUL-terminated, zero-padded
 * @children_lock: protects @children, @num_children, @agg_buf and
 *	@retired; never taken by writers of the stats, only by readers of
 *	aggregates and by statsfd_source_add_child()/statsfd_source_del_child();
 *	a mutex, since a computed child's fill callback may sleep
 * @children: the private parts of the child sources, for aggregates
 * @num_children: length of @children
 * @child_node: entry in the parent's @children
 * @parent: the source this one is a child of, or NULL
 * @debugfs: state of the text view, or NULL
 * @agg_buf: where readers compute the aggregates, one u64 per aggregate
 *	value, or NULL without aggregates; allocated with the source so that
 *	reading never allocates, together with @agg_child (a copy of one
 *	child's values) and @agg_rems (remainders of averages, one per
 *	aggregate)
 * @agg_child: where each child's snapshot is copied in turn
 * @agg_rems: see @agg_buf
 * @retired: per aggregate value, what the children removed so far
 *	contributed to the sums of cumulative stats and histograms; the same
 *	layout as @agg_buf, or NULL when the schema has no such sum
 * @wq: pollers of the source's stats files
 * @children_gen: changes of @children so far (under @children_lock); a
 *	stats file that has not read its header or data since the last
 *	change polls EPOLLPRI
 * @hung_up: set by statsfd_source_hangup(); its files poll EPOLLHUP
 * @fills: for a computed source with STATSFD_SCHEMA_SNAPSHOT, how many
 *	times its values were computed: its "generation"
 * @nr_files: stats files open on the source (and on its views), so that
 *	statsfd_source_destroy() can tell an owner that destroys it too early
 * @destroyed: statsfd_source_destroy() ran while files were still open;
 *	the last of them frees what it left, this included
 *
 * Allocated by the statsfd_source_init*() entry points (source.c) and
 * reached through the source's priv pointer; freed with the id, buffers
 * and values area by statsfd_source_destroy(), or by the last stats file
 * to close when the source was destroyed with files open.
 */
struct statsfd_source_priv {
	struct statsfd_source *src;
	const struct statsfd_schema *schema;
	const struct statsfd_source_ops *ops;
	char *id;
	struct mutex children_lock;	/* children, num_children, agg_* */
	struct list_head children;
	u32 num_children;
	struct list_head child_node;
	struct statsfd_source *parent;
	struct statsfd_debugfs *debugfs;
	u64 *agg_buf;
	u64 *agg_child;
	u64 *agg_rems;
	u64 *retired;
	wait_queue_head_t wq;
	u64 children_gen;
	bool hung_up;
	atomic64_t fills;
	atomic_t nr_files;
	bool destroyed;
};

/* Bytes of the aggregate area that follows the stats struct in the data. */
static inline u32 statsfd_agg_size(const struct statsfd_schema *schema)
{
	return schema->agg_size;
}

/* sample_ns and generation, at the end of a snapshot schema's data block. */
#define STATSFD_META_STATS	2
#define STATSFD_META_SIZE	(STATSFD_META_STATS * sizeof(u64))

/*
 * Bytes from the first published copy of a snapshot source's values to
 * the second: a whole number of cache lines, so that the writer filling
 * one copy does not write the lines readers are loading from the other.
 */
static inline u32 statsfd_copy_stride(const struct statsfd_schema *schema)
{
	return ALIGN(schema->def->stats_size, SMP_CACHE_BYTES);
}

/**
 * struct statsfd_snap_meta - when a snapshot was taken
 * @sample_ns: CLOCK_BOOTTIME ns at which the copied values were current
 * @generation: update windows closed on the source by then
 */
struct statsfd_snap_meta {
	u64 sample_ns;
	u64 generation;
};

/**
 * struct statsfd_range - u64s [@first, @first + @nr) of a stats struct
 * @first: index of the first u64
 * @nr: number of u64s
 */
struct statsfd_range {
	u32 first;
	u32 nr;
};

/**
 * struct statsfd_view - the layout of a view's stats file
 * @header: its header: the source's, with its own num_desc and offsets
 * @desc_block: its descriptors, copies of the selected ones with the
 *	offsets of its compact data block
 * @data_size: bytes of its data block
 * @file_size: bytes of its file
 * @need_aggs: a selected stat is an aggregate
 * @need_meta: sample_ns or generation is selected
 * @nr_ranges: entries in @ranges
 * @ranges: the selected plain stats, as ranges of the stats struct: what a
 *	read copies from one window
 * @nr: number of selected stats
 * @sel: per selected stat, in view order: byte offset and size (in u64s)
 *	of its values in the source's full data block
 */
struct statsfd_view {
	struct statsfd_header header;
	void *desc_block;
	u32 data_size;
	u32 file_size;
	bool need_aggs;
	bool need_meta;
	u32 nr_ranges;
	struct statsfd_range *ranges;
	u32 nr;
	struct statsfd_view_sel {
		u32 full_offset;
		u32 size;
		u32 full_index;
	} sel[] __counted_by(nr);
};

/**
 * struct statsfd_file - what a stats file keeps: its source and its buffer
 * @src: the source
 * @view: the view this file shows, or NULL for the source's whole file
 * @lock: serializes reads of this file, which share @buf and @vbuf
 * @buf: one data block of the source (schema data_size bytes), where a
 *	read assembles its snapshot before copying it to user space with no
 *	other lock held
 * @vbuf: for a view, its compact data block, gathered from @buf
 * @seen_gen: the source's children_gen when this file last read its
 *	header or data; poll() reports EPOLLPRI while they differ
 */
struct statsfd_file {
	struct statsfd_source *src;
	struct statsfd_view *view;
	struct mutex lock; /* buf, vbuf */
	u64 *buf;
	u64 *vbuf;
	u64 seen_gen;
};

/* Number of plain (non-aggregate) stats: they come first in descs. */
static inline u32 statsfd_num_plain(const struct statsfd_schema *schema)
{
	return schema->def->num_descs - schema->num_aggs;
}

/* Whether sources of @schema need a retired total (see statsfd_agg). */
static inline bool statsfd_schema_retires(const struct statsfd_schema *schema)
{
	u32 i;

	for (i = 0; i < schema->num_aggs; i++)
		if (schema->aggs[i].retire)
			return true;
	return false;
}

int statsfd_agg_compute_locked(struct statsfd_source *src, u64 *out);
int statsfd_agg_compute(struct statsfd_source *src, u64 *out);
void statsfd_agg_retire(struct statsfd_source *parent,
			struct statsfd_source *child);

int statsfd_snapshot_copy(struct statsfd_source *src, u64 *dst, u32 first,
			  u32 nr, struct statsfd_snap_meta *meta);
int statsfd_snapshot_copy_ranges(struct statsfd_source *src, u64 *dst,
				 const struct statsfd_range *ranges, u32 nr,
				 struct statsfd_snap_meta *meta);
void statsfd_source_file_opened(struct statsfd_source *src);
void statsfd_source_file_closed(struct statsfd_source *src);
int statsfd_area_alloc(struct statsfd_source *src);
void statsfd_area_free(struct statsfd_source *src);
int statsfd_area_mmap(struct statsfd_source *src, struct vm_area_struct *vma);

ssize_t statsfd_read_file(struct statsfd_file *sf, char __user *buf,
			  size_t len, loff_t *ppos);

struct statsfd_view *statsfd_view_create(struct statsfd_source *src,
					 const struct statsfd_view *parent,
					 const struct statsfd_view_args *args);
void statsfd_view_free(struct statsfd_view *view);
struct file *statsfd_view_getfile(struct statsfd_source *src,
				  struct statsfd_view *view);

int statsfd_debugfs_init(void);
void statsfd_debugfs_exit(void);

/* Helpers that are static unless KUnit needs to reach them. */
#if IS_ENABLED(CONFIG_KUNIT)
int statsfd_debugfs_show(struct seq_file *m, void *unused);
#endif

#endif /* _STATSFD_CORE_INTERNAL_H */
