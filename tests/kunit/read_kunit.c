// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd KUnit suite statsfd_read: the real ->read of a stats file into
 * user memory, at every block boundary and at random splits, compared with
 * a reference image built by hand; EOF, bad positions and bad buffers; live
 * values; no torn u64 under a concurrent writer.
 */
#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/kthread.h>
#include <linux/limits.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/prandom.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/statsfd.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "statsfd_kunit.h"

#define NUM_CHILDREN 3

/* A parent with three children, its file, a user buffer and the image. */
struct read_ctx {
	struct statsfd_kunit_family f;
	struct file *file;
	char __user *ubuf;
	u8 *kbuf;
	u8 *image;
	u32 size;
};

static void build_parent_image(struct kunit *test, struct read_ctx *ctx)
{
	const struct statsfd_kunit_child *c[NUM_CHILDREN];
	u64 data[SFK_PARENT_DATA_SIZE / 8];
	unsigned int i;

	for (i = 0; i < NUM_CHILDREN; i++)
		c[i] = &ctx->f.cstats[i];
	statsfd_kunit_parent_data(&ctx->f.pstats, c, NUM_CHILDREN, data);
	ctx->image = statsfd_kunit_image(test, statsfd_kunit_parent_expect,
					 SFK_PARENT_NUM_DESCS,
					 SFK_PARENT_DATA_SIZE, "vm-42-0", data);
}

static int read_init(struct kunit *test)
{
	struct read_ctx *ctx;

	ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ctx);
	test->priv = ctx;

	statsfd_kunit_family(test, &ctx->f, "vm-42-0", NUM_CHILDREN,
			     NUM_CHILDREN);
	ctx->file = statsfd_kunit_file(test, ctx->f.parent);
	ctx->size = SFK_PARENT_FILE_SIZE;
	ctx->ubuf = statsfd_kunit_ubuf(test, 2 * PAGE_SIZE,
				       PROT_READ | PROT_WRITE);
	ctx->kbuf = kunit_kzalloc(test, 2 * PAGE_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ctx->kbuf);
	build_parent_image(test, ctx);
	return 0;
}

/* Read [pos, pos + len) and expect exactly the image's bytes there. */
static void expect_range(struct kunit *test, struct read_ctx *ctx, loff_t pos,
			 size_t len)
{
	size_t want = pos >= ctx->size ? 0 : min_t(size_t, len, ctx->size - pos);
	ssize_t ret;

	ret = statsfd_kunit_read(test, ctx->file, ctx->ubuf, ctx->kbuf, len,
				 pos);
	KUNIT_EXPECT_EQ_MSG(test, ret, (ssize_t)want, "pos %lld len %zu", pos,
			    len);
	if (ret == want && want)
		KUNIT_EXPECT_MEMEQ_MSG(test, ctx->kbuf, ctx->image + pos, want,
				       "pos %lld len %zu", pos, len);
}

static void statsfd_read_whole_file_matches_reference(struct kunit *test)
{
	struct read_ctx *ctx = test->priv;

	KUNIT_EXPECT_EQ(test, ctx->f.parent->src.priv->schema->file_size,
			SFK_PARENT_FILE_SIZE);
	expect_range(test, ctx, 0, ctx->size);
}

static void statsfd_read_at_every_block_boundary(struct kunit *test)
{
	struct read_ctx *ctx = test->priv;
	/* header|id, id|data, stats|aggregates, data|descs, end of file */
	static const u32 edges[] = {
		24, SFK_DATA_OFFSET, SFK_DATA_OFFSET + SFK_PARENT_STATS_SIZE,
		SFK_PARENT_DESC_OFFSET, SFK_PARENT_FILE_SIZE,
	};
	unsigned int e;
	int d;
	size_t len;

	for (e = 0; e < ARRAY_SIZE(edges); e++)
		for (d = -9; d <= 9; d++)
			for (len = 1; len <= 17; len++)
				expect_range(test, ctx, edges[e] + d, len);
}

static void statsfd_read_every_offset_with_short_lengths(struct kunit *test)
{
	struct read_ctx *ctx = test->priv;
	loff_t pos;
	size_t len;

	for (pos = 0; pos <= ctx->size; pos++)
		for (len = 1; len <= 9; len++)
			expect_range(test, ctx, pos, len);
}

static void statsfd_read_random_splits_concatenate_to_reference(struct kunit *test)
{
	struct read_ctx *ctx = test->priv;
	struct rnd_state rnd;
	u8 *whole = kunit_kzalloc(test, ctx->size, GFP_KERNEL);
	unsigned int round;

	KUNIT_ASSERT_NOT_NULL(test, whole);
	prandom_seed_state(&rnd, 0x5eedf00d);
	for (round = 0; round < 200; round++) {
		loff_t pos = 0;

		/* Sequential chunks of random length 1..64 cover the file. */
		while (pos < ctx->size) {
			size_t len = 1 + prandom_u32_state(&rnd) % 64;
			ssize_t ret;

			ret = statsfd_kunit_read(test, ctx->file, ctx->ubuf,
						 whole + pos, len, pos);
			KUNIT_ASSERT_EQ(test, ret,
					(ssize_t)min_t(size_t, len,
						       ctx->size - pos));
			pos += ret;
		}
		KUNIT_ASSERT_MEMEQ(test, whole, ctx->image, ctx->size);
	}
	/* And random ranges anywhere, including past the end. */
	for (round = 0; round < 2000; round++)
		expect_range(test, ctx,
			     prandom_u32_state(&rnd) % (ctx->size + 16),
			     1 + prandom_u32_state(&rnd) % ctx->size);
}

static void statsfd_read_at_or_past_eof_returns_zero(struct kunit *test)
{
	struct read_ctx *ctx = test->priv;
	loff_t pos;

	pos = ctx->size;
	KUNIT_EXPECT_EQ(test, ctx->file->f_op->read(ctx->file, ctx->ubuf, 8,
						    &pos), 0);
	KUNIT_EXPECT_EQ(test, pos, ctx->size);
	pos = ctx->size + 1;
	KUNIT_EXPECT_EQ(test, ctx->file->f_op->read(ctx->file, ctx->ubuf, 8,
						    &pos), 0);
	pos = LLONG_MAX - 8;
	KUNIT_EXPECT_EQ(test, ctx->file->f_op->read(ctx->file, ctx->ubuf, 8,
						    &pos), 0);
	KUNIT_EXPECT_EQ(test, pos, LLONG_MAX - 8);
}

static void statsfd_read_negative_position_is_einval(struct kunit *test)
{
	struct read_ctx *ctx = test->priv;
	loff_t pos = -1;

	KUNIT_EXPECT_EQ(test, ctx->file->f_op->read(ctx->file, ctx->ubuf, 8,
						    &pos), -EINVAL);
	pos = LLONG_MIN;
	KUNIT_EXPECT_EQ(test, ctx->file->f_op->read(ctx->file, ctx->ubuf, 8,
						    &pos), -EINVAL);
	KUNIT_EXPECT_EQ(test, pos, LLONG_MIN);
}

static void statsfd_read_zero_length_returns_zero(struct kunit *test)
{
	struct read_ctx *ctx = test->priv;
	loff_t pos = 0;

	KUNIT_EXPECT_EQ(test, ctx->file->f_op->read(ctx->file, ctx->ubuf, 0,
						    &pos), 0);
	/* Even with a buffer that would fault. */
	KUNIT_EXPECT_EQ(test, ctx->file->f_op->read(ctx->file, NULL, 0, &pos),
			0);
	KUNIT_EXPECT_EQ(test, pos, 0);
}

static void statsfd_read_huge_length_is_short_at_eof(struct kunit *test)
{
	struct read_ctx *ctx = test->priv;
	ssize_t ret;

	ret = statsfd_kunit_read(test, ctx->file, ctx->ubuf, ctx->kbuf,
				 SIZE_MAX, 0);
	KUNIT_EXPECT_EQ(test, ret, (ssize_t)ctx->size);
	KUNIT_EXPECT_MEMEQ(test, ctx->kbuf, ctx->image, ctx->size);
	ret = statsfd_kunit_read(test, ctx->file, ctx->ubuf, ctx->kbuf,
				 SIZE_MAX, ctx->size - 3);
	KUNIT_EXPECT_EQ(test, ret, 3);
}

static void statsfd_read_advances_position_like_read(struct kunit *test)
{
	struct read_ctx *ctx = test->priv;
	loff_t pos = 0;
	ssize_t ret;

	/* Two read() calls continue where the first stopped. */
	ret = ctx->file->f_op->read(ctx->file, ctx->ubuf, 100, &pos);
	KUNIT_EXPECT_EQ(test, ret, 100);
	KUNIT_EXPECT_EQ(test, pos, 100);
	ret = ctx->file->f_op->read(ctx->file, ctx->ubuf + 100, PAGE_SIZE,
				    &pos);
	KUNIT_EXPECT_EQ(test, ret, ctx->size - 100);
	KUNIT_EXPECT_EQ(test, pos, ctx->size);
	KUNIT_ASSERT_EQ(test, copy_from_user(ctx->kbuf, ctx->ubuf, ctx->size),
			0);
	KUNIT_EXPECT_MEMEQ(test, ctx->kbuf, ctx->image, ctx->size);
}

static void statsfd_read_null_buffer_is_efault(struct kunit *test)
{
	struct read_ctx *ctx = test->priv;
	loff_t pos = 0;

	KUNIT_EXPECT_EQ(test, ctx->file->f_op->read(ctx->file, NULL, 8, &pos),
			-EFAULT);
	/* Inside the data block too, where values are copied one by one. */
	pos = SFK_DATA_OFFSET;
	KUNIT_EXPECT_EQ(test, ctx->file->f_op->read(ctx->file, NULL, 8, &pos),
			-EFAULT);
	KUNIT_EXPECT_EQ(test, pos, SFK_DATA_OFFSET);
}

static void statsfd_read_kernel_address_is_efault(struct kunit *test)
{
	struct read_ctx *ctx = test->priv;
	char __user *kaddr = (char __force __user *)ctx->kbuf;
	loff_t pos;

	for (pos = 0; pos < ctx->size; pos += 40)
		KUNIT_EXPECT_EQ(test, ctx->file->f_op->read(ctx->file, kaddr,
							    16, &pos),
				-EFAULT);
}

static void statsfd_read_readonly_buffer_is_efault(struct kunit *test)
{
	struct read_ctx *ctx = test->priv;
	char __user *ro = statsfd_kunit_ubuf(test, PAGE_SIZE, PROT_READ);
	static const loff_t starts[] = {
		0, 24, SFK_DATA_OFFSET, SFK_DATA_OFFSET + 3,
		SFK_DATA_OFFSET + SFK_PARENT_STATS_SIZE,
		SFK_PARENT_DESC_OFFSET,
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(starts); i++) {
		loff_t pos = starts[i];

		KUNIT_EXPECT_EQ_MSG(test, ctx->file->f_op->read(ctx->file, ro,
								16, &pos),
				    -EFAULT, "pos %lld", starts[i]);
	}
}

static void statsfd_read_into_unmapped_tail_is_short(struct kunit *test)
{
	struct read_ctx *ctx = test->priv;
	char __user *u = statsfd_kunit_ubuf(test, 2 * PAGE_SIZE,
					    PROT_READ | PROT_WRITE);
	static const unsigned int room[] = { 5, 8, 13, 100, 300 };
	unsigned int i;

	/* The second page goes away: the buffer runs into a hole. */
	KUNIT_ASSERT_EQ(test, vm_munmap((unsigned long)u + PAGE_SIZE,
					PAGE_SIZE), 0);
	for (i = 0; i < ARRAY_SIZE(room); i++) {
		char __user *dst = u + PAGE_SIZE - room[i];
		ssize_t ret;

		/* From the start of the data block, across every block. */
		ret = statsfd_kunit_read(test, ctx->file, dst, ctx->kbuf,
					 ctx->size, SFK_DATA_OFFSET - 8);
		KUNIT_EXPECT_GT_MSG(test, ret, 0, "room %u", room[i]);
		KUNIT_EXPECT_LE_MSG(test, ret, (ssize_t)room[i], "room %u",
				    room[i]);
		if (ret > 0)
			KUNIT_EXPECT_MEMEQ(test, ctx->kbuf,
					   ctx->image + SFK_DATA_OFFSET - 8,
					   ret);
	}
}

static void statsfd_read_sees_live_values(struct kunit *test)
{
	struct read_ctx *ctx = test->priv;

	ctx->f.pstats.created = U64_MAX;
	ctx->f.cstats[1].exits = 0;
	ctx->f.cstats[2].lin[3] += 1000;
	build_parent_image(test, ctx);
	expect_range(test, ctx, 0, ctx->size);
}

/* The parent's exits_sum, exits_min and exits_max, as ->read gives them. */
static void expect_exits_aggs(struct kunit *test, struct read_ctx *ctx,
			      u64 sum, u64 min, u64 max)
{
	u64 got[3];

	KUNIT_ASSERT_EQ(test, statsfd_kunit_read(test, ctx->file, ctx->ubuf,
						 got, sizeof(got),
						 SFK_DATA_OFFSET + 16), 24);
	KUNIT_EXPECT_EQ(test, got[0], sum);
	KUNIT_EXPECT_EQ(test, got[1], min);
	KUNIT_EXPECT_EQ(test, got[2], max);
}

static void statsfd_read_aggregates_follow_children(struct kunit *test)
{
	struct read_ctx *ctx = test->priv;

	/* Before: three children, exits 1011 + 2011 + 3011. */
	expect_exits_aggs(test, ctx, 6033, 1011, 3011);
	/*
	 * After the first child leaves: min and max are over 2011 and 3011;
	 * exits is cumulative, so its sum keeps the 1011 the child counted.
	 */
	statsfd_source_del_child(&ctx->f.child[0]->src);
	expect_exits_aggs(test, ctx, 6033, 2011, 3011);
}

#define AGG_START	(SFK_DATA_OFFSET + SFK_PARENT_STATS_SIZE)
#define AGG_BYTES	(SFK_PARENT_DESC_OFFSET - AGG_START)

static void statsfd_read_aggregates_into_pages_not_yet_faulted_in(struct kunit *test)
{
	struct read_ctx *ctx = test->priv;
	/* Fresh anonymous memory: no page is present until written. */
	char __user *u = statsfd_kunit_ubuf(test, 2 * PAGE_SIZE,
					    PROT_READ | PROT_WRITE);
	char __user *dst = u + PAGE_SIZE - 20;
	ssize_t ret;

	/*
	 * The aggregates are copied with page faults disabled (under the
	 * source's spinlock): the read must fault the pages in and retry,
	 * not come back short.  The range straddles both fresh pages.
	 */
	ret = statsfd_kunit_read(test, ctx->file, dst, ctx->kbuf, AGG_BYTES,
				 AGG_START);
	KUNIT_EXPECT_EQ(test, ret, AGG_BYTES);
	KUNIT_EXPECT_MEMEQ(test, ctx->kbuf, ctx->image + AGG_START, AGG_BYTES);
}

static void statsfd_read_short_in_aggregates_advances_position(struct kunit *test)
{
	struct read_ctx *ctx = test->priv;
	char __user *u = statsfd_kunit_ubuf(test, 2 * PAGE_SIZE,
					    PROT_READ | PROT_WRITE);
	loff_t pos = AGG_START;
	ssize_t ret;

	/* The buffer ends 20 bytes in, in the middle of the aggregates. */
	KUNIT_ASSERT_EQ(test, vm_munmap((unsigned long)u + PAGE_SIZE,
					PAGE_SIZE), 0);
	ret = ctx->file->f_op->read(ctx->file, u + PAGE_SIZE - 20, AGG_BYTES,
				    &pos);
	KUNIT_EXPECT_EQ(test, ret, 20);
	KUNIT_EXPECT_EQ(test, pos, AGG_START + 20);
	KUNIT_ASSERT_EQ(test, copy_from_user(ctx->kbuf, u + PAGE_SIZE - 20,
					     20), 0);
	KUNIT_EXPECT_MEMEQ(test, ctx->kbuf, ctx->image + AGG_START, 20);

	/* The next read() continues right there: no byte twice or lost. */
	ret = ctx->file->f_op->read(ctx->file, ctx->ubuf, PAGE_SIZE, &pos);
	KUNIT_EXPECT_EQ(test, ret, ctx->size - AGG_START - 20);
	KUNIT_EXPECT_EQ(test, pos, ctx->size);
	KUNIT_ASSERT_EQ(test, copy_from_user(ctx->kbuf, ctx->ubuf, ret), 0);
	KUNIT_EXPECT_MEMEQ(test, ctx->kbuf, ctx->image + AGG_START + 20, ret);
}

/*
 * The writer stores u64s whose eight bytes are equal; a reader that tore a
 * value would return a word whose bytes differ.
 */
struct torn_ctx {
	struct statsfd_kunit_child *stats;
};

static int torn_writer(void *data)
{
	struct torn_ctx *t = data;
	u64 *words = (u64 *)t->stats;
	u64 k = 0;
	unsigned int i;

	while (!kthread_should_stop()) {
		u64 v = (++k & 0xff) * 0x0101010101010101ULL;

		for (i = 0; i < sizeof(*t->stats) / sizeof(u64); i++)
			WRITE_ONCE(words[i], v);
		cond_resched();
	}
	return 0;
}

static void statsfd_read_never_tears_a_value(struct kunit *test)
{
	struct read_ctx *ctx = test->priv;
	struct statsfd_kunit_src *child = ctx->f.child[0];
	struct file *file = statsfd_kunit_file(test, child);
	struct torn_ctx t = { .stats = &ctx->f.cstats[0] };
	struct task_struct *writer;
	struct rnd_state rnd;
	unsigned int round, torn = 0, changes = 0;
	u8 last = 0;

	/* Before: every word uniform, so any non-uniform word is torn. */
	memset(t.stats, 0, sizeof(*t.stats));
	prandom_seed_state(&rnd, 42);
	writer = kthread_run(torn_writer, &t, "statsfd_kunit_writer");
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, writer);
	for (round = 0; round < 4000; round++) {
		/* Any slice of the values, to an odd user address too. */
		u32 off = prandom_u32_state(&rnd) % SFK_CHILD_DATA_SIZE;
		u32 len = 1 + prandom_u32_state(&rnd) %
			      (SFK_CHILD_DATA_SIZE - off);
		u32 shift = prandom_u32_state(&rnd) % 8;
		ssize_t ret;
		u32 b;

		ret = statsfd_kunit_read(test, file, ctx->ubuf + shift,
					 ctx->kbuf, len, SFK_DATA_OFFSET + off);
		if (ret != len) {
			KUNIT_FAIL(test, "short read %zd of %u", ret, len);
			break;
		}
		/* Bytes of the same u64 (same (off + b) / 8) must agree. */
		for (b = 1; b < len; b++)
			if ((off + b) % 8 && ctx->kbuf[b] != ctx->kbuf[b - 1])
				torn++;
		changes += ctx->kbuf[0] != last;
		last = ctx->kbuf[0];
		if (round % 64 == 0)
			cond_resched();
	}
	kthread_stop(writer);
	KUNIT_EXPECT_EQ(test, torn, 0);
	/* The writer really ran during the reads. */
	KUNIT_EXPECT_GT(test, changes, 0);
}

static struct kunit_case statsfd_read_cases[] = {
	KUNIT_CASE(statsfd_read_whole_file_matches_reference),
	KUNIT_CASE(statsfd_read_at_every_block_boundary),
	KUNIT_CASE(statsfd_read_every_offset_with_short_lengths),
	KUNIT_CASE(statsfd_read_random_splits_concatenate_to_reference),
	KUNIT_CASE(statsfd_read_at_or_past_eof_returns_zero),
	KUNIT_CASE(statsfd_read_negative_position_is_einval),
	KUNIT_CASE(statsfd_read_zero_length_returns_zero),
	KUNIT_CASE(statsfd_read_huge_length_is_short_at_eof),
	KUNIT_CASE(statsfd_read_advances_position_like_read),
	KUNIT_CASE(statsfd_read_null_buffer_is_efault),
	KUNIT_CASE(statsfd_read_kernel_address_is_efault),
	KUNIT_CASE(statsfd_read_readonly_buffer_is_efault),
	KUNIT_CASE(statsfd_read_into_unmapped_tail_is_short),
	KUNIT_CASE(statsfd_read_sees_live_values),
	KUNIT_CASE(statsfd_read_aggregates_follow_children),
	KUNIT_CASE(statsfd_read_aggregates_into_pages_not_yet_faulted_in),
	KUNIT_CASE(statsfd_read_short_in_aggregates_advances_position),
	KUNIT_CASE(statsfd_read_never_tears_a_value),
	{}
};

STATSFD_KUNIT_SUITE(statsfd_read, read_init);
