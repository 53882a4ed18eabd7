// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd schema: validate a set of stat definitions and build, once, the
 * header and descriptor block that every source of the schema shares.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/ctype.h>
#include <linux/errno.h>
#include <linux/export.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/statsfd.h>
#include <linux/string.h>

#include "internal.h"

/*
 * A rejected definition is a bug in the provider: say which stat and why,
 * then fail with -EINVAL.
 */
static int statsfd_reject(const struct statsfd_schema *schema,
			  const struct statsfd_desc_def *def, const char *why)
{
	pr_err("schema %s: stat %s: %s\n", schema->def->name,
	       def->name ?: "(null)", why);
	return -EINVAL;
}

static bool statsfd_exponent_ok(u32 unit, s16 exponent)
{
	switch (unit) {
	case STATSFD_UNIT_SECONDS:
		return exponent <= 0;
	case STATSFD_UNIT_BOOLEAN:
		return exponent == 0;
	default:
		return exponent >= 0;
	}
}

/* Names become debugfs file names and C-like keys in tools: keep them so. */
static bool statsfd_name_ok(const char *name, u32 name_size)
{
	size_t len, i;

	if (!name)
		return false;
	len = strnlen(name, name_size);
	if (len == 0 || len >= name_size)
		return false;
	for (i = 0; i < len; i++)
		if (!isalnum(name[i]) && name[i] != '_')
			return false;
	return true;
}

/* Check one plain stat and mark the u64 words it covers in @used. */
static int statsfd_check_plain(const struct statsfd_schema *schema,
			       const struct statsfd_desc_def *def,
			       unsigned long *used)
{
	u32 type = def->flags & STATSFD_TYPE_MASK;
	u32 unit = def->flags & STATSFD_UNIT_MASK;
	u32 base = def->flags & STATSFD_BASE_MASK;
	bool linear = type == STATSFD_TYPE_LINEAR_HIST;
	size_t first, end;

	if (def->flags & ~(STATSFD_TYPE_MASK | STATSFD_UNIT_MASK |
			   STATSFD_BASE_MASK))
		return statsfd_reject(schema, def, "reserved or aggregate flag bits set");
	if (type > STATSFD_TYPE_MAX)
		return statsfd_reject(schema, def, "unknown type");
	if (unit > STATSFD_UNIT_MAX)
		return statsfd_reject(schema, def, "unknown unit");
	if (base > STATSFD_BASE_MAX)
		return statsfd_reject(schema, def, "unknown base");
	if (!statsfd_exponent_ok(unit, def->exponent))
		return statsfd_reject(schema, def, "exponent sign does not fit the unit");
	if (def->size == 0)
		return statsfd_reject(schema, def, "size 0");
	if (type < STATSFD_TYPE_LINEAR_HIST && def->size != 1)
		return statsfd_reject(schema, def, "scalar with size other than 1");
	if (linear != !!def->bucket_size)
		return statsfd_reject(schema, def,
				      "bucket_size must be set for, and only for, a linear histogram");
	if (def->offset % sizeof(u64))
		return statsfd_reject(schema, def, "offset not 8-byte aligned");
	if (def->offset >= schema->def->stats_size ||
	    def->size > (schema->def->stats_size - def->offset) / sizeof(u64))
		return statsfd_reject(schema, def, "values beyond stats_size");

	first = def->offset / sizeof(u64);
	end = first + def->size;
	if (find_next_bit(used, end, first) < end)
		return statsfd_reject(schema, def, "overlaps another stat");
	bitmap_set(used, first, def->size);
	return 0;
}

/* The child's plain stat whose values start at @offset, or NULL. */
static const struct statsfd_desc_def *
statsfd_find_child(const struct statsfd_schema *child, u32 offset)
{
	u32 i;

	for (i = 0; i < statsfd_num_plain(child); i++)
		if (child->def->descs[i].offset == offset)
			return &child->def->descs[i];
	return NULL;
}

/* Name suffix of each aggregation kind, indexed by kind >> STATSFD_AGG_SHIFT. */
static const char *const statsfd_agg_suffix[] = {
	[STATSFD_AGG_SUM >> STATSFD_AGG_SHIFT]		= "sum",
	[STATSFD_AGG_MINIMUM >> STATSFD_AGG_SHIFT]	= "min",
	[STATSFD_AGG_MAXIMUM >> STATSFD_AGG_SHIFT]	= "max",
	[STATSFD_AGG_AVERAGE >> STATSFD_AGG_SHIFT]	= "avg",
	[STATSFD_AGG_COUNT_NONZERO >> STATSFD_AGG_SHIFT] = "count_nonzero",
};

static_assert(ARRAY_SIZE(statsfd_agg_suffix) ==
	      (STATSFD_AGG_MAX >> STATSFD_AGG_SHIFT) + 1);

/*
 * Is @name "<child name>_<suffix of kind>"?  STATSFD_AGG() binds to the
 * child stat by offset alone, so an aggregate written against the wrong
 * struct type would silently aggregate (and be labelled as) whatever stat
 * sits at that offset; the name it was given says what was meant.
 */
static bool statsfd_agg_name_ok(const char *name, const char *child, u32 kind)
{
	size_t len = strlen(child);

	return !strncmp(name, child, len) && name[len] == '_' &&
	       !strcmp(name + len + 1,
		       statsfd_agg_suffix[kind >> STATSFD_AGG_SHIFT]);
}

/*
 * Check one aggregate and derive its descriptor fields (everything but
 * offset and name) from the child stat it aggregates.
 */
static int statsfd_check_agg(const struct statsfd_schema *schema,
			     const struct statsfd_desc_def *def,
			     struct statsfd_desc *out)
{
	const struct statsfd_schema *child = schema->def->child_schema;
	const struct statsfd_desc_def *cdef;
	u32 kind = def->flags & STATSFD_AGG_MASK;
	u32 ctype, cunit;

	if (def->flags & ~STATSFD_AGG_MASK || def->exponent || def->size ||
	    def->bucket_size)
		return statsfd_reject(schema, def,
				      "aggregate with fields other than kind, offset and name");
	if (kind > STATSFD_AGG_MAX)
		return statsfd_reject(schema, def, "unknown aggregation kind");
	if (!child)
		return statsfd_reject(schema, def, "aggregate without child_schema");
	cdef = statsfd_find_child(child, def->offset);
	if (!cdef)
		return statsfd_reject(schema, def, "no child stat at that offset");

	ctype = cdef->flags & STATSFD_TYPE_MASK;
	cunit = cdef->flags & STATSFD_UNIT_MASK;
	if (ctype >= STATSFD_TYPE_LINEAR_HIST && kind != STATSFD_AGG_SUM)
		return statsfd_reject(schema, def, "a histogram can only be summed");
	if (!statsfd_agg_name_ok(def->name, cdef->name, kind))
		return statsfd_reject(schema, def,
				      "name is not the child stat's name, '_' and the kind's suffix (wrong struct type?)");

	out->exponent = cdef->exponent;
	out->size = 1;
	out->bucket_size = 0;
	switch (kind) {
	case STATSFD_AGG_SUM:
		if (ctype == STATSFD_TYPE_PEAK)
			ctype = STATSFD_TYPE_INSTANT;
		if (cunit == STATSFD_UNIT_BOOLEAN)
			cunit = STATSFD_UNIT_NONE;
		out->size = cdef->size;
		out->bucket_size = cdef->bucket_size;
		out->flags = ctype | cunit | (cdef->flags & STATSFD_BASE_MASK);
		break;
	case STATSFD_AGG_COUNT_NONZERO:
		out->exponent = 0;
		out->flags = STATSFD_TYPE_INSTANT | STATSFD_UNIT_NONE |
			     STATSFD_BASE_POW10;
		break;
	default:	/* min, max, avg */
		out->flags = STATSFD_TYPE_INSTANT | cunit |
			     (cdef->flags & STATSFD_BASE_MASK);
		break;
	}
	out->flags |= kind;
	return 0;
}

/*
 * The two stats every source with update windows ends its data block
 * with, as descriptors: the time the values were current and the number
 * of windows so far.  Both are filled at read time, never stored.
 */
static void statsfd_build_meta(void *descs, u32 stride, u32 meta_offset)
{
	struct statsfd_desc *sample = descs, *gen = descs + stride;

	sample->flags = STATSFD_TYPE_INSTANT | STATSFD_UNIT_SECONDS |
			STATSFD_BASE_POW10;
	sample->exponent = -9;
	sample->size = 1;
	sample->offset = meta_offset;
	strscpy(sample->name, STATSFD_STAT_SAMPLE_NS, stride - sizeof(*sample));

	gen->flags = STATSFD_TYPE_CUMULATIVE | STATSFD_UNIT_NONE |
		     STATSFD_BASE_POW10;
	gen->size = 1;
	gen->offset = meta_offset + sizeof(u64);
	strscpy(gen->name, STATSFD_STAT_GENERATION, stride - sizeof(*gen));
}

/* Reject a schema whose own fields (not its stats) are unusable. */
static int statsfd_check_schema(const struct statsfd_schema *schema,
				u32 name_size)
{
	if (!schema->def->name || !schema->def->descs || !schema->def->num_descs) {
		pr_err("schema %s: no name or no stats\n",
		       schema->def->name ?: "(null)");
		return -EINVAL;
	}
	if (name_size % 8 || name_size > STATSFD_NAME_SIZE_MAX) {
		pr_err("schema %s: name_size %u not a multiple of 8 up to %u\n",
		       schema->def->name, name_size, STATSFD_NAME_SIZE_MAX);
		return -EINVAL;
	}
	if (schema->def->stats_size % sizeof(u64) || schema->def->stats_size > U32_MAX) {
		pr_err("schema %s: stats_size %zu not a multiple of 8 below 4 GiB\n",
		       schema->def->name, schema->def->stats_size);
		return -EINVAL;
	}
	if (schema->def->flags & ~STATSFD_SCHEMA_FLAGS ||
	    ((schema->def->flags & STATSFD_SCHEMA_MMAP) &&
	     !(schema->def->flags & STATSFD_SCHEMA_SNAPSHOT))) {
		pr_err("schema %s: flags %#x unknown, or MMAP without SNAPSHOT\n",
		       schema->def->name, schema->def->flags);
		return -EINVAL;
	}
	if (schema->def->child_schema && !schema->def->child_schema->build_count) {
		pr_err("schema %s: child schema not initialized\n",
		       schema->def->name);
		return -EINVAL;
	}
	return 0;
}

/*
 * Validate every definition and fill @descs (the serialized descriptor
 * block, already zeroed) and @aggs.  Fills schema->num_aggs.
 */
static int statsfd_build_descs(struct statsfd_schema *schema, u32 name_size,
			       void *descs, struct statsfd_agg *aggs)
{
	u32 stride = sizeof(struct statsfd_desc) + name_size;
	u32 stats_words = schema->def->stats_size / sizeof(u64);
	u32 plain_end = 0;
	u64 agg_words = 0;
	unsigned long *used;
	u32 i, j;
	int ret = 0;

	/* One bit per u64 of the stats: may be more than kmalloc() gives. */
	used = kvcalloc(BITS_TO_LONGS(stats_words), sizeof(*used), GFP_KERNEL);
	if (!used && stats_words)
		return -ENOMEM;

	schema->num_aggs = 0;
	for (i = 0; i < schema->def->num_descs; i++) {
		const struct statsfd_desc_def *def = &schema->def->descs[i];
		struct statsfd_desc *desc = descs + (size_t)i * stride;
		bool is_agg = def->flags & STATSFD_AGG_MASK;

		if (!statsfd_name_ok(def->name, name_size)) {
			ret = statsfd_reject(schema, def,
					     "name empty, too long for name_size or not [A-Za-z0-9_]");
			goto out;
		}
		/*
		 * Reserved in every schema, not only in those with windows,
		 * so that a parser may take two last descriptors of these
		 * names for what statsfd puts there.
		 */
		if (!strcmp(def->name, STATSFD_STAT_SAMPLE_NS) ||
		    !strcmp(def->name, STATSFD_STAT_GENERATION)) {
			ret = statsfd_reject(schema, def,
					     "name reserved for the stats of update windows");
			goto out;
		}
		for (j = 0; j < i; j++) {
			if (!strcmp(schema->def->descs[j].name, def->name)) {
				ret = statsfd_reject(schema, def, "duplicate name");
				goto out;
			}
		}

		if (!is_agg) {
			if (schema->num_aggs) {
				ret = statsfd_reject(schema, def,
						     "plain stat after an aggregate");
				goto out;
			}
			ret = statsfd_check_plain(schema, def, used);
			if (ret)
				goto out;
			/*
			 * KVM's ABI says the data block holds the values "in
			 * the same order as the descriptors", and parsers that
			 * walk it rather than follow each offset rely on that:
			 * the data block is the stats struct, so the struct
			 * must follow descriptor order.
			 */
			if (def->offset < plain_end) {
				ret = statsfd_reject(schema, def,
						     "offset below the previous stat's: plain stats must be in offset order");
				goto out;
			}
			plain_end = def->offset + def->size * sizeof(u64);
			desc->flags = def->flags;
			desc->exponent = def->exponent;
			desc->size = def->size;
			desc->offset = def->offset;
			desc->bucket_size = def->bucket_size;
		} else {
			struct statsfd_agg *agg = &aggs[schema->num_aggs];

			ret = statsfd_check_agg(schema, def, desc);
			if (ret)
				goto out;
			if (schema->def->stats_size +
			    (agg_words + desc->size) * sizeof(u64) > U32_MAX) {
				ret = statsfd_reject(schema, def,
						     "data block beyond 4 GiB");
				goto out;
			}
			agg->kind = def->flags & STATSFD_AGG_MASK;
			/* A sum labelled cumulative must never go down. */
			agg->retire = agg->kind == STATSFD_AGG_SUM &&
				      ((desc->flags & STATSFD_TYPE_MASK) ==
				       STATSFD_TYPE_CUMULATIVE ||
				       (desc->flags & STATSFD_TYPE_MASK) >=
				       STATSFD_TYPE_LINEAR_HIST);
			agg->child_offset = def->offset;
			agg->size = desc->size;
			agg->index = agg_words;
			desc->offset = schema->def->stats_size +
				       agg_words * sizeof(u64);
			agg_words += desc->size;
			schema->num_aggs++;
		}
		strscpy(desc->name, def->name, name_size);
	}

	if (!bitmap_full(used, stats_words)) {
		pr_err("schema %s: stats do not cover u64 %lu of stats_size %zu\n",
		       schema->def->name, find_first_zero_bit(used, stats_words),
		       schema->def->stats_size);
		ret = -EINVAL;
		goto out;
	}
	if (!schema->num_aggs && schema->def->child_schema) {
		pr_err("schema %s: child_schema but no aggregate\n",
		       schema->def->name);
		ret = -EINVAL;
		goto out;
	}
	schema->agg_size = agg_words * sizeof(u64);
	schema->data_size = schema->def->stats_size + schema->agg_size;
	if (schema->def->flags & STATSFD_SCHEMA_SNAPSHOT) {
		if (schema->data_size > U32_MAX - STATSFD_META_SIZE) {
			pr_err("schema %s: data block beyond 4 GiB\n",
			       schema->def->name);
			ret = -EINVAL;
			goto out;
		}
		schema->meta_offset = schema->data_size;
		statsfd_build_meta(descs + (size_t)schema->def->num_descs * stride,
				   stride, schema->meta_offset);
		schema->data_size += STATSFD_META_SIZE;
	}
out:
	kvfree(used);
	return ret;
}

/*
 * Bytes of a snapshot source's values area: the mapped header and two
 * copies of the values, whole pages if it is mapped; 0 without update
 * windows.  The area's offsets and sizes are u32 (struct
 * statsfd_mmap_header), so a stats struct that would take it past that
 * is refused rather than wrapped.
 */
static int statsfd_area_size(const struct statsfd_schema *schema, u32 *size)
{
	u64 bytes;

	*size = 0;
	if (!(schema->def->flags & STATSFD_SCHEMA_SNAPSHOT))
		return 0;
	bytes = sizeof(struct statsfd_mmap_header) +
		(u64)ALIGN(schema->def->stats_size, SMP_CACHE_BYTES) +
		schema->def->stats_size;
	if (schema->def->flags & STATSFD_SCHEMA_MMAP)
		bytes = ALIGN(bytes, PAGE_SIZE);
	if (bytes > U32_MAX) {
		pr_err("schema %s: values area of %llu bytes beyond 4 GiB\n",
		       schema->def->name, bytes);
		return -EINVAL;
	}
	*size = bytes;
	return 0;
}

/**
 * statsfd_schema_init() - validate a definition and build its shared blocks
 * @schema: the schema to fill, zeroed or destroyed
 * @def: its definition, which must outlive @schema (usually static const)
 *
 * Checks every definition (flag masks, exponent signs, sizes, 8-byte
 * aligned offsets, plain stats covering stats_size exactly and in
 * descriptor order, so the data block lists the values in the order of
 * the descriptors as KVM's ABI promises, names that fit
 * name_size and are unique, aggregates that name an existing stat of the
 * child schema, at the offset they give, as "<child stat>_<kind suffix>",
 * known flags, STATSFD_SCHEMA_MMAP only with STATSFD_SCHEMA_SNAPSHOT, and
 * no stat named "sample_ns" or "generation", whatever the flags) and builds
 * the file header and the descriptor block, which for a schema with update
 * windows ends with the descriptors of those two stats.  This
 * is the only place that builds them: sources and reads share them, and
 * @schema->build_count stays 1 until statsfd_schema_destroy().  Nothing of
 * @def is copied: @schema points to it.
 *
 * Context: process context; may sleep.
 * Return: 0; -EINVAL for an invalid definition (the reason is logged) or
 * a NULL @def;
 * -EBUSY if @schema is already initialized; -ENOMEM.
 */
int statsfd_schema_init(struct statsfd_schema *schema,
			const struct statsfd_schema_def *def)
{
	u32 name_size, stride, desc_size, data_offset, file_size, num_desc;
	u32 area_size;
	struct statsfd_agg *aggs;
	void *descs;
	int ret;

	if (schema->build_count)
		return -EBUSY;
	if (!def)
		return -EINVAL;
	schema->def = def;
	name_size = schema->def->name_size ?: STATSFD_NAME_SIZE_DEFAULT;
	ret = statsfd_check_schema(schema, name_size);
	if (ret)
		return ret;

	stride = sizeof(struct statsfd_desc) + name_size;
	num_desc = schema->def->num_descs;
	if (schema->def->flags & STATSFD_SCHEMA_SNAPSHOT &&
	    check_add_overflow(num_desc, STATSFD_META_STATS, &num_desc))
		return -EINVAL;
	if (check_mul_overflow(num_desc, stride, &desc_size))
		return -EINVAL;
	descs = kzalloc(desc_size, GFP_KERNEL);
	aggs = kcalloc(schema->def->num_descs, sizeof(*aggs), GFP_KERNEL);
	if (!descs || !aggs) {
		ret = -ENOMEM;
		goto out_free;
	}
	ret = statsfd_build_descs(schema, name_size, descs, aggs);
	if (ret)
		goto out_free;

	/* Every block 8-byte aligned and adjacent: name_size % 8 == 0. */
	data_offset = sizeof(struct statsfd_header) + name_size;
	if (check_add_overflow(data_offset, schema->data_size, &file_size) ||
	    check_add_overflow(file_size, desc_size, &file_size)) {
		ret = -EINVAL;
		goto out_free;
	}

	ret = statsfd_area_size(schema, &area_size);
	if (ret)
		goto out_free;

	schema->header = (struct statsfd_header) {
		.flags = 0,
		.name_size = name_size,
		.num_desc = num_desc,
		.id_offset = sizeof(struct statsfd_header),
		.desc_offset = data_offset + schema->data_size,
		.data_offset = data_offset,
	};
	schema->desc_block = descs;
	schema->desc_size = desc_size;
	schema->file_size = file_size;
	schema->area_size = area_size;
	schema->aggs = aggs;
	schema->build_count++;
	return 0;

out_free:
	kfree(aggs);
	kfree(descs);
	schema->def = NULL;
	schema->num_aggs = 0;
	schema->data_size = 0;
	schema->agg_size = 0;
	schema->meta_offset = 0;
	return ret;
}
EXPORT_SYMBOL_NS_GPL(statsfd_schema_init, STATSFD_NS);

/**
 * statsfd_schema_destroy() - free what statsfd_schema_init() built
 * @schema: an initialized schema with no sources left
 *
 * Afterwards the schema may be initialized again.
 *
 * Context: process context.
 */
void statsfd_schema_destroy(struct statsfd_schema *schema)
{
	kfree(schema->desc_block);
	kfree(schema->aggs);
	schema->desc_block = NULL;
	schema->aggs = NULL;
	schema->desc_size = 0;
	schema->data_size = 0;
	schema->agg_size = 0;
	schema->meta_offset = 0;
	schema->area_size = 0;
	schema->file_size = 0;
	schema->num_aggs = 0;
	memset(&schema->header, 0, sizeof(schema->header));
	schema->def = NULL;
	schema->build_count = 0;
}
EXPORT_SYMBOL_NS_GPL(statsfd_schema_destroy, STATSFD_NS);
