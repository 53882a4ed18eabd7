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
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/statsfd.h>
#include <linux/string.h>
#include <linux/stringhash.h>

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

/*
 * What the plain stats checked so far cover of the stats struct.  In
 * offset order (the default) they covered [0, @end) without a gap
 * (anything else was refused), so one comparison with @end tells an
 * overlap or a gap, whatever the size of the stats struct.  In any order
 * (STATSFD_SCHEMA_ANY_ORDER) @words has one bit per u64 of the struct,
 * set once a stat covers it, and @end counts the bytes covered.
 */
struct statsfd_cover {
	u32 end;
	unsigned long *words;
};

/* Claim @def's u64s in @cover's bitmap, refusing one already claimed. */
static int statsfd_cover_any_order(const struct statsfd_schema *schema,
				   const struct statsfd_desc_def *def,
				   struct statsfd_cover *cover)
{
	u32 first = def->offset / sizeof(u64), last = first + def->size;

	if (find_next_bit(cover->words, last, first) < last)
		return statsfd_reject(schema, def, "overlaps another stat");
	bitmap_set(cover->words, first, def->size);
	cover->end += def->size * sizeof(u64);
	return 0;
}

/* Check one plain stat and add its values to @cover. */
static int statsfd_check_plain(const struct statsfd_schema *schema,
			       const struct statsfd_desc_def *def,
			       struct statsfd_cover *cover)
{
	u32 type = def->flags & STATSFD_TYPE_MASK;
	u32 unit = def->flags & STATSFD_UNIT_MASK;
	u32 base = def->flags & STATSFD_BASE_MASK;
	bool linear = type == STATSFD_TYPE_LINEAR_HIST;

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
	if (cover->words)
		return statsfd_cover_any_order(schema, def, cover);
	/*
	 * KVM's ABI says the data block holds the values "in the same order
	 * as the descriptors", and parsers that walk it rather than follow
	 * each offset rely on that: the data block is the stats struct, so
	 * the struct must follow descriptor order.
	 */
	if (def->offset < cover->end)
		return statsfd_reject(schema, def,
				      "overlaps another stat, or is out of offset order: plain stats must be in offset order");
	if (def->offset > cover->end)
		return statsfd_reject(schema, def,
				      "leaves a gap before it, or is out of offset order: plain stats must cover stats_size in offset order");
	cover->end = def->offset + def->size * sizeof(u64);
	return 0;
}

/*
 * The child's plain stat whose values start at @offset, or NULL: a binary
 * search, since an initialized schema's plain stats are in offset order,
 * unless it was defined with STATSFD_SCHEMA_ANY_ORDER.
 */
static const struct statsfd_desc_def *
statsfd_find_child(const struct statsfd_schema *child, u32 offset)
{
	const struct statsfd_desc_def *descs = child->def->descs;
	u32 lo = 0, hi = statsfd_num_plain(child), mid;

	if (child->def->flags & STATSFD_SCHEMA_ANY_ORDER) {
		for (mid = lo; mid < hi; mid++)
			if (descs[mid].offset == offset)
				return &descs[mid];
		return NULL;
	}
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (descs[mid].offset == offset)
			return &descs[mid];
		if (descs[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
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
 * The names of the stats checked so far, so that finding a duplicate
 * costs time linear in the number of stats, not quadratic: an
 * open-addressing table of descriptor indices + 1 (0 is a free slot),
 * with at least twice as many slots as stats.
 */
struct statsfd_names {
	u32 *slots;
	u32 mask;
};

static int statsfd_names_init(struct statsfd_names *names, u32 num_descs)
{
	unsigned long size = roundup_pow_of_two(2UL * num_descs);

	/* Two u32 per stat, and a schema may have many: vmalloc if need be. */
	names->slots = kvcalloc(size, sizeof(*names->slots), GFP_KERNEL);
	names->mask = size - 1;
	return names->slots ? 0 : -ENOMEM;
}

/* Add the name of stat @i; false if an earlier stat has it already. */
static bool statsfd_names_add(struct statsfd_names *names,
			      const struct statsfd_desc_def *descs, u32 i)
{
	const char *name = descs[i].name;
	u32 slot = full_name_hash(NULL, name, strlen(name)) & names->mask;

	for (; names->slots[slot]; slot = (slot + 1) & names->mask)
		if (!strcmp(descs[names->slots[slot] - 1].name, name))
			return false;
	names->slots[slot] = i + 1;
	return true;
}

/* The name of stat @i: well formed, not reserved, no earlier stat's. */
static int statsfd_check_name(const struct statsfd_schema *schema, u32 i,
			      u32 name_size, struct statsfd_names *names)
{
	const struct statsfd_desc_def *def = &schema->def->descs[i];

	if (!statsfd_name_ok(def->name, name_size))
		return statsfd_reject(schema, def,
				      "name empty, too long for name_size or not [A-Za-z0-9_]");
	/*
	 * Reserved in every schema, not only in those with windows, so that
	 * a parser may take two last descriptors of these names for what
	 * statsfd puts there.
	 */
	if (!strcmp(def->name, STATSFD_STAT_SAMPLE_NS) ||
	    !strcmp(def->name, STATSFD_STAT_GENERATION))
		return statsfd_reject(schema, def,
				      "name reserved for the stats of update windows");
	if (!statsfd_names_add(names, schema->def->descs, i))
		return statsfd_reject(schema, def, "duplicate name");
	return 0;
}

/*
 * Check an aggregate, give its values the next place in the aggregate area
 * of the data block (*@agg_words u64s are taken) and say in @agg how a
 * read computes them.
 */
static int statsfd_build_agg(const struct statsfd_schema *schema,
			     const struct statsfd_desc_def *def,
			     struct statsfd_desc *desc, struct statsfd_agg *agg,
			     u64 *agg_words)
{
	u32 type;
	int ret;

	ret = statsfd_check_agg(schema, def, desc);
	if (ret)
		return ret;
	if (schema->def->stats_size +
	    (*agg_words + desc->size) * sizeof(u64) > U32_MAX)
		return statsfd_reject(schema, def, "data block beyond 4 GiB");
	agg->kind = def->flags & STATSFD_AGG_MASK;
	/* A sum labelled cumulative must never go down. */
	type = desc->flags & STATSFD_TYPE_MASK;
	agg->retire = agg->kind == STATSFD_AGG_SUM &&
		      (type == STATSFD_TYPE_CUMULATIVE ||
		       type >= STATSFD_TYPE_LINEAR_HIST);
	agg->child_offset = def->offset;
	agg->size = desc->size;
	agg->index = *agg_words;
	desc->offset = schema->def->stats_size + *agg_words * sizeof(u64);
	*agg_words += desc->size;
	return 0;
}

/*
 * Check and serialize stat @i into @desc: a plain stat as it is defined,
 * an aggregate with what it derives from the child's stat (and its @aggs
 * entry, schema->num_aggs counting them).
 */
static int statsfd_build_desc(struct statsfd_schema *schema, u32 i,
			      struct statsfd_desc *desc, u32 name_size,
			      struct statsfd_agg *aggs,
			      struct statsfd_cover *cover, u64 *agg_words)
{
	const struct statsfd_desc_def *def = &schema->def->descs[i];
	int ret;

	if (def->flags & STATSFD_AGG_MASK) {
		ret = statsfd_build_agg(schema, def, desc,
					&aggs[schema->num_aggs], agg_words);
		if (ret)
			return ret;
		schema->num_aggs++;
	} else {
		if (schema->num_aggs)
			return statsfd_reject(schema, def,
					      "plain stat after an aggregate");
		ret = statsfd_check_plain(schema, def, cover);
		if (ret)
			return ret;
		desc->flags = def->flags;
		desc->exponent = def->exponent;
		desc->size = def->size;
		desc->offset = def->offset;
		desc->bucket_size = def->bucket_size;
	}
	strscpy(desc->name, def->name, name_size);
	return 0;
}

/*
 * Once every stat is built: the plain stats cover the struct (@cover),
 * aggregates took @agg_words; the sizes of the data block and, with
 * update windows, the descriptors of their two stats after the schema's
 * own in @descs.
 */
static int statsfd_build_end(struct statsfd_schema *schema,
			     const struct statsfd_cover *cover,
			     u64 agg_words, void *descs, u32 stride)
{
	const struct statsfd_schema_def *def = schema->def;

	if (cover->end != def->stats_size) {
		pr_err("schema %s: stats do not cover u64 %zu of stats_size %zu\n",
		       def->name, cover->words ?
		       find_first_zero_bit(cover->words, def->stats_size / sizeof(u64)) :
		       cover->end / sizeof(u64), def->stats_size);
		return -EINVAL;
	}
	if (!schema->num_aggs && def->child_schema) {
		pr_err("schema %s: child_schema but no aggregate\n", def->name);
		return -EINVAL;
	}
	schema->agg_size = agg_words * sizeof(u64);
	schema->data_size = def->stats_size + schema->agg_size;
	if (!(def->flags & STATSFD_SCHEMA_SNAPSHOT))
		return 0;
	if (schema->data_size > U32_MAX - STATSFD_META_SIZE) {
		pr_err("schema %s: data block beyond 4 GiB\n", def->name);
		return -EINVAL;
	}
	schema->meta_offset = schema->data_size;
	statsfd_build_meta(descs + (size_t)def->num_descs * stride, stride,
			   schema->meta_offset);
	schema->data_size += STATSFD_META_SIZE;
	return 0;
}

/*
 * Validate every definition and fill @descs (the serialized descriptor
 * block, already zeroed) and @aggs.  Fills schema->num_aggs.  Linear in
 * the number of stats (and in the length of their names), whatever the
 * size of the stats struct.
 */
static int statsfd_build_descs(struct statsfd_schema *schema, u32 name_size,
			       void *descs, struct statsfd_agg *aggs)
{
	u32 stride = sizeof(struct statsfd_desc) + name_size;
	struct statsfd_cover cover = {};
	struct statsfd_names names;
	u64 agg_words = 0;
	int ret;
	u32 i;

	ret = statsfd_names_init(&names, schema->def->num_descs);
	if (ret)
		return ret;
	if (schema->def->flags & STATSFD_SCHEMA_ANY_ORDER) {
		/* One bit per u64: a schema may be large, vmalloc if need be. */
		cover.words = kvcalloc(BITS_TO_LONGS(schema->def->stats_size /
						     sizeof(u64)),
				       sizeof(unsigned long), GFP_KERNEL);
		if (!cover.words) {
			kvfree(names.slots);
			return -ENOMEM;
		}
	}
	schema->num_aggs = 0;
	for (i = 0; !ret && i < schema->def->num_descs; i++) {
		ret = statsfd_check_name(schema, i, name_size, &names);
		if (!ret)
			ret = statsfd_build_desc(schema, i,
						 descs + (size_t)i * stride,
						 name_size, aggs, &cover,
						 &agg_words);
	}
	if (!ret)
		ret = statsfd_build_end(schema, &cover, agg_words, descs, stride);
	kvfree(cover.words);
	kvfree(names.slots);
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
 * the descriptors as KVM's ABI promises (in any order with
 * STATSFD_SCHEMA_ANY_ORDER), names that fit
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
	u32 desc_offset, area_size;
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

	/*
	 * Every block 8-byte aligned and adjacent: name_size % 8 == 0, and
	 * so is desc_size (16 + name_size per stat).
	 */
	data_offset = sizeof(struct statsfd_header) + name_size;
	desc_offset = data_offset;
	if (check_add_overflow(data_offset, schema->data_size, &file_size) ||
	    check_add_overflow(file_size, desc_size, &file_size)) {
		ret = -EINVAL;
		goto out_free;
	}
	if (schema->def->flags & STATSFD_SCHEMA_DESC_FIRST)
		data_offset += desc_size;
	else
		desc_offset += schema->data_size;

	ret = statsfd_area_size(schema, &area_size);
	if (ret)
		goto out_free;

	schema->header = (struct statsfd_header) {
		.flags = 0,
		.name_size = name_size,
		.num_desc = num_desc,
		.id_offset = sizeof(struct statsfd_header),
		.desc_offset = desc_offset,
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
