// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd KUnit suite statsfd_snapshot: update windows.  The schema flags
 * and the two stats they add (sample_ns, generation), the values area of
 * a source, the window protocol (sequence count, generation, sample_ns),
 * readers served by the writer at the end of its window and readers that
 * give up, the per-file read buffer, faulting user buffers, and aggregates
 * over one snapshot of each child.  Each concurrent check comes with a
 * control case that shows the same check catches a mix when the writer
 * skips its windows.
 */
#include <kunit/test.h>
#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/log2.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/smp.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/signal.h>
#include <linux/slab.h>
#include <linux/statsfd.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/tracepoint.h>
#include <linux/uaccess.h>
#include <trace/events/kmem.h>

#include "statsfd_kunit.h"

#define CHILD_WORDS	(SFK_CHILD_DATA_SIZE / 8)	/* 16 plain values */
#define SAMPLE		(SFK_SNAP_CHILD_META / 8)	/* word 16 */
#define GENERATION	(SAMPLE + 1)			/* word 17 */
/* The aggregate area of the parent: data block bytes [16, 160). */
#define AGG_OFF		SFK_PARENT_STATS_SIZE
#define AGG_LEN		(SFK_SNAP_PARENT_META - SFK_PARENT_STATS_SIZE)
#define AGG_WORDS	(AGG_LEN / 8)
/* How long a helper thread waits for the test before it gives up. */
#define WAIT_LIMIT_NS	(5 * NSEC_PER_SEC)

struct snap_ctx {
	struct statsfd_schema *cs;	/* child: SNAPSHOT | MMAP */
	struct statsfd_schema *ps;	/* parent: SNAPSHOT */
	struct statsfd_kunit_src *src;	/* a child source */
	struct file *file;		/* on @src */
	char __user *ubuf;		/* two pages */
	u64 *kbuf;			/* two pages */
};

static int snap_init(struct kunit *test)
{
	struct snap_ctx *ctx;

	ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ctx);
	test->priv = ctx;
	ctx->cs = statsfd_kunit_schema(test, &statsfd_kunit_snap_child_tmpl,
				       NULL);
	ctx->ps = statsfd_kunit_schema(test, &statsfd_kunit_snap_parent_tmpl,
				       ctx->cs);
	ctx->src = statsfd_kunit_source(test, ctx->cs, NULL, "vm-7-0/vcpu-0");
	ctx->file = statsfd_kunit_file(test, ctx->src);
	ctx->ubuf = statsfd_kunit_ubuf(test, 2 * PAGE_SIZE,
				       PROT_READ | PROT_WRITE);
	ctx->kbuf = kunit_kzalloc(test, 2 * PAGE_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ctx->kbuf);
	return 0;
}

/* ---- helpers ---------------------------------------------------------- */

/* Every plain value of @src becomes @v (the caller is its writer). */
static void set_words(struct statsfd_source *src, u64 v)
{
	u64 *w = statsfd_source_stats(src);
	u32 i;

	for (i = 0; i < src->schema->def->stats_size / sizeof(u64); i++)
		statsfd_stat_set(&w[i], v);
}

static void window_set_words(struct statsfd_source *src, u64 v)
{
	statsfd_update_begin(src);
	set_words(src, v);
	statsfd_update_end(src);
}

/* Bytes [@off, @off + @len) of the data block of @file, through ->read. */
static ssize_t read_data(struct kunit *test, struct snap_ctx *ctx,
			 struct file *file, void *out, u32 off, u32 len)
{
	return statsfd_kunit_read(test, file, ctx->ubuf, out, len,
				  SFK_DATA_OFFSET + off);
}

static void expect_words(struct kunit *test, const u64 *w, u32 n, u64 v)
{
	u32 i;

	for (i = 0; i < n; i++)
		KUNIT_EXPECT_EQ_MSG(test, w[i], v, "word %u", i);
}

/* A child stats struct whose every value is @v, for the parent model. */
static void child_all(struct statsfd_kunit_child *c, u64 v)
{
	u64 *w = (u64 *)c;
	u32 i;

	for (i = 0; i < CHILD_WORDS; i++)
		w[i] = v;
}

/* The parent's expected aggregates over children whose values are all
 * @v[0], @v[1], ... (statsfd_kunit_parent_data(), an independent model).
 */
static void model_aggs(u64 *aggs, const u64 *v, unsigned int n)
{
	struct statsfd_kunit_child c[2];
	const struct statsfd_kunit_child *cp[2] = { &c[0], &c[1] };
	struct statsfd_kunit_parent p = {};
	u64 data[SFK_PARENT_DATA_SIZE / 8];
	unsigned int i;

	for (i = 0; i < n; i++)
		child_all(&c[i], v[i]);
	statsfd_kunit_parent_data(&p, cp, n, data);
	memcpy(aggs, data + AGG_OFF / 8, AGG_LEN);
}

/* The expected file of a child source, sample_ns and generation given. */
static u8 *child_image(struct kunit *test, const u64 *vals, u64 sample_ns,
		       u64 generation)
{
	u64 data[SFK_SNAP_CHILD_DATA_SIZE / 8];

	memcpy(data, vals, SFK_CHILD_DATA_SIZE);
	data[SAMPLE] = sample_ns;
	data[GENERATION] = generation;
	return statsfd_kunit_image(test, statsfd_kunit_snap_child_expect,
				   SFK_SNAP_CHILD_NUM_DESCS,
				   SFK_SNAP_CHILD_DATA_SIZE, "vm-7-0/vcpu-0",
				   data);
}

/* Wait (polling, at most WAIT_LIMIT_NS) for a reader's request on @src. */
static bool wait_for_request(struct statsfd_source *src)
{
	u64 deadline = ktime_get_ns() + WAIT_LIMIT_NS;

	while (!READ_ONCE(src->snap_req) && ktime_get_ns() < deadline &&
	       !kthread_should_stop())
		cond_resched();
	return READ_ONCE(src->snap_req);
}

/* A helper thread, stopped when the test ends if the test did not. */
struct sfk_thread {
	struct task_struct *task;
	bool stopped;
};

static void sfk_thread_stop(struct sfk_thread *t)
{
	if (t->stopped)
		return;
	t->stopped = true;
	kthread_stop(t->task);
	put_task_struct(t->task);
}

KUNIT_DEFINE_ACTION_WRAPPER(sfk_thread_stop_action, sfk_thread_stop,
			    struct sfk_thread *);

/* A helper thread; on @cpu if it is not negative. */
static struct sfk_thread *sfk_thread_start_on(struct kunit *test,
					      int (*fn)(void *), void *data,
					      const char *name, int cpu)
{
	struct sfk_thread *t = kunit_kzalloc(test, sizeof(*t), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, t);
	t->task = kthread_create(fn, data, "%s", name);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, t->task);
	if (cpu >= 0)
		kthread_bind(t->task, cpu);
	get_task_struct(t->task);
	wake_up_process(t->task);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test,
							sfk_thread_stop_action,
							t), 0);
	return t;
}

static struct sfk_thread *sfk_thread_start(struct kunit *test,
					   int (*fn)(void *), void *data,
					   const char *name)
{
	return sfk_thread_start_on(test, fn, data, name, -1);
}

/*
 * Keep the test thread on the CPU it is on, where the helper thread of a
 * serving test runs too: then neither runs while the other goes on
 * without yielding, and a reader cannot copy by itself in the instant
 * between two back-to-back windows (as it may when the writer's vCPU is
 * descheduled there for longer than the reader's idle threshold).
 * KUnit runs each case in a thread of its own, which ends with the case.
 */
static int pin_test_thread(struct kunit *test)
{
	int cpu = raw_smp_processor_id();

	KUNIT_ASSERT_EQ(test, set_cpus_allowed_ptr(current, cpumask_of(cpu)),
			0);
	return cpu;
}

/* Park a finished helper until kthread_stop(), signals or not. */
static void sfk_wait_for_stop(void)
{
	for (;;) {
		set_current_state(TASK_IDLE);
		if (kthread_should_stop())
			break;
		schedule();
	}
	__set_current_state(TASK_RUNNING);
}

/* ---- schema ----------------------------------------------------------- */

KUNIT_DEFINE_ACTION_WRAPPER(snap_schema_destroy, statsfd_schema_destroy,
			    struct statsfd_schema *);

/* statsfd_schema_init() of a copy of @tmpl with @flags; destroyed at end. */
static int init_with_flags(struct kunit *test,
			   const struct statsfd_schema_def *tmpl, u32 flags,
			   struct statsfd_schema **out)
{
	struct statsfd_schema *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	struct statsfd_schema_def *def = kunit_kmalloc(test, sizeof(*def),
						       GFP_KERNEL);
	int ret;

	KUNIT_ASSERT_NOT_NULL(test, s);
	KUNIT_ASSERT_NOT_NULL(test, def);
	*def = *tmpl;
	def->flags = flags;
	ret = statsfd_schema_init(s, def);
	if (!ret)
		KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test,
								snap_schema_destroy,
								s), 0);
	if (out)
		*out = s;
	return ret;
}

/* A rejected schema built nothing. */
static void expect_not_built(struct kunit *test, const struct statsfd_schema *s)
{
	KUNIT_EXPECT_EQ(test, s->build_count, 0);
	KUNIT_EXPECT_NULL(test, s->desc_block);
	KUNIT_EXPECT_NULL(test, s->aggs);
	KUNIT_EXPECT_EQ(test, s->meta_offset, 0);
}

static void statsfd_schema_init_snapshot_appends_sample_ns_and_generation(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_schema *s = ctx->cs;
	struct statsfd_schema *plain =
		statsfd_kunit_schema(test, &statsfd_kunit_child_tmpl, NULL);
	u64 zero[SFK_SNAP_CHILD_DATA_SIZE / 8] = {};
	u8 *img = statsfd_kunit_image(test, statsfd_kunit_snap_child_expect,
				      SFK_SNAP_CHILD_NUM_DESCS,
				      SFK_SNAP_CHILD_DATA_SIZE, "", zero);

	/* Two descriptors and 16 bytes of data more than without windows. */
	KUNIT_EXPECT_EQ(test, s->header.num_desc, plain->header.num_desc + 2);
	KUNIT_EXPECT_EQ(test, s->header.num_desc, SFK_SNAP_CHILD_NUM_DESCS);
	KUNIT_EXPECT_EQ(test, s->data_size, plain->data_size + 16);
	KUNIT_EXPECT_EQ(test, s->data_size, SFK_SNAP_CHILD_DATA_SIZE);
	KUNIT_EXPECT_EQ(test, s->meta_offset, SFK_SNAP_CHILD_META);
	KUNIT_EXPECT_EQ(test, plain->meta_offset, 0);
	KUNIT_EXPECT_EQ(test, s->file_size, SFK_SNAP_CHILD_FILE_SIZE);
	/* The provider's definitions are not touched. */
	KUNIT_EXPECT_EQ(test, s->def->num_descs, SFK_CHILD_NUM_DESCS);
	KUNIT_EXPECT_EQ(test, s->num_aggs, 0);

	/* Header and descriptor bytes exactly as the hand-built file. */
	KUNIT_EXPECT_MEMEQ(test, &s->header, img, 24);
	KUNIT_ASSERT_EQ(test, s->desc_size, SFK_SNAP_CHILD_NUM_DESCS * SFK_STRIDE);
	KUNIT_EXPECT_MEMEQ(test, s->desc_block, img + SFK_SNAP_CHILD_DESC_OFFSET,
			   s->desc_size);
	/* The plain stats' descriptors are those of the schema without. */
	KUNIT_EXPECT_MEMEQ(test, s->desc_block, plain->desc_block,
			   plain->desc_size);
}

static void statsfd_schema_init_snapshot_puts_its_stats_after_the_aggregates(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_schema *s = ctx->ps;
	u64 zero[SFK_SNAP_PARENT_DATA_SIZE / 8] = {};
	u8 *img = statsfd_kunit_image(test, statsfd_kunit_snap_parent_expect,
				      SFK_SNAP_PARENT_NUM_DESCS,
				      SFK_SNAP_PARENT_DATA_SIZE, "", zero);

	KUNIT_EXPECT_EQ(test, s->num_aggs, 10);
	KUNIT_EXPECT_EQ(test, s->data_size, SFK_PARENT_DATA_SIZE + 16);
	KUNIT_EXPECT_EQ(test, s->meta_offset, SFK_SNAP_PARENT_META);
	KUNIT_EXPECT_EQ(test, s->header.num_desc, SFK_SNAP_PARENT_NUM_DESCS);
	KUNIT_EXPECT_EQ(test, s->header.desc_offset, SFK_SNAP_PARENT_DESC_OFFSET);
	KUNIT_EXPECT_EQ(test, s->file_size, SFK_SNAP_PARENT_FILE_SIZE);
	KUNIT_EXPECT_MEMEQ(test, &s->header, img, 24);
	KUNIT_ASSERT_EQ(test, s->desc_size,
			SFK_SNAP_PARENT_NUM_DESCS * SFK_STRIDE);
	KUNIT_EXPECT_MEMEQ(test, s->desc_block,
			   img + SFK_SNAP_PARENT_DESC_OFFSET, s->desc_size);
}

/* One log histogram of 512 buckets: 4096 bytes of values. */
static const struct statsfd_desc_def big_descs[] = {
	{ .flags = STATSFD_TYPE_LOG_HIST, .size = 512, .offset = 0,
	  .name = "big" },
};

static const struct statsfd_schema_def big_tmpl = {
	.name = "kunit.big", .descs = big_descs, .num_descs = 1,
	.stats_size = 4096,
};

static void statsfd_schema_init_area_is_header_and_values_in_pages_with_mmap(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_schema *big, *big_plain;

	/* 64-byte header + 128 bytes of values, rounded up to a page. */
	KUNIT_EXPECT_EQ(test, ctx->cs->area_size, PAGE_SIZE);
	/* Without MMAP: just the header and the 16 bytes of values. */
	KUNIT_EXPECT_EQ(test, ctx->ps->area_size, 64 + 16);
	KUNIT_ASSERT_EQ(test, init_with_flags(test, &big_tmpl,
					      STATSFD_SCHEMA_SNAPSHOT |
					      STATSFD_SCHEMA_MMAP, &big), 0);
	KUNIT_EXPECT_EQ(test, big->area_size,
			round_up(64 + 4096, PAGE_SIZE));
	KUNIT_EXPECT_EQ(test, big->area_size % PAGE_SIZE, 0);
	/* No windows, no area. */
	KUNIT_ASSERT_EQ(test, init_with_flags(test, &big_tmpl, 0, &big_plain),
			0);
	KUNIT_EXPECT_EQ(test, big_plain->area_size, 0);
}

static void statsfd_schema_init_rejects_mmap_without_snapshot(struct kunit *test)
{
	struct statsfd_schema *s;

	KUNIT_EXPECT_EQ(test, init_with_flags(test, &statsfd_kunit_child_tmpl,
					      STATSFD_SCHEMA_MMAP, &s),
			-EINVAL);
	expect_not_built(test, s);
	/* Control: with SNAPSHOT too it is accepted. */
	KUNIT_EXPECT_EQ(test, init_with_flags(test, &statsfd_kunit_child_tmpl,
					      STATSFD_SCHEMA_SNAPSHOT |
					      STATSFD_SCHEMA_MMAP, &s), 0);
}

static void statsfd_schema_init_rejects_unknown_flags(struct kunit *test)
{
	static const u32 bad[] = {
		BIT(2), BIT(31), STATSFD_SCHEMA_SNAPSHOT | BIT(2),
		STATSFD_SCHEMA_FLAGS | BIT(7),
	};
	struct statsfd_schema *s;
	unsigned int i;

	KUNIT_EXPECT_EQ(test, STATSFD_SCHEMA_FLAGS, 0x3);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		KUNIT_EXPECT_EQ_MSG(test,
				    init_with_flags(test,
						    &statsfd_kunit_child_tmpl,
						    bad[i], &s),
				    -EINVAL, "flags %#x", bad[i]);
		expect_not_built(test, s);
	}
}

/* A plain stat named @name before an ordinary one. */
static int init_named(struct kunit *test, const char *name, u32 flags,
		      struct statsfd_schema **out)
{
	struct statsfd_desc_def *descs;
	struct statsfd_schema_def tmpl = {
		.name = "kunit.reserved", .num_descs = 2, .stats_size = 16,
	};

	descs = kunit_kcalloc(test, 2, sizeof(*descs), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, descs);
	descs[0] = (struct statsfd_desc_def){
		.flags = STATSFD_TYPE_CUMULATIVE, .size = 1, .offset = 0,
		.name = name,
	};
	descs[1] = (struct statsfd_desc_def){
		.flags = STATSFD_TYPE_INSTANT, .size = 1, .offset = 8,
		.name = "other",
	};
	tmpl.descs = descs;
	return init_with_flags(test, &tmpl, flags, out);
}

static void statsfd_schema_init_rejects_a_stat_named_sample_ns_with_snapshot(struct kunit *test)
{
	struct statsfd_schema *s;

	KUNIT_EXPECT_EQ(test, init_named(test, "sample_ns",
					 STATSFD_SCHEMA_SNAPSHOT, &s), -EINVAL);
	expect_not_built(test, s);
	/* Control: the same schema with another name is fine. */
	KUNIT_EXPECT_EQ(test, init_named(test, "sample_ns2",
					 STATSFD_SCHEMA_SNAPSHOT, &s), 0);
}

static void statsfd_schema_init_rejects_a_stat_named_generation_with_snapshot(struct kunit *test)
{
	struct statsfd_schema *s;

	KUNIT_EXPECT_EQ(test, init_named(test, "generation",
					 STATSFD_SCHEMA_SNAPSHOT |
					 STATSFD_SCHEMA_MMAP, &s), -EINVAL);
	expect_not_built(test, s);
	KUNIT_EXPECT_EQ(test, init_named(test, "generations",
					 STATSFD_SCHEMA_SNAPSHOT |
					 STATSFD_SCHEMA_MMAP, &s), 0);
}

/*
 * The names are reserved in every schema (src/core/schema.c: "so that a
 * parser may take two last descriptors of these names for what statsfd
 * puts there"), not only in those with windows.
 */
static void statsfd_schema_init_reserves_both_names_without_snapshot_too(struct kunit *test)
{
	struct statsfd_schema *s;

	KUNIT_EXPECT_EQ(test, init_named(test, "sample_ns", 0, &s), -EINVAL);
	expect_not_built(test, s);
	KUNIT_EXPECT_EQ(test, init_named(test, "generation", 0, &s), -EINVAL);
	expect_not_built(test, s);
	KUNIT_EXPECT_EQ(test, init_named(test, "Generation", 0, &s), 0);
}

/* ---- source ----------------------------------------------------------- */

static void statsfd_source_init_rejects_a_stats_pointer_for_a_snapshot_schema(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_schema *plain =
		statsfd_kunit_schema(test, &statsfd_kunit_child_tmpl, NULL);
	struct statsfd_kunit_child stats = {};
	struct statsfd_source src = {};

	KUNIT_EXPECT_EQ(test, statsfd_source_init(&src, ctx->cs, &stats,
						  &statsfd_kunit_ops, "x"),
			-EINVAL);
	KUNIT_EXPECT_NULL(test, src.id);
	statsfd_source_destroy(&src);	/* documented: does nothing */
	/* And the converse: no stats for a schema without windows. */
	KUNIT_EXPECT_EQ(test, statsfd_source_init(&src, plain, NULL,
						  &statsfd_kunit_ops, "x"),
			-EINVAL);
	KUNIT_EXPECT_NULL(test, src.id);
	/* Control: NULL is right for a snapshot schema. */
	KUNIT_ASSERT_EQ(test, statsfd_source_init(&src, ctx->cs, NULL,
						  &statsfd_kunit_ops, "x"), 0);
	KUNIT_EXPECT_NOT_NULL(test, src.area);
	statsfd_source_destroy(&src);
	KUNIT_EXPECT_NULL(test, src.area);
	KUNIT_EXPECT_NULL(test, src.stats);
}

static void statsfd_source_init_snapshot_values_start_zero_after_the_header(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;
	const struct statsfd_mmap_header *a = src->area;
	u64 zero[4] = {};

	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_EXPECT_EQ(test, sizeof(*a), 64);
	KUNIT_EXPECT_EQ(test, a->version, 1);
	KUNIT_EXPECT_EQ(test, a->header_size, 64);
	KUNIT_EXPECT_EQ(test, a->seq, 0);
	KUNIT_EXPECT_EQ(test, a->data_offset, 64);
	KUNIT_EXPECT_EQ(test, a->data_size, SFK_CHILD_DATA_SIZE);
	KUNIT_EXPECT_EQ(test, a->flags, 0);
	KUNIT_EXPECT_EQ(test, a->reserved0, 0);
	KUNIT_EXPECT_MEMEQ(test, a->reserved, zero, sizeof(zero));
	/* The values live in the area, at data_offset, and start zero. */
	KUNIT_EXPECT_PTR_EQ(test, statsfd_source_stats(src),
			    (void *)a + a->data_offset);
	KUNIT_EXPECT_LE(test, a->data_offset + a->data_size,
			src->schema->area_size);
	KUNIT_EXPECT_NULL(test, memchr_inv(statsfd_source_stats(src), 0,
					   SFK_CHILD_DATA_SIZE));
	/* The rest of the page a mapping shows is zero: nothing stale. */
	KUNIT_EXPECT_NULL(test, memchr_inv((void *)a + 64 + SFK_CHILD_DATA_SIZE,
					   0, PAGE_SIZE - 64 -
					   SFK_CHILD_DATA_SIZE));
	KUNIT_EXPECT_NULL(test, src->snap_req);
}

static void statsfd_source_init_mmap_area_is_whole_pages(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_kunit_src *p, *b;
	struct statsfd_schema *big;

	/* A small schema: exactly one page, page-aligned. */
	KUNIT_EXPECT_TRUE(test, PAGE_ALIGNED(ctx->src->src.area));
	KUNIT_EXPECT_EQ(test, ctx->cs->area_size % PAGE_SIZE, 0);
	KUNIT_EXPECT_LE(test, ctx->cs->area_size, PAGE_SIZE);

	/* 64 + 4096 bytes: two pages, all zero. */
	KUNIT_ASSERT_EQ(test, init_with_flags(test, &big_tmpl,
					      STATSFD_SCHEMA_SNAPSHOT |
					      STATSFD_SCHEMA_MMAP, &big), 0);
	b = statsfd_kunit_source(test, big, NULL, "big");
	KUNIT_EXPECT_TRUE(test, PAGE_ALIGNED(b->src.area));
	KUNIT_EXPECT_EQ(test, b->src.area->data_size, 4096);
	KUNIT_EXPECT_NULL(test, memchr_inv((void *)b->src.area + 64, 0,
					   big->area_size - 64));

	/* Without MMAP the values still follow a header in the area. */
	p = statsfd_kunit_source(test, ctx->ps, NULL, "vm-7-0");
	KUNIT_ASSERT_NOT_NULL(test, p->src.area);
	KUNIT_EXPECT_EQ(test, p->src.area->data_offset, 64);
	KUNIT_EXPECT_EQ(test, p->src.area->data_size, SFK_PARENT_STATS_SIZE);
	KUNIT_EXPECT_PTR_EQ(test, statsfd_source_stats(&p->src),
			    (void *)p->src.area + 64);
}

/* ---- the window protocol ---------------------------------------------- */

static void statsfd_update_begin_makes_seq_odd_until_update_end(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;
	u64 w;

	for (w = 0; w < 6; w++) {
		KUNIT_EXPECT_EQ(test, READ_ONCE(src->area->seq), 2 * w);
		statsfd_update_begin(src);
		KUNIT_EXPECT_EQ(test, READ_ONCE(src->area->seq), 2 * w + 1);
		set_words(src, w);
		statsfd_update_end(src);
		KUNIT_EXPECT_EQ(test, READ_ONCE(src->area->seq), 2 * w + 2);
	}
	/* A window with no write is still a window. */
	statsfd_update_begin(src);
	statsfd_update_end(src);
	KUNIT_EXPECT_EQ(test, READ_ONCE(src->area->seq), 14);
}

static void statsfd_snapshot_generation_counts_the_windows_closed(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;
	static const unsigned int windows[] = { 0, 1, 2, 9, 100 };
	unsigned int i, done = 0;
	u64 *got = ctx->kbuf;

	for (i = 0; i < ARRAY_SIZE(windows); i++) {
		while (done < windows[i])
			window_set_words(src, ++done);
		/* The generation alone, then with the values it describes. */
		KUNIT_ASSERT_EQ(test, read_data(test, ctx, ctx->file, got,
						GENERATION * 8, 8), 8);
		KUNIT_EXPECT_EQ(test, got[0], windows[i]);
		KUNIT_ASSERT_EQ(test, read_data(test, ctx, ctx->file, got, 0,
						SFK_SNAP_CHILD_DATA_SIZE),
				SFK_SNAP_CHILD_DATA_SIZE);
		expect_words(test, got, CHILD_WORDS, windows[i]);
		KUNIT_EXPECT_EQ(test, got[GENERATION], windows[i]);
		/* What a mapping reader computes: seq / 2. */
		KUNIT_EXPECT_EQ(test, READ_ONCE(src->area->seq) / 2,
				got[GENERATION]);
	}
}

static void statsfd_snapshot_whole_file_matches_reference_after_a_window(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;
	u64 *w = statsfd_source_stats(src);
	u64 vals[CHILD_WORDS];
	u8 *got = (u8 *)ctx->kbuf;
	u64 t0, t1, sample;
	ssize_t ret;
	u32 i;

	for (i = 0; i < CHILD_WORDS; i++)
		vals[i] = 0x0101010101010101ULL * (i + 1) + i;
	statsfd_update_begin(src);
	for (i = 0; i < CHILD_WORDS; i++)
		statsfd_stat_set(&w[i], vals[i]);
	statsfd_update_end(src);

	t0 = ktime_get_boottime_ns();
	ret = statsfd_kunit_read(test, ctx->file, ctx->ubuf, got,
				 SFK_SNAP_CHILD_FILE_SIZE, 0);
	t1 = ktime_get_boottime_ns();
	KUNIT_ASSERT_EQ(test, ret, SFK_SNAP_CHILD_FILE_SIZE);
	memcpy(&sample, got + SFK_DATA_OFFSET + SFK_SNAP_CHILD_META, 8);
	KUNIT_EXPECT_GE(test, sample, t0);
	KUNIT_EXPECT_LE(test, sample, t1);
	KUNIT_EXPECT_MEMEQ(test, got, child_image(test, vals, sample, 1),
			   SFK_SNAP_CHILD_FILE_SIZE);
}

static void statsfd_snapshot_sample_ns_is_taken_during_the_read(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;
	struct statsfd_snap_meta meta;
	u64 *got = ctx->kbuf, t0, t1, last = 0;
	unsigned int i;

	for (i = 0; i < 32; i++) {
		window_set_words(src, i);
		/* sample_ns alone, or with everything before it. */
		t0 = ktime_get_boottime_ns();
		if (i % 2)
			KUNIT_ASSERT_EQ(test, read_data(test, ctx, ctx->file,
							got, SAMPLE * 8, 8), 8);
		else
			KUNIT_ASSERT_EQ(test,
					read_data(test, ctx, ctx->file, got, 0,
						  SFK_SNAP_CHILD_DATA_SIZE),
					SFK_SNAP_CHILD_DATA_SIZE);
		t1 = ktime_get_boottime_ns();
		if (!(i % 2))
			got[0] = got[SAMPLE];
		KUNIT_EXPECT_GE_MSG(test, got[0], t0, "read %u", i);
		KUNIT_EXPECT_LE_MSG(test, got[0], t1, "read %u", i);
		KUNIT_EXPECT_GE_MSG(test, got[0], last, "read %u", i);
		last = got[0];
	}
	/* The core's copy fills meta the same way, for no value at all too. */
	t0 = ktime_get_boottime_ns();
	KUNIT_ASSERT_EQ(test, statsfd_snapshot_copy(src, got, 0, 0, &meta), 0);
	t1 = ktime_get_boottime_ns();
	KUNIT_EXPECT_GE(test, meta.sample_ns, t0);
	KUNIT_EXPECT_LE(test, meta.sample_ns, t1);
	KUNIT_EXPECT_EQ(test, meta.generation, 32);
}

/* ---- readers served by the writer, readers that give up --------------- */

/*
 * A reader thread: one statsfd_snapshot_copy() of the whole child into
 * @dst, then it parks.  It has no user address space, so it calls the
 * core directly.
 */
struct copy_reader {
	struct statsfd_source *src;
	u64 *dst;
	struct statsfd_snap_meta meta;
	struct completion done;
	bool allow_kill;
	int ret;
};

static int copy_reader_fn(void *data)
{
	struct copy_reader *r = data;

	if (r->allow_kill)
		allow_signal(SIGKILL);
	r->ret = statsfd_snapshot_copy(r->src, r->dst, 0, CHILD_WORDS,
				       &r->meta);
	complete(&r->done);
	sfk_wait_for_stop();
	return 0;
}

static struct copy_reader *new_reader(struct kunit *test,
				      struct statsfd_source *src)
{
	struct copy_reader *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, r);
	r->src = src;
	r->dst = kunit_kmalloc(test, SFK_CHILD_DATA_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, r->dst);
	memset(r->dst, 0xa5, SFK_CHILD_DATA_SIZE);
	init_completion(&r->done);
	return r;
}

/* Close windows (all values k in window k) until the count is @seq. */
static void windows_until(struct statsfd_source *src, u64 seq)
{
	while (READ_ONCE(src->area->seq) < seq)
		window_set_words(src, src->area->seq / 2 + 1);
}

/*
 * The test thread is the writer and a reader thread asks it for a copy.
 * statsfd_update_end() looks for a waiting reader only when it brings
 * the count to a multiple of 2 * STATSFD_SERVE_WINDOWS: the window before
 * that one leaves the request pending (the next window opens at once, so
 * the reader cannot copy by itself in between), and that one serves it.
 * The copy is in the reader's buffer by the time statsfd_update_end()
 * returns, before the reader thread runs again, with the values of the
 * window just closed, its generation and a time between the two ends of
 * the call.
 */
static void statsfd_update_end_serves_a_waiting_reader_every_serve_windows(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;
	struct copy_reader *r = new_reader(test, src);
	u64 sw = STATSFD_SERVE_WINDOWS, before, after;
	bool pending, done_early;
	int cpu;

	KUNIT_ASSERT_TRUE(test, is_power_of_2(sw));
	windows_until(src, 2 * sw - 4);
	statsfd_update_begin(src);
	set_words(src, 7);
	cpu = pin_test_thread(test);
	sfk_thread_start_on(test, copy_reader_fn, r, "sfk_reader", cpu);
	KUNIT_ASSERT_TRUE_MSG(test, wait_for_request(src),
			      "the reader never asked the writer");
	/* Asked, and still waiting: the window is open. */
	KUNIT_EXPECT_FALSE(test, completion_done(&r->done));

	preempt_disable();
	/* Window sw - 1 closes (count 2 * sw - 2): not looked at. */
	statsfd_update_end(src);
	statsfd_update_begin(src);
	pending = READ_ONCE(src->snap_req);
	done_early = completion_done(&r->done);
	set_words(src, 8);
	/* Window sw closes (count 2 * sw): served, inside the call. */
	before = ktime_get_boottime_ns();
	statsfd_update_end(src);
	after = ktime_get_boottime_ns();
	preempt_enable();

	KUNIT_EXPECT_TRUE(test, pending);
	KUNIT_EXPECT_FALSE(test, done_early);
	KUNIT_EXPECT_EQ(test, READ_ONCE(src->area->seq), 2 * sw);
	KUNIT_EXPECT_NULL(test, READ_ONCE(src->snap_req));
	/* The reader has not run since: the copy is the writer's. */
	KUNIT_EXPECT_FALSE(test, completion_done(&r->done));
	expect_words(test, r->dst, CHILD_WORDS, 8);

	KUNIT_ASSERT_TRUE(test, wait_for_completion_timeout(&r->done, 10 * HZ));
	KUNIT_EXPECT_EQ(test, r->ret, 0);
	KUNIT_EXPECT_EQ(test, r->meta.generation, sw);
	KUNIT_EXPECT_GE(test, r->meta.sample_ns, before);
	KUNIT_EXPECT_LE(test, r->meta.sample_ns, after);
}

/*
 * A writer thread that, once a reader has asked for a copy, closes and
 * reopens windows back to back (all values k in window k) until the
 * request is gone, then keeps the next window open until the test
 * releases it: the reader never sees an even count for long, so the
 * writer serves it, within STATSFD_SERVE_WINDOWS windows.
 */
struct serve_writer {
	struct statsfd_source *src;
	struct completion opened;
	bool release;		/* set by the test: the last window may close */
	bool saw_request;	/* a reader asked while the first window was open */
	bool served;		/* ... and its request was gone after a window */
	bool held;		/* the last window stayed open until released */
	u64 windows;		/* windows closed until the request was gone */
	u64 served_gen;		/* the generation of the window that served it */
	u64 end_ns[2];		/* boottime around that window's end */
};

static int serve_writer_fn(void *data)
{
	struct serve_writer *w = data;
	struct statsfd_source *src = w->src;
	u64 deadline;

	statsfd_update_begin(src);
	set_words(src, src->area->seq / 2 + 1);
	complete(&w->opened);
	w->saw_request = wait_for_request(src);
	/* Back to back, without yielding to the reader (on this CPU). */
	preempt_disable();
	for (;;) {
		w->windows++;
		w->end_ns[0] = ktime_get_boottime_ns();
		statsfd_update_end(src);
		w->end_ns[1] = ktime_get_boottime_ns();
		if (!READ_ONCE(src->snap_req) || !w->saw_request ||
		    w->windows >= 4 * STATSFD_SERVE_WINDOWS)
			break;
		statsfd_update_begin(src);
		set_words(src, src->area->seq / 2 + 1);
	}
	w->served = !READ_ONCE(src->snap_req);
	w->served_gen = src->area->seq / 2;
	statsfd_update_begin(src);
	preempt_enable();

	set_words(src, w->served_gen + 1);
	deadline = ktime_get_ns() + WAIT_LIMIT_NS;
	while (!READ_ONCE(w->release) && ktime_get_ns() < deadline &&
	       !kthread_should_stop())
		cond_resched();
	w->held = READ_ONCE(w->release);
	statsfd_update_end(src);
	sfk_wait_for_stop();
	return 0;
}

/* The writer thread, on the test thread's CPU (see pin_test_thread()). */
static struct serve_writer *start_serve_writer(struct kunit *test,
					       struct statsfd_source *src,
					       struct sfk_thread **t)
{
	struct serve_writer *w = kunit_kzalloc(test, sizeof(*w), GFP_KERNEL);
	int cpu;

	KUNIT_ASSERT_NOT_NULL(test, w);
	w->src = src;
	init_completion(&w->opened);
	cpu = pin_test_thread(test);
	*t = sfk_thread_start_on(test, serve_writer_fn, w, "sfk_writer", cpu);
	KUNIT_ASSERT_TRUE(test, wait_for_completion_timeout(&w->opened,
							    10 * HZ));
	return w;
}

static void expect_served(struct kunit *test, const struct serve_writer *w,
			  u64 seq_after_read)
{
	KUNIT_EXPECT_TRUE(test, w->saw_request);
	KUNIT_EXPECT_TRUE(test, w->served);
	KUNIT_EXPECT_TRUE(test, w->held);
	KUNIT_EXPECT_GE(test, w->windows, 1);
	KUNIT_EXPECT_LE(test, w->windows, STATSFD_SERVE_WINDOWS);
	/* The read returned while the window after it was open. */
	KUNIT_EXPECT_EQ(test, seq_after_read, 2 * w->served_gen + 1);
}

static void statsfd_snapshot_read_behind_back_to_back_windows_is_served(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;
	struct serve_writer *w;
	struct sfk_thread *t;
	u64 *got = ctx->kbuf, t0, t1, seq;
	ssize_t ret;

	w = start_serve_writer(test, src, &t);
	t0 = ktime_get_boottime_ns();
	ret = read_data(test, ctx, ctx->file, got, 0, SFK_SNAP_CHILD_DATA_SIZE);
	t1 = ktime_get_boottime_ns();
	seq = READ_ONCE(src->area->seq);
	WRITE_ONCE(w->release, true);
	sfk_thread_stop(t);

	expect_served(test, w, seq);
	KUNIT_ASSERT_EQ(test, ret, SFK_SNAP_CHILD_DATA_SIZE);
	/* The serving window's values, generation and a time at its end. */
	expect_words(test, got, CHILD_WORDS, w->served_gen);
	KUNIT_EXPECT_EQ(test, got[GENERATION], w->served_gen);
	KUNIT_EXPECT_GE(test, got[SAMPLE], w->end_ns[0]);
	KUNIT_EXPECT_LE(test, got[SAMPLE], w->end_ns[1]);
	KUNIT_EXPECT_GE(test, got[SAMPLE], t0);
	KUNIT_EXPECT_LE(test, got[SAMPLE], t1);

	/* After the last window: its values. */
	KUNIT_ASSERT_EQ(test, read_data(test, ctx, ctx->file, got, 0,
					SFK_SNAP_CHILD_DATA_SIZE),
			SFK_SNAP_CHILD_DATA_SIZE);
	expect_words(test, got, CHILD_WORDS, w->served_gen + 1);
	KUNIT_EXPECT_EQ(test, got[GENERATION], w->served_gen + 1);
}

static void statsfd_snapshot_copy_gives_up_with_eagain_on_a_window_left_open(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;
	struct statsfd_snap_meta meta;
	u64 *dst = ctx->kbuf, *seen = ctx->kbuf + CHILD_WORDS;
	u64 t0, t1;
	int ret;

	window_set_words(src, 2);
	statsfd_update_begin(src);
	set_words(src, 3);
	memset(dst, 0xa5, SFK_CHILD_DATA_SIZE);
	t0 = ktime_get_ns();
	ret = statsfd_snapshot_copy(src, dst, 0, CHILD_WORDS, &meta);
	t1 = ktime_get_ns();
	KUNIT_EXPECT_EQ(test, ret, -EAGAIN);
	KUNIT_EXPECT_GE(test, t1 - t0, STATSFD_SNAPSHOT_WAIT_NS);
	/* No request left for the writer to serve into a stale buffer. */
	KUNIT_EXPECT_NULL(test, READ_ONCE(src->snap_req));

	/* The window closes later: nothing is written into the buffer. */
	memcpy(seen, dst, SFK_CHILD_DATA_SIZE);
	statsfd_update_end(src);
	KUNIT_EXPECT_MEMEQ(test, dst, seen, SFK_CHILD_DATA_SIZE);
	KUNIT_EXPECT_EQ(test, READ_ONCE(src->area->seq), 4);

	/* And the next copy gets the closed window at once. */
	KUNIT_ASSERT_EQ(test, statsfd_snapshot_copy(src, dst, 0, CHILD_WORDS,
						    &meta), 0);
	expect_words(test, dst, CHILD_WORDS, 3);
	KUNIT_EXPECT_EQ(test, meta.generation, 2);
}

static void statsfd_snapshot_read_in_a_window_left_open_is_eagain(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;
	u64 vals[CHILD_WORDS] = {};
	u8 *img = child_image(test, vals, 0, 0);
	u64 *got = ctx->kbuf;
	loff_t pos;
	ssize_t ret;

	window_set_words(src, 5);
	statsfd_update_begin(src);
	set_words(src, 6);

	pos = SFK_DATA_OFFSET;
	ret = ctx->file->f_op->read(ctx->file, ctx->ubuf,
				    SFK_SNAP_CHILD_DATA_SIZE, &pos);
	KUNIT_EXPECT_EQ(test, ret, -EAGAIN);
	KUNIT_EXPECT_EQ(test, pos, SFK_DATA_OFFSET);
	KUNIT_EXPECT_NULL(test, READ_ONCE(src->snap_req));

	/* From the start: the header and id are kept, the read is short. */
	pos = 0;
	ret = ctx->file->f_op->read(ctx->file, ctx->ubuf,
				    SFK_SNAP_CHILD_FILE_SIZE, &pos);
	KUNIT_EXPECT_EQ(test, ret, SFK_DATA_OFFSET);
	KUNIT_EXPECT_EQ(test, pos, SFK_DATA_OFFSET);
	KUNIT_ASSERT_EQ(test, copy_from_user(got, ctx->ubuf, SFK_DATA_OFFSET),
			0);
	KUNIT_EXPECT_MEMEQ(test, got, img, SFK_DATA_OFFSET);

	statsfd_update_end(src);
	KUNIT_ASSERT_EQ(test, read_data(test, ctx, ctx->file, got, 0,
					SFK_SNAP_CHILD_DATA_SIZE),
			SFK_SNAP_CHILD_DATA_SIZE);
	expect_words(test, got, CHILD_WORDS, 6);
	KUNIT_EXPECT_EQ(test, got[GENERATION], 2);
}

static void statsfd_snapshot_copy_ends_with_eintr_on_a_fatal_signal(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;
	struct copy_reader *r = new_reader(test, src);
	u64 *seen = ctx->kbuf;
	struct sfk_thread *t;

	statsfd_update_begin(src);
	set_words(src, 4);
	r->allow_kill = true;
	t = sfk_thread_start(test, copy_reader_fn, r, "sfk_killed");
	KUNIT_ASSERT_TRUE(test, wait_for_request(src));
	KUNIT_EXPECT_FALSE(test, completion_done(&r->done));
	KUNIT_ASSERT_EQ(test, send_sig(SIGKILL, t->task, 1), 0);
	KUNIT_ASSERT_TRUE(test, wait_for_completion_timeout(&r->done, 10 * HZ));
	KUNIT_EXPECT_EQ(test, r->ret, -EINTR);
	KUNIT_EXPECT_NULL(test, READ_ONCE(src->snap_req));

	memcpy(seen, r->dst, SFK_CHILD_DATA_SIZE);
	statsfd_update_end(src);
	KUNIT_EXPECT_MEMEQ(test, r->dst, seen, SFK_CHILD_DATA_SIZE);
}

/* ---- never a mix, and the control ------------------------------------- */

/*
 * A writer thread that sets every value of its sources to k in pass k,
 * last value first, with a pause after each store, in one window per
 * source per pass, or with no window at all for the control.  Readers
 * copy the first value first, so a copy that overlaps a pass without a
 * window sees two values.
 */
struct loop_writer {
	struct statsfd_source *src[2];
	unsigned int nsrc;
	bool windows;
	u64 passes;
};

#define PAUSE_LOOPS	32

static int loop_writer_fn(void *data)
{
	struct loop_writer *w = data;
	u64 k = 0;
	u32 s, i, j, n;

	while (!kthread_should_stop()) {
		k++;
		for (s = 0; s < w->nsrc; s++) {
			struct statsfd_source *src = w->src[s];
			u64 *v = statsfd_source_stats(src);

			n = src->schema->def->stats_size / sizeof(u64);
			if (w->windows)
				statsfd_update_begin(src);
			for (i = n; i-- > 0;) {
				statsfd_stat_set(&v[i], k);
				for (j = 0; j < PAUSE_LOOPS; j++)
					cpu_relax();
			}
			if (w->windows)
				statsfd_update_end(src);
		}
		cond_resched();
	}
	w->passes = k;
	return 0;
}

struct mix_count {
	unsigned long reads, mixed, errors, changes;
};

/*
 * Read the child's whole data block through ->read for @ms (or until
 * @enough mixes): a read mixes if its values differ, or, with windows, if
 * the generation is not the pass that wrote them.
 */
static struct mix_count child_reads(struct kunit *test, bool windows,
				    unsigned int ms, unsigned long enough)
{
	struct snap_ctx *ctx = test->priv;
	struct loop_writer *w = kunit_kzalloc(test, sizeof(*w), GFP_KERNEL);
	unsigned long end = jiffies + msecs_to_jiffies(ms);
	struct mix_count c = {};
	u64 *got = ctx->kbuf, last = 0;
	struct sfk_thread *t;
	ssize_t ret;
	u32 i;

	KUNIT_ASSERT_NOT_NULL(test, w);
	w->src[0] = &ctx->src->src;
	w->nsrc = 1;
	w->windows = windows;
	t = sfk_thread_start(test, loop_writer_fn, w, "sfk_loop");
	while (time_before(jiffies, end) && c.mixed < enough) {
		ret = read_data(test, ctx, ctx->file, got, 0,
				SFK_SNAP_CHILD_DATA_SIZE);
		c.reads++;
		if (ret != SFK_SNAP_CHILD_DATA_SIZE) {
			c.errors++;
			continue;
		}
		for (i = 1; i < CHILD_WORDS; i++)
			if (got[i] != got[0])
				break;
		if (i < CHILD_WORDS || (windows && got[GENERATION] != got[0]))
			c.mixed++;
		c.changes += got[0] != last;
		last = got[0];
		if (c.reads % 16 == 0)
			cond_resched();
	}
	sfk_thread_stop(t);
	kunit_info(test, "%s: %lu reads, %lu mixed, %lu errors, %lu changes, %llu passes\n",
		   windows ? "windows" : "no windows", c.reads, c.mixed,
		   c.errors, c.changes, w->passes);
	return c;
}

static void statsfd_snapshot_read_never_mixes_two_windows(struct kunit *test)
{
	struct mix_count c = child_reads(test, true, 1000, ULONG_MAX);

	KUNIT_EXPECT_EQ(test, c.mixed, 0);
	KUNIT_EXPECT_EQ(test, c.errors, 0);
	/* The writer really wrote during the reads. */
	KUNIT_EXPECT_GT(test, c.reads, 20);
	KUNIT_EXPECT_GT(test, c.changes, 5);
}

static void statsfd_snapshot_read_without_windows_does_see_a_mix(struct kunit *test)
{
	struct mix_count c = child_reads(test, false, 5000, 10);

	/* Control: the same check, a writer without windows: caught. */
	KUNIT_EXPECT_GT(test, c.mixed, 0);
	KUNIT_EXPECT_EQ(test, c.errors, 0);
}

/* ---- the per-file buffer ---------------------------------------------- */

static void statsfd_source_getfile_allocates_the_read_buffer(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_file *sf = ctx->file->private_data;
	struct statsfd_source *src = &ctx->src->src;
	u64 *w = statsfd_source_stats(src);
	u64 *got = ctx->kbuf;
	u32 i;

	/* There before any read. */
	KUNIT_EXPECT_PTR_EQ(test, sf->src, src);
	KUNIT_ASSERT_NOT_NULL(test, sf->buf);

	statsfd_update_begin(src);
	for (i = 0; i < CHILD_WORDS; i++)
		statsfd_stat_set(&w[i], 100 + i);
	statsfd_update_end(src);
	KUNIT_ASSERT_EQ(test, read_data(test, ctx, ctx->file, got, 0,
					SFK_SNAP_CHILD_DATA_SIZE),
			SFK_SNAP_CHILD_DATA_SIZE);
	/*
	 * The read assembled the whole data block there (values, sample_ns,
	 * generation): the buffer holds data_size bytes, which KASAN checks.
	 */
	KUNIT_EXPECT_MEMEQ(test, sf->buf, got, SFK_SNAP_CHILD_DATA_SIZE);
	KUNIT_EXPECT_EQ(test, sf->buf[0], 100);
	KUNIT_EXPECT_EQ(test, sf->buf[GENERATION], 1);
}

/* Allocations by one task, seen through the slab tracepoints. */
struct alloc_count {
	struct task_struct *task;
	bool on;
	atomic_t n;
};

static void count_kmalloc(void *data, unsigned long call_site,
			  const void *ptr, size_t req, size_t alloc,
			  gfp_t gfp, int node)
{
	struct alloc_count *c = data;

	if (READ_ONCE(c->on) && current == c->task)
		atomic_inc(&c->n);
}

static void count_cache_alloc(void *data, unsigned long call_site,
			      const void *ptr, struct kmem_cache *s,
			      gfp_t gfp, int node)
{
	struct alloc_count *c = data;

	if (READ_ONCE(c->on) && current == c->task)
		atomic_inc(&c->n);
}

/* Every kind of range, straight through ->read (no KUnit assertion). */
static void read_every_range(struct snap_ctx *ctx, ssize_t *rets)
{
	static const u32 ranges[][2] = {
		{ 0, 24 }, { 0, SFK_DATA_OFFSET },
		{ SFK_DATA_OFFSET, SFK_SNAP_CHILD_DATA_SIZE },
		{ SFK_DATA_OFFSET + 8, 8 },
		{ SFK_DATA_OFFSET + SFK_SNAP_CHILD_META, 16 },
		{ SFK_SNAP_CHILD_DESC_OFFSET, 640 },
		{ 0, SFK_SNAP_CHILD_FILE_SIZE },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ranges); i++) {
		loff_t pos = ranges[i][0];

		rets[i] = ctx->file->f_op->read(ctx->file, ctx->ubuf,
						ranges[i][1], &pos);
	}
}

#define NUM_RANGES 7

static void statsfd_snapshot_reads_allocate_nothing_and_keep_the_buffer(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_file *sf = ctx->file->private_data;
	struct alloc_count *c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);
	static const ssize_t want[NUM_RANGES] = {
		24, SFK_DATA_OFFSET, SFK_SNAP_CHILD_DATA_SIZE, 8, 16, 640,
		SFK_SNAP_CHILD_FILE_SIZE,
	};
	u64 *buf = sf->buf;
	ssize_t rets[NUM_RANGES];
	int r1, r2, control = 0;
	unsigned int i;
	void *p;

	KUNIT_ASSERT_NOT_NULL(test, c);
	c->task = current;
	atomic_set(&c->n, 0);
	window_set_words(&ctx->src->src, 9);
	/* Fault the user pages in first: that allocates, the read does not. */
	read_every_range(ctx, rets);

	r1 = register_trace_kmalloc(count_kmalloc, c);
	r2 = register_trace_kmem_cache_alloc(count_cache_alloc, c);
	if (!r1 && !r2) {
		/* Control: the probes do see this task allocate. */
		WRITE_ONCE(c->on, true);
		p = kmalloc(32, GFP_KERNEL);
		WRITE_ONCE(c->on, false);
		kfree(p);
		control = atomic_read(&c->n);
		atomic_set(&c->n, 0);
		WRITE_ONCE(c->on, true);
		read_every_range(ctx, rets);
		WRITE_ONCE(c->on, false);
	}
	if (!r1)
		unregister_trace_kmalloc(count_kmalloc, c);
	if (!r2)
		unregister_trace_kmem_cache_alloc(count_cache_alloc, c);
	tracepoint_synchronize_unregister();

	for (i = 0; i < NUM_RANGES; i++)
		KUNIT_EXPECT_EQ_MSG(test, rets[i], want[i], "range %u", i);
	/* The same buffer, whatever was read. */
	KUNIT_EXPECT_PTR_EQ(test, sf->buf, buf);
	if (!IS_ENABLED(CONFIG_TRACEPOINTS)) {
		/* The KCSAN kernel has no tracepoints: the pointer it is. */
		kunit_info(test, "no tracepoints: allocations not counted\n");
		return;
	}
	KUNIT_ASSERT_EQ(test, r1, 0);
	KUNIT_ASSERT_EQ(test, r2, 0);
	KUNIT_EXPECT_GE(test, control, 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&c->n), 0);
}

static void statsfd_snapshot_two_files_on_one_source_have_their_own_buffers(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;
	struct file *other = statsfd_kunit_file(test, ctx->src);
	struct statsfd_file *a = ctx->file->private_data;
	struct statsfd_file *b = other->private_data;
	u64 *got = ctx->kbuf;

	KUNIT_ASSERT_PTR_NE(test, a, b);
	KUNIT_EXPECT_PTR_NE(test, a->buf, b->buf);

	window_set_words(src, 1);
	KUNIT_ASSERT_EQ(test, read_data(test, ctx, ctx->file, got, 0,
					SFK_SNAP_CHILD_DATA_SIZE),
			SFK_SNAP_CHILD_DATA_SIZE);
	window_set_words(src, 2);
	KUNIT_ASSERT_EQ(test, read_data(test, ctx, other, got, 0,
					SFK_SNAP_CHILD_DATA_SIZE),
			SFK_SNAP_CHILD_DATA_SIZE);
	/* The second file's read left the first file's snapshot alone. */
	expect_words(test, a->buf, CHILD_WORDS, 1);
	KUNIT_EXPECT_EQ(test, a->buf[GENERATION], 1);
	expect_words(test, b->buf, CHILD_WORDS, 2);
	KUNIT_EXPECT_EQ(test, b->buf[GENERATION], 2);
}

static void statsfd_snapshot_read_of_header_and_descriptors_ignores_a_window(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;
	struct statsfd_file *sf = ctx->file->private_data;
	u64 vals[CHILD_WORDS] = {};
	u8 *img = child_image(test, vals, 0, 0);
	u8 *got = (u8 *)ctx->kbuf;
	ssize_t head, descs;
	u64 t0, t1;

	memset(sf->buf, 0x5a, SFK_SNAP_CHILD_DATA_SIZE);
	statsfd_update_begin(src);
	t0 = ktime_get_ns();
	head = statsfd_kunit_read(test, ctx->file, ctx->ubuf, got,
				  SFK_DATA_OFFSET, 0);
	descs = statsfd_kunit_read(test, ctx->file, ctx->ubuf + PAGE_SIZE,
				   got + PAGE_SIZE, PAGE_SIZE,
				   SFK_SNAP_CHILD_DESC_OFFSET);
	t1 = ktime_get_ns();
	KUNIT_EXPECT_EQ(test, head, SFK_DATA_OFFSET);
	KUNIT_EXPECT_MEMEQ(test, got, img, SFK_DATA_OFFSET);
	KUNIT_EXPECT_EQ(test, descs,
			SFK_SNAP_CHILD_FILE_SIZE - SFK_SNAP_CHILD_DESC_OFFSET);
	KUNIT_EXPECT_MEMEQ(test, got + PAGE_SIZE,
			   img + SFK_SNAP_CHILD_DESC_OFFSET,
			   SFK_SNAP_CHILD_FILE_SIZE - SFK_SNAP_CHILD_DESC_OFFSET);
	/* Returned at once: no wait for the window, no request left. */
	KUNIT_EXPECT_LT(test, t1 - t0, STATSFD_SNAPSHOT_WAIT_NS);
	KUNIT_EXPECT_NULL(test, READ_ONCE(src->snap_req));
	/* The file's snapshot buffer was not touched either. */
	KUNIT_EXPECT_NULL(test, memchr_inv(sf->buf, 0x5a,
					   SFK_SNAP_CHILD_DATA_SIZE));
	KUNIT_EXPECT_EQ(test, READ_ONCE(src->area->seq), 1);
	statsfd_update_end(src);
}

/* ---- faulting user buffers -------------------------------------------- */

static void statsfd_snapshot_read_into_prot_none_memory_is_efault(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_kunit_src *parent =
		statsfd_kunit_source(test, ctx->ps, NULL, "vm-7-0");
	struct file *pfile = statsfd_kunit_file(test, parent);
	char __user *none = statsfd_kunit_ubuf(test, PAGE_SIZE, PROT_NONE);
	static const loff_t starts[] = {
		0, 24, SFK_DATA_OFFSET, SFK_DATA_OFFSET + 3,
		SFK_DATA_OFFSET + SFK_SNAP_CHILD_META,
		SFK_SNAP_CHILD_DESC_OFFSET,
	};
	u64 *got = ctx->kbuf;
	unsigned int i;
	loff_t pos;

	statsfd_source_add_child(&parent->src, &ctx->src->src);
	window_set_words(&ctx->src->src, 3);
	for (i = 0; i < ARRAY_SIZE(starts); i++) {
		pos = starts[i];
		KUNIT_EXPECT_EQ_MSG(test, ctx->file->f_op->read(ctx->file, none,
								32, &pos),
				    -EFAULT, "pos %lld", starts[i]);
		KUNIT_EXPECT_EQ(test, pos, starts[i]);
	}
	/* The parent's aggregates too: where the old read looped. */
	pos = SFK_DATA_OFFSET + AGG_OFF;
	KUNIT_EXPECT_EQ(test, pfile->f_op->read(pfile, none, AGG_LEN, &pos),
			-EFAULT);
	KUNIT_EXPECT_EQ(test, pos, SFK_DATA_OFFSET + AGG_OFF);

	/* Nothing was left held: the next reads into good memory work. */
	KUNIT_ASSERT_EQ(test, read_data(test, ctx, ctx->file, got, 0,
					SFK_SNAP_CHILD_DATA_SIZE),
			SFK_SNAP_CHILD_DATA_SIZE);
	expect_words(test, got, CHILD_WORDS, 3);
	KUNIT_EXPECT_EQ(test, read_data(test, ctx, pfile, got, AGG_OFF, 8), 8);
	KUNIT_EXPECT_EQ(test, got[0], 3);
}

static void statsfd_snapshot_read_into_an_unmapped_tail_is_short(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;
	struct statsfd_kunit_src *parent =
		statsfd_kunit_source(test, ctx->ps, NULL, "vm-7-0");
	struct file *pfile = statsfd_kunit_file(test, parent);
	char __user *u = statsfd_kunit_ubuf(test, 2 * PAGE_SIZE,
					    PROT_READ | PROT_WRITE);
	static const unsigned int room[] = { 5, 8, 20, 100 };
	u64 vals[CHILD_WORDS], aggs[AGG_WORDS], v = 4;
	u8 *img, *got = (u8 *)ctx->kbuf;
	unsigned int i;
	ssize_t ret;

	statsfd_source_add_child(&parent->src, &ctx->src->src);
	window_set_words(src, 4);
	child_all((struct statsfd_kunit_child *)vals, 4);
	img = child_image(test, vals, 0, 0);
	model_aggs(aggs, &v, 1);
	KUNIT_ASSERT_EQ(test, vm_munmap((unsigned long)u + PAGE_SIZE,
					PAGE_SIZE), 0);
	for (i = 0; i < ARRAY_SIZE(room); i++) {
		char __user *dst = u + PAGE_SIZE - room[i];

		/* From the id into the values (before sample_ns). */
		ret = statsfd_kunit_read(test, ctx->file, dst, got,
					 SFK_SNAP_CHILD_FILE_SIZE,
					 SFK_DATA_OFFSET - 8);
		KUNIT_EXPECT_GT_MSG(test, ret, 0, "room %u", room[i]);
		KUNIT_EXPECT_LE_MSG(test, ret, (ssize_t)room[i], "room %u",
				    room[i]);
		if (ret > 0)
			KUNIT_EXPECT_MEMEQ(test, got,
					   img + SFK_DATA_OFFSET - 8, ret);

		/* The parent's aggregates. */
		ret = statsfd_kunit_read(test, pfile, dst, got, AGG_LEN,
					 SFK_DATA_OFFSET + AGG_OFF);
		KUNIT_EXPECT_GT_MSG(test, ret, 0, "room %u", room[i]);
		KUNIT_EXPECT_LE_MSG(test, ret, (ssize_t)room[i], "room %u",
				    room[i]);
		if (ret > 0)
			KUNIT_EXPECT_MEMEQ(test, got, aggs, ret);
	}
}

/* ---- aggregates over one snapshot of each child ----------------------- */

/* A parent with two children of the snapshot schemas, and its file. */
struct family {
	struct statsfd_kunit_src *parent, *child[2];
	struct file *file;
};

static struct family *new_family(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct family *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, f);
	f->parent = statsfd_kunit_source(test, ctx->ps, NULL, "vm-7-0");
	f->child[0] = ctx->src;
	f->child[1] = statsfd_kunit_source(test, ctx->cs, NULL,
					   "vm-7-0/vcpu-1");
	statsfd_source_add_child(&f->parent->src, &f->child[0]->src);
	statsfd_source_add_child(&f->parent->src, &f->child[1]->src);
	f->file = statsfd_kunit_file(test, f->parent);
	return f;
}

static void statsfd_snapshot_aggregates_wait_for_a_childs_open_window(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct family *f = new_family(test);
	struct statsfd_source *c0 = &f->child[0]->src;
	u64 want[AGG_WORDS], v[2];
	u64 *got = ctx->kbuf, seq;
	struct serve_writer *w;
	struct sfk_thread *t;
	ssize_t ret;

	window_set_words(&f->child[1]->src, 5);
	w = start_serve_writer(test, c0, &t);
	ret = read_data(test, ctx, f->file, got, AGG_OFF, AGG_LEN);
	seq = READ_ONCE(c0->area->seq);
	WRITE_ONCE(w->release, true);
	sfk_thread_stop(t);

	/* The parent's read asked the child's writer, which served it. */
	expect_served(test, w, seq);
	KUNIT_ASSERT_EQ(test, ret, AGG_LEN);
	v[0] = w->served_gen;
	v[1] = 5;
	model_aggs(want, v, 2);
	KUNIT_EXPECT_MEMEQ(test, got, want, AGG_LEN);

	KUNIT_ASSERT_EQ(test, read_data(test, ctx, f->file, got, AGG_OFF,
					AGG_LEN), AGG_LEN);
	v[0] = w->served_gen + 1;
	model_aggs(want, v, 2);
	KUNIT_EXPECT_MEMEQ(test, got, want, AGG_LEN);
}

static void statsfd_snapshot_read_of_aggregates_ignores_the_parents_window(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct family *f = new_family(test);
	u64 want[AGG_WORDS], v[2] = { 6, 8 };
	u64 *got = ctx->kbuf;

	window_set_words(&f->child[0]->src, 6);
	window_set_words(&f->child[1]->src, 8);
	statsfd_update_begin(&f->parent->src);
	KUNIT_ASSERT_EQ(test, read_data(test, ctx, f->file, got, AGG_OFF,
					AGG_LEN), AGG_LEN);
	model_aggs(want, v, 2);
	KUNIT_EXPECT_MEMEQ(test, got, want, AGG_LEN);
	KUNIT_EXPECT_NULL(test, READ_ONCE(f->parent->src.snap_req));
	statsfd_update_end(&f->parent->src);
}

/*
 * Both children are written pass by pass (all values k) by one writer;
 * in every read of the parent's aggregates each child counts with one of
 * its passes, so every sum is the same S = k0 + k1, min + max = S, the
 * maximum of wait_ns is the maximum of exits, avg = S / 2.
 */
static bool aggs_consistent(const u64 *a)
{
	u64 s = a[0];
	unsigned int i;

	for (i = 8; i < AGG_WORDS; i++)	/* lin_sum, log_sum */
		if (a[i] != s)
			return false;
	return a[5] == s && a[6] == s && a[1] + a[2] == s && a[7] == a[2] &&
	       a[3] == s / 2 && a[4] == (a[1] != 0) + (a[2] != 0);
}

static struct mix_count agg_reads(struct kunit *test, bool windows,
				  unsigned int ms, unsigned long enough)
{
	struct snap_ctx *ctx = test->priv;
	struct family *f = new_family(test);
	struct loop_writer *w = kunit_kzalloc(test, sizeof(*w), GFP_KERNEL);
	unsigned long end = jiffies + msecs_to_jiffies(ms);
	struct mix_count c = {};
	u64 *got = ctx->kbuf, last = 0;
	struct sfk_thread *t;
	ssize_t ret;

	KUNIT_ASSERT_NOT_NULL(test, w);
	w->src[0] = &f->child[0]->src;
	w->src[1] = &f->child[1]->src;
	w->nsrc = 2;
	w->windows = windows;
	t = sfk_thread_start(test, loop_writer_fn, w, "sfk_loop2");
	while (time_before(jiffies, end) && c.mixed < enough) {
		ret = read_data(test, ctx, f->file, got, AGG_OFF, AGG_LEN);
		c.reads++;
		if (ret != AGG_LEN) {
			c.errors++;
			continue;
		}
		c.mixed += !aggs_consistent(got);
		c.changes += got[0] != last;
		last = got[0];
		if (c.reads % 16 == 0)
			cond_resched();
	}
	sfk_thread_stop(t);
	kunit_info(test, "%s: %lu reads, %lu mixed, %lu errors, %lu changes, %llu passes\n",
		   windows ? "windows" : "no windows", c.reads, c.mixed,
		   c.errors, c.changes, w->passes);
	return c;
}

static void statsfd_snapshot_aggregates_never_mix_a_childs_windows(struct kunit *test)
{
	struct mix_count c = agg_reads(test, true, 1000, ULONG_MAX);

	KUNIT_EXPECT_EQ(test, c.mixed, 0);
	KUNIT_EXPECT_EQ(test, c.errors, 0);
	KUNIT_EXPECT_GT(test, c.reads, 20);
	KUNIT_EXPECT_GT(test, c.changes, 5);
}

static void statsfd_snapshot_aggregates_without_windows_do_see_a_mix(struct kunit *test)
{
	struct mix_count c = agg_reads(test, false, 5000, 10);

	KUNIT_EXPECT_GT(test, c.mixed, 0);
	KUNIT_EXPECT_EQ(test, c.errors, 0);
}

/* A writer whose windows last about a millisecond, back to back. */
struct slow_writer {
	struct statsfd_source *src;
	u64 windows;
};

static int slow_writer_fn(void *data)
{
	struct slow_writer *w = data;
	struct statsfd_source *src = w->src;

	while (!kthread_should_stop()) {
		statsfd_update_begin(src);
		set_words(src, src->area->seq / 2 + 1);
		mdelay(1);
		statsfd_update_end(src);
		w->windows++;
		if (w->windows % 256 == 0)
			cond_resched();
	}
	return 0;
}

/*
 * Long windows with no gap a reader could use: the writer serves the
 * reader within STATSFD_SERVE_WINDOWS of them, however long they take;
 * -EAGAIN is only for a writer that stops inside a window.
 */
static void statsfd_snapshot_read_behind_long_windows_is_served_not_eagain(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct slow_writer *w = kunit_kzalloc(test, sizeof(*w), GFP_KERNEL);
	struct sfk_thread *t;
	u64 *got = ctx->kbuf;
	ssize_t ret;
	int cpu, i;

	KUNIT_ASSERT_NOT_NULL(test, w);
	w->src = &ctx->src->src;
	cpu = pin_test_thread(test);
	t = sfk_thread_start_on(test, slow_writer_fn, w, "sfk_slow",
				cpu ? 0 : 1);
	msleep(20);
	for (i = 0; i < 5; i++) {
		ret = read_data(test, ctx, ctx->file, got, 0,
				SFK_SNAP_CHILD_DATA_SIZE);
		KUNIT_EXPECT_EQ(test, ret, SFK_SNAP_CHILD_DATA_SIZE);
	}
	sfk_thread_stop(t);
	kunit_info(test, "%llu windows of about 1 ms\n", w->windows);
}

static struct kunit_case statsfd_snapshot_cases[] = {
	/* schema */
	KUNIT_CASE(statsfd_schema_init_snapshot_appends_sample_ns_and_generation),
	KUNIT_CASE(statsfd_schema_init_snapshot_puts_its_stats_after_the_aggregates),
	KUNIT_CASE(statsfd_schema_init_area_is_header_and_values_in_pages_with_mmap),
	KUNIT_CASE(statsfd_schema_init_rejects_mmap_without_snapshot),
	KUNIT_CASE(statsfd_schema_init_rejects_unknown_flags),
	KUNIT_CASE(statsfd_schema_init_rejects_a_stat_named_sample_ns_with_snapshot),
	KUNIT_CASE(statsfd_schema_init_rejects_a_stat_named_generation_with_snapshot),
	KUNIT_CASE(statsfd_schema_init_reserves_both_names_without_snapshot_too),
	/* source */
	KUNIT_CASE(statsfd_source_init_rejects_a_stats_pointer_for_a_snapshot_schema),
	KUNIT_CASE(statsfd_source_init_snapshot_values_start_zero_after_the_header),
	KUNIT_CASE(statsfd_source_init_mmap_area_is_whole_pages),
	/* the window protocol */
	KUNIT_CASE(statsfd_update_begin_makes_seq_odd_until_update_end),
	KUNIT_CASE(statsfd_snapshot_generation_counts_the_windows_closed),
	KUNIT_CASE(statsfd_snapshot_whole_file_matches_reference_after_a_window),
	KUNIT_CASE(statsfd_snapshot_sample_ns_is_taken_during_the_read),
	/* served, or giving up */
	KUNIT_CASE(statsfd_update_end_serves_a_waiting_reader_every_serve_windows),
	KUNIT_CASE(statsfd_snapshot_read_behind_back_to_back_windows_is_served),
	KUNIT_CASE(statsfd_snapshot_copy_gives_up_with_eagain_on_a_window_left_open),
	KUNIT_CASE(statsfd_snapshot_read_in_a_window_left_open_is_eagain),
	KUNIT_CASE(statsfd_snapshot_copy_ends_with_eintr_on_a_fatal_signal),
	KUNIT_CASE(statsfd_snapshot_read_behind_long_windows_is_served_not_eagain),
	/* never a mix */
	KUNIT_CASE(statsfd_snapshot_read_never_mixes_two_windows),
	KUNIT_CASE(statsfd_snapshot_read_without_windows_does_see_a_mix),
	/* the per-file buffer */
	KUNIT_CASE(statsfd_source_getfile_allocates_the_read_buffer),
	KUNIT_CASE(statsfd_snapshot_reads_allocate_nothing_and_keep_the_buffer),
	KUNIT_CASE(statsfd_snapshot_two_files_on_one_source_have_their_own_buffers),
	KUNIT_CASE(statsfd_snapshot_read_of_header_and_descriptors_ignores_a_window),
	/* faulting user buffers */
	KUNIT_CASE(statsfd_snapshot_read_into_prot_none_memory_is_efault),
	KUNIT_CASE(statsfd_snapshot_read_into_an_unmapped_tail_is_short),
	/* aggregates */
	KUNIT_CASE(statsfd_snapshot_aggregates_wait_for_a_childs_open_window),
	KUNIT_CASE(statsfd_snapshot_read_of_aggregates_ignores_the_parents_window),
	KUNIT_CASE(statsfd_snapshot_aggregates_never_mix_a_childs_windows),
	KUNIT_CASE(statsfd_snapshot_aggregates_without_windows_do_see_a_mix),
	{}
};

static struct kunit_suite statsfd_snapshot_suite = {
	.name = "statsfd_snapshot",
	.init = snap_init,
	.test_cases = statsfd_snapshot_cases,
};

kunit_test_suites(&statsfd_snapshot_suite);
