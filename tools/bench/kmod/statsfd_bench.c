// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd_bench: synthetic statsfd schemas of any shape, for the benchmarks.
 *
 * A bench-only "other subsystem" on top of the statsfd core.  It lets the
 * bench compare schemas that differ only in their number of descriptors
 * (B3: 10 histograms of 100 buckets vs 1000 counters, same data block), give
 * a source exactly the shape of KVM's vCPU stats (B1), and create thousands
 * of sources of one schema to measure what one instance costs (B5).  A set
 * may ask for update windows (STATSFD_SCHEMA_SNAPSHOT) and a mappable
 * values area (STATSFD_SCHEMA_MMAP), so that B1, B3 and B5 measure the same
 * shapes with snapshots on and off.
 *
 * /dev/statsfd_bench (0600) answers STATSFD_BENCH_CREATE_SET with a set fd;
 * a set owns one schema, a slab cache sized exactly for one source and the
 * sources.  Stats fds of its sources hold a reference on the set, so the set
 * lives until the set fd and every stats fd are closed.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/anon_inodes.h>
#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/kref.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/statsfd.h>
#include <linux/uaccess.h>

#include "statsfd_bench.h"

/* Histogram bucket width; any non-zero value is valid, this one is round. */
#define STATSFD_BENCH_BUCKET_SIZE	1000

/* "s" or "h" and a u32 in decimal, NUL included: any index fits. */
#define STATSFD_BENCH_STAT_NAME_LEN	12

/**
 * struct statsfd_bench_source - one instance of a set's schema
 * @src: the core's source; its stats point at @values, whatever the kind
 * @set: the owning set, pinned by every stats fd through @src's ops
 * @values: the live data block, num_values u64s; with
 *	STATSFD_BENCH_SNAPSHOT the live values that windows publish
 *
 * Allocated from the set's own cache, so an instance costs exactly its size
 * and not the next kmalloc power of two: B5 measures what a subsystem that
 * embeds its stats in its own object pays, not kmalloc rounding.  With
 * snapshots the core's values area comes on top (kmalloc, or whole pages
 * with STATSFD_BENCH_MMAP), as for any owner of such a schema.
 */
struct statsfd_bench_source {
	struct statsfd_source src;
	struct statsfd_bench_set *set;
	u64 values[];
};

/**
 * struct statsfd_bench_set - a schema and its sources
 * @ref: held by the set fd and by every open stats fd of a source
 * @id: unique number of the set, part of the source ids and cache name
 * @def: the schema's definition, generated at creation
 * @schema: the schema, initialized once by the core from @def
 * @schema_ready: statsfd_schema_init() succeeded, destroy it on free
 * @schema_name: backing store of @def.name
 * @cache_name: backing store of @cache's name
 * @defs: generated descriptor definitions, backing @def.descs
 * @names: generated stat names, backing @defs[i].name
 * @cache: slab cache of exactly sizeof(source) + num_values * 8 bytes
 *	(sizeof(source) alone with STATSFD_BENCH_SNAPSHOT)
 * @num_sources: entries of @sources
 * @sources: the instances
 */
struct statsfd_bench_set {
	struct kref ref;
	u32 id;
	struct statsfd_schema_def def;
	struct statsfd_schema schema;
	bool schema_ready;
	char schema_name[48];
	char cache_name[32];
	struct statsfd_desc_def *defs;
	char (*names)[STATSFD_BENCH_STAT_NAME_LEN];
	struct kmem_cache *cache;
	u32 num_sources;
	struct statsfd_bench_source **sources;
};

static atomic_t statsfd_bench_next_id = ATOMIC_INIT(0);

/* Tears down whatever statsfd_bench_set_create() managed to build. */
static void statsfd_bench_set_free(struct statsfd_bench_set *set)
{
	u32 i;

	for (i = 0; i < set->num_sources; i++) {
		struct statsfd_bench_source *s = set->sources[i];

		if (!s)
			break;
		statsfd_source_destroy(&s->src);
		kmem_cache_free(set->cache, s);
	}
	kvfree(set->sources);
	kmem_cache_destroy(set->cache);
	if (set->schema_ready)
		statsfd_schema_destroy(&set->schema);
	kvfree(set->names);
	kvfree(set->defs);
	kfree(set);
}

static void statsfd_bench_set_release(struct kref *ref)
{
	statsfd_bench_set_free(container_of(ref, struct statsfd_bench_set, ref));
}

static void statsfd_bench_source_get(struct statsfd_source *src)
{
	struct statsfd_bench_source *s =
		container_of(src, struct statsfd_bench_source, src);

	kref_get(&s->set->ref);
}

/* May free the whole set, this source included: the core allows it. */
static void statsfd_bench_source_put(struct statsfd_source *src)
{
	struct statsfd_bench_source *s =
		container_of(src, struct statsfd_bench_source, src);

	kref_put(&s->set->ref, statsfd_bench_set_release);
}

static const struct statsfd_source_ops statsfd_bench_source_ops = {
	.owner	= THIS_MODULE,
	.get	= statsfd_bench_source_get,
	.put	= statsfd_bench_source_put,
};

/*
 * Spread @num_values over @num_desc descriptors, the first ones one value
 * larger when the division is not exact: one value makes a counter, more
 * make a linear histogram.  Offsets tile the data block with no gap, as the
 * core requires of plain stats.
 */
static int statsfd_bench_fill_defs(struct statsfd_bench_set *set,
				   u32 num_desc, u32 num_values)
{
	u32 i, offset = 0;

	set->defs = kvcalloc(num_desc, sizeof(*set->defs), GFP_KERNEL_ACCOUNT);
	set->names = kvcalloc(num_desc, sizeof(*set->names), GFP_KERNEL_ACCOUNT);
	if (!set->defs || !set->names)
		return -ENOMEM;

	for (i = 0; i < num_desc; i++) {
		struct statsfd_desc_def *def = &set->defs[i];
		u32 size = num_values / num_desc + (i < num_values % num_desc);

		if (size == 1) {
			def->flags = STATSFD_TYPE_CUMULATIVE |
				     STATSFD_UNIT_NONE | STATSFD_BASE_POW10;
			snprintf(set->names[i], sizeof(set->names[i]), "s%u", i);
		} else {
			def->flags = STATSFD_TYPE_LINEAR_HIST |
				     STATSFD_UNIT_NONE | STATSFD_BASE_POW10;
			def->bucket_size = STATSFD_BENCH_BUCKET_SIZE;
			snprintf(set->names[i], sizeof(set->names[i]), "h%u", i);
		}
		def->size = size;
		def->offset = offset;
		def->name = set->names[i];
		offset += size * sizeof(u64);
	}
	return 0;
}

static int statsfd_bench_check_args(const struct statsfd_bench_set_args *a)
{
	if ((a->flags & ~STATSFD_BENCH_FLAGS) || a->reserved[0] ||
	    a->reserved[1])
		return -EINVAL;
	/* The core refuses it too; say so before building anything. */
	if ((a->flags & STATSFD_BENCH_MMAP) &&
	    !(a->flags & STATSFD_BENCH_SNAPSHOT))
		return -EINVAL;
	if (!a->num_desc || a->num_desc > STATSFD_BENCH_DESC_MAX)
		return -EINVAL;
	if (a->num_values < a->num_desc ||
	    a->num_values > STATSFD_BENCH_VALUES_MAX)
		return -EINVAL;
	/* statsfd_desc.size is a u16. */
	if (DIV_ROUND_UP(a->num_values, a->num_desc) > U16_MAX)
		return -EINVAL;
	if (!a->num_sources || a->num_sources > STATSFD_BENCH_SOURCES_MAX)
		return -EINVAL;
	return 0;
}

static struct statsfd_bench_set *
statsfd_bench_set_create(const struct statsfd_bench_set_args *a)
{
	bool snapshot = a->flags & STATSFD_BENCH_SNAPSHOT;
	struct statsfd_bench_set *set;
	size_t obj_size;
	u32 i, j;
	int ret;

	set = kzalloc(sizeof(*set), GFP_KERNEL_ACCOUNT);
	if (!set)
		return ERR_PTR(-ENOMEM);
	kref_init(&set->ref);
	set->id = atomic_inc_return(&statsfd_bench_next_id);

	ret = statsfd_bench_fill_defs(set, a->num_desc, a->num_values);
	if (ret)
		goto out_free;

	snprintf(set->schema_name, sizeof(set->schema_name),
		 "statsfd_bench.%ux%u%s", a->num_desc, a->num_values,
		 (a->flags & STATSFD_BENCH_MMAP) ? ".mmap" :
		 snapshot ? ".snap" : "");
	set->def.name = set->schema_name;
	set->def.descs = set->defs;
	set->def.num_descs = a->num_desc;
	set->def.stats_size = (size_t)a->num_values * sizeof(u64);
	if (snapshot)
		set->def.flags |= STATSFD_SCHEMA_SNAPSHOT;
	if (a->flags & STATSFD_BENCH_MMAP)
		set->def.flags |= STATSFD_SCHEMA_MMAP;
	ret = statsfd_schema_init(&set->schema, &set->def);
	if (ret)
		goto out_free;
	set->schema_ready = true;

	snprintf(set->cache_name, sizeof(set->cache_name),
		 "statsfd_bench_%u", set->id);
	/*
	 * Every kind keeps its values in the source's object; a plain
	 * source's reads copy them to user space from there.
	 */
	obj_size = sizeof(struct statsfd_bench_source) +
		   (size_t)a->num_values * sizeof(u64);
	set->cache = kmem_cache_create_usercopy(set->cache_name, obj_size,
						sizeof(u64), SLAB_ACCOUNT,
						offsetof(struct statsfd_bench_source,
							 values),
						obj_size -
						offsetof(struct statsfd_bench_source,
							 values),
						NULL);
	set->sources = kvcalloc(a->num_sources, sizeof(*set->sources),
				GFP_KERNEL_ACCOUNT);
	if (!set->cache || !set->sources) {
		ret = -ENOMEM;
		goto out_free;
	}
	set->num_sources = a->num_sources;

	for (i = 0; i < a->num_sources; i++) {
		struct statsfd_bench_source *s;
		u64 *values;

		s = kmem_cache_zalloc(set->cache, GFP_KERNEL_ACCOUNT);
		if (!s) {
			ret = -ENOMEM;
			goto out_free;
		}
		s->set = set;
		/*
		 * A snapshot source's values are published by one window;
		 * the values never change after this.
		 */
		ret = snapshot ?
		      statsfd_source_init_snapshot(&s->src, &set->schema,
						   s->values,
						   &statsfd_bench_source_ops,
						   "bench-%u/src-%u", set->id, i) :
		      statsfd_source_init(&s->src, &set->schema, s->values,
					  &statsfd_bench_source_ops,
					  "bench-%u/src-%u", set->id, i);
		if (ret) {
			kmem_cache_free(set->cache, s);
			goto out_free;
		}
		values = s->values;
		if (snapshot)
			statsfd_update_begin(&s->src);
		for (j = 0; j < a->num_values; j++)
			values[j] = j + 1;
		if (snapshot)
			statsfd_update_end(&s->src);
		set->sources[i] = s;
	}
	return set;

out_free:
	statsfd_bench_set_free(set);
	return ERR_PTR(ret);
}

static long statsfd_bench_set_ioctl(struct file *file, unsigned int cmd,
				    unsigned long arg)
{
	struct statsfd_bench_set *set = file->private_data;

	if (cmd != STATSFD_BENCH_GET_STATS_FD)
		return -ENOTTY;
	if (arg >= set->num_sources)
		return -EINVAL;
	return statsfd_source_get_fd(&set->sources[arg]->src);
}

static int statsfd_bench_set_file_release(struct inode *inode,
					  struct file *file)
{
	struct statsfd_bench_set *set = file->private_data;

	kref_put(&set->ref, statsfd_bench_set_release);
	return 0;
}

static const struct file_operations statsfd_bench_set_fops = {
	.owner		= THIS_MODULE,
	.unlocked_ioctl	= statsfd_bench_set_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.release	= statsfd_bench_set_file_release,
	.llseek		= noop_llseek,
};

static long statsfd_bench_dev_ioctl(struct file *file, unsigned int cmd,
				    unsigned long arg)
{
	struct statsfd_bench_set_args args;
	struct statsfd_bench_set *set;
	int ret;

	if (cmd != STATSFD_BENCH_CREATE_SET)
		return -ENOTTY;
	if (copy_from_user(&args, (void __user *)arg, sizeof(args)))
		return -EFAULT;
	ret = statsfd_bench_check_args(&args);
	if (ret)
		return ret;

	set = statsfd_bench_set_create(&args);
	if (IS_ERR(set))
		return PTR_ERR(set);

	/* On success the fd owns the set's initial reference. */
	ret = anon_inode_getfd("statsfd-bench-set", &statsfd_bench_set_fops,
			       set, O_RDWR | O_CLOEXEC);
	if (ret < 0)
		kref_put(&set->ref, statsfd_bench_set_release);
	return ret;
}

static const struct file_operations statsfd_bench_dev_fops = {
	.owner		= THIS_MODULE,
	.unlocked_ioctl	= statsfd_bench_dev_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static struct miscdevice statsfd_bench_dev = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "statsfd_bench",
	.fops	= &statsfd_bench_dev_fops,
	.mode	= 0600,
};

module_misc_device(statsfd_bench_dev);

MODULE_DESCRIPTION("statsfd bench-only synthetic schemas");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(STATSFD_NS);
