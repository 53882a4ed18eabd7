// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd KUnit: fixtures shared by the suites, and the module boilerplate.
 */
#include <kunit/resource.h>
#include <kunit/test.h>
#include <linux/dcache.h>
#include <linux/debugfs.h>
#include <linux/err.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/statsfd.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "statsfd_kunit.h"

#define STATSFD_STATS_TYPE struct statsfd_kunit_child
static const struct statsfd_desc_def statsfd_kunit_child_descs[] = {
	STATSFD_COUNTER(exits),
	STATSFD_IBOOLEAN(blocking),
	STATSFD_PCOUNTER(max_run),
	STATSFD_TIME_NSEC(wait_ns),
	STATSFD_LINHIST(lin, 10),
	STATSFD_LOGHIST(log),
	STATSFD_BYTES(io_bytes),
	STATSFD_CYCLES(cycles),
};

#undef STATSFD_STATS_TYPE

#define STATSFD_STATS_TYPE struct statsfd_kunit_parent
static const struct statsfd_desc_def statsfd_kunit_parent_descs[] = {
	STATSFD_COUNTER(created),
	STATSFD_ICOUNTER(alive),
	STATSFD_AGG_SUM_OF(struct statsfd_kunit_child, exits),
	STATSFD_AGG_MIN_OF(struct statsfd_kunit_child, exits),
	STATSFD_AGG_MAX_OF(struct statsfd_kunit_child, exits),
	STATSFD_AGG_AVG_OF(struct statsfd_kunit_child, exits),
	STATSFD_AGG_COUNT_NONZERO_OF(struct statsfd_kunit_child, exits),
	STATSFD_AGG_SUM_OF(struct statsfd_kunit_child, blocking),
	STATSFD_AGG_SUM_OF(struct statsfd_kunit_child, max_run),
	STATSFD_AGG_MAX_OF(struct statsfd_kunit_child, wait_ns),
	STATSFD_AGG_SUM_OF(struct statsfd_kunit_child, lin),
	STATSFD_AGG_SUM_OF(struct statsfd_kunit_child, log),
};

#undef STATSFD_STATS_TYPE

const struct statsfd_schema_def statsfd_kunit_child_tmpl = {
	.name = "kunit.child",
	.descs = statsfd_kunit_child_descs,
	.num_descs = ARRAY_SIZE(statsfd_kunit_child_descs),
	.stats_size = sizeof(struct statsfd_kunit_child),
};

const struct statsfd_schema_def statsfd_kunit_parent_tmpl = {
	.name = "kunit.parent",
	.descs = statsfd_kunit_parent_descs,
	.num_descs = ARRAY_SIZE(statsfd_kunit_parent_descs),
	.stats_size = sizeof(struct statsfd_kunit_parent),
};

/* The same stats, with update windows: a vCPU-like and a VM-like schema. */
const struct statsfd_schema_def statsfd_kunit_snap_child_tmpl = {
	.name = "kunit.snap_child",
	.descs = statsfd_kunit_child_descs,
	.num_descs = ARRAY_SIZE(statsfd_kunit_child_descs),
	.stats_size = sizeof(struct statsfd_kunit_child),
	.flags = STATSFD_SCHEMA_SNAPSHOT | STATSFD_SCHEMA_MMAP,
};

const struct statsfd_schema_def statsfd_kunit_snap_parent_tmpl = {
	.name = "kunit.snap_parent",
	.descs = statsfd_kunit_parent_descs,
	.num_descs = ARRAY_SIZE(statsfd_kunit_parent_descs),
	.stats_size = sizeof(struct statsfd_kunit_parent),
	.flags = STATSFD_SCHEMA_SNAPSHOT,
};

/*
 * flags, exponent, size, offset (from data_offset), bucket_size, name.  The
 * snapshot schemas' descriptors are the plain ones' and then sample_ns
 * (instant, seconds, 10^-9) and generation (cumulative, none), so one
 * table serves both: the plain schema's is its first rows.
 */
const struct statsfd_desc_def statsfd_kunit_snap_child_expect[] = {
	{ 0x000,  0, 1,   0,  0, "exits" },
	{ 0x041,  0, 1,   8,  0, "blocking" },
	{ 0x002,  0, 1,  16,  0, "max_run" },
	{ 0x020, -9, 1,  24,  0, "wait_ns" },
	{ 0x003,  0, 4,  32, 10, "lin" },
	{ 0x004,  0, 6,  64,  0, "log" },
	{ 0x110,  0, 1, 112,  0, "io_bytes" },
	{ 0x030,  0, 1, 120,  0, "cycles" },
	{ 0x021, -9, 1, 128,  0, "sample_ns" },
	{ 0x000,  0, 1, 136,  0, "generation" },
};

const struct statsfd_desc_def statsfd_kunit_snap_parent_expect[] = {
	{ 0x0000,  0, 1,   0,  0, "created" },
	{ 0x0001,  0, 1,   8,  0, "alive" },
	{ 0x1000,  0, 1,  16,  0, "exits_sum" },
	{ 0x2001,  0, 1,  24,  0, "exits_min" },
	{ 0x3001,  0, 1,  32,  0, "exits_max" },
	{ 0x4001,  0, 1,  40,  0, "exits_avg" },
	{ 0x5001,  0, 1,  48,  0, "exits_count_nonzero" },
	{ 0x1001,  0, 1,  56,  0, "blocking_sum" },	/* boolean -> none */
	{ 0x1001,  0, 1,  64,  0, "max_run_sum" },	/* peak -> instant */
	{ 0x3021, -9, 1,  72,  0, "wait_ns_max" },
	{ 0x1003,  0, 4,  80, 10, "lin_sum" },
	{ 0x1004,  0, 6, 112,  0, "log_sum" },
	{ 0x0021, -9, 1, 160,  0, "sample_ns" },	/* after the aggregates */
	{ 0x0000,  0, 1, 168,  0, "generation" },
};

const struct statsfd_desc_def *const statsfd_kunit_child_expect =
	statsfd_kunit_snap_child_expect;
const struct statsfd_desc_def *const statsfd_kunit_parent_expect =
	statsfd_kunit_snap_parent_expect;

static_assert(SFK_CHILD_NUM_DESCS + 2 == SFK_SNAP_CHILD_NUM_DESCS);
static_assert(SFK_PARENT_NUM_DESCS + 2 == SFK_SNAP_PARENT_NUM_DESCS);
static_assert(ARRAY_SIZE(statsfd_kunit_snap_child_expect) ==
	      SFK_SNAP_CHILD_NUM_DESCS);
static_assert(ARRAY_SIZE(statsfd_kunit_snap_parent_expect) ==
	      SFK_SNAP_PARENT_NUM_DESCS);
static_assert(sizeof(struct statsfd_kunit_child) == SFK_CHILD_DATA_SIZE);
static_assert(sizeof(struct statsfd_kunit_parent) == SFK_PARENT_STATS_SIZE);

static void statsfd_kunit_get(struct statsfd_source *src)
{
	atomic_inc(&container_of(src, struct statsfd_kunit_src, src)->gets);
}

static void statsfd_kunit_put(struct statsfd_source *src)
{
	atomic_inc(&container_of(src, struct statsfd_kunit_src, src)->puts);
}

const struct statsfd_source_ops statsfd_kunit_ops = {
	.owner	= THIS_MODULE,
	.get	= statsfd_kunit_get,
	.put	= statsfd_kunit_put,
};

KUNIT_DEFINE_ACTION_WRAPPER(statsfd_kunit_schema_destroy,
			    statsfd_schema_destroy, struct statsfd_schema *);
KUNIT_DEFINE_ACTION_WRAPPER(statsfd_kunit_source_destroy,
			    statsfd_source_destroy, struct statsfd_source *);
KUNIT_DEFINE_ACTION_WRAPPER(statsfd_kunit_fput, __fput_sync, struct file *);

/**
 * statsfd_kunit_schema() - a test-owned schema initialized from a template
 * @test: the test; the schema is destroyed when it ends
 * @tmpl: the definition to copy (flags included)
 * @child: child schema for aggregates, or NULL
 *
 * The definition is copied into test-owned memory with @child as its
 * child schema, so @tmpl may live on the caller's stack.
 *
 * Return: the schema (the test is aborted if initialization fails).
 */
struct statsfd_schema *statsfd_kunit_schema(struct kunit *test,
					    const struct statsfd_schema_def *tmpl,
					    const struct statsfd_schema *child)
{
	struct statsfd_schema_def *def;
	struct statsfd_schema *schema;
	int ret;

	def = kunit_kmalloc(test, sizeof(*def), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, def);
	*def = *tmpl;
	def->child_schema = child;
	schema = kunit_kzalloc(test, sizeof(*schema), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, schema);
	KUNIT_ASSERT_EQ(test, statsfd_schema_init(schema, def), 0);
	ret = kunit_add_action_or_reset(test, statsfd_kunit_schema_destroy, schema);
	KUNIT_ASSERT_EQ(test, ret, 0);
	return schema;
}

/**
 * statsfd_kunit_source() - a test-owned source with counting ops
 * @test: the test; the source is destroyed when it ends (before its schema)
 * @schema: initialized schema
 * @stats: live values, owned by the test; for a schema with
 *	STATSFD_SCHEMA_SNAPSHOT, whose source is a snapshot source, NULL
 *	asks for zeroed ones the test owns (statsfd_source_stats())
 * @id: the id string
 *
 * Return: the source (the test is aborted on failure).
 */
struct statsfd_kunit_src *
statsfd_kunit_source(struct kunit *test, const struct statsfd_schema *schema,
		     const void *stats, const char *id)
{
	struct statsfd_kunit_src *s;
	int ret;

	s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, s);
	if (schema->def->flags & STATSFD_SCHEMA_SNAPSHOT) {
		if (!stats)
			stats = kunit_kzalloc(test, schema->def->stats_size ?: 1,
					      GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, stats);
		ret = statsfd_source_init_snapshot(&s->src, schema, stats,
						   &statsfd_kunit_ops, "%s", id);
	} else {
		ret = statsfd_source_init(&s->src, schema, stats,
					  &statsfd_kunit_ops, "%s", id);
	}
	KUNIT_ASSERT_EQ(test, ret, 0);
	ret = kunit_add_action_or_reset(test, statsfd_kunit_source_destroy, &s->src);
	KUNIT_ASSERT_EQ(test, ret, 0);
	return s;
}

/**
 * statsfd_kunit_ubuf() - user memory for the test's own address space
 * @test: the test; fails when the kernel cannot give it user memory
 * @size: bytes, rounded up to pages
 * @prot: PROT_* bits
 *
 * Return: the user address.
 */
char __user *statsfd_kunit_ubuf(struct kunit *test, size_t size,
				unsigned long prot)
{
#ifdef STATSFD_HAVE_KUNIT_VM_MMAP
	unsigned long addr;

	addr = kunit_vm_mmap(test, NULL, 0, size, prot,
			     MAP_ANONYMOUS | MAP_PRIVATE, 0);
	KUNIT_ASSERT_NE_MSG(test, addr, 0, "no user address space");
	KUNIT_ASSERT_LT_MSG(test, addr, (unsigned long)TASK_SIZE,
			    "vm_mmap failed");
	return (char __user *)addr;
#else
	/*
	 * KUnit runs only on the 6.12 debug kernel, which has
	 * kunit_vm_mmap(): getting here means compat.h lost track of it,
	 * and a skip would hide every test of user copies.
	 */
	KUNIT_ASSERT_TRUE_MSG(test, false, "kunit_vm_mmap() needs Linux 6.12");
	return NULL;
#endif
}

/**
 * statsfd_kunit_file() - a stats file on @s, closed when the test ends
 * @test: the test
 * @s: the source
 *
 * Return: the file, made by the same code as a stats fd's file.
 */
struct file *statsfd_kunit_file(struct kunit *test,
				struct statsfd_kunit_src *s)
{
	struct file *file = statsfd_source_getfile(&s->src);
	int ret;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, file);
	ret = kunit_add_action_or_reset(test, statsfd_kunit_fput, file);
	KUNIT_ASSERT_EQ(test, ret, 0);
	return file;
}

/**
 * statsfd_kunit_read() - pread through the file's ->read into @kbuf
 * @test: the test
 * @file: a stats file
 * @ubuf: user buffer of at least @len bytes
 * @kbuf: kernel buffer of at least @len bytes; receives the bytes read
 * @len: bytes to read
 * @pos: file offset
 *
 * Return: what ->read returned.
 */
ssize_t statsfd_kunit_read(struct kunit *test, struct file *file,
			   char __user *ubuf, void *kbuf, size_t len,
			   loff_t pos)
{
	ssize_t ret = file->f_op->read(file, ubuf, len, &pos);

	if (ret > 0)
		KUNIT_ASSERT_EQ(test, copy_from_user(kbuf, ubuf, ret), 0);
	return ret;
}

/**
 * statsfd_kunit_seq() - a zeroed seq_file with a test-owned buffer
 * @test: the test
 * @m: the seq_file to set up
 * @size: bytes of buffer
 */
void statsfd_kunit_seq(struct kunit *test, struct seq_file *m, size_t size)
{
	memset(m, 0, sizeof(*m));
	m->size = size;
	m->buf = kunit_kzalloc(test, size, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, m->buf);
}

/**
 * statsfd_kunit_debugfs_seq() - the seq_file a read of one debugfs stat uses
 * @test: the test
 * @dir: a source's debugfs directory
 * @stat: the stat's file in @dir, which must exist
 * @m: set up for statsfd_debugfs_show() on that file (512 bytes)
 *
 * The file's own i_private, as the debugfs read would pass it.
 */
void statsfd_kunit_debugfs_seq(struct kunit *test, struct dentry *dir,
			       const char *stat, struct seq_file *m)
{
	struct dentry *d = debugfs_lookup(stat, dir);

	KUNIT_ASSERT_NOT_ERR_OR_NULL_MSG(test, d, "no file %s", stat);
	statsfd_kunit_seq(test, m, 512);
	m->private = d_inode(d)->i_private;
	dput(d);
}

/**
 * statsfd_kunit_fdinfo() - what /proc/PID/fdinfo shows for @file
 * @test: the test (the text is test-owned)
 * @file: a stats file
 *
 * Return: the lines its ->show_fdinfo writes.
 */
const char *statsfd_kunit_fdinfo(struct kunit *test, struct file *file)
{
	struct seq_file m;

	statsfd_kunit_seq(test, &m, 256);
	file->f_op->show_fdinfo(&m, file);
	return m.buf;
}

/**
 * statsfd_kunit_fill_child() - distinct values in every stat of a child
 * @c: the child's stats
 * @seed: 1, 2, ...: each child its own values, none of them zero
 *
 * Child @seed's exits are 1000 * @seed + 11 and its wait_ns 7000000 *
 * @seed + 3: tests that check an aggregate by number count on these.
 */
void statsfd_kunit_fill_child(struct statsfd_kunit_child *c, u64 seed)
{
	unsigned int i;

	c->exits = 1000 * seed + 11;
	c->blocking = seed & 1;
	c->max_run = 500 + seed;
	c->wait_ns = 7000000 * seed + 3;
	for (i = 0; i < ARRAY_SIZE(c->lin); i++)
		c->lin[i] = seed * 100 + i;
	for (i = 0; i < ARRAY_SIZE(c->log); i++)
		c->log[i] = (seed << (i + 4)) + i;
	c->io_bytes = 4096 * seed + 1;
	c->cycles = 0x0fedcba987654321ULL + seed;
}

/**
 * statsfd_kunit_family() - a parent of the plain schemas and its children
 * @test: the test; schemas and sources are test-owned
 * @f: the family, zeroed by the caller; its values are what the sources
 *	show
 * @id: the parent's id; child i's is "@id/vcpu-i"
 * @nr: how many children (at most SFK_FAMILY_MAX), child i filled by
 *	statsfd_kunit_fill_child(i + 1)
 * @nr_added: how many of them, the first ones, are the parent's children
 *	(the others are spares a test adds itself)
 *
 * The parent's own stats are created = 9 and alive = 4.
 */
void statsfd_kunit_family(struct kunit *test, struct statsfd_kunit_family *f,
			  const char *id, unsigned int nr,
			  unsigned int nr_added)
{
	struct statsfd_schema *cs, *ps;
	unsigned int i;
	char cid[32];

	KUNIT_ASSERT_LE(test, nr, SFK_FAMILY_MAX);
	cs = statsfd_kunit_schema(test, &statsfd_kunit_child_tmpl, NULL);
	ps = statsfd_kunit_schema(test, &statsfd_kunit_parent_tmpl, cs);
	f->pstats.created = 9;
	f->pstats.alive = 4;
	f->parent = statsfd_kunit_source(test, ps, &f->pstats, id);
	for (i = 0; i < nr; i++) {
		statsfd_kunit_fill_child(&f->cstats[i], i + 1);
		snprintf(cid, sizeof(cid), "%s/vcpu-%u", id, i);
		f->child[i] = statsfd_kunit_source(test, cs, &f->cstats[i],
						   cid);
		if (i < nr_added)
			statsfd_source_add_child(&f->parent->src,
						 &f->child[i]->src);
	}
}

static void statsfd_kunit_put32(u8 *img, u32 off, u32 v)
{
	memcpy(img + off, &v, sizeof(v));
}

/**
 * statsfd_kunit_image() - the expected stats file, built by hand
 * @test: the test (the image is test-managed)
 * @expect: expected descriptors
 * @num_desc: entries in @expect
 * @data_size: bytes of @data
 * @id: the source's id (short enough not to be truncated)
 * @data: the expected data block
 *
 * Uses the name size of the fixtures (SFK_NAME_SIZE) and the documented
 * order header | id | data | descriptors; no core code is involved.
 *
 * Return: the image, 24 + SFK_NAME_SIZE + @data_size + @num_desc *
 * SFK_STRIDE bytes.
 */
void *statsfd_kunit_image(struct kunit *test,
			  const struct statsfd_desc_def *expect, u32 num_desc,
			  u32 data_size, const char *id, const void *data)
{
	u32 desc_offset = SFK_DATA_OFFSET + data_size;
	u8 *img;
	u32 i;

	img = kunit_kzalloc(test, desc_offset + num_desc * SFK_STRIDE,
			    GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, img);
	statsfd_kunit_put32(img, 0, 0);
	statsfd_kunit_put32(img, 4, SFK_NAME_SIZE);
	statsfd_kunit_put32(img, 8, num_desc);
	statsfd_kunit_put32(img, 12, 24);
	statsfd_kunit_put32(img, 16, desc_offset);
	statsfd_kunit_put32(img, 20, SFK_DATA_OFFSET);
	strscpy(img + 24, id, SFK_NAME_SIZE);
	memcpy(img + SFK_DATA_OFFSET, data, data_size);
	for (i = 0; i < num_desc; i++) {
		u8 *d = img + desc_offset + i * SFK_STRIDE;
		const struct statsfd_desc_def *e = &expect[i];

		statsfd_kunit_put32(d, 0, e->flags);
		memcpy(d + 4, &e->exponent, sizeof(e->exponent));
		memcpy(d + 6, &e->size, sizeof(e->size));
		statsfd_kunit_put32(d, 8, e->offset);
		statsfd_kunit_put32(d, 12, e->bucket_size);
		strscpy(d + 16, e->name, SFK_NAME_SIZE);
	}
	return img;
}

/**
 * statsfd_kunit_parent_data() - the expected data block of a parent
 * @p: the parent's own stats
 * @c: the children's stats
 * @n: number of children
 * @data: SFK_PARENT_DATA_SIZE bytes to fill
 *
 * The straightforward computation (values small enough not to overflow).
 */
void statsfd_kunit_parent_data(const struct statsfd_kunit_parent *p,
			       const struct statsfd_kunit_child *const *c,
			       unsigned int n, u64 *data)
{
	u64 sum = 0, min = U64_MAX, max = 0, nonzero = 0, blocking = 0;
	u64 max_run = 0, wait_max = 0;
	unsigned int i, j;

	memset(data, 0, SFK_PARENT_DATA_SIZE);
	data[0] = p->created;
	data[1] = p->alive;
	for (i = 0; i < n; i++) {
		sum += c[i]->exits;
		min = c[i]->exits < min ? c[i]->exits : min;
		max = c[i]->exits > max ? c[i]->exits : max;
		nonzero += c[i]->exits != 0;
		blocking += c[i]->blocking;
		max_run += c[i]->max_run;
		wait_max = c[i]->wait_ns > wait_max ? c[i]->wait_ns : wait_max;
		for (j = 0; j < 4; j++)
			data[10 + j] += c[i]->lin[j];
		for (j = 0; j < 6; j++)
			data[14 + j] += c[i]->log[j];
	}
	data[2] = sum;
	data[3] = n ? min : 0;
	data[4] = max;
	data[5] = n ? sum / n : 0;
	data[6] = nonzero;
	data[7] = blocking;
	data[8] = max_run;
	data[9] = wait_max;
}

MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(STATSFD_NS);
MODULE_DESCRIPTION("KUnit tests for the statsfd core");
STATSFD_IMPORT_KUNIT_NS();
