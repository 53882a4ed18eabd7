// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd aggregation: values derived at read time over a source's children
 * (sum, min, max, average, count of non-zero).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/compiler.h>
#include <linux/export.h>
#include <linux/list.h>
#include <linux/lockdep.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/mutex.h>
#include <linux/printk.h>
#include <linux/statsfd.h>

#include "internal.h"

/*
 * Every kind starts from 0, the value over an empty set, except a
 * retiring sum, which starts from what removed children left behind, and
 * a minimum over a non-empty set, which starts from the top.
 */
static void statsfd_agg_start(struct statsfd_source_priv *p, u64 *out)
{
	const struct statsfd_schema *schema = p->schema;
	const struct statsfd_agg *agg;
	u32 i, j;

	for (i = 0; i < schema->num_aggs; i++) {
		agg = &schema->aggs[i];
		for (j = 0; j < agg->size; j++)
			out[agg->index + j] = agg->retire ?
					      p->retired[agg->index + j] : 0;
		if (agg->kind == STATSFD_AGG_MINIMUM && p->num_children)
			out[agg->index] = U64_MAX;
		p->agg_rems[i] = 0;
	}
}

/*
 * Fold one child's values, a snapshot copied into @vals (indexed like its
 * stats struct), into every aggregate.  An average adds the child's
 * quotient and remainder by the number of children separately: the
 * quotients add up to at most the mean (below 2^64), the remainders to
 * less than n^2, so statsfd_agg_finish() gets floor(sum / n) exactly.
 */
static void statsfd_agg_fold(struct statsfd_source_priv *p, const u64 *vals,
			     u64 *out)
{
	const struct statsfd_schema *schema = p->schema;
	const struct statsfd_agg *agg;
	const u64 *v;
	u64 *o, rem;
	u32 i, j;

	for (i = 0; i < schema->num_aggs; i++) {
		agg = &schema->aggs[i];
		v = vals + agg->child_offset / sizeof(u64);
		o = out + agg->index;
		switch (agg->kind) {
		case STATSFD_AGG_SUM:
			for (j = 0; j < agg->size; j++)
				o[j] += v[j];
			break;
		case STATSFD_AGG_MINIMUM:
			*o = min(*o, *v);
			break;
		case STATSFD_AGG_MAXIMUM:
			*o = max(*o, *v);
			break;
		case STATSFD_AGG_AVERAGE:
			*o += div64_u64_rem(*v, p->num_children, &rem);
			p->agg_rems[i] += rem;
			break;
		case STATSFD_AGG_COUNT_NONZERO:
			*o += !!*v;
			break;
		}
	}
}

static void statsfd_agg_finish(struct statsfd_source_priv *p, u64 *out)
{
	const struct statsfd_schema *schema = p->schema;
	u32 i;

	if (!p->num_children)
		return;
	for (i = 0; i < schema->num_aggs; i++)
		if (schema->aggs[i].kind == STATSFD_AGG_AVERAGE)
			out[schema->aggs[i].index] +=
				div64_u64(p->agg_rems[i], p->num_children);
}

/**
 * statsfd_agg_compute_locked() - compute every aggregate of @src
 * @src: a source whose schema has aggregates
 * @out: statsfd_agg_size(@src->schema) bytes, filled in data block order;
 *	may be @src->agg_buf, which the lock protects
 *
 * All aggregates are computed under one hold of @src->children_lock, so
 * they describe the same set of children even while children come and go,
 * and from one snapshot of each child: a child with update windows is
 * copied whole with statsfd_snapshot_copy() into @src->agg_child, so
 * that every aggregate sees the child's values of one window.  The
 * children's writers never take the lock and never wait.
 *
 * Context: process context; the caller holds @src->children_lock.
 * Return: 0, or the error of a child's snapshot (-EINTR, or a computed
 * child's fill error), with @out then incomplete.
 */
int statsfd_agg_compute_locked(struct statsfd_source *src, u64 *out)
{
	struct statsfd_source_priv *p = src->priv, *cp;
	const struct statsfd_schema *cschema = p->schema->def->child_schema;
	u32 words = cschema->def->stats_size / sizeof(u64);
	int ret;

	lockdep_assert_held(&p->children_lock);
	statsfd_agg_start(p, out);
	list_for_each_entry(cp, &p->children, child_node) {
		ret = statsfd_snapshot_copy(cp->src, p->agg_child, 0, words,
					    NULL);
		if (ret)
			return ret;
		statsfd_agg_fold(p, p->agg_child, out);
	}
	statsfd_agg_finish(p, out);
	return 0;
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
 * Return: 0, as statsfd_agg_compute_locked().
 */
int statsfd_agg_compute(struct statsfd_source *src, u64 *out)
{
	int ret;

	if (mutex_lock_killable(&src->priv->children_lock))
		return -EINTR;
	ret = statsfd_agg_compute_locked(src, out);
	mutex_unlock(&src->priv->children_lock);
	return ret;
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
 * The values are read one by one, not as a snapshot: the owner removes a
 * child whose writer has stopped (a vCPU of a VM being freed), so there
 * is no window left to be inside of.  A computed child's values are
 * computed once, into the parent's child buffer (which the lock also
 * protects); if that fails the child's counts are lost from the sums.
 *
 * Context: process context; the caller holds @parent->children_lock.
 */
void statsfd_agg_retire(struct statsfd_source *parent,
			struct statsfd_source *child)
{
	struct statsfd_source_priv *pp = parent->priv;
	const struct statsfd_schema *schema = pp->schema;
	const u64 *base = child->stats;
	const struct statsfd_agg *agg;
	const u64 *vals;
	u32 i, j;

	lockdep_assert_held(&pp->children_lock);
	if (!pp->retired)
		return;
	if (child->priv->ops->fill) {
		int ret = child->priv->ops->fill(child, pp->agg_child);

		if (ret) {
			/* Not a WARN: a provider's device may be gone. */
			pr_warn_ratelimited("%s: fill failed (%d) while it leaves %s: its counts leave the cumulative sums\n",
					    child->priv->id, ret, pp->id);
			return;
		}
		base = pp->agg_child;
	}
	for (i = 0; i < schema->num_aggs; i++) {
		agg = &schema->aggs[i];
		if (!agg->retire)
			continue;
		vals = base + agg->child_offset / sizeof(u64);
		for (j = 0; j < agg->size; j++)
			pp->retired[agg->index + j] += READ_ONCE(vals[j]);
	}
}
