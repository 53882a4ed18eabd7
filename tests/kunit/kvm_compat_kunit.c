// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd KUnit suite statsfd_kvm_compat: what a provider needs to serve
 * files another implementation already serves byte for byte (KVM's):
 * the descriptor block before the data (STATSFD_SCHEMA_DESC_FIRST), stats
 * in any order of offsets (STATSFD_SCHEMA_ANY_ORDER) and a stats file
 * under the anon inode name tools look for
 * (statsfd_source_getfile_named()).
 */
#include <kunit/test.h>
#include <linux/dcache.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mman.h>
#include <linux/slab.h>
#include <linux/statsfd.h>
#include <linux/string.h>

#include "statsfd_kunit.h"

struct kc_stats {
	u64 a;
	u64 hist[4];
	u64 b;
	u64 c;
};

#define KC_NAME_SIZE	48
#define KC_STRIDE	(16 + KC_NAME_SIZE)
#define KC_NUM_DESCS	4
#define KC_DESC_SIZE	(KC_NUM_DESCS * KC_STRIDE)
#define KC_DATA_SIZE	((u32)sizeof(struct kc_stats))
#define KC_FILE_SIZE	(24 + KC_NAME_SIZE + KC_DESC_SIZE + KC_DATA_SIZE)

#define STATSFD_STATS_TYPE struct kc_stats
/* In struct order. */
static const struct statsfd_desc_def kc_ordered[] = {
	STATSFD_COUNTER(a),
	STATSFD_LOGHIST_TIME_NSEC(hist),
	STATSFD_ICOUNTER(b),
	STATSFD_PCOUNTER(c),
};

/* The same stats, the last first: as KVM's x86 VM table does. */
static const struct statsfd_desc_def kc_permuted[] = {
	STATSFD_PCOUNTER(c),
	STATSFD_COUNTER(a),
	STATSFD_LOGHIST_TIME_NSEC(hist),
	STATSFD_ICOUNTER(b),
};

#undef STATSFD_STATS_TYPE

static struct statsfd_schema_def kc_def(const struct statsfd_desc_def *descs,
					u32 num, u32 flags)
{
	return (struct statsfd_schema_def) {
		.name = "kunit.kvm_compat", .descs = descs, .num_descs = num,
		.stats_size = sizeof(struct kc_stats),
		.name_size = KC_NAME_SIZE, .flags = flags,
	};
}

/* What the file must be: header | id | descriptors | data. */
static void *kc_image(struct kunit *test, const struct statsfd_schema *s,
		      const char *id, const struct kc_stats *stats)
{
	char *img = kunit_kzalloc(test, KC_FILE_SIZE, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, img);
	memcpy(img, &s->header, sizeof(s->header));
	strscpy(img + 24, id, KC_NAME_SIZE);
	memcpy(img + 24 + KC_NAME_SIZE, s->desc_block, KC_DESC_SIZE);
	memcpy(img + 24 + KC_NAME_SIZE + KC_DESC_SIZE, stats, KC_DATA_SIZE);
	return img;
}

static void kc_desc_first_puts_descriptors_before_data(struct kunit *test)
{
	struct statsfd_schema_def def = kc_def(kc_ordered, KC_NUM_DESCS,
					       STATSFD_SCHEMA_DESC_FIRST);
	struct statsfd_schema_def plain = kc_def(kc_ordered, KC_NUM_DESCS, 0);
	struct statsfd_schema *s = statsfd_kunit_schema(test, &def, NULL);
	struct statsfd_schema *p = statsfd_kunit_schema(test, &plain, NULL);

	/* KVM's offsets: id at 24, descriptors after it, then data. */
	KUNIT_EXPECT_EQ(test, s->header.flags, 0);
	KUNIT_EXPECT_EQ(test, s->header.name_size, KC_NAME_SIZE);
	KUNIT_EXPECT_EQ(test, s->header.num_desc, KC_NUM_DESCS);
	KUNIT_EXPECT_EQ(test, s->header.id_offset, 24);
	KUNIT_EXPECT_EQ(test, s->header.desc_offset, 24 + KC_NAME_SIZE);
	KUNIT_EXPECT_EQ(test, s->header.data_offset,
			24 + KC_NAME_SIZE + KC_DESC_SIZE);
	KUNIT_EXPECT_EQ(test, s->file_size, KC_FILE_SIZE);
	/* Control: the default puts the data first; nothing else moves. */
	KUNIT_EXPECT_EQ(test, p->header.data_offset, 24 + KC_NAME_SIZE);
	KUNIT_EXPECT_EQ(test, p->header.desc_offset,
			24 + KC_NAME_SIZE + KC_DATA_SIZE);
	KUNIT_EXPECT_EQ(test, p->file_size, s->file_size);
	KUNIT_EXPECT_EQ(test, p->desc_size, s->desc_size);
	KUNIT_EXPECT_MEMEQ(test, p->desc_block, s->desc_block, KC_DESC_SIZE);
}

static void kc_desc_first_reads_at_every_offset(struct kunit *test)
{
	static const size_t lens[] = { 1, 7, 8, 9, 63, 64, 65, KC_FILE_SIZE };
	struct statsfd_schema_def def = kc_def(kc_ordered, KC_NUM_DESCS,
					       STATSFD_SCHEMA_DESC_FIRST);
	struct statsfd_schema *s = statsfd_kunit_schema(test, &def, NULL);
	struct kc_stats *stats = kunit_kzalloc(test, sizeof(*stats), GFP_KERNEL);
	char __user *ubuf = statsfd_kunit_ubuf(test, PAGE_SIZE,
					       PROT_READ | PROT_WRITE);
	char *kbuf = kunit_kzalloc(test, KC_FILE_SIZE, GFP_KERNEL);
	struct statsfd_kunit_src *src;
	struct file *file;
	char *img;
	u32 pos, i;
	ssize_t n;

	KUNIT_ASSERT_NOT_NULL(test, stats);
	KUNIT_ASSERT_NOT_NULL(test, kbuf);
	*stats = (struct kc_stats) { 1, { 2, 3, 4, 5 }, 6, 7 };
	src = statsfd_kunit_source(test, s, stats, "kvm-42/vcpu-0");
	file = statsfd_kunit_file(test, src);
	img = kc_image(test, s, "kvm-42/vcpu-0", stats);

	for (pos = 0; pos <= KC_FILE_SIZE; pos++) {
		for (i = 0; i < ARRAY_SIZE(lens); i++) {
			size_t want = min_t(size_t, lens[i], KC_FILE_SIZE - pos);

			n = statsfd_kunit_read(test, file, ubuf, kbuf, lens[i], pos);
			KUNIT_ASSERT_EQ_MSG(test, n, (ssize_t)want,
					    "pos %u len %zu", pos, lens[i]);
			KUNIT_ASSERT_MEMEQ_MSG(test, kbuf, img + pos, want,
					       "pos %u len %zu", pos, lens[i]);
		}
	}

	/* The data block is live: a pread at data_offset sees a new value. */
	stats->c = 0x1234;
	n = statsfd_kunit_read(test, file, ubuf, kbuf, KC_DATA_SIZE,
			       s->header.data_offset);
	KUNIT_ASSERT_EQ(test, n, (ssize_t)KC_DATA_SIZE);
	KUNIT_EXPECT_MEMEQ(test, kbuf, stats, KC_DATA_SIZE);
}

static void kc_any_order_keeps_descriptor_order(struct kunit *test)
{
	struct statsfd_schema_def def = kc_def(kc_permuted, KC_NUM_DESCS,
					       STATSFD_SCHEMA_ANY_ORDER);
	struct statsfd_schema_def strict = kc_def(kc_permuted, KC_NUM_DESCS, 0);
	struct statsfd_schema *s = statsfd_kunit_schema(test, &def, NULL);
	struct statsfd_schema *bad = kunit_kzalloc(test, sizeof(*bad), GFP_KERNEL);
	u32 i;

	/* The descriptors come out in the order given, offsets untouched. */
	for (i = 0; i < KC_NUM_DESCS; i++) {
		const struct statsfd_desc *d = s->desc_block + i * KC_STRIDE;

		KUNIT_EXPECT_STREQ(test, d->name, kc_permuted[i].name);
		KUNIT_EXPECT_EQ(test, d->offset, kc_permuted[i].offset);
		KUNIT_EXPECT_EQ(test, d->size, kc_permuted[i].size);
	}
	KUNIT_EXPECT_EQ(test, s->data_size, KC_DATA_SIZE);

	/* Control: without the flag the same table is refused. */
	KUNIT_ASSERT_NOT_NULL(test, bad);
	KUNIT_EXPECT_EQ(test, statsfd_schema_init(bad, &strict), -EINVAL);
	KUNIT_EXPECT_EQ(test, bad->build_count, 0);
}

/* Each a table that fails to cover struct kc_stats exactly. */
static const struct statsfd_desc_def kc_overlap[] = {
	{ .flags = STATSFD_TYPE_PEAK, .size = 1, .offset = 48, .name = "c" },
	{ .flags = STATSFD_TYPE_CUMULATIVE, .size = 1, .offset = 0, .name = "a" },
	{ .flags = STATSFD_TYPE_LOG_HIST, .size = 5, .offset = 8, .name = "h" },
	{ .flags = STATSFD_TYPE_INSTANT, .size = 1, .offset = 40, .name = "b" },
};

static const struct statsfd_desc_def kc_same_offset[] = {
	{ .flags = STATSFD_TYPE_PEAK, .size = 1, .offset = 48, .name = "c" },
	{ .flags = STATSFD_TYPE_CUMULATIVE, .size = 1, .offset = 0, .name = "a" },
	{ .flags = STATSFD_TYPE_LOG_HIST, .size = 4, .offset = 8, .name = "h" },
	{ .flags = STATSFD_TYPE_INSTANT, .size = 1, .offset = 48, .name = "b" },
};

static const struct statsfd_desc_def kc_gap[] = {
	{ .flags = STATSFD_TYPE_PEAK, .size = 1, .offset = 48, .name = "c" },
	{ .flags = STATSFD_TYPE_LOG_HIST, .size = 4, .offset = 8, .name = "h" },
	{ .flags = STATSFD_TYPE_INSTANT, .size = 1, .offset = 40, .name = "b" },
};

struct kc_bad_case {
	const char *what;
	const struct statsfd_desc_def *descs;
	u32 num;
};

static const struct kc_bad_case kc_bad_cases[] = {
	{ "histogram runs into the next stat", kc_overlap, ARRAY_SIZE(kc_overlap) },
	{ "two stats at one offset", kc_same_offset, ARRAY_SIZE(kc_same_offset) },
	{ "first u64 covered by none", kc_gap, ARRAY_SIZE(kc_gap) },
};

static void kc_bad_case_desc(const struct kc_bad_case *c, char *desc)
{
	strscpy(desc, c->what, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(kc_bad, kc_bad_cases, kc_bad_case_desc);

static void kc_any_order_still_covers_the_struct(struct kunit *test)
{
	const struct kc_bad_case *c = test->param_value;
	struct statsfd_schema_def def = kc_def(c->descs, c->num,
					       STATSFD_SCHEMA_ANY_ORDER);
	struct statsfd_schema *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, s);
	KUNIT_EXPECT_EQ(test, statsfd_schema_init(s, &def), -EINVAL);
	KUNIT_EXPECT_EQ(test, s->build_count, 0);
	KUNIT_EXPECT_NULL(test, s->desc_block);
}

/* A parent finds the stat it aggregates in an unordered child schema. */
static void kc_any_order_child_can_be_aggregated(struct kunit *test)
{
	static const struct statsfd_desc_def pdescs[] = {
		STATSFD_AGG_SUM_OF(struct kc_stats, b),
		STATSFD_AGG_MAX_OF(struct kc_stats, c),
	};
	struct statsfd_schema_def cdef = kc_def(kc_permuted, KC_NUM_DESCS,
						STATSFD_SCHEMA_ANY_ORDER);
	struct statsfd_schema_def pdef = {
		.name = "kunit.kvm_compat_vm", .descs = pdescs,
		.num_descs = ARRAY_SIZE(pdescs), .name_size = KC_NAME_SIZE,
	};
	struct statsfd_schema *cs = statsfd_kunit_schema(test, &cdef, NULL);
	struct statsfd_schema *ps = statsfd_kunit_schema(test, &pdef, cs);
	struct kc_stats *cstats = kunit_kcalloc(test, 2, sizeof(*cstats),
						GFP_KERNEL);
	char __user *ubuf = statsfd_kunit_ubuf(test, PAGE_SIZE,
					       PROT_READ | PROT_WRITE);
	struct statsfd_kunit_src *parent, *child[2];
	u64 vals[2];
	ssize_t n;

	KUNIT_ASSERT_NOT_NULL(test, cstats);
	cstats[0].b = 5;
	cstats[0].c = 9;
	cstats[1].b = 6;
	cstats[1].c = 4;
	parent = statsfd_kunit_source(test, ps, NULL, "vm");
	child[0] = statsfd_kunit_source(test, cs, &cstats[0], "vcpu-0");
	child[1] = statsfd_kunit_source(test, cs, &cstats[1], "vcpu-1");
	statsfd_source_add_child(&parent->src, &child[0]->src);
	statsfd_source_add_child(&parent->src, &child[1]->src);

	n = statsfd_kunit_read(test, statsfd_kunit_file(test, parent), ubuf,
			       vals, sizeof(vals), ps->header.data_offset);
	KUNIT_EXPECT_EQ(test, n, (ssize_t)sizeof(vals));
	KUNIT_EXPECT_EQ(test, vals[0], 11);
	KUNIT_EXPECT_EQ(test, vals[1], 9);
	statsfd_source_del_child(&child[1]->src);
	statsfd_source_del_child(&child[0]->src);
}

static void kc_getfile_named_names_the_inode(struct kunit *test)
{
	struct statsfd_schema_def def = kc_def(kc_ordered, KC_NUM_DESCS,
					       STATSFD_SCHEMA_DESC_FIRST);
	struct statsfd_schema *s = statsfd_kunit_schema(test, &def, NULL);
	struct kc_stats *stats = kunit_kzalloc(test, sizeof(*stats), GFP_KERNEL);
	struct statsfd_kunit_src *src;
	struct file *file;

	KUNIT_ASSERT_NOT_NULL(test, stats);
	src = statsfd_kunit_source(test, s, stats, "kvm-42/vcpu-3");

	/* Refused without a name, before any reference is taken. */
	KUNIT_EXPECT_EQ(test, PTR_ERR(statsfd_source_getfile_named(&src->src, NULL)),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, PTR_ERR(statsfd_source_getfile_named(&src->src, "")),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, atomic_read(&src->gets), 0);

	file = statsfd_source_getfile_named(&src->src, "kvm-vcpu-stats:3");
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, file);
	KUNIT_EXPECT_STREQ(test, file->f_path.dentry->d_name.name,
			   "kvm-vcpu-stats:3");
	KUNIT_EXPECT_EQ(test, atomic_read(&src->gets), 1);
	KUNIT_EXPECT_TRUE(test, file->f_mode & FMODE_READ);
	KUNIT_EXPECT_FALSE(test, file->f_mode & FMODE_WRITE);
	__fput_sync(file);
	KUNIT_EXPECT_EQ(test, atomic_read(&src->puts), 1);

	/* Control: the core's own name. */
	file = statsfd_kunit_file(test, src);
	KUNIT_EXPECT_STREQ(test, file->f_path.dentry->d_name.name, "statsfd");
}

static struct kunit_case statsfd_kvm_compat_cases[] = {
	KUNIT_CASE(kc_desc_first_puts_descriptors_before_data),
	KUNIT_CASE(kc_desc_first_reads_at_every_offset),
	KUNIT_CASE(kc_any_order_keeps_descriptor_order),
	KUNIT_CASE_PARAM(kc_any_order_still_covers_the_struct,
			 kc_bad_gen_params),
	KUNIT_CASE(kc_any_order_child_can_be_aggregated),
	KUNIT_CASE(kc_getfile_named_names_the_inode),
	{}
};

STATSFD_KUNIT_SUITE(statsfd_kvm_compat, NULL);
