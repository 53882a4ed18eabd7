// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd sources: one instance of a schema (an id and live values), and the
 * parent/child links that aggregates are computed over.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bug.h>
#include <linux/errno.h>
#include <linux/export.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/lockdep.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/mutex.h>
#include <linux/statsfd.h>
#include <linux/string.h>

#include "internal.h"

/* The callbacks' rule, the same for every kind of source. */
static bool statsfd_ops_valid(const struct statsfd_source_ops *ops)
{
	return ops && !(ops->get && ops->tryget) &&
	       !(ops->get || ops->tryget) == !ops->put;
}

/*
 * The owner's live stats struct, for a plain or a snapshot source: there
 * unless the schema has no plain stats, and aligned for the u64 loads and
 * stores of readers and of statsfd_update_end().
 */
static bool statsfd_stats_valid(const struct statsfd_schema *schema,
				const void *stats)
{
	return (stats || !schema->def->stats_size) &&
	       IS_ALIGNED((unsigned long)stats, sizeof(u64));
}

/* The kinds of source, one per set-up entry point. */
enum statsfd_source_kind {
	STATSFD_SOURCE_PLAIN,
	STATSFD_SOURCE_SNAPSHOT,
	STATSFD_SOURCE_COMPUTED,
};

/*
 * Do @schema, @stats and @ops make a source of @kind?  Every kind needs an
 * initialized schema and valid callbacks; a plain and a snapshot source
 * show the owner's stats struct, without a fill callback, the one without
 * update windows and the other with; a computed source has a fill callback
 * and no values of its own, so nothing to map.
 */
static bool statsfd_source_args_ok(enum statsfd_source_kind kind,
				   const struct statsfd_schema *schema,
				   const void *stats,
				   const struct statsfd_source_ops *ops)
{
	u32 flags;

	/* Only an initialized schema has its definition. */
	if (!schema->build_count || !statsfd_ops_valid(ops))
		return false;
	flags = schema->def->flags;
	switch (kind) {
	case STATSFD_SOURCE_PLAIN:
		return !ops->fill && !(flags & STATSFD_SCHEMA_SNAPSHOT) &&
		       statsfd_stats_valid(schema, stats);
	case STATSFD_SOURCE_SNAPSHOT:
		return !ops->fill && (flags & STATSFD_SCHEMA_SNAPSHOT) &&
		       statsfd_stats_valid(schema, stats);
	case STATSFD_SOURCE_COMPUTED:
		return ops->fill && !stats && !(flags & STATSFD_SCHEMA_MMAP);
	}
	return false;
}

/*
 * Everything a read of the aggregates needs, allocated now so that reads
 * cannot fail for memory: the buffer they are computed into, where each
 * child's snapshot is copied, the remainders of averages and, for sums
 * that must stay monotonic, the retired total.
 */
static int statsfd_source_alloc_aggs(struct statsfd_source_priv *p)
{
	const struct statsfd_schema *schema = p->schema;
	size_t words = statsfd_agg_size(schema) / sizeof(u64);
	size_t child, total;
	bool retires;

	if (!schema->num_aggs)
		return 0;
	child = schema->def->child_schema->def->stats_size / sizeof(u64);
	retires = statsfd_schema_retires(schema);
	total = (retires ? 2 * words : words) + child + schema->num_aggs;
	p->agg_buf = kcalloc(total, sizeof(u64), GFP_KERNEL_ACCOUNT);
	if (!p->agg_buf)
		return -ENOMEM;
	/* aggregates | retired total, if any | a child | remainders */
	if (retires)
		p->retired = p->agg_buf + words;
	p->agg_child = p->agg_buf + (retires ? 2 * words : words);
	p->agg_rems = p->agg_child + child;
	return 0;
}

/* What statsfd_source_setup() allocated, once no file uses it any more. */
static void statsfd_source_free(struct statsfd_source *src)
{
	struct statsfd_source_priv *p = src->priv;

	statsfd_area_free(src);
	kfree(p->agg_buf);
	mutex_destroy(&p->children_lock);
	kfree(p->id);
	kfree(p);
	src->priv = NULL;
	src->stats = NULL;
}

/*
 * Make @src an instance of @schema, of the @kind of source the calling
 * entry point sets up: what the three share.  @stats is the owner's (a
 * plain or a snapshot source) or NULL (a computed source).
 */
static __printf(6, 0)
int statsfd_source_setup(enum statsfd_source_kind kind,
			 struct statsfd_source *src,
			 const struct statsfd_schema *schema, const void *stats,
			 const struct statsfd_source_ops *ops,
			 const char *id_fmt, va_list args)
{
	struct statsfd_source_priv *p;
	char *full;
	int ret;

	src->priv = NULL;
	if (!statsfd_source_args_ok(kind, schema, stats, ops))
		return -EINVAL;

	/*
	 * This, the id and the aggregate buffers below exist per object a
	 * user created (a VM, a vCPU), so they are charged to that user's
	 * memory cgroup, as the object itself is; only schemas, built once
	 * per module, are not.
	 */
	p = kzalloc(sizeof(*p), GFP_KERNEL_ACCOUNT);
	if (!p)
		return -ENOMEM;
	p->src = src;
	p->schema = schema;
	p->ops = ops;
	mutex_init(&p->children_lock);
	INIT_LIST_HEAD(&p->children);
	INIT_LIST_HEAD(&p->child_node);
	init_waitqueue_head(&p->wq);
	atomic64_set(&p->fills, 0);
	atomic_set(&p->nr_files, 0);
	src->priv = p;
	src->stats = stats;
	src->area = NULL;

	ret = -ENOMEM;
	full = kvasprintf(GFP_KERNEL_ACCOUNT, id_fmt, args);
	if (!full)
		goto err;
	/* Zero-padded to name_size: the id block is copied out as is. */
	p->id = kzalloc(schema->header.name_size, GFP_KERNEL_ACCOUNT);
	if (p->id)
		strscpy(p->id, full, schema->header.name_size);
	kfree(full);
	if (!p->id)
		goto err;

	ret = statsfd_source_alloc_aggs(p);
	if (ret)
		goto err;

	/* A computed source has no values area: nothing live to copy or map. */
	ret = ops->fill ? 0 : statsfd_area_alloc(src);
	if (ret)
		goto err;
	return 0;

err:
	statsfd_source_free(src);
	return ret;
}

/**
 * statsfd_source_init() - make @src a plain source of @schema
 * @src: the source, usually embedded in the object that owns @stats
 * @schema: an initialized schema without STATSFD_SCHEMA_SNAPSHOT
 * @stats: the live stats struct (schema->def->stats_size bytes, 8-byte
 *	aligned), which the owner writes and readers load value by value;
 *	may be NULL only if the schema has no plain stats
 * @ops: lifetime callbacks for stats fds, without @fill (see struct
 *	statsfd_source_ops for which combinations are valid)
 * @id_fmt: printf format of the id string; longer ids are truncated to
 *	schema name_size - 1 bytes
 *
 * One of the three ways to set up a source, one per kind: a plain source
 * (this), a snapshot source (statsfd_source_init_snapshot()), a computed
 * source (statsfd_source_init_computed()).  Each allocates the source's
 * private part and its id and, for a schema with aggregates, once, the
 * buffers that reads compute them in (the aggregates, one child's
 * snapshot, the remainders of averages) and, when the schema sums
 * cumulative stats or histograms, the retired total those sums start
 * from (zero).
 *
 * Context: process context; may sleep.
 * Return: 0; -EINVAL for bad arguments (an uninitialized schema, one with
 * STATSFD_SCHEMA_SNAPSHOT, a missing or misaligned @stats, @ops missing,
 * with @fill, with both @get and @tryget, or with @put without either or
 * either without @put); or -ENOMEM.  On failure @src is left as
 * statsfd_source_destroy() ignores it.
 */
int statsfd_source_init(struct statsfd_source *src,
			const struct statsfd_schema *schema, const void *stats,
			const struct statsfd_source_ops *ops,
			const char *id_fmt, ...)
{
	va_list args;
	int ret;

	va_start(args, id_fmt);
	ret = statsfd_source_setup(STATSFD_SOURCE_PLAIN, src, schema, stats,
				   ops, id_fmt, args);
	va_end(args);
	return ret;
}
EXPORT_SYMBOL_NS_GPL(statsfd_source_init, STATSFD_NS);

/**
 * statsfd_source_init_snapshot() - make @src a snapshot source of @schema
 * @src: the source, usually embedded in the object whose writers update it
 * @schema: an initialized schema with STATSFD_SCHEMA_SNAPSHOT
 * @stats: the owner's live stats struct (schema->def->stats_size bytes,
 *	8-byte aligned), usually embedded in the same object, which the
 *	owner's writers update in update windows and no reader looks at; may
 *	be NULL only if the schema has no plain stats
 * @ops: as for statsfd_source_init()
 * @id_fmt: as for statsfd_source_init()
 *
 * The stats stay where the owner keeps them: the core allocates only the
 * values area that statsfd_update_end() publishes them to, zero (whole
 * pages a stats fd may map, with STATSFD_SCHEMA_MMAP).  @stats should be
 * zero too, or its first window publishes what it held.  Otherwise as
 * statsfd_source_init().
 *
 * Context: process context; may sleep.
 * Return: 0; -EINVAL for an uninitialized schema, one without
 * STATSFD_SCHEMA_SNAPSHOT, a missing or misaligned @stats, or @ops as
 * statsfd_source_init() refuses them; or -ENOMEM.
 */
int statsfd_source_init_snapshot(struct statsfd_source *src,
				 const struct statsfd_schema *schema,
				 const void *stats,
				 const struct statsfd_source_ops *ops,
				 const char *id_fmt, ...)
{
	va_list args;
	int ret;

	va_start(args, id_fmt);
	ret = statsfd_source_setup(STATSFD_SOURCE_SNAPSHOT, src, schema, stats,
				   ops, id_fmt, args);
	va_end(args);
	return ret;
}
EXPORT_SYMBOL_NS_GPL(statsfd_source_init_snapshot, STATSFD_NS);

/**
 * statsfd_source_init_computed() - make @src a computed source of @schema
 * @src: the source, usually embedded in the object whose counters it shows
 * @schema: an initialized schema without STATSFD_SCHEMA_MMAP
 * @ops: as for statsfd_source_init(), with @fill, which computes the
 *	values at each read
 * @id_fmt: as for statsfd_source_init()
 *
 * A computed source has no live values of its own: each read (and each
 * computation of a parent's aggregates over it) calls @ops->fill into a
 * buffer the core allocated beforehand, this one among them (for the
 * debugfs view).  Its schema may have STATSFD_SCHEMA_SNAPSHOT (each read
 * is one call of @ops->fill: its sample_ns is the time of that call and
 * its generation counts the calls) but not STATSFD_SCHEMA_MMAP: there are
 * no live values to map.  Otherwise as statsfd_source_init().
 *
 * Context: process context; may sleep.
 * Return: 0; -EINVAL for an uninitialized schema, one with
 * STATSFD_SCHEMA_MMAP, @ops without @fill or as statsfd_source_init()
 * refuses them; or -ENOMEM.
 */
int statsfd_source_init_computed(struct statsfd_source *src,
				 const struct statsfd_schema *schema,
				 const struct statsfd_source_ops *ops,
				 const char *id_fmt, ...)
{
	va_list args;
	int ret;

	va_start(args, id_fmt);
	ret = statsfd_source_setup(STATSFD_SOURCE_COMPUTED, src, schema, NULL,
				   ops, id_fmt, args);
	va_end(args);
	return ret;
}
EXPORT_SYMBOL_NS_GPL(statsfd_source_init_computed, STATSFD_NS);

/**
 * statsfd_source_id() - the id of a source
 * @src: an initialized source
 *
 * Return: its id string, as its stats files show it (truncated to the
 * schema's name_size - 1 bytes); valid until the source is destroyed.
 */
const char *statsfd_source_id(const struct statsfd_source *src)
{
	return src->priv->id;
}
EXPORT_SYMBOL_NS_GPL(statsfd_source_id, STATSFD_NS);

/*
 * The set of @parent's children changed: every stats file on @parent
 * polls EPOLLPRI until it reads its header or data again.  Called with
 * @parent->children_lock held, so changes are counted one by one.
 */
static void statsfd_children_changed(struct statsfd_source *parent)
{
	lockdep_assert_held(&parent->priv->children_lock);
	WRITE_ONCE(parent->priv->children_gen, parent->priv->children_gen + 1);
	wake_up_poll(&parent->priv->wq, EPOLLPRI | EPOLLERR);
}

/*
 * Detach every child still attached to @parent, each as
 * statsfd_source_del_child() would, so that none is left pointing at a
 * parent about to be freed.  The retired totals they feed die with the
 * parent, but going through statsfd_agg_retire() keeps one way of
 * removing a child rather than two that could drift apart.
 *
 * Their debugfs views go too, before the parent's: a provider usually puts
 * a child's view inside its parent's directory, whose recursive removal
 * would otherwise leave the child holding a freed dentry.  Removing a view
 * may sleep, so the children are moved to a local list under the lock and
 * their views removed after it.
 */
static void statsfd_source_detach_children(struct statsfd_source *parent)
{
	struct statsfd_source_priv *pp = parent->priv, *cp, *tmp;
	LIST_HEAD(orphans);

	mutex_lock(&pp->children_lock);
	list_for_each_entry(cp, &pp->children, child_node) {
		statsfd_agg_retire(parent, cp->src);
		cp->parent = NULL;
	}
	list_splice_init(&pp->children, &orphans);
	if (pp->num_children)
		statsfd_children_changed(parent);
	pp->num_children = 0;
	mutex_unlock(&pp->children_lock);

	list_for_each_entry_safe(cp, tmp, &orphans, child_node) {
		list_del_init(&cp->child_node);
		statsfd_source_debugfs_remove(cp->src);
	}
}

/**
 * statsfd_source_file_opened() - count a stats file made on @src
 * @src: the source
 *
 * Called by the core for every stats file (and view file) it makes, so
 * that statsfd_source_destroy() can tell an owner that destroys a source
 * too early.
 */
void statsfd_source_file_opened(struct statsfd_source *src)
{
	atomic_inc(&src->priv->nr_files);
}

/**
 * statsfd_source_file_closed() - a stats file on @src is being released
 * @src: the source
 *
 * The last file of a source its owner already destroyed (a provider bug,
 * reported by statsfd_source_destroy()) frees what the destroy left.
 * Called before the file drops its reference on the owner.
 */
void statsfd_source_file_closed(struct statsfd_source *src)
{
	struct statsfd_source_priv *p = src->priv;

	/* Fully ordered: sees @destroyed as the destroy that set it left it. */
	if (atomic_dec_and_test(&p->nr_files) && READ_ONCE(p->destroyed))
		statsfd_source_free(src);
}

/**
 * statsfd_source_destroy() - release what statsfd_source_init*() allocated
 * @src: the source; no stats fd may be open on it any more
 *
 * Removes the debugfs view and detaches @src from its parent if the owner
 * has not done so.  Children still attached to @src are detached, as by
 * statsfd_source_del_child(), and lose their debugfs views (which usually
 * live inside @src's): they become sources without a parent, which may
 * still be read and destroyed.  This is a supported order, not a bug
 * to warn about: an owner tearing down a whole tree need not detach the
 * leaves first.  Calling it again, or after a failed statsfd_source_init*(),
 * does nothing.
 *
 * Stats files hold a reference on the owner, so an owner that calls this
 * only from its final put never finds one open.  One that does (a bug:
 * it will free the object the files point into) is told so in the kernel
 * log, once per source, and the core does what it can: it hangs the
 * source up (pollers get EPOLLHUP), and keeps the published values (a
 * snapshot source's values area), buffers, id and
 * the rest of the source's private part until the last file is closed,
 * so the files still read the last published values and never the core's
 * freed memory.  The source struct itself is the owner's and must stay
 * allocated until then.
 *
 * Context: process context; may sleep.  Must not race with
 * statsfd_source_del_child() or statsfd_source_destroy() on one of
 * @src's children: those read the child's parent pointer before they take
 * the parent's lock, so the owner serializes the teardown of a tree.
 */
void statsfd_source_destroy(struct statsfd_source *src)
{
	struct statsfd_source_priv *p = src->priv;
	int files;

	if (!p || p->destroyed)
		return;
	statsfd_source_detach_children(src);
	statsfd_source_debugfs_remove(src);
	statsfd_source_del_child(src);

	/* Our own count holds off a concurrent last close until decided. */
	files = atomic_inc_return(&p->nr_files) - 1;
	if (files) {
		pr_err("source %s destroyed with %d stats files open: its owner must destroy it only from its last put; its values stay until they are closed\n",
		       p->id, files);
		WRITE_ONCE(p->destroyed, true);
		statsfd_source_hangup(src);
	}
	if (atomic_dec_and_test(&p->nr_files))
		statsfd_source_free(src);
}
EXPORT_SYMBOL_NS_GPL(statsfd_source_destroy, STATSFD_NS);

/**
 * statsfd_source_add_child() - count @child in @parent's aggregates
 * @parent: a source whose schema has aggregates
 * @child: a source of @parent's child schema, not yet anyone's child
 *
 * From now on every read of @parent's aggregates includes @child.  @child
 * must be detached with statsfd_source_del_child() (or destroyed) before
 * its stats memory is freed.
 *
 * Context: process context; takes @parent->children_lock (a mutex).
 */
void statsfd_source_add_child(struct statsfd_source *parent,
			      struct statsfd_source *child)
{
	struct statsfd_source_priv *pp = parent->priv, *cp = child->priv;

	if (WARN_ON_ONCE(cp->schema != pp->schema->def->child_schema ||
			 cp->parent))
		return;

	mutex_lock(&pp->children_lock);
	list_add_tail(&cp->child_node, &pp->children);
	pp->num_children++;
	cp->parent = parent;
	statsfd_children_changed(parent);
	mutex_unlock(&pp->children_lock);
}
EXPORT_SYMBOL_NS_GPL(statsfd_source_add_child, STATSFD_NS);

/**
 * statsfd_source_del_child() - stop counting @child in its parent's aggregates
 * @child: a source added with statsfd_source_add_child(), or one without a
 *	parent (then this does nothing)
 *
 * When this returns no reader of the parent's aggregates is looking at
 * @child's stats any more, so they may be freed.
 *
 * Sums of cumulative stats and of histograms keep @child's contribution:
 * its values at this moment are added to the parent's retired total, which
 * those sums start from, so a sum labelled cumulative never goes down and
 * collectors see no counter reset.  Every other aggregate (sums of instant
 * values and of peaks, min, max, avg, count_nonzero) simply stops counting
 * @child.  Adding the same source back later counts its values again on
 * top of what it left behind, so a provider removes each child once, when
 * it goes away for good.
 *
 * Context: process context; takes the parent's children_lock.
 */
void statsfd_source_del_child(struct statsfd_source *child)
{
	struct statsfd_source_priv *cp = child->priv;
	struct statsfd_source *parent = cp->parent;

	if (!parent)
		return;

	mutex_lock(&parent->priv->children_lock);
	statsfd_agg_retire(parent, child);
	list_del_init(&cp->child_node);
	parent->priv->num_children--;
	cp->parent = NULL;
	statsfd_children_changed(parent);
	mutex_unlock(&parent->priv->children_lock);
}
EXPORT_SYMBOL_NS_GPL(statsfd_source_del_child, STATSFD_NS);

/**
 * statsfd_source_hangup() - tell pollers that the source's owner is gone
 * @src: an initialized source
 *
 * For the owner's user the object behind @src no longer exists (for a
 * VM: its VMM closed the VM fd and every vCPU fd), although stats fds may
 * still pin it and read its last values.  From now on every stats file of
 * @src polls EPOLLHUP, and pollers are woken.  Calling it again does
 * nothing more.  Plain stats updates never wake pollers: only this and
 * changes of the set of children do.
 *
 * Context: process context.
 */
void statsfd_source_hangup(struct statsfd_source *src)
{
	if (READ_ONCE(src->priv->hung_up))
		return;
	WRITE_ONCE(src->priv->hung_up, true);
	wake_up_poll(&src->priv->wq, EPOLLHUP);
}
EXPORT_SYMBOL_NS_GPL(statsfd_source_hangup, STATSFD_NS);
