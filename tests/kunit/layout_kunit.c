// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd KUnit suite statsfd_layout: header and descriptor layout of
 * several schemas, name_size edge cases, id truncation, and every way a
 * schema definition can be rejected (stats out of struct order included).
 */
#include <kunit/test.h>
#include <linux/ctype.h>
#include <linux/slab.h>
#include <linux/statsfd.h>
#include <linux/string.h>

#include "statsfd_kunit.h"

/* Compare the core's descriptor block with a hand-written table. */
static void expect_descs(struct kunit *test, const struct statsfd_schema *s,
			 const struct statsfd_desc_def *expect, u32 num)
{
	u32 stride = sizeof(struct statsfd_desc) + s->header.name_size;
	char *zero = kunit_kzalloc(test, s->header.name_size, GFP_KERNEL);
	u32 i;

	KUNIT_ASSERT_NOT_NULL(test, zero);
	KUNIT_ASSERT_EQ(test, s->desc_size, num * stride);
	for (i = 0; i < num; i++) {
		const struct statsfd_desc *d = s->desc_block + i * stride;
		size_t len = strlen(expect[i].name);

		KUNIT_EXPECT_EQ_MSG(test, d->flags, expect[i].flags, "desc %u", i);
		KUNIT_EXPECT_EQ_MSG(test, d->exponent, expect[i].exponent, "desc %u", i);
		KUNIT_EXPECT_EQ_MSG(test, d->size, expect[i].size, "desc %u", i);
		KUNIT_EXPECT_EQ_MSG(test, d->offset, expect[i].offset, "desc %u", i);
		KUNIT_EXPECT_EQ_MSG(test, d->bucket_size, expect[i].bucket_size,
				    "desc %u", i);
		KUNIT_EXPECT_STREQ(test, d->name, expect[i].name);
		/* Name padding is zero: no stale kernel bytes leak out. */
		KUNIT_EXPECT_MEMEQ(test, d->name + len, zero,
				   s->header.name_size - len);
	}
}

static void expect_header(struct kunit *test, const struct statsfd_schema *s,
			  u32 name_size, u32 num_desc, u32 data_offset,
			  u32 data_size, u32 desc_offset, u32 file_size)
{
	KUNIT_EXPECT_EQ(test, s->header.flags, 0);
	KUNIT_EXPECT_EQ(test, s->header.name_size, name_size);
	KUNIT_EXPECT_EQ(test, s->header.num_desc, num_desc);
	KUNIT_EXPECT_EQ(test, s->header.id_offset, 24);
	KUNIT_EXPECT_EQ(test, s->header.data_offset, data_offset);
	KUNIT_EXPECT_EQ(test, s->header.desc_offset, desc_offset);
	KUNIT_EXPECT_EQ(test, s->data_size, data_size);
	KUNIT_EXPECT_EQ(test, s->file_size, file_size);
}

static void statsfd_schema_init_lays_out_every_scalar_and_histogram(struct kunit *test)
{
	struct statsfd_schema *s =
		statsfd_kunit_schema(test, &statsfd_kunit_child_tmpl, NULL);

	/* name_size 0 selects the KVM default of 48. */
	expect_header(test, s, SFK_NAME_SIZE, SFK_CHILD_NUM_DESCS,
		      SFK_DATA_OFFSET, SFK_CHILD_DATA_SIZE,
		      SFK_CHILD_DESC_OFFSET, SFK_CHILD_FILE_SIZE);
	KUNIT_EXPECT_EQ(test, s->num_aggs, 0);
	expect_descs(test, s, statsfd_kunit_child_expect, SFK_CHILD_NUM_DESCS);
}

static void statsfd_schema_init_appends_aggregates_after_stats(struct kunit *test)
{
	struct statsfd_schema *c =
		statsfd_kunit_schema(test, &statsfd_kunit_child_tmpl, NULL);
	struct statsfd_schema *p =
		statsfd_kunit_schema(test, &statsfd_kunit_parent_tmpl, c);

	expect_header(test, p, SFK_NAME_SIZE, SFK_PARENT_NUM_DESCS,
		      SFK_DATA_OFFSET, SFK_PARENT_DATA_SIZE,
		      SFK_PARENT_DESC_OFFSET, SFK_PARENT_FILE_SIZE);
	KUNIT_EXPECT_EQ(test, p->num_aggs, 10);
	expect_descs(test, p, statsfd_kunit_parent_expect,
		     SFK_PARENT_NUM_DESCS);
}

static void statsfd_schema_init_accepts_aggregates_only(struct kunit *test)
{
	static const struct statsfd_desc_def descs[] = {
		STATSFD_AGG_SUM_OF(struct statsfd_kunit_child, lin),
		STATSFD_AGG_COUNT_NONZERO_OF(struct statsfd_kunit_child, blocking),
	};
	static const struct statsfd_desc_def expect[] = {
		{ 0x1003, 0, 4,  0, 10, "lin_sum" },
		{ 0x5001, 0, 1, 32,  0, "blocking_count_nonzero" },
	};
	struct statsfd_schema_def tmpl = {
		.name = "kunit.aggs_only", .descs = descs, .num_descs = 2,
		.stats_size = 0,
	};
	struct statsfd_schema *c =
		statsfd_kunit_schema(test, &statsfd_kunit_child_tmpl, NULL);
	struct statsfd_schema *s = statsfd_kunit_schema(test, &tmpl, c);
	struct statsfd_kunit_src *src;

	/* No stats struct of its own: the data block is 5 aggregate values. */
	expect_header(test, s, SFK_NAME_SIZE, 2, SFK_DATA_OFFSET, 40,
		      SFK_DATA_OFFSET + 40, SFK_DATA_OFFSET + 40 + 2 * SFK_STRIDE);
	expect_descs(test, s, expect, 2);
	src = statsfd_kunit_source(test, s, NULL, "totals");
	KUNIT_EXPECT_NULL(test, src->src.stats);
}

/* Hand-built definitions, for names and sizes the macros cannot express. */
static const struct statsfd_desc_def tiny_descs[] = {
	{ .flags = STATSFD_TYPE_CUMULATIVE, .size = 1, .offset = 0,
	  .name = "abcdefg" },
};

static void statsfd_schema_init_accepts_name_of_name_size_minus_one(struct kunit *test)
{
	struct statsfd_schema_def tmpl = {
		.name = "kunit.tiny", .descs = tiny_descs, .num_descs = 1,
		.stats_size = 8, .name_size = 8,
	};
	static const struct statsfd_desc_def expect[] = {
		{ 0, 0, 1, 0, 0, "abcdefg" },
	};
	struct statsfd_schema *s = statsfd_kunit_schema(test, &tmpl, NULL);

	/* 24 header + 8 id = data at 32; 8 data; 1 * (16 + 8) descs. */
	expect_header(test, s, 8, 1, 32, 8, 40, 64);
	expect_descs(test, s, expect, 1);
}

static void statsfd_schema_init_handles_name_size_16(struct kunit *test)
{
	static const struct statsfd_desc_def descs[] = {
		{ .flags = STATSFD_TYPE_INSTANT | STATSFD_UNIT_BYTES |
			   STATSFD_BASE_POW2, .exponent = 10, .size = 1,
		  .offset = 0, .name = "kib" },
		{ .flags = STATSFD_TYPE_LOG_HIST, .size = 3, .offset = 8,
		  .name = "fifteen_chars_x" },
	};
	static const struct statsfd_desc_def expect[] = {
		{ 0x111, 10, 1, 0, 0, "kib" },
		{ 0x004, 0, 3, 8, 0, "fifteen_chars_x" },
	};
	struct statsfd_schema_def tmpl = {
		.name = "kunit.ns16", .descs = descs, .num_descs = 2,
		.stats_size = 32, .name_size = 16,
	};
	struct statsfd_schema *s = statsfd_kunit_schema(test, &tmpl, NULL);

	expect_header(test, s, 16, 2, 40, 32, 72, 72 + 2 * 32);
	expect_descs(test, s, expect, 2);
}

/*
 * KVM's ABI: "the Stats Data block contains an array of 64-bit values in
 * the same order as the descriptors".  The data block is the stats
 * struct, so definitions that list it out of order (here reversed, but
 * otherwise valid: no gap, no overlap) cannot be served and are rejected.
 */
static void statsfd_schema_init_rejects_stats_out_of_offset_order(struct kunit *test)
{
	struct statsfd_desc_def descs[] = {
		{ .flags = STATSFD_TYPE_LOG_HIST, .size = 3, .offset = 8,
		  .name = "fifteen_chars_x" },
		{ .flags = STATSFD_TYPE_INSTANT | STATSFD_UNIT_BYTES |
			   STATSFD_BASE_POW2, .exponent = 10, .size = 1,
		  .offset = 0, .name = "kib" },
	};
	struct statsfd_schema_def tmpl = {
		.name = "kunit.reversed", .descs = descs, .num_descs = 2,
		.stats_size = 32, .name_size = 16,
	};
	struct statsfd_schema *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, s);
	KUNIT_EXPECT_EQ(test, statsfd_schema_init(s, &tmpl), -EINVAL);
	/* After: nothing was built, and no definition is kept. */
	KUNIT_EXPECT_EQ(test, s->build_count, 0);
	KUNIT_EXPECT_NULL(test, s->def);
	KUNIT_EXPECT_NULL(test, s->desc_block);
	KUNIT_EXPECT_NULL(test, s->aggs);

	/* Control: the same two stats in struct order are accepted. */
	swap(descs[0], descs[1]);
	statsfd_kunit_schema(test, &tmpl, NULL);
}

static void statsfd_schema_init_handles_largest_name_size(struct kunit *test)
{
	struct statsfd_schema_def tmpl = {
		.name = "kunit.ns256", .descs = tiny_descs, .num_descs = 1,
		.stats_size = 8, .name_size = STATSFD_NAME_SIZE_MAX,
	};
	struct statsfd_schema *s = statsfd_kunit_schema(test, &tmpl, NULL);

	KUNIT_EXPECT_EQ(test, STATSFD_NAME_SIZE_MAX, 256);
	expect_header(test, s, 256, 1, 280, 8, 288, 288 + 272);
}

static void statsfd_source_init_truncates_long_id(struct kunit *test)
{
	struct statsfd_schema_def tmpl = {
		.name = "kunit.tiny", .descs = tiny_descs, .num_descs = 1,
		.stats_size = 8, .name_size = 8,
	};
	struct statsfd_schema *s = statsfd_kunit_schema(test, &tmpl, NULL);
	static const char expect[8] = "vm-1234";
	u64 stats = 0;
	struct statsfd_kunit_src *src =
		statsfd_kunit_source(test, s, &stats, "vm-12345678/vcpu-9");

	/* 7 characters and the NUL: exactly name_size bytes. */
	KUNIT_EXPECT_MEMEQ(test, src->src.priv->id, expect, sizeof(expect));
}

static void statsfd_source_init_keeps_id_of_name_size_minus_one(struct kunit *test)
{
	struct statsfd_schema_def tmpl = {
		.name = "kunit.tiny", .descs = tiny_descs, .num_descs = 1,
		.stats_size = 8, .name_size = 8,
	};
	struct statsfd_schema *s = statsfd_kunit_schema(test, &tmpl, NULL);
	static const char expect[8] = "abcdefg";
	u64 stats = 0;
	struct statsfd_kunit_src *src =
		statsfd_kunit_source(test, s, &stats, "abcdefg");

	KUNIT_EXPECT_MEMEQ(test, src->src.priv->id, expect, sizeof(expect));
}

static void statsfd_source_init_zero_pads_short_id(struct kunit *test)
{
	struct statsfd_schema *s =
		statsfd_kunit_schema(test, &statsfd_kunit_child_tmpl, NULL);
	struct statsfd_kunit_child stats = {};
	char *expect = kunit_kzalloc(test, SFK_NAME_SIZE, GFP_KERNEL);
	struct statsfd_kunit_src *src;

	KUNIT_ASSERT_NOT_NULL(test, expect);
	src = statsfd_kunit_source(test, s, &stats, "vm-7-0/vcpu-3");
	strscpy(expect, "vm-7-0/vcpu-3", SFK_NAME_SIZE);
	KUNIT_EXPECT_MEMEQ(test, src->src.priv->id, expect, SFK_NAME_SIZE);
}

static void ignore_source(struct statsfd_source *src)
{
}

static void statsfd_source_init_rejects_bad_arguments(struct kunit *test)
{
	struct statsfd_schema *s =
		statsfd_kunit_schema(test, &statsfd_kunit_child_tmpl, NULL);
	struct statsfd_schema unbuilt = {};
	static const struct statsfd_source_ops get_only = {
		.get = ignore_source,
	};
	struct statsfd_kunit_child stats[2] = {};
	struct statsfd_source src = {};

	KUNIT_EXPECT_EQ(test, statsfd_source_init(&src, &unbuilt, &stats,
						  &statsfd_kunit_ops, "x"),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, statsfd_source_init(&src, s, NULL,
						  &statsfd_kunit_ops, "x"),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, statsfd_source_init(&src, s, &stats, NULL, "x"),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, statsfd_source_init(&src, s, &stats, &get_only,
						  "x"),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, statsfd_source_init(&src, s,
						  (char *)stats + 4,
						  &statsfd_kunit_ops, "x"),
			-EINVAL);
	/* A failed init leaves nothing to destroy; destroy is a no-op. */
	KUNIT_EXPECT_NULL(test, src.priv);
	statsfd_source_destroy(&src);
}

/*
 * Invalid definitions: each case starts from a valid parent/child pair and
 * breaks exactly one thing, so -EINVAL can only come from that check.
 */
struct bad_stats {
	u64 a;
	u64 h[4];
};

#define BAD_MAX_DESCS 4

/* One way to break a schema; the name doubles as the KUnit case name. */
enum bad_kind {
	/* on bad_base: a, h */
	RESERVED_FLAG, TYPE_ABOVE_MAX, UNIT_ABOVE_MAX, BASE_ABOVE_MAX,
	SECONDS_POSITIVE_EXPONENT, NONE_NEGATIVE_EXPONENT,
	BOOLEAN_NONZERO_EXPONENT, SIZE_ZERO, SCALAR_SIZE_TWO,
	LINEAR_HIST_NO_BUCKET_SIZE, LOG_HIST_BUCKET_SIZE, SCALAR_BUCKET_SIZE,
	UNALIGNED_OFFSET, OFFSET_BEYOND_STATS, HIST_BEYOND_STATS, OVERLAP, GAP,
	OUT_OF_ORDER,
	STATS_SIZE_UNALIGNED, EMPTY_NAME, NULL_NAME, NAME_WITH_SLASH,
	NAME_TOO_LONG, DUPLICATE_NAME, NAME_SIZE_NOT_MULTIPLE_OF_8,
	NAME_SIZE_ABOVE_MAX, SCHEMA_WITHOUT_NAME, NO_DESCS, NULL_DESCS,
	CHILD_SCHEMA_WITHOUT_AGGREGATE,
	/* on bad_parent_base: a, h, a_sum, h_sum */
	AGG_WITHOUT_CHILD_SCHEMA, AGG_CHILD_NOT_INITIALIZED,
	AGG_KIND_ABOVE_MAX, AGG_OFFSET_INSIDE_HIST, AGG_MIN_OF_HIST,
	AGG_WITH_TYPE_BITS, AGG_WITH_EXPONENT, AGG_WITH_SIZE,
	AGG_WITH_BUCKET_SIZE, PLAIN_AFTER_AGG, AGG_OF_WRONG_STRUCT_TYPE,
	AGG_SUFFIX_OF_OTHER_KIND, AGG_NAME_WITH_EXTRA_TEXT,
	AGG_NAME_WITHOUT_UNDERSCORE,
};

struct bad_case {
	const char *name;
	enum bad_kind kind;
};

#define STATSFD_STATS_TYPE struct bad_stats
static const struct statsfd_desc_def bad_base[] = {
	STATSFD_COUNTER(a),
	STATSFD_LINHIST(h, 5),
};

static const struct statsfd_desc_def bad_parent_base[] = {
	STATSFD_COUNTER(a),
	STATSFD_LINHIST(h, 5),
	STATSFD_AGG_SUM_OF(struct bad_stats, a),
	STATSFD_AGG_SUM_OF(struct bad_stats, h),
};

#undef STATSFD_STATS_TYPE

/* Another struct with a u64 at offset 0, where bad_stats has "a". */
struct bad_other_stats {
	u64 z;
};

/* STATSFD_AGG() given the wrong struct type, and a mismatched suffix. */
static const struct statsfd_desc_def bad_agg_defs[] = {
	STATSFD_AGG_SUM_OF(struct bad_other_stats, z),
	STATSFD_AGG(struct bad_stats, a, STATSFD_AGG_SUM, "max"),
};

static void bad_mutate(enum bad_kind kind, struct statsfd_schema_def *s,
		       struct statsfd_desc_def *d, struct statsfd_schema *child)
{
	switch (kind) {
	case RESERVED_FLAG:
		d[0].flags |= 1u << 16;
		break;
	case TYPE_ABOVE_MAX:
		d[0].flags |= 5 << STATSFD_TYPE_SHIFT;
		break;
	case UNIT_ABOVE_MAX:
		d[0].flags |= 5 << STATSFD_UNIT_SHIFT;
		break;
	case BASE_ABOVE_MAX:
		d[0].flags |= 2 << STATSFD_BASE_SHIFT;
		break;
	case SECONDS_POSITIVE_EXPONENT:
		d[0].flags |= STATSFD_UNIT_SECONDS;
		d[0].exponent = 1;
		break;
	case NONE_NEGATIVE_EXPONENT:
		d[0].exponent = -1;
		break;
	case BOOLEAN_NONZERO_EXPONENT:
		d[0].flags |= STATSFD_UNIT_BOOLEAN;
		d[0].exponent = 1;
		break;
	case SIZE_ZERO:
		d[0].size = 0;
		break;
	case SCALAR_SIZE_TWO:
		d[0].size = 2;
		break;
	case LINEAR_HIST_NO_BUCKET_SIZE:
		d[1].bucket_size = 0;
		break;
	case LOG_HIST_BUCKET_SIZE:
		d[1].flags = STATSFD_TYPE_LOG_HIST;
		d[1].bucket_size = 3;
		break;
	case SCALAR_BUCKET_SIZE:
		d[0].bucket_size = 1;
		break;
	case UNALIGNED_OFFSET:
		d[0].offset = 4;
		break;
	case OFFSET_BEYOND_STATS:
		d[0].offset = 40;
		break;
	case HIST_BEYOND_STATS:
		d[1].offset = 16;
		break;
	case OVERLAP:
		d[0].offset = 8;
		break;
	case GAP:
		s->stats_size += 8;
		break;
	case OUT_OF_ORDER:
		/* Still no gap and no overlap: only the order is wrong. */
		swap(d[0], d[1]);
		break;
	case STATS_SIZE_UNALIGNED:
		s->stats_size += 4;
		break;
	case EMPTY_NAME:
		d[0].name = "";
		break;
	case NULL_NAME:
		d[0].name = NULL;
		break;
	case NAME_WITH_SLASH:
		d[0].name = "a/b";
		break;
	case NAME_TOO_LONG:
		s->name_size = 8;
		d[0].name = "abcdefgh";
		break;
	case DUPLICATE_NAME:
		d[1].name = "a";
		break;
	case NAME_SIZE_NOT_MULTIPLE_OF_8:
		s->name_size = 12;
		break;
	case NAME_SIZE_ABOVE_MAX:
		s->name_size = STATSFD_NAME_SIZE_MAX + 8;
		break;
	case SCHEMA_WITHOUT_NAME:
		s->name = NULL;
		break;
	case NO_DESCS:
		s->num_descs = 0;
		break;
	case NULL_DESCS:
		s->descs = NULL;
		break;
	case CHILD_SCHEMA_WITHOUT_AGGREGATE:
	case AGG_CHILD_NOT_INITIALIZED:
		if (kind == AGG_CHILD_NOT_INITIALIZED)
			statsfd_schema_destroy(child);
		s->child_schema = child;
		break;
	case AGG_WITHOUT_CHILD_SCHEMA:
		s->child_schema = NULL;
		break;
	case AGG_KIND_ABOVE_MAX:
		d[2].flags = 6 << STATSFD_AGG_SHIFT;
		break;
	case AGG_OFFSET_INSIDE_HIST:
		d[3].offset = 16;
		break;
	case AGG_MIN_OF_HIST:
		d[3].flags = STATSFD_AGG_MINIMUM;
		d[3].name = "h_min";
		break;
	case AGG_WITH_TYPE_BITS:
		d[2].flags |= STATSFD_TYPE_INSTANT;
		break;
	case AGG_WITH_EXPONENT:
		d[2].exponent = 1;
		break;
	case AGG_WITH_SIZE:
		d[2].size = 1;
		break;
	case AGG_WITH_BUCKET_SIZE:
		d[3].bucket_size = 5;
		break;
	case PLAIN_AFTER_AGG:
		swap(d[1], d[2]);
		break;
	case AGG_OF_WRONG_STRUCT_TYPE:
		/* Same offset as a_sum: only the name tells them apart. */
		d[2] = bad_agg_defs[0];
		break;
	case AGG_SUFFIX_OF_OTHER_KIND:
		d[2] = bad_agg_defs[1];
		break;
	case AGG_NAME_WITH_EXTRA_TEXT:
		d[2].name = "a_sum2";
		break;
	case AGG_NAME_WITHOUT_UNDERSCORE:
		d[2].name = "asum";
		break;
	}
}

#define BAD_CASE(kind) { #kind, kind }

static const struct bad_case bad_plain_cases[] = {
	BAD_CASE(RESERVED_FLAG), BAD_CASE(TYPE_ABOVE_MAX),
	BAD_CASE(UNIT_ABOVE_MAX), BAD_CASE(BASE_ABOVE_MAX),
	BAD_CASE(SECONDS_POSITIVE_EXPONENT), BAD_CASE(NONE_NEGATIVE_EXPONENT),
	BAD_CASE(BOOLEAN_NONZERO_EXPONENT), BAD_CASE(SIZE_ZERO),
	BAD_CASE(SCALAR_SIZE_TWO), BAD_CASE(LINEAR_HIST_NO_BUCKET_SIZE),
	BAD_CASE(LOG_HIST_BUCKET_SIZE), BAD_CASE(SCALAR_BUCKET_SIZE),
	BAD_CASE(UNALIGNED_OFFSET), BAD_CASE(OFFSET_BEYOND_STATS),
	BAD_CASE(HIST_BEYOND_STATS), BAD_CASE(OVERLAP), BAD_CASE(GAP),
	BAD_CASE(OUT_OF_ORDER),
	BAD_CASE(STATS_SIZE_UNALIGNED), BAD_CASE(EMPTY_NAME),
	BAD_CASE(NULL_NAME), BAD_CASE(NAME_WITH_SLASH),
	BAD_CASE(NAME_TOO_LONG), BAD_CASE(DUPLICATE_NAME),
	BAD_CASE(NAME_SIZE_NOT_MULTIPLE_OF_8), BAD_CASE(NAME_SIZE_ABOVE_MAX),
	BAD_CASE(SCHEMA_WITHOUT_NAME), BAD_CASE(NO_DESCS),
	BAD_CASE(NULL_DESCS), BAD_CASE(CHILD_SCHEMA_WITHOUT_AGGREGATE),
};

static const struct bad_case bad_parent_cases[] = {
	BAD_CASE(AGG_WITHOUT_CHILD_SCHEMA), BAD_CASE(AGG_CHILD_NOT_INITIALIZED),
	BAD_CASE(AGG_KIND_ABOVE_MAX), BAD_CASE(AGG_OFFSET_INSIDE_HIST),
	BAD_CASE(AGG_MIN_OF_HIST), BAD_CASE(AGG_WITH_TYPE_BITS),
	BAD_CASE(AGG_WITH_EXPONENT), BAD_CASE(AGG_WITH_SIZE),
	BAD_CASE(AGG_WITH_BUCKET_SIZE), BAD_CASE(PLAIN_AFTER_AGG),
	BAD_CASE(AGG_OF_WRONG_STRUCT_TYPE), BAD_CASE(AGG_SUFFIX_OF_OTHER_KIND),
	BAD_CASE(AGG_NAME_WITH_EXTRA_TEXT), BAD_CASE(AGG_NAME_WITHOUT_UNDERSCORE),
};

static void bad_case_desc(const struct bad_case *c, char *desc)
{
	char *p;

	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
	for (p = desc; *p; p++)
		*p = tolower(*p);
}

KUNIT_ARRAY_PARAM(bad_plain, bad_plain_cases, bad_case_desc);
KUNIT_ARRAY_PARAM(bad_parent, bad_parent_cases, bad_case_desc);

static void expect_rejected(struct kunit *test, bool parent)
{
	const struct bad_case *c = test->param_value;
	const struct statsfd_desc_def *base = parent ? bad_parent_base : bad_base;
	u32 num = parent ? ARRAY_SIZE(bad_parent_base) : ARRAY_SIZE(bad_base);
	struct statsfd_desc_def *defs;
	struct statsfd_schema *child, *s;
	struct statsfd_schema_def *sd;
	struct statsfd_schema_def tmpl = {
		.name = "kunit.bad_child", .descs = bad_base,
		.num_descs = ARRAY_SIZE(bad_base),
		.stats_size = sizeof(struct bad_stats),
	};

	child = statsfd_kunit_schema(test, &tmpl, NULL);
	defs = kunit_kcalloc(test, BAD_MAX_DESCS, sizeof(*defs), GFP_KERNEL);
	s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	sd = kunit_kzalloc(test, sizeof(*sd), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, defs);
	KUNIT_ASSERT_NOT_NULL(test, s);
	KUNIT_ASSERT_NOT_NULL(test, sd);
	memcpy(defs, base, num * sizeof(*defs));
	sd->name = "kunit.bad";
	sd->descs = defs;
	sd->num_descs = num;
	sd->stats_size = sizeof(struct bad_stats);
	sd->child_schema = parent ? child : NULL;

	/* Before: the unmodified definition is valid. */
	KUNIT_ASSERT_EQ(test, statsfd_schema_init(s, sd), 0);
	statsfd_schema_destroy(s);

	bad_mutate(c->kind, sd, defs, child);
	KUNIT_EXPECT_EQ(test, statsfd_schema_init(s, sd), -EINVAL);
	/* After: nothing was built. */
	KUNIT_EXPECT_EQ(test, s->build_count, 0);
	KUNIT_EXPECT_NULL(test, s->desc_block);
	KUNIT_EXPECT_NULL(test, s->aggs);
}

static void statsfd_schema_init_rejects_invalid_stat(struct kunit *test)
{
	expect_rejected(test, false);
}

static void statsfd_schema_init_rejects_invalid_aggregate(struct kunit *test)
{
	expect_rejected(test, true);
}

static void statsfd_desc_macros_encode_kvm_flags(struct kunit *test)
{
	struct m {
		u64 c, ic, pc, ib, pb, t, pt, b, cy;
		u64 lh[3], lht[2], gh[5], ght[4];
	};
#define STATSFD_STATS_TYPE struct m
	static const struct statsfd_desc_def d[] = {
		STATSFD_COUNTER(c),
		STATSFD_ICOUNTER(ic),
		STATSFD_PCOUNTER(pc),
		STATSFD_IBOOLEAN(ib),
		STATSFD_PBOOLEAN(pb),
		STATSFD_TIME_NSEC(t),
		STATSFD_PEAK_TIME_NSEC(pt),
		STATSFD_BYTES(b),
		STATSFD_CYCLES(cy),
		STATSFD_LINHIST(lh, 7),
		STATSFD_LINHIST_TIME_NSEC(lht, 1000),
		STATSFD_LOGHIST(gh),
		STATSFD_LOGHIST_TIME_NSEC(ght),
	};

#undef STATSFD_STATS_TYPE
	/* flags, exponent, size, offset, bucket_size, name */
	static const struct statsfd_desc_def e[] = {
		{ 0x000,  0, 1,   0,    0, "c" },
		{ 0x001,  0, 1,   8,    0, "ic" },
		{ 0x002,  0, 1,  16,    0, "pc" },
		{ 0x041,  0, 1,  24,    0, "ib" },
		{ 0x042,  0, 1,  32,    0, "pb" },
		{ 0x020, -9, 1,  40,    0, "t" },
		{ 0x022, -9, 1,  48,    0, "pt" },
		{ 0x110,  0, 1,  56,    0, "b" },
		{ 0x030,  0, 1,  64,    0, "cy" },
		{ 0x003,  0, 3,  72,    7, "lh" },
		{ 0x023, -9, 2,  96, 1000, "lht" },
		{ 0x004,  0, 5, 112,    0, "gh" },
		{ 0x024, -9, 4, 152,    0, "ght" },
	};
	struct statsfd_schema_def tmpl = {
		.name = "kunit.macros", .descs = d, .num_descs = ARRAY_SIZE(d),
		.stats_size = sizeof(struct m),
	};
	struct statsfd_schema *s;
	u32 i;

	for (i = 0; i < ARRAY_SIZE(d); i++) {
		KUNIT_EXPECT_EQ_MSG(test, d[i].flags, e[i].flags, "%s", e[i].name);
		KUNIT_EXPECT_EQ_MSG(test, d[i].exponent, e[i].exponent, "%s", e[i].name);
		KUNIT_EXPECT_EQ_MSG(test, d[i].size, e[i].size, "%s", e[i].name);
		KUNIT_EXPECT_EQ_MSG(test, d[i].offset, e[i].offset, "%s", e[i].name);
		KUNIT_EXPECT_EQ_MSG(test, d[i].bucket_size, e[i].bucket_size,
				    "%s", e[i].name);
		KUNIT_EXPECT_STREQ(test, d[i].name, e[i].name);
	}
	/* And the core serializes them unchanged. */
	s = statsfd_kunit_schema(test, &tmpl, NULL);
	expect_descs(test, s, e, ARRAY_SIZE(e));
}

static struct kunit_case statsfd_layout_cases[] = {
	KUNIT_CASE(statsfd_schema_init_lays_out_every_scalar_and_histogram),
	KUNIT_CASE(statsfd_schema_init_appends_aggregates_after_stats),
	KUNIT_CASE(statsfd_schema_init_accepts_aggregates_only),
	KUNIT_CASE(statsfd_schema_init_accepts_name_of_name_size_minus_one),
	KUNIT_CASE(statsfd_schema_init_handles_name_size_16),
	KUNIT_CASE(statsfd_schema_init_rejects_stats_out_of_offset_order),
	KUNIT_CASE(statsfd_schema_init_handles_largest_name_size),
	KUNIT_CASE(statsfd_source_init_truncates_long_id),
	KUNIT_CASE(statsfd_source_init_keeps_id_of_name_size_minus_one),
	KUNIT_CASE(statsfd_source_init_zero_pads_short_id),
	KUNIT_CASE(statsfd_source_init_rejects_bad_arguments),
	KUNIT_CASE_PARAM(statsfd_schema_init_rejects_invalid_stat,
			 bad_plain_gen_params),
	KUNIT_CASE_PARAM(statsfd_schema_init_rejects_invalid_aggregate,
			 bad_parent_gen_params),
	KUNIT_CASE(statsfd_desc_macros_encode_kvm_flags),
	{}
};

STATSFD_KUNIT_SUITE(statsfd_layout, NULL);
