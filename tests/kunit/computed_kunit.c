// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd KUnit suite statsfd_computed: sources whose values are computed
 * at read time by the owner's fill callback (here: per-CPU counters summed
 * over the possible CPUs, as a real provider sums them), their aggregates
 * and retirement, errors, update-window metadata, and the owner
 * references taken with a tryget callback.
 */
#include <kunit/test.h>
#include <linux/atomic.h>
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/statsfd.h>

#include "statsfd_kunit.h"

/* A computed source: per-CPU values its fill sums, and what fill saw. */
struct cmp_src {
	struct statsfd_source src;
	struct statsfd_kunit_child __percpu *pcpu;
	atomic_t fills;
	int fill_ret;		/* returned by fill when non-zero */
	atomic_t gets, puts;
	bool refuse;		/* tryget says the owner is dying */
};

static int cmp_fill(struct statsfd_source *src, void *stats)
{
	struct cmp_src *c = container_of(src, struct cmp_src, src);
	u64 *out = stats;
	unsigned int i, n = sizeof(struct statsfd_kunit_child) / sizeof(u64);
	int cpu;

	atomic_inc(&c->fills);
	if (c->fill_ret)
		return c->fill_ret;
	memset(out, 0, sizeof(struct statsfd_kunit_child));
	for_each_possible_cpu(cpu) {
		const u64 *v = (const u64 *)per_cpu_ptr(c->pcpu, cpu);

		for (i = 0; i < n; i++)
			out[i] += READ_ONCE(v[i]);
	}
	return 0;
}

static void cmp_get(struct statsfd_source *src)
{
	struct cmp_src *c = container_of(src, struct cmp_src, src);

	atomic_inc(&c->gets);
}

static bool cmp_tryget(struct statsfd_source *src)
{
	struct cmp_src *c = container_of(src, struct cmp_src, src);

	if (c->refuse)
		return false;
	atomic_inc(&c->gets);
	return true;
}

static void cmp_put(struct statsfd_source *src)
{
	struct cmp_src *c = container_of(src, struct cmp_src, src);

	atomic_inc(&c->puts);
}

static const struct statsfd_source_ops cmp_ops = {
	.owner = THIS_MODULE,
	.tryget = cmp_tryget,
	.put = cmp_put,
	.fill = cmp_fill,
};

struct cmp_ctx {
	struct statsfd_schema *child_schema;
	struct statsfd_schema *parent_schema;
	char __user *ubuf;
	u8 *kbuf;
};

static void cmp_free_percpu(void *p)
{
	free_percpu((void __percpu *)p);
}

static void cmp_destroy(void *p)
{
	statsfd_source_destroy(p);
}

/* A computed child source with per-CPU values; destroyed with the test. */
static struct cmp_src *cmp_source(struct kunit *test,
				  const struct statsfd_schema *schema,
				  const char *id)
{
	struct cmp_src *c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, c);
	c->pcpu = alloc_percpu(struct statsfd_kunit_child);
	/* !: a __percpu pointer cannot be compared with a plain NULL. */
	KUNIT_ASSERT_FALSE(test, !c->pcpu);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cmp_free_percpu,
							(void __force *)c->pcpu),
			0);
	KUNIT_ASSERT_EQ(test, statsfd_source_init_computed(&c->src, schema,
							   &cmp_ops, "%s", id),
			0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, cmp_destroy,
							&c->src),
			0);
	return c;
}

/* Give CPU @cpu's counters of @c values derived from @seed. */
static void cmp_set(struct cmp_src *c, int cpu, u64 seed)
{
	struct statsfd_kunit_child *v = per_cpu_ptr(c->pcpu, cpu);
	unsigned int i;

	v->exits = seed;
	v->blocking = seed & 1;
	v->max_run = seed * 3;
	v->wait_ns = seed * 1000;
	for (i = 0; i < ARRAY_SIZE(v->lin); i++)
		v->lin[i] = seed + i;
	for (i = 0; i < ARRAY_SIZE(v->log); i++)
		v->log[i] = seed * i;
	v->io_bytes = seed << 10;
	v->cycles = seed << 20;
}

/* The sum over CPUs, computed here independently of cmp_fill(). */
static void cmp_expect(struct cmp_src *c, struct statsfd_kunit_child *sum)
{
	int cpu;
	unsigned int i;

	memset(sum, 0, sizeof(*sum));
	for_each_possible_cpu(cpu) {
		const struct statsfd_kunit_child *v = per_cpu_ptr(c->pcpu, cpu);

		sum->exits += v->exits;
		sum->blocking += v->blocking;
		sum->max_run += v->max_run;
		sum->wait_ns += v->wait_ns;
		for (i = 0; i < ARRAY_SIZE(v->lin); i++)
			sum->lin[i] += v->lin[i];
		for (i = 0; i < ARRAY_SIZE(v->log); i++)
			sum->log[i] += v->log[i];
		sum->io_bytes += v->io_bytes;
		sum->cycles += v->cycles;
	}
}

static int cmp_init(struct kunit *test)
{
	struct cmp_ctx *ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, ctx);
	test->priv = ctx;
	ctx->child_schema = statsfd_kunit_schema(test, &statsfd_kunit_child_tmpl,
						 NULL);
	ctx->parent_schema = statsfd_kunit_schema(test,
						  &statsfd_kunit_parent_tmpl,
						  ctx->child_schema);
	ctx->ubuf = statsfd_kunit_ubuf(test, PAGE_SIZE, PROT_READ | PROT_WRITE);
	ctx->kbuf = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ctx->kbuf);
	return 0;
}

static struct file *cmp_file(struct kunit *test, struct statsfd_source *src)
{
	struct file *file = statsfd_source_getfile(src);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, file);
	return file;
}

/* A file on a new computed child source "cpu-sum", which goes in @c. */
static struct file *cmp_child_file(struct kunit *test, struct cmp_src **c)
{
	struct cmp_ctx *ctx = test->priv;

	*c = cmp_source(test, ctx->child_schema, "cpu-sum");
	return cmp_file(test, &(*c)->src);
}

/* ->read of @len bytes at @pos of @file into the test's kbuf. */
static ssize_t cmp_read(struct kunit *test, struct file *file, size_t len,
			loff_t pos)
{
	struct cmp_ctx *ctx = test->priv;

	return statsfd_kunit_read(test, file, ctx->ubuf, ctx->kbuf, len, pos);
}

static void statsfd_computed_read_returns_what_fill_computed(struct kunit *test)
{
	struct cmp_ctx *ctx = test->priv;
	struct cmp_src *c = cmp_source(test, ctx->child_schema, "cpu-sum");
	struct statsfd_kunit_child sum;
	struct file *file;
	void *img;
	int cpu;

	for_each_possible_cpu(cpu)
		cmp_set(c, cpu, 10 + cpu);
	cmp_expect(c, &sum);
	img = statsfd_kunit_image(test, statsfd_kunit_child_expect,
				  SFK_CHILD_NUM_DESCS, SFK_CHILD_DATA_SIZE,
				  "cpu-sum", &sum);
	file = cmp_file(test, &c->src);
	KUNIT_ASSERT_EQ(test, cmp_read(test, file, SFK_CHILD_FILE_SIZE, 0),
			SFK_CHILD_FILE_SIZE);
	KUNIT_EXPECT_MEMEQ(test, ctx->kbuf, img, SFK_CHILD_FILE_SIZE);
	KUNIT_EXPECT_EQ(test, atomic_read(&c->fills), 1);

	/* A later read sees later values: nothing is cached. */
	cmp_set(c, cpumask_first(cpu_possible_mask), 1000);
	cmp_expect(c, &sum);
	KUNIT_ASSERT_EQ(test, cmp_read(test, file, SFK_CHILD_DATA_SIZE,
				       SFK_DATA_OFFSET),
			SFK_CHILD_DATA_SIZE);
	KUNIT_EXPECT_MEMEQ(test, ctx->kbuf, &sum, SFK_CHILD_DATA_SIZE);
	KUNIT_EXPECT_EQ(test, atomic_read(&c->fills), 2);
	__fput_sync(file);
}

static void statsfd_computed_fill_runs_only_for_the_data_block(struct kunit *test)
{
	struct cmp_src *c;
	struct file *file = cmp_child_file(test, &c);

	/* Header, id and descriptors come from prebuilt blocks. */
	KUNIT_EXPECT_EQ(test, cmp_read(test, file, SFK_DATA_OFFSET, 0),
			SFK_DATA_OFFSET);
	KUNIT_EXPECT_EQ(test, cmp_read(test, file,
				       SFK_CHILD_FILE_SIZE -
				       SFK_CHILD_DESC_OFFSET,
				       SFK_CHILD_DESC_OFFSET),
			SFK_CHILD_FILE_SIZE - SFK_CHILD_DESC_OFFSET);
	KUNIT_EXPECT_EQ(test, atomic_read(&c->fills), 0);
	/* One u64 of the data: one fill. */
	KUNIT_EXPECT_EQ(test, cmp_read(test, file, 8, SFK_DATA_OFFSET + 8),
			8);
	KUNIT_EXPECT_EQ(test, atomic_read(&c->fills), 1);
	__fput_sync(file);
}

static void statsfd_computed_fill_error_is_the_read_error(struct kunit *test)
{
	struct cmp_src *c;
	struct file *file = cmp_child_file(test, &c);

	c->fill_ret = -ENODEV;
	KUNIT_EXPECT_EQ(test, cmp_read(test, file, SFK_CHILD_DATA_SIZE,
				       SFK_DATA_OFFSET),
			-ENODEV);
	/* As for any read error: the bytes before the data block count. */
	KUNIT_EXPECT_EQ(test, cmp_read(test, file, SFK_CHILD_FILE_SIZE, 0),
			SFK_DATA_OFFSET);
	/* A positive return is a provider bug, never taken for a length. */
	c->fill_ret = 5;
	KUNIT_EXPECT_EQ(test, cmp_read(test, file, SFK_CHILD_DATA_SIZE,
				       SFK_DATA_OFFSET),
			-EIO);
	c->fill_ret = 0;
	KUNIT_EXPECT_EQ(test, cmp_read(test, file, SFK_CHILD_DATA_SIZE,
				       SFK_DATA_OFFSET),
			SFK_CHILD_DATA_SIZE);
	__fput_sync(file);
}

static void statsfd_computed_children_are_aggregated(struct kunit *test)
{
	struct cmp_ctx *ctx = test->priv;
	struct statsfd_kunit_parent own = { .created = 2, .alive = 2 };
	struct statsfd_kunit_child sums[2];
	const struct statsfd_kunit_child *cs[2] = { &sums[0], &sums[1] };
	struct statsfd_kunit_src *parent;
	struct cmp_src *c[2];
	u64 want[SFK_PARENT_DATA_SIZE / 8];
	struct file *file;
	int i, cpu;

	parent = statsfd_kunit_source(test, ctx->parent_schema, &own, "vm");
	for (i = 0; i < 2; i++) {
		c[i] = cmp_source(test, ctx->child_schema, "cpu");
		for_each_possible_cpu(cpu)
			cmp_set(c[i], cpu, 100 * (i + 1) + cpu);
		cmp_expect(c[i], &sums[i]);
		statsfd_source_add_child(&parent->src, &c[i]->src);
	}
	statsfd_kunit_parent_data(&own, cs, 2, want);
	file = statsfd_kunit_file(test, parent);
	KUNIT_ASSERT_EQ(test, cmp_read(test, file, SFK_PARENT_DATA_SIZE,
				       SFK_DATA_OFFSET),
			SFK_PARENT_DATA_SIZE);
	KUNIT_EXPECT_MEMEQ(test, ctx->kbuf, want, SFK_PARENT_DATA_SIZE);
	KUNIT_EXPECT_EQ(test, atomic_read(&c[0]->fills), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&c[1]->fills), 1);

	/* A child that cannot compute fails the parent's aggregates. */
	c[1]->fill_ret = -EIO;
	KUNIT_EXPECT_EQ(test, cmp_read(test, file, SFK_PARENT_DATA_SIZE,
				       SFK_DATA_OFFSET),
			-EIO);
	c[1]->fill_ret = 0;
	for (i = 0; i < 2; i++)
		statsfd_source_del_child(&c[i]->src);
}

static void statsfd_computed_child_leaves_its_counts_in_the_sums(struct kunit *test)
{
	struct cmp_ctx *ctx = test->priv;
	struct statsfd_kunit_parent own = { .created = 1 };
	struct statsfd_kunit_src *parent;
	struct statsfd_kunit_child sum;
	u64 agg[SFK_PARENT_DATA_SIZE / 8];
	struct cmp_src *c;
	unsigned int i;
	int cpu;

	parent = statsfd_kunit_source(test, ctx->parent_schema, &own, "vm");
	c = cmp_source(test, ctx->child_schema, "cpu");
	for_each_possible_cpu(cpu)
		cmp_set(c, cpu, 7 + cpu);
	cmp_expect(c, &sum);
	statsfd_source_add_child(&parent->src, &c->src);
	statsfd_source_del_child(&c->src);
	/* Retiring computed the child once. */
	KUNIT_EXPECT_EQ(test, atomic_read(&c->fills), 1);

	KUNIT_ASSERT_EQ(test, statsfd_agg_compute(&parent->src, agg), 0);
	/* The sums of a counter and of histograms keep the child's counts. */
	KUNIT_EXPECT_EQ(test, agg[0], sum.exits);
	for (i = 0; i < ARRAY_SIZE(sum.lin); i++)
		KUNIT_EXPECT_EQ(test, agg[8 + i], sum.lin[i]);
	for (i = 0; i < ARRAY_SIZE(sum.log); i++)
		KUNIT_EXPECT_EQ(test, agg[12 + i], sum.log[i]);
	/* Aggregates of instant values (max, count, a boolean's sum) lose it. */
	KUNIT_EXPECT_EQ(test, agg[2], 0);
	KUNIT_EXPECT_EQ(test, agg[4], 0);
	KUNIT_EXPECT_EQ(test, agg[5], 0);
}

/* A child that cannot compute while it leaves: its counts are lost, once. */
static void statsfd_computed_child_failing_at_retire_loses_its_counts(struct kunit *test)
{
	struct cmp_ctx *ctx = test->priv;
	struct statsfd_kunit_parent own = { .created = 1 };
	struct statsfd_kunit_src *parent;
	u64 agg[SFK_PARENT_DATA_SIZE / 8];
	struct cmp_src *c;
	int cpu;

	parent = statsfd_kunit_source(test, ctx->parent_schema, &own, "vm");
	c = cmp_source(test, ctx->child_schema, "cpu");
	for_each_possible_cpu(cpu)
		cmp_set(c, cpu, 5);
	statsfd_source_add_child(&parent->src, &c->src);
	c->fill_ret = -ENODEV;
	statsfd_source_del_child(&c->src);
	KUNIT_EXPECT_EQ(test, atomic_read(&c->fills), 1);
	KUNIT_EXPECT_NULL(test, c->src.priv->parent);
	KUNIT_ASSERT_EQ(test, statsfd_agg_compute(&parent->src, agg), 0);
	KUNIT_EXPECT_EQ(test, agg[0], 0);
	KUNIT_EXPECT_EQ(test, agg[8], 0);
	/* A failed computation is no generation. */
	KUNIT_EXPECT_EQ(test, atomic64_read(&c->src.priv->fills), 0);
}

static void statsfd_computed_snapshot_source_reports_time_and_generation(struct kunit *test)
{
	struct cmp_ctx *ctx = test->priv;
	struct statsfd_schema_def tmpl = statsfd_kunit_snap_child_tmpl;
	struct statsfd_schema *schema;
	u64 meta[2], before, after;
	struct cmp_src *c;
	struct file *file;
	int i;

	/* Update windows without a mapping: there are no live values. */
	tmpl.flags = STATSFD_SCHEMA_SNAPSHOT;
	schema = statsfd_kunit_schema(test, &tmpl, NULL);
	c = cmp_source(test, schema, "cpu-sum");
	KUNIT_EXPECT_NULL(test, c->src.area);
	file = cmp_file(test, &c->src);
	for (i = 1; i <= 3; i++) {
		before = ktime_get_boottime_ns();
		KUNIT_ASSERT_EQ(test,
				statsfd_kunit_read(test, file, ctx->ubuf,
						   meta, sizeof(meta),
						   SFK_DATA_OFFSET +
						   SFK_SNAP_CHILD_META),
				sizeof(meta));
		after = ktime_get_boottime_ns();
		KUNIT_EXPECT_GE(test, meta[0], before);
		KUNIT_EXPECT_LE(test, meta[0], after);
		/* The generation counts the computations. */
		KUNIT_EXPECT_EQ(test, meta[1], i);
	}
	/* A computed source has nothing to map. */
	KUNIT_EXPECT_EQ(test, file->f_op->mmap(file, NULL), -ENODEV);
	__fput_sync(file);
}

static void statsfd_computed_debugfs_view_computes_the_values(struct kunit *test)
{
	struct cmp_ctx *ctx = test->priv;
	struct cmp_src *c = cmp_source(test, ctx->child_schema, "cpu-sum");
	struct statsfd_kunit_child sum;
	struct seq_file m;
	struct dentry *dir;
	char want[32];
	int cpu;

	for_each_possible_cpu(cpu)
		cmp_set(c, cpu, 3 + cpu);
	cmp_expect(c, &sum);
	dir = debugfs_create_dir("statsfd_kunit_computed", NULL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, dir);
	KUNIT_ASSERT_EQ(test, statsfd_source_debugfs_create(&c->src, "cpu",
							    dir), 0);
	statsfd_kunit_debugfs_seq(test, statsfd_source_debugfs_dir(&c->src),
				  "exits", &m);
	KUNIT_EXPECT_EQ(test, statsfd_debugfs_show(&m, NULL), 0);
	snprintf(want, sizeof(want), "%llu\n", sum.exits);
	KUNIT_EXPECT_STREQ(test, m.buf, want);
	KUNIT_EXPECT_EQ(test, atomic_read(&c->fills), 1);

	c->fill_ret = -ENODEV;
	m.count = 0;
	KUNIT_EXPECT_EQ(test, statsfd_debugfs_show(&m, NULL), -ENODEV);
	statsfd_source_debugfs_remove(&c->src);
	debugfs_remove(dir);
}

static void statsfd_computed_source_init_rejects_bad_combinations(struct kunit *test)
{
	static const struct statsfd_source_ops get_and_tryget = {
		.owner = THIS_MODULE, .get = cmp_get,
		.tryget = cmp_tryget, .put = cmp_put,
	};
	static const struct statsfd_source_ops tryget_no_put = {
		.owner = THIS_MODULE, .tryget = cmp_tryget,
	};
	static const struct statsfd_source_ops put_only = {
		.owner = THIS_MODULE, .put = cmp_put,
	};
	struct cmp_ctx *ctx = test->priv;
	struct statsfd_kunit_child stats = {};
	struct statsfd_schema *mmap_schema;
	struct statsfd_source src;

	/*
	 * A computed source's values are nowhere: the two entry points that
	 * take a stats pointer (plain, snapshot) refuse a fill callback; the
	 * computed one requires it.
	 */
	KUNIT_EXPECT_EQ(test, statsfd_source_init(&src, ctx->child_schema,
						  &stats, &cmp_ops, "x"),
			-EINVAL);
	KUNIT_EXPECT_NULL(test, src.priv);
	KUNIT_EXPECT_EQ(test, statsfd_source_init_computed(&src, ctx->child_schema,
							   &statsfd_kunit_ops, "x"),
			-EINVAL);
	KUNIT_EXPECT_NULL(test, src.priv);
	/* ... and nothing to map. */
	mmap_schema = statsfd_kunit_schema(test, &statsfd_kunit_snap_child_tmpl,
					   NULL);
	KUNIT_EXPECT_EQ(test, statsfd_source_init_computed(&src, mmap_schema,
							   &cmp_ops, "x"),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, statsfd_source_init_snapshot(&src, mmap_schema,
							   &stats, &cmp_ops,
							   "x"),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, statsfd_source_init(&src, ctx->child_schema,
						  &stats, &get_and_tryget, "x"),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, statsfd_source_init(&src, ctx->child_schema,
						  &stats, &tryget_no_put, "x"),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, statsfd_source_init(&src, ctx->child_schema,
						  &stats, &put_only, "x"),
			-EINVAL);
	/* Destroying a source that never initialized does nothing. */
	statsfd_source_destroy(&src);
}

static void statsfd_tryget_refusal_makes_no_file_and_takes_nothing(struct kunit *test)
{
	struct cmp_ctx *ctx = test->priv;
	struct cmp_src *c = cmp_source(test, ctx->child_schema, "dying");
	int mine = module_refcount(THIS_MODULE);
	struct file *file;

	c->refuse = true;
	file = statsfd_source_getfile(&c->src);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(file), -ENODEV);
	KUNIT_EXPECT_EQ(test, atomic_read(&c->gets), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&c->puts), 0);
	KUNIT_EXPECT_EQ(test, module_refcount(THIS_MODULE), mine);
}

static void statsfd_tryget_success_pins_until_release(struct kunit *test)
{
	struct cmp_ctx *ctx = test->priv;
	struct cmp_src *c = cmp_source(test, ctx->child_schema, "alive");
	int mine = module_refcount(THIS_MODULE);
	struct file *file;

	file = cmp_file(test, &c->src);
	KUNIT_EXPECT_EQ(test, atomic_read(&c->gets), 1);
	KUNIT_EXPECT_EQ(test, module_refcount(THIS_MODULE), mine + 1);
	__fput_sync(file);
	KUNIT_EXPECT_EQ(test, atomic_read(&c->puts), 1);
	KUNIT_EXPECT_EQ(test, module_refcount(THIS_MODULE), mine);
}

static struct kunit_case statsfd_computed_cases[] = {
	KUNIT_CASE(statsfd_computed_read_returns_what_fill_computed),
	KUNIT_CASE(statsfd_computed_fill_runs_only_for_the_data_block),
	KUNIT_CASE(statsfd_computed_fill_error_is_the_read_error),
	KUNIT_CASE(statsfd_computed_children_are_aggregated),
	KUNIT_CASE(statsfd_computed_child_leaves_its_counts_in_the_sums),
	KUNIT_CASE(statsfd_computed_child_failing_at_retire_loses_its_counts),
	KUNIT_CASE(statsfd_computed_snapshot_source_reports_time_and_generation),
	KUNIT_CASE(statsfd_computed_debugfs_view_computes_the_values),
	KUNIT_CASE(statsfd_computed_source_init_rejects_bad_combinations),
	KUNIT_CASE(statsfd_tryget_refusal_makes_no_file_and_takes_nothing),
	KUNIT_CASE(statsfd_tryget_success_pins_until_release),
	{}
};

STATSFD_KUNIT_SUITE(statsfd_computed, cmp_init);
