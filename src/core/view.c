// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd views: a stats file that holds only some of a source's stats.
 *
 * STATSFD_IOC_VIEW on a stats fd selects stats by name or by descriptor
 * index and returns a new stats fd whose file is complete and valid on its
 * own: the source's header format and id, the selected descriptors in the
 * order asked for, and a compact data block with only their values.  A
 * view is built once, when it is created, like a schema's blocks; reads
 * copy only the selected values (from one update window), so they cost in
 * proportion to the selection.  A view of a view selects among the view's
 * stats and is flattened into a view of the source.
 */
#include <linux/bitmap.h>
#include <linux/err.h>
#include <linux/errno.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/statsfd.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "internal.h"

/* The serialized descriptor @i of the source's whole file. */
static const struct statsfd_desc *
statsfd_full_desc(const struct statsfd_schema *schema, u32 i)
{
	u32 stride = sizeof(struct statsfd_desc) + schema->header.name_size;

	return schema->desc_block + (size_t)i * stride;
}

/*
 * The index, among the stats of the fd the ioctl was made on (the source
 * or @parent), of the stat named @name.
 */
static int statsfd_view_find(const struct statsfd_schema *schema,
			     const struct statsfd_view *parent,
			     const char *name)
{
	u32 n = parent ? parent->nr : schema->header.num_desc;
	u32 i, full;

	for (i = 0; i < n; i++) {
		full = parent ? parent->sel[i].full_index : i;
		if (!strcmp(statsfd_full_desc(schema, full)->name, name))
			return i;
	}
	return -ENOENT;
}

/*
 * Entry @i of the user's list, as an index among the stats of the fd the
 * ioctl was made on.  @name is a buffer of name_size bytes.
 */
static int statsfd_view_entry(const struct statsfd_schema *schema,
			      const struct statsfd_view *parent,
			      const struct statsfd_view_args *args, u32 i,
			      char *name)
{
	u32 name_size = schema->header.name_size;
	u32 n = parent ? parent->nr : schema->header.num_desc;
	u64 uname;
	u32 index;
	long len;

	if (args->flags & STATSFD_VIEW_BY_INDEX) {
		if (get_user(index, (u32 __user *)u64_to_user_ptr(args->list) + i))
			return -EFAULT;
		return index < n ? index : -ENOENT;
	}
	if (get_user(uname, (u64 __user *)u64_to_user_ptr(args->list) + i))
		return -EFAULT;
	len = strncpy_from_user(name, u64_to_user_ptr(uname), name_size);
	if (len < 0)
		return len;
	/* No NUL within name_size: longer than any name of the file. */
	if (len == name_size)
		return -ENAMETOOLONG;
	return statsfd_view_find(schema, parent, name);
}

/*
 * The selected plain stats as ranges of the stats struct, in the order
 * selected; adjacent ones merged, so that a view of consecutive stats
 * copies one run of values.
 */
static int statsfd_view_ranges(const struct statsfd_schema *schema,
			       struct statsfd_view *view)
{
	struct statsfd_range *r;
	u32 i, first;

	view->ranges = kcalloc(view->nr, sizeof(*view->ranges),
			       GFP_KERNEL_ACCOUNT);
	if (!view->ranges)
		return -ENOMEM;
	view->nr_ranges = 0;
	for (i = 0; i < view->nr; i++) {
		if (view->sel[i].full_offset >= schema->def->stats_size)
			continue;
		first = view->sel[i].full_offset / sizeof(u64);
		r = view->nr_ranges ? &view->ranges[view->nr_ranges - 1] : NULL;
		if (r && r->first + r->nr == first) {
			r->nr += view->sel[i].size;
			continue;
		}
		r = &view->ranges[view->nr_ranges++];
		r->first = first;
		r->nr = view->sel[i].size;
	}
	return 0;
}

/*
 * Serialize the view's header and descriptors: copies of the selected
 * descriptors, in view order, each with the offset of its values in the
 * view's compact data block.
 */
static int statsfd_view_build(const struct statsfd_schema *schema,
			      struct statsfd_view *view)
{
	u32 name_size = schema->header.name_size;
	u32 stride = sizeof(struct statsfd_desc) + name_size;
	u32 data_offset = sizeof(struct statsfd_header) + name_size;
	struct statsfd_desc *desc;
	u64 data_size = 0;
	u32 i;

	view->desc_block = kcalloc(view->nr, stride, GFP_KERNEL_ACCOUNT);
	if (!view->desc_block)
		return -ENOMEM;
	for (i = 0; i < view->nr; i++) {
		desc = view->desc_block + (size_t)i * stride;
		memcpy(desc, statsfd_full_desc(schema, view->sel[i].full_index),
		       stride);
		desc->offset = data_size;
		data_size += view->sel[i].size * sizeof(u64);
	}
	/* At most the source's data block: no overflow. */
	view->data_size = data_size;
	view->header = (struct statsfd_header) {
		.flags = 0,
		.name_size = name_size,
		.num_desc = view->nr,
		.id_offset = sizeof(struct statsfd_header),
		.desc_offset = data_offset + view->data_size,
		.data_offset = data_offset,
	};
	view->file_size = data_offset + view->data_size + view->nr * stride;
	return 0;
}

/**
 * statsfd_view_create() - build the view STATSFD_IOC_VIEW asks for
 * @src: the source of the fd the ioctl was made on
 * @parent: that fd's view, or NULL for the source's whole file
 * @args: the ioctl's argument, copied from user space
 *
 * Validates @args and every entry of its list, then builds the view's
 * header, descriptors and the ranges its reads copy.  Nothing is left
 * allocated on failure.
 *
 * Context: process context; may sleep and fault in user memory.
 * Return: the view; ERR_PTR(-EINVAL) for unknown flags, non-zero
 * reserved fields or an empty list; -E2BIG for more entries than the fd
 * has stats; -EFAULT for a bad pointer; -ENOENT for an unknown name or an
 * index out of range; -ENAMETOOLONG for a name longer than any of the
 * file's; -EEXIST for a stat selected twice; -ENOMEM.
 */
struct statsfd_view *statsfd_view_create(struct statsfd_source *src,
					 const struct statsfd_view *parent,
					 const struct statsfd_view_args *args)
{
	const struct statsfd_schema *schema = src->priv->schema;
	u32 n = parent ? parent->nr : schema->header.num_desc;
	const struct statsfd_desc *desc;
	struct statsfd_view *view;
	unsigned long *seen;
	char *name = NULL;
	u32 i, full;
	int ret;

	if (args->flags & ~STATSFD_VIEW_FLAGS || !args->count ||
	    memchr_inv(args->reserved, 0, sizeof(args->reserved)))
		return ERR_PTR(-EINVAL);
	if (args->count > n || args->count > STATSFD_VIEW_COUNT_MAX)
		return ERR_PTR(-E2BIG);

	view = kzalloc(struct_size(view, sel, args->count),
		       GFP_KERNEL_ACCOUNT);
	seen = bitmap_zalloc(n, GFP_KERNEL);
	if (!(args->flags & STATSFD_VIEW_BY_INDEX))
		name = kmalloc(schema->header.name_size, GFP_KERNEL);
	if (!view || !seen || (!name && !(args->flags & STATSFD_VIEW_BY_INDEX))) {
		ret = -ENOMEM;
		goto err;
	}
	view->nr = args->count;

	for (i = 0; i < args->count; i++) {
		ret = statsfd_view_entry(schema, parent, args, i, name);
		if (ret < 0)
			goto err;
		if (test_and_set_bit(ret, seen)) {
			ret = -EEXIST;
			goto err;
		}
		full = parent ? parent->sel[ret].full_index : ret;
		desc = statsfd_full_desc(schema, full);
		view->sel[i].full_index = full;
		view->sel[i].full_offset = desc->offset;
		view->sel[i].size = desc->size;
		if (desc->offset >= schema->def->stats_size &&
		    desc->offset < schema->def->stats_size + schema->agg_size)
			view->need_aggs = true;
		if (schema->meta_offset && desc->offset >= schema->meta_offset)
			view->need_meta = true;
	}

	ret = statsfd_view_ranges(schema, view);
	if (!ret)
		ret = statsfd_view_build(schema, view);
	if (ret)
		goto err;
	bitmap_free(seen);
	kfree(name);
	return view;

err:
	statsfd_view_free(view);
	bitmap_free(seen);
	kfree(name);
	return ERR_PTR(ret);
}

/**
 * statsfd_view_free() - free a view built by statsfd_view_create()
 * @view: the view, or NULL
 */
void statsfd_view_free(struct statsfd_view *view)
{
	if (!view)
		return;
	kfree(view->ranges);
	kfree(view->desc_block);
	kfree(view);
}
