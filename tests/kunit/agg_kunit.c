// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd KUnit suite statsfd_agg: every aggregation kind over a set of
 * children, the empty set, overflow edges, children coming and going, and
 * consistency while another thread adds and removes children.
 */
#include <kunit/test.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/limits.h>
#include <linux/list.h>
#include <linux/mman.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/statsfd.h>

#include "statsfd_kunit.h"

#define MAX_CHILDREN 8

/* Indexes into the aggregate area (see statsfd_kunit_parent_expect). */
enum {
	A_EXITS_SUM, A_EXITS_MIN, A_EXITS_MAX, A_EXITS_AVG, A_EXITS_NONZERO,
	A_BLOCKING_SUM, A_MAX_RUN_SUM, A_WAIT_MAX, A_LIN_SUM,
	A_LOG_SUM = A_LIN_SUM + 4, A_WORDS = A_LOG_SUM + 6,
};

struct agg_ctx {
	struct statsfd_schema *cs;
	struct statsfd_kunit_parent pstats;
	struct statsfd_kunit_child cstats[MAX_CHILDREN];
	struct statsfd_kunit_src *parent;
	struct statsfd_kunit_src *child[MAX_CHILDREN];
	u64 out[A_WORDS];
};

static int agg_init(struct kunit *test)
{
	struct statsfd_schema *ps;
	struct agg_ctx *ctx;
	unsigned int i;

	ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ctx);
	test->priv = ctx;
	ctx->cs = statsfd_kunit_schema(test, &statsfd_kunit_child_tmpl, NULL);
	ps = statsfd_kunit_schema(test, &statsfd_kunit_parent_tmpl, ctx->cs);
	KUNIT_ASSERT_EQ(test, statsfd_agg_size(ps), A_WORDS * sizeof(u64));
	ctx->parent = statsfd_kunit_source(test, ps, &ctx->pstats, "parent");
	for (i = 0; i < MAX_CHILDREN; i++)
		ctx->child[i] = statsfd_kunit_source(test, ctx->cs,
						     &ctx->cstats[i], "child");
	return 0;
}

static void add(struct agg_ctx *ctx, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		statsfd_source_add_child(&ctx->parent->src,
					 &ctx->child[i]->src);
}

static void compute(struct agg_ctx *ctx)
{
	memset(ctx->out, 0xa5, sizeof(ctx->out));
	statsfd_agg_compute(&ctx->parent->src, ctx->out);
}

static void statsfd_agg_compute_never_added_set_is_all_zero(struct kunit *test)
{
	struct agg_ctx *ctx = test->priv;
	unsigned int i;

	compute(ctx);
	for (i = 0; i < A_WORDS; i++)
		KUNIT_EXPECT_EQ_MSG(test, ctx->out[i], 0, "word %u", i);
}

static void statsfd_agg_compute_emptied_set_keeps_only_retired_sums(struct kunit *test)
{
	struct agg_ctx *ctx = test->priv;
	unsigned int i;

	ctx->cstats[0].exits = 5;
	ctx->cstats[1].wait_ns = 9;
	ctx->cstats[1].blocking = 1;
	ctx->cstats[1].log[2] = 4;
	add(ctx, 2);
	statsfd_source_del_child(&ctx->child[1]->src);
	statsfd_source_del_child(&ctx->child[0]->src);
	KUNIT_EXPECT_EQ(test, ctx->parent->src.priv->num_children, 0);
	compute(ctx);
	/* Cumulative and histogram sums keep what the children counted... */
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_SUM], 5);
	KUNIT_EXPECT_EQ(test, ctx->out[A_LOG_SUM + 2], 4);
	/* ...every other aggregate reads 0 over the empty set. */
	for (i = 0; i < A_WORDS; i++)
		if (i != A_EXITS_SUM && i != A_LOG_SUM + 2)
			KUNIT_EXPECT_EQ_MSG(test, ctx->out[i], 0, "word %u", i);
}

static void statsfd_agg_compute_cumulative_sums_survive_child_removal(struct kunit *test)
{
	struct agg_ctx *ctx = test->priv;
	struct statsfd_kunit_child *c0 = &ctx->cstats[0], *c1 = &ctx->cstats[1];

	c0->exits = 10;
	c0->blocking = 1;
	c0->max_run = 7;
	c0->lin[1] = 3;
	c0->log[2] = 4;
	c1->exits = 5;
	c1->blocking = 1;
	c1->max_run = 2;
	c1->lin[1] = 1;
	add(ctx, 2);
	compute(ctx);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_SUM], 15);
	KUNIT_EXPECT_EQ(test, ctx->out[A_BLOCKING_SUM], 2);
	KUNIT_EXPECT_EQ(test, ctx->out[A_MAX_RUN_SUM], 9);

	/* The child counts some more, then goes away. */
	c0->exits += 6;
	c0->lin[1] += 1;
	statsfd_source_del_child(&ctx->child[0]->src);
	compute(ctx);
	/* CUMULATIVE sum (16 + 5) and histogram sums: no drop, no reset. */
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_SUM], 21);
	KUNIT_EXPECT_EQ(test, ctx->out[A_LIN_SUM + 1], 5);
	KUNIT_EXPECT_EQ(test, ctx->out[A_LOG_SUM + 2], 4);
	/* INSTANT sums (of a boolean, of peaks) and the rest drop it. */
	KUNIT_EXPECT_EQ(test, ctx->out[A_BLOCKING_SUM], 1);
	KUNIT_EXPECT_EQ(test, ctx->out[A_MAX_RUN_SUM], 2);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_MIN], 5);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_MAX], 5);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_AVG], 5);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_NONZERO], 1);

	/* What the removed child's writer does afterwards is not counted. */
	c0->exits = 1000;
	compute(ctx);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_SUM], 21);
	/* The remaining child still counts live. */
	c1->exits += 4;
	compute(ctx);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_SUM], 25);

	/* Destroying the last child retires it too: 16 + 9, 4 + 1. */
	statsfd_source_destroy(&ctx->child[1]->src);
	compute(ctx);
	KUNIT_EXPECT_EQ(test, ctx->parent->src.priv->num_children, 0);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_SUM], 25);
	KUNIT_EXPECT_EQ(test, ctx->out[A_LIN_SUM + 1], 5);
	KUNIT_EXPECT_EQ(test, ctx->out[A_BLOCKING_SUM], 0);
	KUNIT_EXPECT_EQ(test, ctx->out[A_MAX_RUN_SUM], 0);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_NONZERO], 0);
}

static void statsfd_source_init_allocates_retired_only_when_needed(struct kunit *test)
{
	static const struct statsfd_desc_def instant_only[] = {
		STATSFD_AGG_MAX_OF(struct statsfd_kunit_child, exits),
		STATSFD_AGG_SUM_OF(struct statsfd_kunit_child, blocking),
	};
	const struct statsfd_schema_def tmpl = {
		.name = "kunit.instant_only",
		.descs = instant_only,
		.num_descs = ARRAY_SIZE(instant_only),
	};
	struct agg_ctx *ctx = test->priv;
	struct statsfd_kunit_src *s;
	struct statsfd_schema *ps;

	/* The fixture parent sums cumulative stats: buffer and total. */
	KUNIT_EXPECT_NOT_NULL(test, ctx->parent->src.priv->agg_buf);
	KUNIT_EXPECT_PTR_EQ(test, ctx->parent->src.priv->retired,
			    ctx->parent->src.priv->agg_buf + A_WORDS);
	/* A source without aggregates needs neither. */
	KUNIT_EXPECT_NULL(test, ctx->child[0]->src.priv->agg_buf);
	KUNIT_EXPECT_NULL(test, ctx->child[0]->src.priv->retired);
	/* Only instant aggregates: a buffer, no retired total. */
	ps = statsfd_kunit_schema(test, &tmpl, ctx->cs);
	s = statsfd_kunit_source(test, ps, NULL, "instant");
	KUNIT_EXPECT_NOT_NULL(test, s->src.priv->agg_buf);
	KUNIT_EXPECT_NULL(test, s->src.priv->retired);
	ctx->cstats[0].exits = 9;
	ctx->cstats[0].blocking = 1;
	statsfd_source_add_child(&s->src, &ctx->child[0]->src);
	statsfd_agg_compute(&s->src, ctx->out);
	KUNIT_EXPECT_EQ(test, ctx->out[0], 9);
	KUNIT_EXPECT_EQ(test, ctx->out[1], 1);
	statsfd_source_del_child(&ctx->child[0]->src);
	statsfd_agg_compute(&s->src, ctx->out);
	KUNIT_EXPECT_EQ(test, ctx->out[0], 0);
	KUNIT_EXPECT_EQ(test, ctx->out[1], 0);
}

static void statsfd_agg_compute_each_kind_over_three_children(struct kunit *test)
{
	struct agg_ctx *ctx = test->priv;

	ctx->cstats[0].exits = 10;
	ctx->cstats[1].exits = 0;
	ctx->cstats[2].exits = 31;
	ctx->cstats[0].wait_ns = 700;
	ctx->cstats[2].wait_ns = 900;
	add(ctx, 3);
	compute(ctx);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_SUM], 41);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_MIN], 0);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_MAX], 31);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_AVG], 13);	/* 41 / 3 */
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_NONZERO], 2);
	KUNIT_EXPECT_EQ(test, ctx->out[A_WAIT_MAX], 900);
}

static void statsfd_agg_compute_single_child_is_that_child(struct kunit *test)
{
	struct agg_ctx *ctx = test->priv;

	ctx->cstats[0].exits = 77;
	add(ctx, 1);
	compute(ctx);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_SUM], 77);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_MIN], 77);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_MAX], 77);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_AVG], 77);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_NONZERO], 1);
}

static void statsfd_agg_compute_sums_histograms_bucketwise(struct kunit *test)
{
	struct agg_ctx *ctx = test->priv;
	unsigned int i, c;

	for (c = 0; c < 3; c++) {
		for (i = 0; i < 4; i++)
			ctx->cstats[c].lin[i] = (c + 1) * (i + 1);
		for (i = 0; i < 6; i++)
			ctx->cstats[c].log[i] = 1000 * c + i;
	}
	add(ctx, 3);
	compute(ctx);
	/* lin: (1 + 2 + 3) * (i + 1); log: 0 + 1000 + 2000 + 3i. */
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_EQ(test, ctx->out[A_LIN_SUM + i], 6 * (i + 1));
	for (i = 0; i < 6; i++)
		KUNIT_EXPECT_EQ(test, ctx->out[A_LOG_SUM + i], 3000 + 3 * i);
}

static void statsfd_agg_compute_sums_booleans_and_peaks(struct kunit *test)
{
	struct agg_ctx *ctx = test->priv;

	ctx->cstats[0].blocking = 1;
	ctx->cstats[2].blocking = 1;
	ctx->cstats[3].blocking = 1;
	ctx->cstats[0].max_run = 50;
	ctx->cstats[3].max_run = 70;
	add(ctx, 4);
	compute(ctx);
	KUNIT_EXPECT_EQ(test, ctx->out[A_BLOCKING_SUM], 3);
	KUNIT_EXPECT_EQ(test, ctx->out[A_MAX_RUN_SUM], 120);
}

static void statsfd_agg_compute_avg_is_exact_floor_near_u64_max(struct kunit *test)
{
	struct agg_ctx *ctx = test->priv;

	/* The naive sum would wrap; the mean (2^64 - 1.5) does not. */
	ctx->cstats[0].exits = U64_MAX;
	ctx->cstats[1].exits = U64_MAX - 1;
	add(ctx, 2);
	compute(ctx);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_AVG], U64_MAX - 1);

	ctx->cstats[1].exits = U64_MAX;
	compute(ctx);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_AVG], U64_MAX);
}

static void statsfd_agg_compute_avg_rounds_down(struct kunit *test)
{
	struct agg_ctx *ctx = test->priv;
	unsigned int i;

	/* 1 + 2 + ... + 7 = 28; 28 / 7 = 4 exactly, then 29 / 7 = 4.14. */
	for (i = 0; i < 7; i++)
		ctx->cstats[i].exits = i + 1;
	add(ctx, 7);
	compute(ctx);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_AVG], 4);
	ctx->cstats[6].exits = 8;
	compute(ctx);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_AVG], 4);
	/* Remainders 6 * 6 + 5 = 41 >= 7 carry into the quotient. */
	for (i = 0; i < 7; i++)
		ctx->cstats[i].exits = 6;
	ctx->cstats[6].exits = 12;
	compute(ctx);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_AVG], 6);	/* 48 / 7 */
	ctx->cstats[6].exits = 13;
	compute(ctx);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_AVG], 7);	/* 49 / 7 */
}

static void statsfd_agg_compute_sum_wraps_like_a_counter(struct kunit *test)
{
	struct agg_ctx *ctx = test->priv;

	ctx->cstats[0].exits = U64_MAX;
	ctx->cstats[1].exits = 2;
	add(ctx, 2);
	compute(ctx);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_SUM], 1);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_MIN], 2);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_MAX], U64_MAX);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_NONZERO], 2);
}

static void statsfd_agg_compute_min_max_of_equal_extremes(struct kunit *test)
{
	struct agg_ctx *ctx = test->priv;
	unsigned int i;

	/* All at U64_MAX: min must not stay at its U64_MAX start by luck. */
	for (i = 0; i < 3; i++)
		ctx->cstats[i].exits = U64_MAX;
	add(ctx, 3);
	compute(ctx);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_MIN], U64_MAX);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_MAX], U64_MAX);
	ctx->cstats[1].exits = 0;
	compute(ctx);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_MIN], 0);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_NONZERO], 2);
}

static void statsfd_agg_compute_follows_add_and_del(struct kunit *test)
{
	struct agg_ctx *ctx = test->priv;
	unsigned int i;

	for (i = 0; i < 4; i++) {
		ctx->cstats[i].exits = 1ULL << i;
		ctx->cstats[i].max_run = 1ULL << i;
	}
	add(ctx, 4);
	compute(ctx);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_SUM], 15);
	KUNIT_EXPECT_EQ(test, ctx->out[A_MAX_RUN_SUM], 15);
	statsfd_source_del_child(&ctx->child[1]->src);
	compute(ctx);
	/* exits is cumulative: its sum keeps child 1's 2; peaks drop it. */
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_SUM], 15);
	KUNIT_EXPECT_EQ(test, ctx->out[A_MAX_RUN_SUM], 13);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_MIN], 1);
	KUNIT_EXPECT_EQ(test, ctx->parent->src.priv->num_children, 3);
	statsfd_source_add_child(&ctx->parent->src, &ctx->child[1]->src);
	compute(ctx);
	KUNIT_EXPECT_EQ(test, ctx->out[A_MAX_RUN_SUM], 15);
	/* Documented: a source added back is counted again on top. */
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_SUM], 17);
	/* Destroying a child detaches it too. */
	statsfd_source_destroy(&ctx->child[3]->src);
	compute(ctx);
	KUNIT_EXPECT_EQ(test, ctx->out[A_MAX_RUN_SUM], 7);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_SUM], 17);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_MAX], 4);
}

/* Another thread attaches and detaches children as fast as it can. */
struct churn {
	struct agg_ctx *ctx;
	unsigned long rounds;
};

static int churn_thread(void *data)
{
	struct churn *ch = data;
	struct agg_ctx *ctx = ch->ctx;
	unsigned int i;

	/* Yield after every step so readers see every size of the set. */
	while (!kthread_should_stop()) {
		for (i = 0; i < MAX_CHILDREN; i++) {
			statsfd_source_add_child(&ctx->parent->src,
						 &ctx->child[i]->src);
			cond_resched();
		}
		for (i = 0; i < MAX_CHILDREN; i++) {
			statsfd_source_del_child(&ctx->child[i]->src);
			cond_resched();
		}
		ch->rounds++;
	}
	return 0;
}

static void statsfd_agg_compute_is_consistent_while_children_churn(struct kunit *test)
{
	struct agg_ctx *ctx = test->priv;
	struct churn ch = { .ctx = ctx };
	struct task_struct *t;
	unsigned long reads = 0, bad = 0, nonempty = 0;
	unsigned long end, limit;
	u64 last_sum = 0;
	unsigned int i;

	for (i = 0; i < MAX_CHILDREN; i++) {
		ctx->cstats[i].exits = 5;
		ctx->cstats[i].max_run = 5;
	}
	t = kthread_run(churn_thread, &ch, "statsfd_kunit_churn");
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, t);

	/*
	 * At least 500 ms, and until both empty and non-empty sets were
	 * seen (or 10 s passed), so the test cannot pass without churn.
	 */
	end = jiffies + msecs_to_jiffies(500);
	limit = jiffies + msecs_to_jiffies(10000);
	while ((time_before(jiffies, end) || !nonempty ||
		nonempty == reads) && time_before(jiffies, limit)) {
		u64 n, sum;

		compute(ctx);
		/*
		 * One snapshot of the set: every kind agrees on its size.
		 * The cumulative sum is what removed children left behind
		 * (5 each) plus 5 per child present: never lower than in
		 * an earlier read, whatever the churn.
		 */
		n = ctx->out[A_EXITS_NONZERO];
		sum = ctx->out[A_EXITS_SUM];
		if (n > MAX_CHILDREN || ctx->out[A_MAX_RUN_SUM] != 5 * n ||
		    sum < 5 * n || sum % 5 || sum < last_sum ||
		    ctx->out[A_EXITS_MIN] != (n ? 5 : 0) ||
		    ctx->out[A_EXITS_MAX] != (n ? 5 : 0) ||
		    ctx->out[A_EXITS_AVG] != (n ? 5 : 0))
			bad++;
		last_sum = sum;
		nonempty += n != 0;
		reads++;
		cond_resched();
	}
	kthread_stop(t);
	kunit_info(test, "%lu reads, %lu non-empty, %lu churn rounds\n",
		   reads, nonempty, ch.rounds);
	KUNIT_EXPECT_EQ(test, bad, 0);
	KUNIT_EXPECT_GT(test, nonempty, 0);
	KUNIT_EXPECT_GT(test, reads - nonempty, 0);
	KUNIT_EXPECT_EQ(test, ctx->parent->src.priv->num_children, 0);
}

/*
 * Destroying a parent that still has children detaches them, as
 * statsfd_source_del_child() would: afterwards the children are plain
 * sources that can be read, attached elsewhere and destroyed.  The parent
 * is kmalloc'ed and freed here, not test-managed, so that any pointer to
 * it left in a child turns the accesses below into KASAN reports.
 */
static void statsfd_source_destroy_parent_detaches_its_children(struct kunit *test)
{
	struct agg_ctx *ctx = test->priv;
	struct statsfd_kunit_child *c = ctx->cstats;
	struct statsfd_source *parent;
	char __user *ubuf;
	struct file *file;
	u64 v = 0;

	parent = kzalloc(sizeof(*parent), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, parent);
	KUNIT_ASSERT_EQ(test, statsfd_source_init(parent,
						  ctx->parent->src.priv->schema,
						  &ctx->pstats,
						  &statsfd_kunit_ops, "doomed"),
			0);
	statsfd_source_add_child(parent, &ctx->child[0]->src);
	statsfd_source_add_child(parent, &ctx->child[1]->src);
	c[0].exits = 3;
	c[1].exits = 4;

	/* Before: both attached.  After: none, and no link left either way. */
	KUNIT_EXPECT_EQ(test, parent->priv->num_children, 2);
	statsfd_source_destroy(parent);
	/* Its list of children went with its private part. */
	KUNIT_EXPECT_NULL(test, parent->priv);
	kfree(parent);
	KUNIT_EXPECT_NULL(test, ctx->child[0]->src.priv->parent);
	KUNIT_EXPECT_NULL(test, ctx->child[1]->src.priv->parent);
	KUNIT_EXPECT_TRUE(test, list_empty(&ctx->child[0]->src.priv->child_node));
	KUNIT_EXPECT_TRUE(test, list_empty(&ctx->child[1]->src.priv->child_node));

	/* A detached child still reads through its own stats file. */
	ubuf = statsfd_kunit_ubuf(test, PAGE_SIZE, PROT_READ | PROT_WRITE);
	file = statsfd_kunit_file(test, ctx->child[0]);
	KUNIT_EXPECT_EQ(test, statsfd_kunit_read(test, file, ubuf, &v,
						 sizeof(v), SFK_DATA_OFFSET),
			(ssize_t)sizeof(v));
	KUNIT_EXPECT_EQ(test, v, 3);

	/* It can join another parent: nothing of the old one is left. */
	statsfd_source_add_child(&ctx->parent->src, &ctx->child[0]->src);
	statsfd_agg_compute(&ctx->parent->src, ctx->out);
	KUNIT_EXPECT_EQ(test, ctx->out[A_EXITS_SUM], 3);
	KUNIT_EXPECT_EQ(test, ctx->parent->src.priv->num_children, 1);

	/*
	 * A detached child destroys cleanly.  child[0] is destroyed when the
	 * test ends, after its file is closed, attached to the new parent.
	 */
	statsfd_source_destroy(&ctx->child[1]->src);
	KUNIT_EXPECT_NULL(test, ctx->child[1]->src.priv);
}

static struct kunit_case statsfd_agg_cases[] = {
	KUNIT_CASE(statsfd_agg_compute_never_added_set_is_all_zero),
	KUNIT_CASE(statsfd_agg_compute_emptied_set_keeps_only_retired_sums),
	KUNIT_CASE(statsfd_agg_compute_cumulative_sums_survive_child_removal),
	KUNIT_CASE(statsfd_source_init_allocates_retired_only_when_needed),
	KUNIT_CASE(statsfd_agg_compute_each_kind_over_three_children),
	KUNIT_CASE(statsfd_agg_compute_single_child_is_that_child),
	KUNIT_CASE(statsfd_agg_compute_sums_histograms_bucketwise),
	KUNIT_CASE(statsfd_agg_compute_sums_booleans_and_peaks),
	KUNIT_CASE(statsfd_agg_compute_avg_is_exact_floor_near_u64_max),
	KUNIT_CASE(statsfd_agg_compute_avg_rounds_down),
	KUNIT_CASE(statsfd_agg_compute_sum_wraps_like_a_counter),
	KUNIT_CASE(statsfd_agg_compute_min_max_of_equal_extremes),
	KUNIT_CASE(statsfd_agg_compute_follows_add_and_del),
	KUNIT_CASE(statsfd_agg_compute_is_consistent_while_children_churn),
	KUNIT_CASE(statsfd_source_destroy_parent_detaches_its_children),
	{}
};

STATSFD_KUNIT_SUITE(statsfd_agg, agg_init);
