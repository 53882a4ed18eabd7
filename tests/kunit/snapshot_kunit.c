// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd KUnit suite statsfd_snapshot: update windows.  The schema flags
 * and the two stats they add (sample_ns, generation), the values area of
 * a source (a header and the two published copies of a seqcount latch)
 * beside the owner's live values, the latch itself (one count per window,
 * the copy it selects, writes published only by the end of a window),
 * readers that never wait for a writer, stopped or running, the per-file
 * read buffer, faulting user buffers, aggregates over one snapshot of
 * each child, and a source destroyed while its files are open.  Each
 * concurrent check comes with a control case that shows the same check
 * catches a mix when it reads without the protocol.
 */
#include <kunit/test.h>
#include <linux/atomic.h>
#include <linux/cache.h>
#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/err.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/smp.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/signal.h>
#include <linux/sizes.h>
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
/* The mapped header, before the first copy of the values. */
#define HEADER_SIZE	64

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

	for (i = 0; i < src->priv->schema->def->stats_size / sizeof(u64); i++)
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

/* Are the @n values at @w all @v? */
static bool all_words(const u64 *w, u32 n, u64 v)
{
	u32 i;

	for (i = 0; i < n; i++)
		if (w[i] != v)
			return false;
	return true;
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

/*
 * Copy @n of @src's values area, found as a mapping reader finds it: from
 * the header's data_offset and copy_stride.  The current values are copy
 * (seq & 1).
 */
static const u64 *area_copy(const struct statsfd_source *src, u64 n)
{
	const struct statsfd_mmap_header *a = src->area;

	return (const void *)a + a->data_offset + (n & 1) * a->copy_stride;
}

/* The first (@first) or second half of the plain values of @src become @v. */
static void set_half(struct statsfd_source *src, bool first, u64 v)
{
	u64 *w = statsfd_source_stats(src);
	u32 i;

	for (i = first ? 0 : CHILD_WORDS / 2;
	     i < (first ? CHILD_WORDS / 2 : CHILD_WORDS); i++)
		statsfd_stat_set(&w[i], v);
}

/* Some CPU online other than @cpu, for a thread that runs alongside. */
static int other_cpu(struct kunit *test, int cpu)
{
	unsigned int other = cpumask_any_but(cpu_online_mask, cpu);

	KUNIT_ASSERT_LT_MSG(test, other, nr_cpu_ids,
			    "the test needs two online CPUs");
	return other;
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
 * Keep the test thread on the CPU it is on, so that a helper thread bound
 * to another CPU (other_cpu()) really runs alongside it.  KUnit runs each
 * case in a thread of its own, which ends with the case.
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

/*
 * Park a helper, not running, until the test sets *@go and wakes it (or
 * stops it): a writer "preempted" inside its window, for as long as the
 * test likes.
 */
static void sfk_park_until(const bool *go)
{
	for (;;) {
		set_current_state(TASK_IDLE);
		if (READ_ONCE(*go) || kthread_should_stop())
			break;
		schedule();
	}
	__set_current_state(TASK_RUNNING);
}

/* Let a helper parked in sfk_park_until(@go) go on. */
static void sfk_unpark(struct sfk_thread *t, bool *go)
{
	WRITE_ONCE(*go, true);
	wake_up_process(t->task);
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

/*
 * The area: the 64-byte header, the first copy of the values, padded to
 * whole cache lines, and the second copy; whole pages with MMAP.
 */
static void statsfd_schema_init_area_is_header_and_two_copies_paged_with_mmap(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_schema *big, *big_unmapped, *big_plain;

	/* 64 + 128 + 128 bytes, rounded up to a page. */
	KUNIT_EXPECT_EQ(test, ctx->cs->area_size, PAGE_SIZE);
	/* Without MMAP: the header, 16 bytes padded to a line, 16 bytes. */
	KUNIT_EXPECT_EQ(test, ctx->ps->area_size,
			HEADER_SIZE + round_up(16, SMP_CACHE_BYTES) + 16);
	KUNIT_ASSERT_EQ(test, init_with_flags(test, &big_tmpl,
					      STATSFD_SCHEMA_SNAPSHOT |
					      STATSFD_SCHEMA_MMAP, &big), 0);
	KUNIT_EXPECT_EQ(test, big->area_size,
			round_up(HEADER_SIZE + 4096 + 4096, PAGE_SIZE));
	KUNIT_EXPECT_EQ(test, big->area_size, 3 * PAGE_SIZE);
	KUNIT_ASSERT_EQ(test, init_with_flags(test, &big_tmpl,
					      STATSFD_SCHEMA_SNAPSHOT,
					      &big_unmapped), 0);
	KUNIT_EXPECT_EQ(test, big_unmapped->area_size,
			HEADER_SIZE + 4096 + 4096);
	/* No windows, no area. */
	KUNIT_ASSERT_EQ(test, init_with_flags(test, &big_tmpl, 0, &big_plain),
			0);
	KUNIT_EXPECT_EQ(test, big_plain->area_size, 0);
}

/*
 * A schema of @stats_size bytes of values, all covered by log histograms
 * of at most U16_MAX buckets (the most one descriptor holds), so that
 * nothing but the size of the values can be refused.
 */
static int init_huge(struct kunit *test, u32 stats_size, u32 flags,
		     struct statsfd_schema **out)
{
	struct statsfd_schema_def tmpl = {
		.name = "kunit.huge", .stats_size = stats_size,
	};
	u32 words = stats_size / 8, n = DIV_ROUND_UP(words, U16_MAX), i;
	struct statsfd_desc_def *descs;
	char *names;

	descs = kunit_kcalloc(test, n, sizeof(*descs), GFP_KERNEL);
	names = kunit_kcalloc(test, n, 8, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, descs);
	KUNIT_ASSERT_NOT_NULL(test, names);
	for (i = 0; i < n; i++) {
		snprintf(names + 8 * i, 8, "h%u", i);
		descs[i] = (struct statsfd_desc_def){
			.flags = STATSFD_TYPE_LOG_HIST,
			.size = min_t(u32, U16_MAX, words - i * U16_MAX),
			.offset = i * U16_MAX * 8,
			.name = names + 8 * i,
		};
	}
	tmpl.descs = descs;
	tmpl.num_descs = n;
	return init_with_flags(test, &tmpl, flags, out);
}

/*
 * The area's offsets and sizes are u32 (struct statsfd_mmap_header): a
 * stats struct whose header and two copies would not fit is refused, not
 * wrapped into a small allocation that the copies would overrun.  With
 * 64-byte cache lines, 2 GiB - 64 bytes of values make 4 GiB - 64 bytes
 * (accepted: the descriptors are valid); 8 bytes more are padded to
 * 2 GiB in the first copy: 4 GiB + 8 bytes.  The schema has 4097
 * descriptors and 2 GiB of values: its checks must take time linear in
 * the descriptors (they once compared every pair of names and marked
 * every u64 in a bitmap, 21 s in the debug guest).
 */
static void statsfd_schema_init_rejects_an_area_beyond_u32(struct kunit *test)
{
	struct statsfd_schema *s;

	KUNIT_ASSERT_EQ(test, SMP_CACHE_BYTES, 64);
	KUNIT_EXPECT_EQ(test, init_huge(test, SZ_2G - 64,
					STATSFD_SCHEMA_SNAPSHOT, &s), 0);
	KUNIT_EXPECT_EQ(test, s->area_size, U32_MAX - 63);
	KUNIT_EXPECT_EQ(test, init_huge(test, SZ_2G - 56,
					STATSFD_SCHEMA_SNAPSHOT, &s), -EINVAL);
	expect_not_built(test, s);
	/* Whole pages: 4 GiB - 64 bytes round up to 4 GiB. */
	KUNIT_EXPECT_EQ(test, init_huge(test, SZ_2G - 64,
					STATSFD_SCHEMA_SNAPSHOT |
					STATSFD_SCHEMA_MMAP, &s), -EINVAL);
	expect_not_built(test, s);
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
		BIT(4), BIT(31), STATSFD_SCHEMA_SNAPSHOT | BIT(4),
		STATSFD_SCHEMA_FLAGS | BIT(7),
	};
	struct statsfd_schema *s;
	unsigned int i;

	/* SNAPSHOT, MMAP, DESC_FIRST, ANY_ORDER: the next bit is unknown. */
	KUNIT_EXPECT_EQ(test, STATSFD_SCHEMA_FLAGS, 0xf);
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
	KUNIT_EXPECT_NULL(test, src.priv);
	statsfd_source_destroy(&src);	/* documented: does nothing */
	/* And the converse: no stats for a schema without windows. */
	KUNIT_EXPECT_EQ(test, statsfd_source_init(&src, plain, NULL,
						  &statsfd_kunit_ops, "x"),
			-EINVAL);
	KUNIT_EXPECT_NULL(test, src.priv);
	/* Nor a snapshot source of a schema without windows. */
	KUNIT_EXPECT_EQ(test, statsfd_source_init_snapshot(&src, plain, &stats,
							   &statsfd_kunit_ops,
							   "x"),
			-EINVAL);
	KUNIT_EXPECT_NULL(test, src.priv);
	/* Control: the snapshot entry point is right for a snapshot schema. */
	KUNIT_ASSERT_EQ(test, statsfd_source_init_snapshot(&src, ctx->cs, &stats,
							   &statsfd_kunit_ops,
							   "x"), 0);
	KUNIT_EXPECT_NOT_NULL(test, src.area);
	statsfd_source_destroy(&src);
	KUNIT_EXPECT_NULL(test, src.area);
	KUNIT_EXPECT_NULL(test, src.stats);
}

static void statsfd_source_init_snapshot_area_header_describes_two_copies(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	const struct statsfd_mmap_header *a = ctx->src->src.area;
	u64 zero[4] = {};

	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_EXPECT_EQ(test, sizeof(*a), HEADER_SIZE);
	KUNIT_EXPECT_EQ(test, STATSFD_MMAP_VERSION, 2);
	KUNIT_EXPECT_EQ(test, a->version, 2);
	KUNIT_EXPECT_EQ(test, a->header_size, HEADER_SIZE);
	KUNIT_EXPECT_EQ(test, a->seq, 0);
	KUNIT_EXPECT_EQ(test, a->data_offset, HEADER_SIZE);
	KUNIT_EXPECT_EQ(test, a->data_size, SFK_CHILD_DATA_SIZE);
	KUNIT_EXPECT_EQ(test, STATSFD_MMAP_LATCH, 1);
	KUNIT_EXPECT_EQ(test, a->flags, STATSFD_MMAP_LATCH);
	/* 128 bytes of values: exactly two cache lines, no padding. */
	KUNIT_EXPECT_EQ(test, a->copy_stride,
			round_up(SFK_CHILD_DATA_SIZE, SMP_CACHE_BYTES));
	KUNIT_EXPECT_EQ(test, a->copy_stride, SFK_CHILD_DATA_SIZE);
	KUNIT_EXPECT_MEMEQ(test, a->reserved, zero, sizeof(zero));
	/* Both copies lie inside the area. */
	KUNIT_EXPECT_LE(test, a->data_offset + a->copy_stride + a->data_size,
			ctx->cs->area_size);
}

static void statsfd_source_init_snapshot_both_copies_start_zero(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	const struct statsfd_mmap_header *a = ctx->src->src.area;

	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_EXPECT_PTR_EQ(test, area_copy(&ctx->src->src, 0),
			    (const void *)a + HEADER_SIZE);
	KUNIT_EXPECT_PTR_EQ(test, area_copy(&ctx->src->src, 1),
			    (const void *)a + HEADER_SIZE + SFK_CHILD_DATA_SIZE);
	KUNIT_EXPECT_NULL(test, memchr_inv(area_copy(&ctx->src->src, 0), 0,
					   SFK_CHILD_DATA_SIZE));
	KUNIT_EXPECT_NULL(test, memchr_inv(area_copy(&ctx->src->src, 1), 0,
					   SFK_CHILD_DATA_SIZE));
	/* The rest of the page a mapping shows is zero: nothing stale. */
	KUNIT_EXPECT_NULL(test, memchr_inv((void *)a + HEADER_SIZE, 0,
					   PAGE_SIZE - HEADER_SIZE));
}

/*
 * The writer's live values are the owner's, outside the area: no reader
 * and no mapping sees them before a window ends.
 */
static void statsfd_source_init_snapshot_live_values_are_outside_the_area(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;
	const void *live = statsfd_source_stats(src);
	const void *a = src->area;

	KUNIT_ASSERT_NOT_NULL(test, live);
	KUNIT_EXPECT_PTR_EQ(test, live, src->stats);
	KUNIT_EXPECT_TRUE(test, live + SFK_CHILD_DATA_SIZE <= a ||
			  live >= a + ctx->cs->area_size);
	KUNIT_EXPECT_NULL(test, memchr_inv(live, 0, SFK_CHILD_DATA_SIZE));
}

/* statsfd_source_init_snapshot() refuses @stats and leaves nothing. */
static void expect_init_snapshot_einval(struct kunit *test,
					const struct statsfd_schema *cs,
					void *stats)
{
	struct statsfd_source src = {};

	KUNIT_EXPECT_EQ(test, statsfd_source_init_snapshot(&src, cs, stats,
							   &statsfd_kunit_ops,
							   "x"),
			-EINVAL);
	KUNIT_EXPECT_NULL(test, src.priv);
	KUNIT_EXPECT_NULL(test, src.area);
}

/* The live values must be there, and aligned for the u64 copies. */
static void statsfd_source_init_snapshot_rejects_a_bad_stats_pointer(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source src = {};
	u64 *stats = kunit_kzalloc(test, SFK_CHILD_DATA_SIZE + sizeof(u64),
				   GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, stats);
	expect_init_snapshot_einval(test, ctx->cs, NULL);
	expect_init_snapshot_einval(test, ctx->cs, (void *)stats + 4);
	/* Control: the same memory, aligned, is accepted. */
	KUNIT_ASSERT_EQ(test, statsfd_source_init_snapshot(&src, ctx->cs,
							   stats + 1,
							   &statsfd_kunit_ops,
							   "x"), 0);
	KUNIT_EXPECT_PTR_EQ(test, statsfd_source_stats(&src),
			    (void *)(stats + 1));
	statsfd_source_destroy(&src);
}

/*
 * The live values stay the owner's: windows publish what the owner wrote
 * there, and the destroy leaves them alone (the owner frees its object;
 * a core that freed them too would be caught by KASAN or slab debugging).
 */
static void statsfd_source_init_snapshot_publishes_the_owners_own_stats(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct {
		u64 before;
		struct statsfd_kunit_child stats;
		struct statsfd_source src;
	} *owner = kunit_kzalloc(test, sizeof(*owner), GFP_KERNEL);
	u64 vals[CHILD_WORDS];

	KUNIT_ASSERT_NOT_NULL(test, owner);
	KUNIT_ASSERT_EQ(test, statsfd_source_init_snapshot(&owner->src, ctx->cs,
							   &owner->stats,
							   &statsfd_kunit_ops,
							   "x"), 0);
	KUNIT_EXPECT_PTR_EQ(test, statsfd_source_stats(&owner->src),
			    (void *)&owner->stats);
	statsfd_update_begin(&owner->src);
	statsfd_stat_set(&owner->stats.exits, 41);
	statsfd_stat_set(&owner->stats.lin[3], 43);
	statsfd_update_end(&owner->src);
	KUNIT_ASSERT_EQ(test, statsfd_snapshot_copy(&owner->src, vals, 0,
						    CHILD_WORDS, NULL), 0);
	KUNIT_EXPECT_MEMEQ(test, vals, &owner->stats, SFK_CHILD_DATA_SIZE);
	KUNIT_EXPECT_EQ(test, owner->stats.exits, 41);
	statsfd_source_destroy(&owner->src);
	KUNIT_EXPECT_NULL(test, owner->src.priv);
	/* Still the owner's, untouched, after the destroy. */
	KUNIT_EXPECT_EQ(test, owner->stats.exits, 41);
	KUNIT_EXPECT_EQ(test, owner->stats.lin[3], 43);
	KUNIT_EXPECT_EQ(test, owner->before, 0);
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

	/* 64 + 4096 + 4096 bytes: three pages, all zero. */
	KUNIT_ASSERT_EQ(test, init_with_flags(test, &big_tmpl,
					      STATSFD_SCHEMA_SNAPSHOT |
					      STATSFD_SCHEMA_MMAP, &big), 0);
	b = statsfd_kunit_source(test, big, NULL, "big");
	KUNIT_EXPECT_TRUE(test, PAGE_ALIGNED(b->src.area));
	KUNIT_EXPECT_EQ(test, b->src.area->data_size, 4096);
	KUNIT_EXPECT_EQ(test, b->src.area->copy_stride, 4096);
	KUNIT_EXPECT_NULL(test, memchr_inv((void *)b->src.area + HEADER_SIZE,
					   0, big->area_size - HEADER_SIZE));

	/* Without MMAP the copies still follow a header in the area. */
	p = statsfd_kunit_source(test, ctx->ps, NULL, "vm-7-0");
	KUNIT_ASSERT_NOT_NULL(test, p->src.area);
	KUNIT_EXPECT_EQ(test, p->src.area->data_offset, HEADER_SIZE);
	KUNIT_EXPECT_EQ(test, p->src.area->data_size, SFK_PARENT_STATS_SIZE);
	KUNIT_EXPECT_EQ(test, p->src.area->copy_stride,
			round_up(SFK_PARENT_STATS_SIZE, SMP_CACHE_BYTES));
	KUNIT_EXPECT_EQ(test, p->src.area->flags, STATSFD_MMAP_LATCH);
}

/* ---- the window protocol ---------------------------------------------- */

static void statsfd_update_end_advances_seq_by_one_per_window(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;
	u64 w;

	for (w = 0; w < 6; w++) {
		KUNIT_EXPECT_EQ(test, READ_ONCE(src->area->seq), w);
		/* Opening a window and writing in it publish nothing. */
		statsfd_update_begin(src);
		KUNIT_EXPECT_EQ(test, READ_ONCE(src->area->seq), w);
		set_words(src, w + 1);
		KUNIT_EXPECT_EQ(test, READ_ONCE(src->area->seq), w);
		statsfd_update_end(src);
		KUNIT_EXPECT_EQ(test, READ_ONCE(src->area->seq), w + 1);
	}
	/* A window with no write is still a window. */
	statsfd_update_begin(src);
	statsfd_update_end(src);
	KUNIT_EXPECT_EQ(test, READ_ONCE(src->area->seq), 7);
}

/*
 * Window k writes 10 * k everywhere: afterwards copy (seq & 1) holds its
 * values and the other copy those of window k - 1, as the latch needs
 * (the writer fills only the copy that seq does not select).
 */
static void statsfd_update_end_publishes_into_the_copy_seq_selects(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;
	u64 k, seq;

	for (k = 1; k <= 5; k++) {
		window_set_words(src, 10 * k);
		seq = READ_ONCE(src->area->seq);
		KUNIT_EXPECT_EQ(test, seq, k);
		expect_words(test, area_copy(src, seq), CHILD_WORDS, 10 * k);
		expect_words(test, area_copy(src, seq + 1), CHILD_WORDS,
			     10 * (k - 1));
	}
	/* Only the values are copied: the padding of each copy stays 0. */
	KUNIT_EXPECT_NULL(test, memchr_inv((void *)area_copy(src, 1) +
					   SFK_CHILD_DATA_SIZE, 0,
					   PAGE_SIZE - HEADER_SIZE -
					   2 * SFK_CHILD_DATA_SIZE));
}

/*
 * Values written outside any window (a provider bug) stay in the live
 * values: readers go on seeing the last window until the next one ends,
 * which publishes them with its own writes.
 */
static void statsfd_snapshot_writes_outside_a_window_wait_for_the_next_window(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;
	u64 *got = ctx->kbuf;

	window_set_words(src, 1);
	set_words(src, 2);
	KUNIT_ASSERT_EQ(test, read_data(test, ctx, ctx->file, got, 0,
					SFK_SNAP_CHILD_DATA_SIZE),
			SFK_SNAP_CHILD_DATA_SIZE);
	expect_words(test, got, CHILD_WORDS, 1);
	KUNIT_EXPECT_EQ(test, got[GENERATION], 1);
	expect_words(test, area_copy(src, READ_ONCE(src->area->seq)),
		     CHILD_WORDS, 1);

	/* An empty window publishes them. */
	statsfd_update_begin(src);
	statsfd_update_end(src);
	KUNIT_ASSERT_EQ(test, read_data(test, ctx, ctx->file, got, 0,
					SFK_SNAP_CHILD_DATA_SIZE),
			SFK_SNAP_CHILD_DATA_SIZE);
	expect_words(test, got, CHILD_WORDS, 2);
	KUNIT_EXPECT_EQ(test, got[GENERATION], 2);
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
		/* What a mapping reader finds: seq itself. */
		KUNIT_EXPECT_EQ(test, READ_ONCE(src->area->seq),
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

/* ---- readers never wait for the writer -------------------------------- */

/*
 * The test thread is the writer, inside a window it has not closed: a
 * reader that waited for the window to close would never return.  The
 * copy returns the previous window's values and generation, at a time
 * taken during the copy, however much of the window is written.
 */
static void statsfd_snapshot_copy_in_a_window_left_open_is_the_last_window(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;
	struct statsfd_snap_meta meta;
	u64 *dst = ctx->kbuf, t0, t1;

	window_set_words(src, 2);
	statsfd_update_begin(src);
	set_half(src, true, 3);
	t0 = ktime_get_boottime_ns();
	KUNIT_ASSERT_EQ(test, statsfd_snapshot_copy(src, dst, 0, CHILD_WORDS,
						    &meta), 0);
	t1 = ktime_get_boottime_ns();
	expect_words(test, dst, CHILD_WORDS, 2);
	KUNIT_EXPECT_EQ(test, meta.generation, 1);
	KUNIT_EXPECT_GE(test, meta.sample_ns, t0);
	KUNIT_EXPECT_LE(test, meta.sample_ns, t1);

	/* The whole window written, still open: still the last window. */
	set_half(src, false, 3);
	KUNIT_ASSERT_EQ(test, statsfd_snapshot_copy(src, dst, 0, CHILD_WORDS,
						    &meta), 0);
	expect_words(test, dst, CHILD_WORDS, 2);
	KUNIT_EXPECT_EQ(test, meta.generation, 1);

	/* Closed: all of it at once. */
	statsfd_update_end(src);
	KUNIT_ASSERT_EQ(test, statsfd_snapshot_copy(src, dst, 0, CHILD_WORDS,
						    &meta), 0);
	expect_words(test, dst, CHILD_WORDS, 3);
	KUNIT_EXPECT_EQ(test, meta.generation, 2);
}

/*
 * A writer thread that closes one window (all values 4), opens the next,
 * writes half of it (5) and then stops, not running, as a writer
 * preempted or stopped inside its window, until the test lets it write
 * the other half and close the window.
 */
struct stopped_writer {
	struct statsfd_source *src;
	struct completion in_window;
	struct completion closed;
	bool go;
};

static int stopped_writer_fn(void *data)
{
	struct stopped_writer *w = data;
	struct statsfd_source *src = w->src;

	window_set_words(src, 4);
	statsfd_update_begin(src);
	set_half(src, true, 5);
	complete(&w->in_window);
	sfk_park_until(&w->go);
	set_half(src, false, 5);
	statsfd_update_end(src);
	complete(&w->closed);
	sfk_wait_for_stop();
	return 0;
}

static void statsfd_snapshot_read_behind_a_stopped_writer_is_its_last_window(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;
	struct stopped_writer *w = kunit_kzalloc(test, sizeof(*w), GFP_KERNEL);
	u64 vals[CHILD_WORDS], before, after, sample;
	u8 *got = (u8 *)ctx->kbuf;
	struct sfk_thread *t;
	ssize_t ret;

	KUNIT_ASSERT_NOT_NULL(test, w);
	w->src = src;
	init_completion(&w->in_window);
	init_completion(&w->closed);
	t = sfk_thread_start(test, stopped_writer_fn, w, "sfk_stopped");
	KUNIT_ASSERT_TRUE(test, wait_for_completion_timeout(&w->in_window,
							    10 * HZ));

	before = READ_ONCE(src->area->seq);
	ret = statsfd_kunit_read(test, ctx->file, ctx->ubuf, got,
				 SFK_SNAP_CHILD_FILE_SIZE, 0);
	after = READ_ONCE(src->area->seq);
	/* The whole file, while the writer stood still in its window. */
	KUNIT_ASSERT_EQ(test, ret, SFK_SNAP_CHILD_FILE_SIZE);
	KUNIT_EXPECT_EQ(test, before, 1);
	KUNIT_EXPECT_EQ(test, after, 1);
	KUNIT_EXPECT_FALSE(test, completion_done(&w->closed));
	child_all((struct statsfd_kunit_child *)vals, 4);
	memcpy(&sample, got + SFK_DATA_OFFSET + SFK_SNAP_CHILD_META, 8);
	KUNIT_EXPECT_MEMEQ(test, got, child_image(test, vals, sample, 1),
			   SFK_SNAP_CHILD_FILE_SIZE);

	sfk_unpark(t, &w->go);
	KUNIT_ASSERT_TRUE(test, wait_for_completion_timeout(&w->closed,
							    10 * HZ));
	KUNIT_ASSERT_EQ(test, read_data(test, ctx, ctx->file, ctx->kbuf, 0,
					SFK_SNAP_CHILD_DATA_SIZE),
			SFK_SNAP_CHILD_DATA_SIZE);
	expect_words(test, ctx->kbuf, CHILD_WORDS, 5);
	KUNIT_EXPECT_EQ(test, ctx->kbuf[GENERATION], 2);
}

/*
 * A writer thread that closes windows back to back, window k setting
 * every value to k, until the test stops it; it gives up by itself after
 * twice WAIT_LIMIT_NS.
 */
struct busy_writer {
	struct statsfd_source *src;
	u64 windows;		/* closed so far */
	bool timed_out;		/* stopped at the time limit */
};

static int busy_writer_fn(void *data)
{
	struct busy_writer *w = data;
	struct statsfd_source *src = w->src;
	u64 deadline = ktime_get_ns() + 2 * WAIT_LIMIT_NS;
	u64 n = 0;

	while (!kthread_should_stop()) {
		statsfd_update_begin(src);
		set_words(src, src->area->seq + 1);
		statsfd_update_end(src);
		WRITE_ONCE(w->windows, ++n);
		if (n % 256)
			continue;
		if (ktime_get_ns() > deadline) {
			WRITE_ONCE(w->timed_out, true);
			break;
		}
		cond_resched();
	}
	sfk_wait_for_stop();
	return 0;
}

/* @w's thread, on a CPU other than @cpu, once it has closed windows. */
static struct sfk_thread *start_busy_writer(struct kunit *test,
					    struct busy_writer *w, int cpu)
{
	struct sfk_thread *t;
	u64 deadline;

	t = sfk_thread_start_on(test, busy_writer_fn, w, "sfk_busy",
				other_cpu(test, cpu));
	deadline = ktime_get_ns() + WAIT_LIMIT_NS;
	while (READ_ONCE(w->windows) < 64 && ktime_get_ns() < deadline)
		schedule_timeout_uninterruptible(1);
	KUNIT_ASSERT_GE_MSG(test, READ_ONCE(w->windows), 64,
			    "the writer thread did not run");
	return t;
}

/*
 * Reads of the whole data block while a writer on another CPU closes
 * windows back to back: each read returns the values of one window and
 * that window's generation, never an error.  The reads go on until the
 * writer closed 64 windows during them (they really were behind it: a
 * read retries when a window ends during its copy).  A read completes at
 * the latest when the writer stops (at its time limit); how many windows
 * one read took is only reported.
 */
static void statsfd_snapshot_read_behind_back_to_back_windows_completes(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;
	struct busy_writer *w = kunit_kzalloc(test, sizeof(*w), GFP_KERNEL);
	u64 *got = ctx->kbuf, before, after, during = 0, longest = 0;
	unsigned long reads = 0, bad = 0, failed = 0;
	struct sfk_thread *t;
	u64 deadline;
	ssize_t ret;

	KUNIT_ASSERT_NOT_NULL(test, w);
	w->src = src;
	t = start_busy_writer(test, w, pin_test_thread(test));
	deadline = ktime_get_ns() + WAIT_LIMIT_NS;
	while (during < 64 && ktime_get_ns() < deadline) {
		before = READ_ONCE(src->area->seq);
		ret = read_data(test, ctx, ctx->file, got, 0,
				SFK_SNAP_CHILD_DATA_SIZE);
		after = READ_ONCE(src->area->seq);
		reads++;
		during += after - before;
		longest = max(longest, after - before);
		if (ret != SFK_SNAP_CHILD_DATA_SIZE) {
			failed++;
			continue;
		}
		/* One window's values, and its generation. */
		if (!all_words(got, CHILD_WORDS, got[GENERATION]) ||
		    got[GENERATION] < before || got[GENERATION] > after)
			bad++;
	}
	sfk_thread_stop(t);
	kunit_info(test, "%lu reads behind %llu of %llu windows, at most %llu in one read%s\n",
		   reads, during, READ_ONCE(w->windows), longest,
		   READ_ONCE(w->timed_out) ? ", writer timed out" : "");
	KUNIT_EXPECT_EQ(test, failed, 0);
	KUNIT_EXPECT_EQ(test, bad, 0);
	KUNIT_EXPECT_GE(test, during, 64);
}

/*
 * A reader thread: copies of the first @words values of @src into @dst,
 * once, or again while they succeed until @deadline.  SIGKILL is allowed
 * and may be sent before the test lets it go.  It has no user address
 * space, so it calls the core directly.
 */
struct copy_reader {
	struct statsfd_source *src;
	u64 *dst;
	u32 words;
	bool again;		/* copy again while copies succeed */
	u64 deadline;		/* ... until then (ktime_get_ns()) */
	bool go;		/* set by the test: start copying */
	struct completion started;
	struct completion done;
	bool killed;		/* a fatal signal was pending at the first copy */
	unsigned long copies;	/* copies that succeeded */
	struct statsfd_snap_meta meta;
	int ret;		/* of the last copy */
};

static int copy_reader_fn(void *data)
{
	struct copy_reader *r = data;

	allow_signal(SIGKILL);
	complete(&r->started);
	sfk_park_until(&r->go);
	r->killed = fatal_signal_pending(current);
	do {
		r->ret = statsfd_snapshot_copy(r->src, r->dst, 0, r->words,
					       &r->meta);
		if (!r->ret)
			r->copies++;
	} while (!r->ret && r->again && ktime_get_ns() < r->deadline &&
		 !kthread_should_stop());
	complete(&r->done);
	sfk_wait_for_stop();
	return 0;
}

/* A reader thread of @words values of @src, killed before its first copy. */
static struct copy_reader *start_killed_reader(struct kunit *test,
					       struct statsfd_source *src,
					       u32 words, bool again, int cpu)
{
	struct copy_reader *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	struct sfk_thread *t;

	KUNIT_ASSERT_NOT_NULL(test, r);
	r->src = src;
	r->words = words;
	r->again = again;
	r->deadline = ktime_get_ns() + 2 * WAIT_LIMIT_NS;
	r->dst = kunit_kmalloc_array(test, words, sizeof(u64), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, r->dst);
	init_completion(&r->started);
	init_completion(&r->done);
	t = sfk_thread_start_on(test, copy_reader_fn, r, "sfk_killed", cpu);
	KUNIT_ASSERT_TRUE(test, wait_for_completion_timeout(&r->started,
							    10 * HZ));
	KUNIT_ASSERT_EQ(test, send_sig(SIGKILL, t->task, 1), 0);
	sfk_unpark(t, &r->go);
	KUNIT_ASSERT_TRUE(test, wait_for_completion_timeout(&r->done,
							    30 * HZ));
	return r;
}

/*
 * A fatal signal ends only a copy the writer keeps invalidating: one
 * that gets through at the first try returns the values, even behind a
 * window left open.
 */
static void statsfd_snapshot_copy_without_a_retry_ignores_a_fatal_signal(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;
	struct copy_reader *r;

	window_set_words(src, 3);
	statsfd_update_begin(src);
	set_words(src, 4);
	r = start_killed_reader(test, src, CHILD_WORDS, false, -1);
	statsfd_update_end(src);
	KUNIT_EXPECT_TRUE(test, r->killed);
	KUNIT_EXPECT_EQ(test, r->ret, 0);
	KUNIT_EXPECT_EQ(test, r->copies, 1);
	expect_words(test, r->dst, CHILD_WORDS, 3);
	KUNIT_EXPECT_EQ(test, r->meta.generation, 1);
}

/*
 * A killed reader copying 4096 bytes while a writer on another CPU
 * publishes windows of them back to back: as soon as a window ends
 * during one of its copies, it stops retrying with -EINTR.
 */
static void statsfd_snapshot_copy_ends_with_eintr_on_a_fatal_signal(struct kunit *test)
{
	struct busy_writer *w = kunit_kzalloc(test, sizeof(*w), GFP_KERNEL);
	struct statsfd_kunit_src *b;
	struct statsfd_schema *big;
	struct copy_reader *r;
	struct sfk_thread *t;
	int cpu;

	KUNIT_ASSERT_NOT_NULL(test, w);
	KUNIT_ASSERT_EQ(test, init_with_flags(test, &big_tmpl,
					      STATSFD_SCHEMA_SNAPSHOT |
					      STATSFD_SCHEMA_MMAP, &big), 0);
	b = statsfd_kunit_source(test, big, NULL, "big");
	w->src = &b->src;
	cpu = pin_test_thread(test);
	t = start_busy_writer(test, w, cpu);
	r = start_killed_reader(test, &b->src, 4096 / 8, true, cpu);
	sfk_thread_stop(t);
	kunit_info(test, "%lu copies before the interrupted one\n", r->copies);
	KUNIT_EXPECT_TRUE(test, r->killed);
	KUNIT_EXPECT_EQ(test, r->ret, -EINTR);
}

/* ---- never a mix, and the controls ------------------------------------ */

/*
 * A writer thread that sets every value of its sources to k in pass k,
 * last value first, with a pause after each store, in one window per
 * source per pass.  Readers copy the first value first, so a copy of
 * values the writer is storing sees two values.
 */
struct loop_writer {
	struct statsfd_source *src[2];
	unsigned int nsrc;
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

			n = src->priv->schema->def->stats_size / sizeof(u64);
			statsfd_update_begin(src);
			for (i = n; i-- > 0;) {
				statsfd_stat_set(&v[i], k);
				for (j = 0; j < PAUSE_LOOPS; j++)
					cpu_relax();
			}
			statsfd_update_end(src);
		}
		cond_resched();
	}
	WRITE_ONCE(w->passes, k);
	return 0;
}

/*
 * How a check copies a child's values: through ->read (the protocol), or
 * without it, for the controls: the writer's live values as they are, or
 * the copy that seq does not select, which the end of each window fills.
 */
enum copy_how {
	THROUGH_READ,
	LIVE_VALUES,
	COPY_BEING_FILLED,
};

static const char *const copy_how_name[] = {
	[THROUGH_READ] = "through read",
	[LIVE_VALUES] = "live values",
	[COPY_BEING_FILLED] = "copy being filled",
};

/* The @n values at @from into @dst, each loaded once, first value first. */
static void copy_raw(u64 *dst, const u64 *from, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		dst[i] = READ_ONCE(from[i]);
}

/* The plain values of child @src into @dst, @how (no KUnit assertion). */
static bool copy_child(struct snap_ctx *ctx, struct file *file,
		       struct statsfd_source *src, enum copy_how how, u64 *dst)
{
	loff_t pos = SFK_DATA_OFFSET;

	switch (how) {
	case LIVE_VALUES:
		copy_raw(dst, statsfd_source_stats(src), CHILD_WORDS);
		return true;
	case COPY_BEING_FILLED:
		copy_raw(dst, area_copy(src, READ_ONCE(src->area->seq) + 1),
			 CHILD_WORDS);
		return true;
	default:
		return file->f_op->read(file, ctx->ubuf,
					SFK_SNAP_CHILD_DATA_SIZE, &pos) ==
		       SFK_SNAP_CHILD_DATA_SIZE &&
		       !copy_from_user(dst, ctx->ubuf,
				       SFK_SNAP_CHILD_DATA_SIZE);
	}
}

struct mix_count {
	unsigned long reads, mixed, errors, changes;
};

/*
 * What a mix check copies while a loop_writer writes its sources: @copy
 * takes one copy @how into @dst (false: the copy failed), @mixed tells
 * whether that copy mixes two passes; @thread names the writer.
 */
struct mix_check {
	const char *thread;
	bool (*copy)(struct snap_ctx *ctx, void *arg, enum copy_how how,
		     u64 *dst);
	bool (*mixed)(const u64 *got, enum copy_how how);
};

/*
 * Copy @m's values (@arg for its copy) @how for @ms (or until @enough
 * mixes) while a writer writes the @nsrc sources @src, counting the
 * copies, the mixes, the failed copies and the changes of the first value
 * (the writer really wrote).
 */
static struct mix_count mix_reads(struct kunit *test,
				  const struct mix_check *m, void *arg,
				  struct statsfd_source *const *src,
				  unsigned int nsrc, enum copy_how how,
				  unsigned int ms, unsigned long enough)
{
	struct snap_ctx *ctx = test->priv;
	struct loop_writer *w = kunit_kzalloc(test, sizeof(*w), GFP_KERNEL);
	unsigned long end = jiffies + msecs_to_jiffies(ms);
	struct mix_count c = {};
	u64 *got = ctx->kbuf, last = 0;
	struct sfk_thread *t;

	KUNIT_ASSERT_NOT_NULL(test, w);
	KUNIT_ASSERT_LE(test, nsrc, ARRAY_SIZE(w->src));
	memcpy(w->src, src, nsrc * sizeof(*src));
	w->nsrc = nsrc;
	t = sfk_thread_start(test, loop_writer_fn, w, m->thread);
	while (time_before(jiffies, end) && c.mixed < enough) {
		c.reads++;
		if (!m->copy(ctx, arg, how, got)) {
			c.errors++;
			continue;
		}
		c.mixed += m->mixed(got, how);
		c.changes += got[0] != last;
		last = got[0];
		if (c.reads % 16 == 0)
			cond_resched();
	}
	sfk_thread_stop(t);
	kunit_info(test, "%s: %lu reads, %lu mixed, %lu errors, %lu changes, %llu passes\n",
		   copy_how_name[how], c.reads, c.mixed, c.errors, c.changes,
		   READ_ONCE(w->passes));
	return c;
}

/* No copy through ->read mixed two passes, and the writer did write. */
static void expect_no_mix(struct kunit *test, struct mix_count c)
{
	KUNIT_EXPECT_EQ(test, c.mixed, 0);
	KUNIT_EXPECT_EQ(test, c.errors, 0);
	KUNIT_EXPECT_GT(test, c.reads, 20);
	KUNIT_EXPECT_GT(test, c.changes, 5);
}

/* A control: the same check does see mixes where nothing prevents them. */
static void expect_a_mix(struct kunit *test, struct mix_count c)
{
	KUNIT_EXPECT_GT(test, c.mixed, 0);
	KUNIT_EXPECT_EQ(test, c.errors, 0);
}

static bool child_copy(struct snap_ctx *ctx, void *arg, enum copy_how how,
		       u64 *dst)
{
	return copy_child(ctx, ctx->file, &ctx->src->src, how, dst);
}

/*
 * A copy of the child's values mixes if its values differ, or, through
 * ->read, if the generation is not the pass that wrote them.
 */
static bool child_mixed(const u64 *got, enum copy_how how)
{
	return !all_words(got, CHILD_WORDS, got[0]) ||
	       (how == THROUGH_READ && got[GENERATION] != got[0]);
}

static const struct mix_check child_mix = {
	.thread = "sfk_loop", .copy = child_copy, .mixed = child_mixed,
};

/* Copy the child's values @how while one writer writes them. */
static struct mix_count child_reads(struct kunit *test, enum copy_how how,
				    unsigned int ms, unsigned long enough)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;

	return mix_reads(test, &child_mix, NULL, &src, 1, how, ms, enough);
}

static void statsfd_snapshot_read_never_mixes_two_windows(struct kunit *test)
{
	expect_no_mix(test, child_reads(test, THROUGH_READ, 1000, ULONG_MAX));
}

/* Control: the same check, the values as the writer stores them. */
static void statsfd_snapshot_copy_of_the_live_values_does_see_a_mix(struct kunit *test)
{
	expect_a_mix(test, child_reads(test, LIVE_VALUES, 5000, 10));
}

/* Control: the copy the latch keeps readers off while it is filled. */
static void statsfd_snapshot_copy_being_filled_does_see_a_mix(struct kunit *test)
{
	expect_a_mix(test, child_reads(test, COPY_BEING_FILLED, 5000, 10));
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

/*
 * Reads of the header, the id and the descriptors copy no value: the
 * file's snapshot buffer is left alone.
 */
static void statsfd_snapshot_read_of_header_and_descriptors_takes_no_snapshot(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_file *sf = ctx->file->private_data;
	u64 vals[CHILD_WORDS] = {};
	u8 *img = child_image(test, vals, 0, 0);
	u8 *got = (u8 *)ctx->kbuf;
	ssize_t head, descs;

	window_set_words(&ctx->src->src, 7);
	memset(sf->buf, 0x5a, SFK_SNAP_CHILD_DATA_SIZE);
	head = statsfd_kunit_read(test, ctx->file, ctx->ubuf, got,
				  SFK_DATA_OFFSET, 0);
	descs = statsfd_kunit_read(test, ctx->file, ctx->ubuf + PAGE_SIZE,
				   got + PAGE_SIZE, PAGE_SIZE,
				   SFK_SNAP_CHILD_DESC_OFFSET);
	KUNIT_EXPECT_EQ(test, head, SFK_DATA_OFFSET);
	KUNIT_EXPECT_MEMEQ(test, got, img, SFK_DATA_OFFSET);
	KUNIT_EXPECT_EQ(test, descs,
			SFK_SNAP_CHILD_FILE_SIZE - SFK_SNAP_CHILD_DESC_OFFSET);
	KUNIT_EXPECT_MEMEQ(test, got + PAGE_SIZE,
			   img + SFK_SNAP_CHILD_DESC_OFFSET,
			   SFK_SNAP_CHILD_FILE_SIZE - SFK_SNAP_CHILD_DESC_OFFSET);
	KUNIT_EXPECT_NULL(test, memchr_inv(sf->buf, 0x5a,
					   SFK_SNAP_CHILD_DATA_SIZE));
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

/*
 * Child 0's writer is the test thread, inside a window: the parent's read
 * does not wait for it, and counts the child's last window.
 */
static void statsfd_snapshot_aggregates_count_a_childs_last_closed_window(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct family *f = new_family(test);
	struct statsfd_source *c0 = &f->child[0]->src;
	u64 want[AGG_WORDS], v[2] = { 3, 5 };
	u64 *got = ctx->kbuf;

	window_set_words(c0, 3);
	window_set_words(&f->child[1]->src, 5);
	statsfd_update_begin(c0);
	set_half(c0, true, 9);
	KUNIT_ASSERT_EQ(test, read_data(test, ctx, f->file, got, AGG_OFF,
					AGG_LEN), AGG_LEN);
	model_aggs(want, v, 2);
	KUNIT_EXPECT_MEMEQ(test, got, want, AGG_LEN);

	set_half(c0, false, 9);
	statsfd_update_end(c0);
	KUNIT_ASSERT_EQ(test, read_data(test, ctx, f->file, got, AGG_OFF,
					AGG_LEN), AGG_LEN);
	v[0] = 9;
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
	set_words(&f->parent->src, 2);
	KUNIT_ASSERT_EQ(test, read_data(test, ctx, f->file, got, AGG_OFF,
					AGG_LEN), AGG_LEN);
	model_aggs(want, v, 2);
	KUNIT_EXPECT_MEMEQ(test, got, want, AGG_LEN);
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

/*
 * The parent's aggregates: through ->read, or, for the control, the same
 * computation (statsfd_kunit_parent_data()) over the children's live
 * values as they are (no KUnit assertion).
 */
static bool copy_aggs(struct snap_ctx *ctx, struct family *f,
		      enum copy_how how, u64 *dst)
{
	struct statsfd_kunit_child c[2];
	const struct statsfd_kunit_child *cp[2] = { &c[0], &c[1] };
	struct statsfd_kunit_parent p = {};
	u64 data[SFK_PARENT_DATA_SIZE / 8];
	loff_t pos = SFK_DATA_OFFSET + AGG_OFF;
	unsigned int i;

	if (how == THROUGH_READ)
		return f->file->f_op->read(f->file, ctx->ubuf, AGG_LEN,
					   &pos) == AGG_LEN &&
		       !copy_from_user(dst, ctx->ubuf, AGG_LEN);
	for (i = 0; i < 2; i++)
		copy_raw((u64 *)&c[i], statsfd_source_stats(&f->child[i]->src),
			 CHILD_WORDS);
	statsfd_kunit_parent_data(&p, cp, 2, data);
	memcpy(dst, data + AGG_OFF / 8, AGG_LEN);
	return true;
}

static bool agg_copy(struct snap_ctx *ctx, void *arg, enum copy_how how,
		     u64 *dst)
{
	return copy_aggs(ctx, arg, how, dst);
}

static bool agg_mixed(const u64 *got, enum copy_how how)
{
	return !aggs_consistent(got);
}

static const struct mix_check agg_mix = {
	.thread = "sfk_loop2", .copy = agg_copy, .mixed = agg_mixed,
};

/* Copy the parent's aggregates @how while one writer writes both children. */
static struct mix_count agg_reads(struct kunit *test, enum copy_how how,
				  unsigned int ms, unsigned long enough)
{
	struct family *f = new_family(test);
	struct statsfd_source *src[] = { &f->child[0]->src, &f->child[1]->src };

	return mix_reads(test, &agg_mix, f, src, 2, how, ms, enough);
}

static void statsfd_snapshot_aggregates_never_mix_a_childs_windows(struct kunit *test)
{
	expect_no_mix(test, agg_reads(test, THROUGH_READ, 1000, ULONG_MAX));
}

/* Control: the same check over the values as the writer stores them. */
static void statsfd_snapshot_aggregates_of_the_live_values_do_see_a_mix(struct kunit *test)
{
	expect_a_mix(test, agg_reads(test, LIVE_VALUES, 5000, 10));
}

/* ---- a source destroyed while its files are open ---------------------- */

KUNIT_DEFINE_ACTION_WRAPPER(snap_fput, __fput_sync, struct file *);

/* A stats file on @s that close_file() closes before the test ends. */
static struct file *open_file(struct kunit *test, struct statsfd_kunit_src *s)
{
	struct file *file = statsfd_source_getfile(&s->src);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, file);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, snap_fput, file),
			0);
	return file;
}

static void close_file(struct kunit *test, struct file *file)
{
	kunit_release_action(test, snap_fput, file);
}

/* Does a poll of @file report EPOLLHUP? */
static bool polls_hangup(struct file *file)
{
	return !!(file->f_op->poll(file, NULL) & EPOLLHUP);
}

/* Has everything statsfd_source_init() allocated for @src been freed? */
static void expect_freed(struct kunit *test, const struct statsfd_source *src)
{
	/* The private part held the id, the buffers and the file count. */
	KUNIT_EXPECT_NULL(test, src->priv);
	KUNIT_EXPECT_NULL(test, src->area);
	KUNIT_EXPECT_NULL(test, src->stats);
}

/*
 * A provider bug, which the core reports in the kernel log and survives:
 * the source is hung up for its files, and nothing they use is freed.
 */
static void statsfd_source_destroy_with_a_file_open_hangs_the_source_up(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_kunit_src *s =
		statsfd_kunit_source(test, ctx->cs, NULL, "vm-7-0/vcpu-9");
	struct file *file = open_file(test, s);

	KUNIT_EXPECT_FALSE(test, polls_hangup(file));
	statsfd_source_destroy(&s->src);
	KUNIT_EXPECT_TRUE(test, s->src.priv->destroyed);
	KUNIT_EXPECT_TRUE(test, s->src.priv->hung_up);
	KUNIT_EXPECT_TRUE(test, polls_hangup(file));
	KUNIT_EXPECT_EQ(test, atomic_read(&s->src.priv->nr_files), 1);
	KUNIT_EXPECT_STREQ(test, s->src.priv->id, "vm-7-0/vcpu-9");
	KUNIT_EXPECT_NOT_NULL(test, s->src.area);
	KUNIT_EXPECT_NOT_NULL(test, s->src.stats);
	KUNIT_EXPECT_EQ(test, atomic_read(&s->puts), 0);
}

static void statsfd_source_destroy_with_a_file_open_keeps_its_values_readable(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_source *src = &ctx->src->src;
	u64 vals[CHILD_WORDS], sample;
	u8 *got = (u8 *)ctx->kbuf;

	window_set_words(src, 7);
	window_set_words(src, 8);
	statsfd_source_destroy(src);
	KUNIT_ASSERT_TRUE(test, src->priv->destroyed);
	/* The whole file, header and id included, as before the destroy. */
	KUNIT_ASSERT_EQ(test, statsfd_kunit_read(test, ctx->file, ctx->ubuf,
						 got, SFK_SNAP_CHILD_FILE_SIZE,
						 0),
			SFK_SNAP_CHILD_FILE_SIZE);
	child_all((struct statsfd_kunit_child *)vals, 8);
	memcpy(&sample, got + SFK_DATA_OFFSET + SFK_SNAP_CHILD_META, 8);
	KUNIT_EXPECT_MEMEQ(test, got, child_image(test, vals, sample, 2),
			   SFK_SNAP_CHILD_FILE_SIZE);
}

/* The last file to close frees what the destroy left, not an earlier one. */
static void statsfd_source_destroy_with_files_open_frees_at_the_last_close(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_kunit_src *s =
		statsfd_kunit_source(test, ctx->cs, NULL, "vm-7-0/vcpu-0");
	struct file *a = open_file(test, s), *b = open_file(test, s);
	u64 *got = ctx->kbuf;

	window_set_words(&s->src, 6);
	statsfd_source_destroy(&s->src);
	close_file(test, a);
	KUNIT_EXPECT_EQ(test, atomic_read(&s->src.priv->nr_files), 1);
	KUNIT_ASSERT_NOT_NULL(test, s->src.priv->id);
	KUNIT_ASSERT_NOT_NULL(test, s->src.area);
	KUNIT_ASSERT_EQ(test, read_data(test, ctx, b, got, 0,
					SFK_SNAP_CHILD_DATA_SIZE),
			SFK_SNAP_CHILD_DATA_SIZE);
	expect_words(test, got, CHILD_WORDS, 6);
	KUNIT_EXPECT_EQ(test, got[GENERATION], 1);

	close_file(test, b);
	expect_freed(test, &s->src);
	/* Both files dropped their reference on the owner. */
	KUNIT_EXPECT_EQ(test, atomic_read(&s->gets), 2);
	KUNIT_EXPECT_EQ(test, atomic_read(&s->puts), 2);
}

static void statsfd_source_destroy_again_with_a_file_open_does_nothing(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_kunit_src *s =
		statsfd_kunit_source(test, ctx->cs, NULL, "vm-7-0/vcpu-0");
	struct file *file = open_file(test, s);
	const struct statsfd_mmap_header *area = s->src.area;
	const char *id = s->src.priv->id;
	u64 *got = ctx->kbuf;

	window_set_words(&s->src, 5);
	statsfd_source_destroy(&s->src);
	statsfd_source_destroy(&s->src);
	KUNIT_EXPECT_TRUE(test, s->src.priv->destroyed);
	KUNIT_EXPECT_EQ(test, atomic_read(&s->src.priv->nr_files), 1);
	KUNIT_EXPECT_PTR_EQ(test, s->src.priv->id, id);
	KUNIT_EXPECT_PTR_EQ(test, s->src.area, area);
	KUNIT_ASSERT_EQ(test, read_data(test, ctx, file, got, 0,
					SFK_SNAP_CHILD_DATA_SIZE),
			SFK_SNAP_CHILD_DATA_SIZE);
	expect_words(test, got, CHILD_WORDS, 5);

	/* Freed once, by the close; a destroy after that does nothing. */
	close_file(test, file);
	expect_freed(test, &s->src);
	statsfd_source_destroy(&s->src);
	expect_freed(test, &s->src);
}

/* The supported order: files closed first, then the destroy frees at once. */
static void statsfd_source_destroy_with_no_file_open_frees_at_once(struct kunit *test)
{
	struct snap_ctx *ctx = test->priv;
	struct statsfd_kunit_src *s =
		statsfd_kunit_source(test, ctx->cs, NULL, "vm-7-0/vcpu-0");

	close_file(test, open_file(test, s));
	KUNIT_EXPECT_EQ(test, atomic_read(&s->src.priv->nr_files), 0);
	statsfd_source_destroy(&s->src);
	/*
	 * Freed by the destroy itself: a source destroyed with files open
	 * (marked destroyed, hung up) keeps its private part for them.
	 */
	expect_freed(test, &s->src);
}

static struct kunit_case statsfd_snapshot_cases[] = {
	/* schema */
	KUNIT_CASE(statsfd_schema_init_snapshot_appends_sample_ns_and_generation),
	KUNIT_CASE(statsfd_schema_init_snapshot_puts_its_stats_after_the_aggregates),
	KUNIT_CASE(statsfd_schema_init_area_is_header_and_two_copies_paged_with_mmap),
	KUNIT_CASE(statsfd_schema_init_rejects_an_area_beyond_u32),
	KUNIT_CASE(statsfd_schema_init_rejects_mmap_without_snapshot),
	KUNIT_CASE(statsfd_schema_init_rejects_unknown_flags),
	KUNIT_CASE(statsfd_schema_init_rejects_a_stat_named_sample_ns_with_snapshot),
	KUNIT_CASE(statsfd_schema_init_rejects_a_stat_named_generation_with_snapshot),
	KUNIT_CASE(statsfd_schema_init_reserves_both_names_without_snapshot_too),
	/* source */
	KUNIT_CASE(statsfd_source_init_rejects_a_stats_pointer_for_a_snapshot_schema),
	KUNIT_CASE(statsfd_source_init_snapshot_area_header_describes_two_copies),
	KUNIT_CASE(statsfd_source_init_snapshot_both_copies_start_zero),
	KUNIT_CASE(statsfd_source_init_snapshot_live_values_are_outside_the_area),
	KUNIT_CASE(statsfd_source_init_snapshot_rejects_a_bad_stats_pointer),
	KUNIT_CASE(statsfd_source_init_snapshot_publishes_the_owners_own_stats),
	KUNIT_CASE(statsfd_source_init_mmap_area_is_whole_pages),
	/* the latch */
	KUNIT_CASE(statsfd_update_end_advances_seq_by_one_per_window),
	KUNIT_CASE(statsfd_update_end_publishes_into_the_copy_seq_selects),
	KUNIT_CASE(statsfd_snapshot_writes_outside_a_window_wait_for_the_next_window),
	KUNIT_CASE(statsfd_snapshot_generation_counts_the_windows_closed),
	KUNIT_CASE(statsfd_snapshot_whole_file_matches_reference_after_a_window),
	KUNIT_CASE(statsfd_snapshot_sample_ns_is_taken_during_the_read),
	/* readers never wait for the writer */
	KUNIT_CASE(statsfd_snapshot_copy_in_a_window_left_open_is_the_last_window),
	KUNIT_CASE(statsfd_snapshot_read_behind_a_stopped_writer_is_its_last_window),
	KUNIT_CASE(statsfd_snapshot_read_behind_back_to_back_windows_completes),
	KUNIT_CASE(statsfd_snapshot_copy_without_a_retry_ignores_a_fatal_signal),
	KUNIT_CASE(statsfd_snapshot_copy_ends_with_eintr_on_a_fatal_signal),
	/* never a mix, and the controls */
	KUNIT_CASE(statsfd_snapshot_read_never_mixes_two_windows),
	KUNIT_CASE(statsfd_snapshot_copy_of_the_live_values_does_see_a_mix),
	KUNIT_CASE(statsfd_snapshot_copy_being_filled_does_see_a_mix),
	/* the per-file buffer */
	KUNIT_CASE(statsfd_source_getfile_allocates_the_read_buffer),
	KUNIT_CASE(statsfd_snapshot_reads_allocate_nothing_and_keep_the_buffer),
	KUNIT_CASE(statsfd_snapshot_two_files_on_one_source_have_their_own_buffers),
	KUNIT_CASE(statsfd_snapshot_read_of_header_and_descriptors_takes_no_snapshot),
	/* faulting user buffers */
	KUNIT_CASE(statsfd_snapshot_read_into_prot_none_memory_is_efault),
	KUNIT_CASE(statsfd_snapshot_read_into_an_unmapped_tail_is_short),
	/* aggregates */
	KUNIT_CASE(statsfd_snapshot_aggregates_count_a_childs_last_closed_window),
	KUNIT_CASE(statsfd_snapshot_read_of_aggregates_ignores_the_parents_window),
	KUNIT_CASE(statsfd_snapshot_aggregates_never_mix_a_childs_windows),
	KUNIT_CASE(statsfd_snapshot_aggregates_of_the_live_values_do_see_a_mix),
	/* a source destroyed while its files are open */
	KUNIT_CASE(statsfd_source_destroy_with_a_file_open_hangs_the_source_up),
	KUNIT_CASE(statsfd_source_destroy_with_a_file_open_keeps_its_values_readable),
	KUNIT_CASE(statsfd_source_destroy_with_files_open_frees_at_the_last_close),
	KUNIT_CASE(statsfd_source_destroy_again_with_a_file_open_does_nothing),
	KUNIT_CASE(statsfd_source_destroy_with_no_file_open_frees_at_once),
	{}
};

STATSFD_KUNIT_SUITE(statsfd_snapshot, snap_init);
