// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd aggregation: values derived at read time over a source's children
 * (sum, min, max, average, count of non-zero).
 */
#include <linux/compiler.h>
#include <linux/export.h>
#include <linux/list.h>
#include <linux/lockdep.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/spinlock.h>
#include <linux/statsfd.h>

#include "internal.h"

static const u64 *statsfd_child_values(const struct statsfd_source *child,
				       const struct statsfd_agg *agg)
{
	return child->stats + agg->child_offset;
}

/*
 * Mean without overflow: sum the per-child quotients and remainders
 * separately.  The quotients add up to at most the mean (below 2^64), the
 * remainders to less than n^2, so floor(sum / n) is exact.
 */
static u64 statsfd_agg_avg(struct statsfd_source *src,
			   const struct statsfd_agg *agg)
{
	u32 n = src->num_children;
	struct statsfd_source *child;
	u64 quot = 0, rems = 0;
	u64 rem;

	if (!n)
		return 0;
	list_for_each_entry(child, &src->children, child_node) {
		quot += div64_u64_rem(READ_ONCE(*statsfd_child_values(child, agg)),
				      n, &rem);
		rems += rem;
	}
	return quot + div64_u64(rems, n);
}

static void statsfd_agg_one(struct statsfd_source *src,
			    const struct statsfd_agg *agg, u64 *out)
{
	struct statsfd_source *child;
	const u64 *vals;
	u64 v;
	u32 i;

	/*
	 * Every kind starts from 0, the value over an empty set, except a
	 * retiring sum: it starts from what removed children left behind.
	 */
	for (i = 0; i < agg->size; i++)
		out[i] = agg->retire ? src->retired[agg->index + i] : 0;

	switch (agg->kind) {
	case STATSFD_AGG_SUM:
		list_for_each_entry(child, &src->children, child_node) {
			vals = statsfd_child_values(child, agg);
			for (i = 0; i < agg->size; i++)
				out[i] += READ_ONCE(vals[i]);
		}
		break;
	case STATSFD_AGG_MINIMUM:
		if (list_empty(&src->children))
			break;
		out[0] = U64_MAX;
		list_for_each_entry(child, &src->children, child_node) {
			v = READ_ONCE(*statsfd_child_values(child, agg));
			out[0] = min(out[0], v);
		}
		break;
	case STATSFD_AGG_MAXIMUM:
		list_for_each_entry(child, &src->children, child_node) {
			v = READ_ONCE(*statsfd_child_values(child, agg));
			out[0] = max(out[0], v);
		}
		break;
	case STATSFD_AGG_AVERAGE:
		out[0] = statsfd_agg_avg(src, agg);
		break;
	case STATSFD_AGG_COUNT_NONZERO:
		list_for_each_entry(child, &src->children, child_node)
			out[0] += !!READ_ONCE(*statsfd_child_values(child, agg));
		break;
	}
}

/**
 * statsfd_agg_compute_locked() - compute every aggregate of @src
 * @src: a source whose schema has aggregates
 * @out: statsfd_agg_size(@src->schema) bytes, filled in data block order;
 *	may be @src->agg_buf, which the lock protects
 *
 * All aggregates are computed under one hold of @src->children_lock, so
 * they describe the same set of children even while children come and go.
 * The children's writers never take that lock: their values are read with
 * READ_ONCE(), one untorn u64 at a time, racing by design with the
 * writers' WRITE_ONCE() (statsfd_stat_add()).  Everything else read here
 * (the list, num_children, the retired total, @out) is under the lock.
 *
 * Context: any; the caller holds @src->children_lock.
 */
void statsfd_agg_compute_locked(struct statsfd_source *src, u64 *out)
{
	const struct statsfd_schema *schema = src->schema;
	u32 i;

	lockdep_assert_held(&src->children_lock);
	for (i = 0; i < schema->num_aggs; i++)
		statsfd_agg_one(src, &schema->aggs[i],
				out + schema->aggs[i].index);
}

/**
 * statsfd_agg_compute() - compute every aggregate of @src into @out
 * @src: a source whose schema has aggregates
 * @out: statsfd_agg_size(@src->schema) bytes of the caller's, filled in
 *	data block order
 *
 * statsfd_agg_compute_locked() with the lock taken here.
 *
 * Context: process context; takes @src->children_lock.
 */
void statsfd_agg_compute(struct statsfd_source *src, u64 *out)
{
	spin_lock(&src->children_lock);
	statsfd_agg_compute_locked(src, out);
	spin_unlock(&src->children_lock);
}
EXPORT_SYMBOL_IF_KUNIT(statsfd_agg_compute);

/**
 * statsfd_agg_retire() - keep @child's counts in @parent's cumulative sums
 * @parent: the source @child is leaving
 * @child: a child of @parent, still on its list
 *
 * Adds @child's current values to @parent's retired total for every sum
 * of a cumulative stat or histogram, so those sums (which are labelled
 * cumulative) do not drop when the child goes; a collector would take a
 * drop for a counter reset.  Called with the child still listed and under
 * the same hold of the lock that unlists it, so no reader ever sees the
 * child's values counted twice or not at all.  A value the child's writer
 * stores after this is lost, as it would be after the child is freed.
 *
 * Context: any; the caller holds @parent->children_lock.
 */
void statsfd_agg_retire(struct statsfd_source *parent,
			const struct statsfd_source *child)
{
	const struct statsfd_schema *schema = parent->schema;
	const struct statsfd_agg *agg;
	const u64 *vals;
	u32 i, j;

	lockdep_assert_held(&parent->children_lock);
	if (!parent->retired)
		return;
	for (i = 0; i < schema->num_aggs; i++) {
		agg = &schema->aggs[i];
		if (!agg->retire)
			continue;
		vals = statsfd_child_values(child, agg);
		for (j = 0; j < agg->size; j++)
			parent->retired[agg->index + j] += READ_ONCE(vals[j]);
	}
}
