// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd KUnit suite statsfd_build_once: the header and descriptor block
 * of a schema are built once and shared by every source and every read.
 */
#include <kunit/test.h>
#include <linux/mman.h>
#include <linux/slab.h>
#include <linux/statsfd.h>
#include <linux/string.h>

#include "statsfd_kunit.h"

#define NUM_SOURCES 64

static void statsfd_schema_init_builds_exactly_once(struct kunit *test)
{
	struct statsfd_schema *s =
		statsfd_kunit_schema(test, &statsfd_kunit_child_tmpl, NULL);
	const void *block = s->desc_block;

	KUNIT_EXPECT_EQ(test, s->build_count, 1);
	/* A second init is refused and changes nothing. */
	KUNIT_EXPECT_EQ(test, statsfd_schema_init(s, s->def), -EBUSY);
	KUNIT_EXPECT_EQ(test, s->build_count, 1);
	KUNIT_EXPECT_PTR_EQ(test, s->desc_block, block);
}

static void statsfd_schema_init_again_after_destroy_builds_once(struct kunit *test)
{
	struct statsfd_schema *s =
		statsfd_kunit_schema(test, &statsfd_kunit_child_tmpl, NULL);
	const struct statsfd_schema_def *def = s->def;

	statsfd_schema_destroy(s);
	KUNIT_EXPECT_EQ(test, s->build_count, 0);
	KUNIT_EXPECT_NULL(test, s->desc_block);
	KUNIT_EXPECT_NULL(test, s->def);
	KUNIT_ASSERT_EQ(test, statsfd_schema_init(s, def), 0);
	KUNIT_EXPECT_PTR_EQ(test, s->def, def);
	KUNIT_EXPECT_EQ(test, s->build_count, 1);
	KUNIT_EXPECT_EQ(test, s->file_size, SFK_CHILD_FILE_SIZE);
}

static void statsfd_schema_init_rejects_a_null_definition(struct kunit *test)
{
	struct statsfd_schema *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, s);
	KUNIT_EXPECT_EQ(test, statsfd_schema_init(s, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, s->build_count, 0);
	KUNIT_EXPECT_NULL(test, s->def);
	KUNIT_EXPECT_NULL(test, s->desc_block);
}

static void statsfd_build_count_stays_one_across_sources_and_reads(struct kunit *test)
{
	struct statsfd_schema *cs =
		statsfd_kunit_schema(test, &statsfd_kunit_child_tmpl, NULL);
	struct statsfd_schema *ps =
		statsfd_kunit_schema(test, &statsfd_kunit_parent_tmpl, cs);
	const void *cblock = cs->desc_block, *pblock = ps->desc_block;
	struct statsfd_kunit_child *stats;
	struct statsfd_kunit_parent pstats = {};
	struct statsfd_kunit_src *parent;
	char __user *ubuf = statsfd_kunit_ubuf(test, PAGE_SIZE,
					       PROT_READ | PROT_WRITE);
	u8 *kbuf = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);
	unsigned int i, r;
	ssize_t ret;

	stats = kunit_kcalloc(test, NUM_SOURCES, sizeof(*stats), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, stats);
	KUNIT_ASSERT_NOT_NULL(test, kbuf);
	parent = statsfd_kunit_source(test, ps, &pstats, "parent");

	for (i = 0; i < NUM_SOURCES; i++) {
		struct statsfd_kunit_src *src;
		struct file *file;

		stats[i].exits = i;
		src = statsfd_kunit_source(test, cs, &stats[i], "child");
		statsfd_source_add_child(&parent->src, &src->src);
		file = statsfd_kunit_file(test, src);
		for (r = 0; r < 4; r++) {
			/* Whole file, then the descriptors alone. */
			ret = statsfd_kunit_read(test, file, ubuf, kbuf,
						 PAGE_SIZE, 0);
			KUNIT_ASSERT_EQ(test, ret, SFK_CHILD_FILE_SIZE);
			KUNIT_EXPECT_MEMEQ(test,
					   kbuf + SFK_CHILD_DESC_OFFSET,
					   cblock, cs->desc_size);
			ret = statsfd_kunit_read(test, file, ubuf, kbuf,
						 cs->desc_size,
						 SFK_CHILD_DESC_OFFSET);
			KUNIT_ASSERT_EQ(test, ret, cs->desc_size);
			KUNIT_EXPECT_MEMEQ(test, kbuf, cblock, cs->desc_size);
		}
	}
	for (r = 0; r < 16; r++) {
		ret = statsfd_kunit_read(test, statsfd_kunit_file(test, parent),
					 ubuf, kbuf, PAGE_SIZE, 0);
		KUNIT_ASSERT_EQ(test, ret, SFK_PARENT_FILE_SIZE);
	}

	KUNIT_EXPECT_EQ(test, cs->build_count, 1);
	KUNIT_EXPECT_EQ(test, ps->build_count, 1);
	KUNIT_EXPECT_PTR_EQ(test, cs->desc_block, cblock);
	KUNIT_EXPECT_PTR_EQ(test, ps->desc_block, pblock);
}

static void statsfd_read_serves_descriptors_from_the_shared_block(struct kunit *test)
{
	struct statsfd_schema *cs =
		statsfd_kunit_schema(test, &statsfd_kunit_child_tmpl, NULL);
	struct statsfd_kunit_child stats = { .exits = 99 };
	struct statsfd_kunit_src *a, *b;
	struct file *fa, *fb;
	char __user *ubuf = statsfd_kunit_ubuf(test, PAGE_SIZE,
					       PROT_READ | PROT_WRITE);
	u8 *kbuf = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);
	u8 *marked = kunit_kzalloc(test, cs->desc_size, GFP_KERNEL);
	void *real = cs->desc_block;
	u64 v;

	KUNIT_ASSERT_NOT_NULL(test, kbuf);
	KUNIT_ASSERT_NOT_NULL(test, marked);
	a = statsfd_kunit_source(test, cs, &stats, "a");
	b = statsfd_kunit_source(test, cs, &stats, "b");
	fa = statsfd_kunit_file(test, a);
	fb = statsfd_kunit_file(test, b);

	/*
	 * Swap in a marked copy of the block: reads of either source return
	 * the mark, so they copy from the one shared block and rebuild
	 * nothing; a data read is unaffected.
	 */
	memcpy(marked, real, cs->desc_size);
	marked[16] = 'X';
	cs->desc_block = marked;
	KUNIT_EXPECT_EQ(test, statsfd_kunit_read(test, fa, ubuf, kbuf, 1,
						 SFK_CHILD_DESC_OFFSET + 16), 1);
	KUNIT_EXPECT_EQ(test, kbuf[0], 'X');
	KUNIT_EXPECT_EQ(test, statsfd_kunit_read(test, fb, ubuf, kbuf, 1,
						 SFK_CHILD_DESC_OFFSET + 16), 1);
	KUNIT_EXPECT_EQ(test, kbuf[0], 'X');
	KUNIT_EXPECT_EQ(test, statsfd_kunit_read(test, fa, ubuf, &v, 8,
						 SFK_DATA_OFFSET), 8);
	KUNIT_EXPECT_EQ(test, v, 99);
	cs->desc_block = real;
	KUNIT_EXPECT_EQ(test, cs->build_count, 1);
}

static struct kunit_case statsfd_build_once_cases[] = {
	KUNIT_CASE(statsfd_schema_init_builds_exactly_once),
	KUNIT_CASE(statsfd_schema_init_again_after_destroy_builds_once),
	KUNIT_CASE(statsfd_schema_init_rejects_a_null_definition),
	KUNIT_CASE(statsfd_build_count_stays_one_across_sources_and_reads),
	KUNIT_CASE(statsfd_read_serves_descriptors_from_the_shared_block),
	{}
};

STATSFD_KUNIT_SUITE(statsfd_build_once, NULL);
