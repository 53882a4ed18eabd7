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

/**
 * statsfd_source_init() - make @src an instance of @schema
 * @src: the source, usually embedded in the object that owns @stats
 * @schema: an initialized schema
 * @stats: the live stats struct (schema->def->stats_size bytes, 8-byte aligned);
 *	may be NULL only if the schema has no plain stats; must be NULL for a
 *	schema with STATSFD_SCHEMA_SNAPSHOT, whose values the core allocates
 *	(see statsfd_source_stats()), and for a computed source (@ops->fill),
 *	whose values are computed at read time
 * @ops: lifetime callbacks for stats fds and, for a computed source, the
 *	callback that computes its values; see struct statsfd_source_ops for
 *	which combinations are valid
 * @id_fmt: printf format of the id string; longer ids are truncated to
 *	schema name_size - 1 bytes
 *
 * For a schema with aggregates this also allocates, once, the buffers that
 * reads compute them in (the aggregates, one child's snapshot, the
 * remainders of averages) and, when the schema sums cumulative stats or
 * histograms, the retired total those sums start from (zero).  For a
 * schema with update windows it allocates the values area, zero.  For a
 * computed source it allocates the buffer its debugfs view computes the
 * values in.
 *
 * A computed source may have STATSFD_SCHEMA_SNAPSHOT (each read is one
 * call of @ops->fill: its sample_ns is the time of that call and its
 * generation counts the calls) but not STATSFD_SCHEMA_MMAP: there are no
 * live values to map.
 *
 * Context: process context; may sleep.
 * Return: 0, -EINVAL for bad arguments (a stats pointer given for a
 * snapshot schema or a computed source, or missing for another; @ops with
 * both @get and @tryget, or @put without either or either without @put;
 * @ops->fill with STATSFD_SCHEMA_MMAP), or -ENOMEM.
 */
int statsfd_source_init(struct statsfd_source *src,
			const struct statsfd_schema *schema, const void *stats,
			const struct statsfd_source_ops *ops,
			const char *id_fmt, ...)
{
	u32 name_size = schema->header.name_size;
	va_list args;
	char *full;
	bool snapshot;
	int ret;

	src->id = NULL;
	if (!schema->build_count || !ops || (ops->get && ops->tryget) ||
	    !(ops->get || ops->tryget) != !ops->put)
		return -EINVAL;
	/* Only an initialized schema has its definition. */
	snapshot = schema->def->flags & STATSFD_SCHEMA_SNAPSHOT;
	if (ops->fill ? stats || (schema->def->flags & STATSFD_SCHEMA_MMAP) :
	    (snapshot && stats) ||
	    (!snapshot && !stats && schema->def->stats_size) ||
	    !IS_ALIGNED((unsigned long)stats, sizeof(u64)))
		return -EINVAL;

	va_start(args, id_fmt);
	full = kvasprintf(GFP_KERNEL_ACCOUNT, id_fmt, args);
	va_end(args);
	if (!full)
		return -ENOMEM;

	/*
	 * Zero-padded to name_size: the id block is copied out as is.  This
	 * and the aggregate buffers below exist per object a user created (a
	 * VM, a vCPU), so they are charged to that user's memory cgroup, as
	 * the object itself is; only schemas, built once per module, are not.
	 */
	src->id = kzalloc(name_size, GFP_KERNEL_ACCOUNT);
	if (!src->id) {
		kfree(full);
		return -ENOMEM;
	}
	strscpy(src->id, full, name_size);
	kfree(full);

	/*
	 * Everything a read of the aggregates needs, allocated now so that
	 * reads cannot fail for memory: the buffer they are computed into,
	 * where each child's snapshot is copied, the remainders of averages
	 * and, for sums that must stay monotonic, the retired total.
	 */
	src->agg_buf = NULL;
	src->agg_child = NULL;
	src->agg_rems = NULL;
	src->retired = NULL;
	if (schema->num_aggs) {
		size_t words = statsfd_agg_size(schema) / sizeof(u64);
		size_t child = schema->def->child_schema->def->stats_size / sizeof(u64);
		bool retires = statsfd_schema_retires(schema);
		size_t total = (retires ? 2 * words : words) + child +
			       schema->num_aggs;

		src->agg_buf = kcalloc(total, sizeof(u64), GFP_KERNEL_ACCOUNT);
		if (!src->agg_buf) {
			ret = -ENOMEM;
			goto err_id;
		}
		/* aggregates | retired total, if any | a child | remainders */
		if (retires)
			src->retired = src->agg_buf + words;
		src->agg_child = src->agg_buf + (retires ? 2 * words : words);
		src->agg_rems = src->agg_child + child;
	}

	/*
	 * The debugfs view of a computed source needs somewhere to compute
	 * into, and that of a source with update windows somewhere to copy
	 * the published values to.
	 */
	src->fill_buf = NULL;
	if ((ops->fill || snapshot) && schema->def->stats_size) {
		src->fill_buf = kzalloc(schema->def->stats_size, GFP_KERNEL_ACCOUNT);
		if (!src->fill_buf) {
			ret = -ENOMEM;
			goto err_agg;
		}
	}
	mutex_init(&src->fill_lock);
	atomic64_set(&src->fills, 0);

	src->schema = schema;
	src->stats = stats;
	src->ops = ops;
	/* A computed source has no values area: nothing live to copy or map. */
	src->area = NULL;
	ret = ops->fill ? 0 : statsfd_area_alloc(src);
	if (ret)
		goto err_fill;
	mutex_init(&src->children_lock);
	INIT_LIST_HEAD(&src->children);
	src->num_children = 0;
	INIT_LIST_HEAD(&src->child_node);
	src->parent = NULL;
	src->debugfs = NULL;
	init_waitqueue_head(&src->wq);
	src->children_gen = 0;
	src->hung_up = false;
	atomic_set(&src->nr_files, 0);
	src->destroyed = false;
	return 0;

err_fill:
	kfree(src->fill_buf);
	src->fill_buf = NULL;
err_agg:
	kfree(src->agg_buf);
	src->agg_buf = NULL;
err_id:
	kfree(src->id);
	src->id = NULL;
	return ret;
}
EXPORT_SYMBOL_NS_GPL(statsfd_source_init, STATSFD_NS);

/*
 * The set of @parent's children changed: every stats file on @parent
 * polls EPOLLPRI until it reads its header or data again.  Called with
 * @parent->children_lock held, so changes are counted one by one.
 */
static void statsfd_children_changed(struct statsfd_source *parent)
{
	lockdep_assert_held(&parent->children_lock);
	WRITE_ONCE(parent->children_gen, parent->children_gen + 1);
	wake_up_poll(&parent->wq, EPOLLPRI | EPOLLERR);
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
	struct statsfd_source *child, *tmp;
	LIST_HEAD(orphans);

	mutex_lock(&parent->children_lock);
	list_for_each_entry(child, &parent->children, child_node) {
		statsfd_agg_retire(parent, child);
		child->parent = NULL;
	}
	list_splice_init(&parent->children, &orphans);
	if (parent->num_children)
		statsfd_children_changed(parent);
	parent->num_children = 0;
	mutex_unlock(&parent->children_lock);

	list_for_each_entry_safe(child, tmp, &orphans, child_node) {
		list_del_init(&child->child_node);
		statsfd_source_debugfs_remove(child);
	}
}

/* What statsfd_source_init() allocated, once no file uses it any more. */
static void statsfd_source_free(struct statsfd_source *src)
{
	statsfd_area_free(src);
	kfree(src->fill_buf);
	src->fill_buf = NULL;
	mutex_destroy(&src->fill_lock);
	kfree(src->agg_buf);
	src->agg_buf = NULL;
	src->agg_child = NULL;
	src->agg_rems = NULL;
	src->retired = NULL;
	mutex_destroy(&src->children_lock);
	kfree(src->id);
	src->id = NULL;
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
	atomic_inc(&src->nr_files);
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
	/* Fully ordered: sees @destroyed as the destroy that set it left it. */
	if (atomic_dec_and_test(&src->nr_files) && READ_ONCE(src->destroyed))
		statsfd_source_free(src);
}

/**
 * statsfd_source_destroy() - release what statsfd_source_init() allocated
 * @src: the source; no stats fd may be open on it any more
 *
 * Removes the debugfs view and detaches @src from its parent if the owner
 * has not done so.  Children still attached to @src are detached, as by
 * statsfd_source_del_child(), and lose their debugfs views (which usually
 * live inside @src's): they become sources without a parent, which may
 * still be read and destroyed.  This is a supported order, not a bug
 * to warn about: an owner tearing down a whole tree need not detach the
 * leaves first.  Calling it again, or after a failed statsfd_source_init(),
 * does nothing.
 *
 * Stats files hold a reference on the owner, so an owner that calls this
 * only from its final put never finds one open.  One that does (a bug:
 * it will free the object the files point into) is told so in the kernel
 * log, once per source, and the core does what it can: it hangs the
 * source up (pollers get EPOLLHUP), and keeps the values, buffers and id
 * until the last file is closed, so the files still read the last
 * published values and never the core's freed memory.  The source struct
 * itself is the owner's and must stay allocated until then.
 *
 * Context: process context; may sleep.  Must not race with
 * statsfd_source_del_child() or statsfd_source_destroy() on one of
 * @src's children: those read the child's parent pointer before they take
 * the parent's lock, so the owner serializes the teardown of a tree.
 */
void statsfd_source_destroy(struct statsfd_source *src)
{
	int files;

	if (!src->id || src->destroyed)
		return;
	statsfd_source_detach_children(src);
	statsfd_source_debugfs_remove(src);
	statsfd_source_del_child(src);

	/* Our own count holds off a concurrent last close until decided. */
	files = atomic_inc_return(&src->nr_files) - 1;
	if (files) {
		pr_err("source %s destroyed with %d stats files open: its owner must destroy it only from its last put; its values stay until they are closed\n",
		       src->id, files);
		WRITE_ONCE(src->destroyed, true);
		statsfd_source_hangup(src);
	}
	if (atomic_dec_and_test(&src->nr_files))
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
	if (WARN_ON_ONCE(child->schema != parent->schema->def->child_schema ||
			 child->parent))
		return;

	mutex_lock(&parent->children_lock);
	list_add_tail(&child->child_node, &parent->children);
	parent->num_children++;
	child->parent = parent;
	statsfd_children_changed(parent);
	mutex_unlock(&parent->children_lock);
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
	struct statsfd_source *parent = child->parent;

	if (!parent)
		return;

	mutex_lock(&parent->children_lock);
	statsfd_agg_retire(parent, child);
	list_del_init(&child->child_node);
	parent->num_children--;
	child->parent = NULL;
	statsfd_children_changed(parent);
	mutex_unlock(&parent->children_lock);
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
	if (READ_ONCE(src->hung_up))
		return;
	WRITE_ONCE(src->hung_up, true);
	wake_up_poll(&src->wq, EPOLLHUP);
}
EXPORT_SYMBOL_NS_GPL(statsfd_source_hangup, STATSFD_NS);
