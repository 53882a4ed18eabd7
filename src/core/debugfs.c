// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd debugfs text view: one directory per source, one small file per
 * stat, for quick scripts (and as the baseline the binary fd is compared
 * against).  Not an ABI.
 */
#include <linux/debugfs.h>
#include <linux/err.h>
#include <linux/export.h>
#include <linux/fs.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/statsfd.h>
#include <linux/string.h>

#include "internal.h"

static struct dentry *statsfd_debugfs_dir;

/**
 * statsfd_debugfs_root() - the core's debugfs directory, "statsfd"
 *
 * Providers may hang their views below it, e.g. statsfd/statsfd_vm/<id>/,
 * so every statsfd view is found in one place.
 *
 * Return: the directory, or an ERR_PTR when debugfs is unavailable; either
 * may be passed as the parent to debugfs calls, which then do nothing.
 */
struct dentry *statsfd_debugfs_root(void)
{
	return statsfd_debugfs_dir;
}
EXPORT_SYMBOL_NS_GPL(statsfd_debugfs_root, STATSFD_NS);

/**
 * statsfd_debugfs_show() - print one stat of the debugfs text view
 * @m: the seq_file; @m->private is the file's struct statsfd_debugfs_file
 * @unused: unused single_open() cursor
 *
 * Scalars print as "%llu\n", histograms as their bucket values separated
 * by spaces on one line.  A plain stat is read value by value, each u64
 * once with READ_ONCE() (one stat per file: there is nothing to keep
 * consistent with); that of a source with update windows is copied from
 * the values its last window published, and a computed source's values
 * are all computed, into the view's own buffer; aggregates are computed
 * for this read, over one
 * snapshot of each child, into the source's aggregate buffer, under the
 * children_lock that protects it.
 * Static unless KUnit is enabled, then exported for the tests.
 *
 * Context: process context.
 * Return: 0, -EINTR, or the error of a computed source's fill callback.
 */
VISIBLE_IF_KUNIT int statsfd_debugfs_show(struct seq_file *m, void *unused)
{
	const struct statsfd_debugfs_file *f = m->private;
	/* Removing the view waits for this read: it is there throughout. */
	struct statsfd_debugfs *view = f->view;
	struct statsfd_source *src = view->src;
	const struct statsfd_schema *schema = src->priv->schema;
	const struct statsfd_desc_def *def = &schema->def->descs[f->index];
	const struct statsfd_agg *agg;
	const u64 *vals;
	int ret = 0;
	u32 i;

	if (f->index < statsfd_num_plain(schema) && view->buf) {
		/* Computed, or published by windows: copied out first. */
		struct statsfd_range range = {
			.first = def->offset / sizeof(u64),
			.nr = def->size,
		};

		if (mutex_lock_killable(&view->buf_lock))
			return -EINTR;
		ret = statsfd_snapshot_copy_ranges(src, view->buf, &range, 1,
						   NULL);
		vals = view->buf + def->offset / sizeof(u64);
		for (i = 0; !ret && i < def->size; i++)
			seq_printf(m, "%s%llu", i ? " " : "", vals[i]);
		mutex_unlock(&view->buf_lock);
		if (ret)
			return ret;
	} else if (f->index < statsfd_num_plain(schema)) {
		vals = src->stats + def->offset;
		for (i = 0; i < def->size; i++)
			seq_printf(m, "%s%llu", i ? " " : "",
				   READ_ONCE(vals[i]));
	} else {
		agg = &schema->aggs[f->index - statsfd_num_plain(schema)];
		if (mutex_lock_killable(&src->priv->children_lock))
			return -EINTR;
		ret = statsfd_agg_compute_locked(src, src->priv->agg_buf);
		vals = src->priv->agg_buf + agg->index;
		for (i = 0; !ret && i < agg->size; i++)
			seq_printf(m, "%s%llu", i ? " " : "", vals[i]);
		mutex_unlock(&src->priv->children_lock);
		if (ret)
			return ret;
	}
	seq_putc(m, '\n');
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(statsfd_debugfs_show);

static int statsfd_debugfs_open(struct inode *inode, struct file *file)
{
	return single_open(file, statsfd_debugfs_show, inode->i_private);
}

static const struct file_operations statsfd_debugfs_fops = {
	.owner		= THIS_MODULE,
	.open		= statsfd_debugfs_open,
	.read		= seq_read,
	.llseek		= seq_lseek,
	.release	= single_release,
};

static void statsfd_debugfs_free(struct statsfd_debugfs *view)
{
	kfree(view->buf);
	mutex_destroy(&view->buf_lock);
	kfree(view);
}

/*
 * The view of @src, its files not yet created.  A computed or snapshot
 * source's view gets the buffer its reads compute or copy the values
 * into, allocated now so that the source pays for it only with a view.
 * Per source, like its id and values: charged to the creator's memcg.
 */
static struct statsfd_debugfs *statsfd_debugfs_alloc(struct statsfd_source *src)
{
	const struct statsfd_schema *schema = src->priv->schema;
	u32 stats_size = schema->def->stats_size;
	struct statsfd_debugfs *view;

	view = kzalloc(struct_size(view, files, schema->def->num_descs),
		       GFP_KERNEL_ACCOUNT);
	if (!view)
		return NULL;
	view->num = schema->def->num_descs;
	view->src = src;
	mutex_init(&view->buf_lock);
	if ((src->priv->ops->fill || src->area) && stats_size) {
		view->buf = kzalloc(stats_size, GFP_KERNEL_ACCOUNT);
		if (!view->buf) {
			statsfd_debugfs_free(view);
			return NULL;
		}
	}
	return view;
}

/**
 * statsfd_source_debugfs_create() - create the text view of @src
 * @src: an initialized source without a view
 * @name: name of the directory, usually the source's id; a '/' in it
 *	becomes '!' (as in the names of block devices in sysfs), since an id
 *	may contain one and a directory name cannot
 * @parent: where to create it: statsfd_debugfs_root(), a directory below
 *	it, or NULL for the debugfs root
 *
 * Creates @parent/@name/ with one read-only file per stat, named after the
 * stat: a scalar reads as "%llu\n", a histogram as its bucket values
 * separated by spaces on one line, an aggregate as computed at read time.
 * statsfd_source_debugfs_remove() (or statsfd_source_destroy()) removes it
 * and waits for readers in progress, so the files never outlive @src.
 *
 * Context: process context; may sleep.
 * Return: 0; -EBUSY if @src already has a view; -EINVAL for an empty
 * @name, "." or ".."; -ENOMEM; or the error of
 * debugfs_create_dir() (e.g. -EEXIST, or -ENODEV without debugfs).  Like
 * any debugfs call, callers may ignore the result: the stats fd works the
 * same either way.
 */
int statsfd_source_debugfs_create(struct statsfd_source *src,
				  const char *name, struct dentry *parent)
{
	const struct statsfd_schema *schema = src->priv->schema;
	struct statsfd_debugfs *view;
	struct dentry *dir;
	char *dname;
	u32 i;

	if (src->priv->debugfs)
		return -EBUSY;
	if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;

	/* Per source, like its id and values: charged to the creator's memcg. */
	view = statsfd_debugfs_alloc(src);
	if (!view)
		return -ENOMEM;

	dname = kstrdup(name, GFP_KERNEL);
	if (!dname) {
		statsfd_debugfs_free(view);
		return -ENOMEM;
	}
	strreplace(dname, '/', '!');
	dir = debugfs_create_dir(dname, parent);
	kfree(dname);
	if (IS_ERR(dir)) {
		statsfd_debugfs_free(view);
		return PTR_ERR(dir);
	}
	view->dir = dir;

	for (i = 0; i < view->num; i++) {
		view->files[i].view = view;
		view->files[i].index = i;
		debugfs_create_file(schema->def->descs[i].name, 0444, dir,
				    &view->files[i], &statsfd_debugfs_fops);
	}
	src->priv->debugfs = view;
	return 0;
}
EXPORT_SYMBOL_NS_GPL(statsfd_source_debugfs_create, STATSFD_NS);

/**
 * statsfd_source_debugfs_dir() - the directory of @src's text view
 * @src: an initialized source
 *
 * Lets a provider create extra files next to the per-stat ones without
 * looking the directory up by name (debugfs_lookup() would also need a
 * dput()).  The dentry belongs to the view: it is valid until
 * statsfd_source_debugfs_remove() or statsfd_source_destroy(), which also
 * remove anything the provider put in it.  No reference is taken.
 *
 * Context: any; the caller serializes against creating and removing the
 * view, as for those calls themselves.
 * Return: the directory, or NULL when @src has no view.
 */
struct dentry *statsfd_source_debugfs_dir(const struct statsfd_source *src)
{
	return src->priv->debugfs ? src->priv->debugfs->dir : NULL;
}
EXPORT_SYMBOL_NS_GPL(statsfd_source_debugfs_dir, STATSFD_NS);

/**
 * statsfd_source_debugfs_remove() - remove the text view of @src
 * @src: the source; having no view is fine
 *
 * Context: process context; may sleep until readers of the files are done.
 */
void statsfd_source_debugfs_remove(struct statsfd_source *src)
{
	struct statsfd_debugfs *view = src->priv->debugfs;

	if (!view)
		return;
	debugfs_remove(view->dir);
	src->priv->debugfs = NULL;
	statsfd_debugfs_free(view);
}
EXPORT_SYMBOL_NS_GPL(statsfd_source_debugfs_remove, STATSFD_NS);

/**
 * statsfd_debugfs_init() - create the core's debugfs root, "statsfd"
 *
 * Called from module init.  Without debugfs the root is an ERR_PTR, which
 * every later debugfs call accepts as a parent and ignores, so the module
 * still loads and the stats fds work the same.
 *
 * Context: process context; may sleep.
 * Return: 0, always: a missing text view is not worth failing the load.
 */
int statsfd_debugfs_init(void)
{
	statsfd_debugfs_dir = debugfs_create_dir("statsfd", NULL);
	return 0;
}

/**
 * statsfd_debugfs_exit() - remove the core's debugfs root
 *
 * Called from module exit, after every provider (which hang their views
 * below the root) is gone.
 *
 * Context: process context; may sleep.
 */
void statsfd_debugfs_exit(void)
{
	debugfs_remove(statsfd_debugfs_dir);
	statsfd_debugfs_dir = NULL;
}
