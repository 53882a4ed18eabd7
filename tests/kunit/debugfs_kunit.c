// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd KUnit suite statsfd_debugfs: the one-file-per-stat text view,
 * its content for scalars, histograms, aggregates and sources with update
 * windows (their last window), and its removal.
 */
#include <kunit/test.h>
#include <linux/dcache.h>
#include <linux/debugfs.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/statsfd.h>

#include "statsfd_kunit.h"

struct dfs_ctx {
	struct statsfd_kunit_parent pstats;
	struct statsfd_kunit_child cstats[2];
	struct statsfd_kunit_src *parent;
	struct statsfd_kunit_src *child[2];
	struct dentry *dir;
};

static void dfs_remove(void *dir)
{
	debugfs_remove(dir);
}

static int dfs_init(struct kunit *test)
{
	struct statsfd_schema *cs, *ps;
	struct dfs_ctx *ctx;
	unsigned int i;

	/*
	 * KUnit runs only in the debug kernel, which has debugfs: a core
	 * without its root is broken, so fail rather than skip.
	 */
	KUNIT_ASSERT_NOT_ERR_OR_NULL_MSG(test, statsfd_debugfs_root(),
					 "statsfd.ko has no debugfs root");
	ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ctx);
	test->priv = ctx;

	ctx->dir = debugfs_create_dir("kunit", statsfd_debugfs_root());
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, ctx->dir);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, dfs_remove,
							ctx->dir), 0);
	cs = statsfd_kunit_schema(test, &statsfd_kunit_child_tmpl, NULL);
	ps = statsfd_kunit_schema(test, &statsfd_kunit_parent_tmpl, cs);
	ctx->parent = statsfd_kunit_source(test, ps, &ctx->pstats, "vm-1-0");
	for (i = 0; i < 2; i++) {
		ctx->child[i] = statsfd_kunit_source(test, cs, &ctx->cstats[i],
						     "vcpu");
		statsfd_source_add_child(&ctx->parent->src,
					 &ctx->child[i]->src);
	}
	return 0;
}

/* What reading @stat in @dir shows, through the file's own i_private. */
static const char *show(struct kunit *test, struct dentry *dir,
			const char *stat)
{
	struct seq_file m;

	statsfd_kunit_debugfs_seq(test, dir, stat, &m);
	KUNIT_ASSERT_EQ(test, statsfd_debugfs_show(&m, NULL), 0);
	return m.buf;
}

/* A source of the snapshot child schema (values it owns), "vcpu". */
static struct statsfd_kunit_src *snap_source(struct kunit *test)
{
	struct statsfd_schema *cs =
		statsfd_kunit_schema(test, &statsfd_kunit_snap_child_tmpl, NULL);

	return statsfd_kunit_source(test, cs, NULL, "vcpu");
}

/* Reading each stat of @want[i][0] in @dir shows @want[i][1]. */
static void expect_shows(struct kunit *test, struct dentry *dir,
			 const char *const (*want)[2], unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		KUNIT_EXPECT_STREQ_MSG(test, show(test, dir, want[i][0]),
				       want[i][1], "stat %s", want[i][0]);
}

/* @src's directory @name, created under the test's; its dentry. */
static struct dentry *dfs_create(struct kunit *test,
				 struct statsfd_source *src, const char *name)
{
	struct dfs_ctx *ctx = test->priv;

	KUNIT_ASSERT_EQ(test, statsfd_source_debugfs_create(src, name,
							    ctx->dir), 0);
	return src->priv->debugfs->dir;
}

static void statsfd_debugfs_root_is_named_statsfd(struct kunit *test)
{
	struct dentry *root = statsfd_debugfs_root();

	KUNIT_EXPECT_STREQ(test, root->d_name.name, "statsfd");
}

static void statsfd_source_debugfs_create_makes_one_file_per_stat(struct kunit *test)
{
	struct dfs_ctx *ctx = test->priv;
	struct dentry *vm, *d;
	unsigned int i;

	KUNIT_ASSERT_EQ(test, statsfd_source_debugfs_create(&ctx->parent->src,
							    "vm-1-0", ctx->dir),
			0);
	vm = debugfs_lookup("vm-1-0", ctx->dir);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, vm);
	for (i = 0; i < SFK_PARENT_NUM_DESCS; i++) {
		const char *name = statsfd_kunit_parent_expect[i].name;

		d = debugfs_lookup(name, vm);
		KUNIT_EXPECT_NOT_ERR_OR_NULL_MSG(test, d, "%s", name);
		if (!IS_ERR_OR_NULL(d)) {
			KUNIT_EXPECT_EQ(test, d_inode(d)->i_mode & 0777, 0444);
			dput(d);
		}
	}
	dput(vm);
}

static void statsfd_debugfs_show_prints_scalar_with_newline(struct kunit *test)
{
	static const char *const want[][2] = {
		{ "exits", "42\n" }, { "cycles", "18446744073709551615\n" },
		{ "blocking", "0\n" },
	};
	struct dfs_ctx *ctx = test->priv;
	struct statsfd_source *c = &ctx->child[0]->src;
	struct dentry *dir;

	ctx->cstats[0].exits = 42;
	ctx->cstats[0].cycles = U64_MAX;
	dir = dfs_create(test, c, "vcpu-0");
	expect_shows(test, dir, want, ARRAY_SIZE(want));
	/* Live: the next read shows the new value. */
	ctx->cstats[0].exits = 43;
	KUNIT_EXPECT_STREQ(test, show(test, dir, "exits"), "43\n");
}

static void statsfd_debugfs_show_prints_histogram_on_one_line(struct kunit *test)
{
	static const char *const want[][2] = {
		{ "lin", "1 22 0 4444\n" }, { "log", "0 0 0 0 0 0\n" },
	};
	struct dfs_ctx *ctx = test->priv;
	struct statsfd_source *c = &ctx->child[1]->src;

	ctx->cstats[1].lin[0] = 1;
	ctx->cstats[1].lin[1] = 22;
	ctx->cstats[1].lin[3] = 4444;
	expect_shows(test, dfs_create(test, c, "vcpu-1"), want,
		     ARRAY_SIZE(want));
}

static void statsfd_debugfs_show_computes_aggregates(struct kunit *test)
{
	static const char *const want[][2] = {
		{ "created", "2\n" }, { "exits_sum", "11\n" },
		{ "exits_min", "3\n" }, { "exits_avg", "5\n" },
		{ "log_sum", "0 0 0 0 0 3\n" },
	};
	struct dfs_ctx *ctx = test->priv;
	struct statsfd_source *p = &ctx->parent->src;

	ctx->pstats.created = 2;
	ctx->cstats[0].exits = 3;
	ctx->cstats[1].exits = 8;
	ctx->cstats[0].log[5] = 1;
	ctx->cstats[1].log[5] = 2;
	expect_shows(test, dfs_create(test, p, "vm"), want, ARRAY_SIZE(want));
}

/*
 * A source with update windows shows what its last window published, not
 * the live values its writer is changing inside a window still open.
 */
static void statsfd_debugfs_show_of_a_snapshot_source_is_its_last_window(struct kunit *test)
{
	struct dfs_ctx *ctx = test->priv;
	struct statsfd_kunit_src *s = snap_source(test);
	struct statsfd_kunit_child *v = statsfd_source_stats(&s->src);
	struct dentry *dir;

	statsfd_update_begin(&s->src);
	statsfd_stat_set(&v->exits, 4);
	statsfd_stat_set(&v->lin[1], 2);
	statsfd_update_end(&s->src);
	KUNIT_ASSERT_EQ(test, statsfd_source_debugfs_create(&s->src, "vcpu-2",
							    ctx->dir), 0);
	dir = statsfd_source_debugfs_dir(&s->src);
	statsfd_update_begin(&s->src);
	statsfd_stat_set(&v->exits, 5);
	statsfd_stat_set(&v->lin[1], 3);
	KUNIT_EXPECT_STREQ(test, show(test, dir, "exits"), "4\n");
	KUNIT_EXPECT_STREQ(test, show(test, dir, "lin"), "0 2 0 0\n");
	statsfd_update_end(&s->src);
	KUNIT_EXPECT_STREQ(test, show(test, dir, "exits"), "5\n");
	KUNIT_EXPECT_STREQ(test, show(test, dir, "lin"), "0 3 0 0\n");
}

/*
 * The buffer a snapshot source's view copies the published values into
 * comes with the view: a source without one pays nothing for it, and a
 * plain source's view, which reads the values in place, has none.
 */
static void statsfd_source_debugfs_create_gives_only_a_copying_view_a_buffer(struct kunit *test)
{
	struct dfs_ctx *ctx = test->priv;
	struct statsfd_kunit_src *s = snap_source(test);
	struct statsfd_source *plain = &ctx->child[0]->src;

	KUNIT_EXPECT_NULL(test, s->src.priv->debugfs);
	KUNIT_ASSERT_EQ(test, statsfd_source_debugfs_create(&s->src, "snap",
							    ctx->dir), 0);
	KUNIT_ASSERT_NOT_NULL(test, s->src.priv->debugfs);
	KUNIT_EXPECT_NOT_NULL(test, s->src.priv->debugfs->buf);
	statsfd_source_debugfs_remove(&s->src);
	KUNIT_EXPECT_NULL(test, s->src.priv->debugfs);

	KUNIT_ASSERT_EQ(test, statsfd_source_debugfs_create(plain, "plain",
							    ctx->dir), 0);
	KUNIT_ASSERT_NOT_NULL(test, plain->priv->debugfs);
	KUNIT_EXPECT_NULL(test, plain->priv->debugfs->buf);
}

static void statsfd_source_debugfs_create_twice_is_ebusy(struct kunit *test)
{
	struct dfs_ctx *ctx = test->priv;
	struct statsfd_source *c = &ctx->child[0]->src;

	KUNIT_ASSERT_EQ(test, statsfd_source_debugfs_create(c, "once",
							    ctx->dir), 0);
	KUNIT_EXPECT_EQ(test, statsfd_source_debugfs_create(c, "twice",
							    ctx->dir), -EBUSY);
}

static void statsfd_source_debugfs_create_existing_name_fails_cleanly(struct kunit *test)
{
	struct dfs_ctx *ctx = test->priv;

	KUNIT_ASSERT_EQ(test, statsfd_source_debugfs_create(&ctx->child[0]->src,
							    "same", ctx->dir),
			0);
	KUNIT_EXPECT_EQ(test,
			statsfd_source_debugfs_create(&ctx->child[1]->src,
						      "same", ctx->dir),
			-EEXIST);
	KUNIT_EXPECT_NULL(test, ctx->child[1]->src.priv->debugfs);
}

static void statsfd_source_debugfs_remove_deletes_directory(struct kunit *test)
{
	struct dfs_ctx *ctx = test->priv;
	struct statsfd_source *c = &ctx->child[0]->src;
	struct dentry *d;

	KUNIT_ASSERT_EQ(test, statsfd_source_debugfs_create(c, "gone",
							    ctx->dir), 0);
	statsfd_source_debugfs_remove(c);
	KUNIT_EXPECT_NULL(test, c->priv->debugfs);
	d = debugfs_lookup("gone", ctx->dir);
	KUNIT_EXPECT_NULL(test, d);
	dput(d);
	/* Removing again, or creating anew, both work. */
	statsfd_source_debugfs_remove(c);
	KUNIT_EXPECT_EQ(test, statsfd_source_debugfs_create(c, "gone",
							    ctx->dir), 0);
}

static void statsfd_source_debugfs_dir_follows_the_view(struct kunit *test)
{
	struct dfs_ctx *ctx = test->priv;
	struct statsfd_source *c = &ctx->child[0]->src;
	struct dentry *d;

	KUNIT_EXPECT_NULL(test, statsfd_source_debugfs_dir(c));
	KUNIT_ASSERT_EQ(test, statsfd_source_debugfs_create(c, "where",
							    ctx->dir), 0);
	d = debugfs_lookup("where", ctx->dir);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, d);
	KUNIT_EXPECT_PTR_EQ(test, statsfd_source_debugfs_dir(c), d);
	dput(d);
	statsfd_source_debugfs_remove(c);
	KUNIT_EXPECT_NULL(test, statsfd_source_debugfs_dir(c));
}

/*
 * Destroying a parent first: children's views usually live inside the
 * parent's directory, which goes recursively, so they must go (and be
 * forgotten) before it; the children's own destroy then touches no freed
 * dentry (KASAN would report a use-after-free).
 */
static void statsfd_source_destroy_parent_first_removes_child_views(struct kunit *test)
{
	struct dfs_ctx *ctx = test->priv;
	struct statsfd_source *p = &ctx->parent->src;
	struct statsfd_source *c0 = &ctx->child[0]->src;
	struct statsfd_source *c1 = &ctx->child[1]->src;
	struct dentry *vm_dir;

	KUNIT_ASSERT_EQ(test, statsfd_source_debugfs_create(p, "vm", ctx->dir),
			0);
	vm_dir = statsfd_source_debugfs_dir(p);
	KUNIT_ASSERT_EQ(test, statsfd_source_debugfs_create(c0, "vcpu-0",
							    vm_dir), 0);
	KUNIT_ASSERT_EQ(test, statsfd_source_debugfs_create(c1, "vcpu-1",
							    vm_dir), 0);

	statsfd_source_destroy(p);
	KUNIT_EXPECT_NULL(test, c0->priv->debugfs);
	KUNIT_EXPECT_NULL(test, c1->priv->debugfs);
	KUNIT_EXPECT_NULL(test, c0->priv->parent);
	KUNIT_EXPECT_NULL(test, statsfd_source_debugfs_dir(c0));
	statsfd_source_destroy(c0);
	statsfd_source_destroy(c1);
	KUNIT_EXPECT_NULL(test, c0->priv);
}

/* An id may contain '/'; a directory name cannot: it becomes '!'. */
static void statsfd_source_debugfs_create_replaces_slash(struct kunit *test)
{
	struct dfs_ctx *ctx = test->priv;
	struct statsfd_source *c = &ctx->child[0]->src;
	const char *name = "vm-1-0/vcpu-2";
	struct dentry *d;

	KUNIT_ASSERT_EQ(test, statsfd_source_debugfs_create(c, name, ctx->dir),
			0);
	d = debugfs_lookup("vm-1-0!vcpu-2", ctx->dir);
	KUNIT_EXPECT_NOT_ERR_OR_NULL(test, d);
	KUNIT_EXPECT_PTR_EQ(test, statsfd_source_debugfs_dir(c), d);
	dput(d);
	/* The caller's string is left alone. */
	KUNIT_EXPECT_STREQ(test, name, "vm-1-0/vcpu-2");
}

/* Names that are no directory name at all. */
static void statsfd_source_debugfs_create_rejects_bad_names(struct kunit *test)
{
	static const char *const bad[] = { "", ".", ".." };
	struct dfs_ctx *ctx = test->priv;
	struct statsfd_source *c = &ctx->child[0]->src;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		KUNIT_EXPECT_EQ_MSG(test,
				    statsfd_source_debugfs_create(c, bad[i],
								  ctx->dir),
				    -EINVAL, "name \"%s\"", bad[i]);
		KUNIT_EXPECT_NULL(test, c->priv->debugfs);
	}
}

static struct kunit_case statsfd_debugfs_cases[] = {
	KUNIT_CASE(statsfd_debugfs_root_is_named_statsfd),
	KUNIT_CASE(statsfd_source_debugfs_create_makes_one_file_per_stat),
	KUNIT_CASE(statsfd_debugfs_show_prints_scalar_with_newline),
	KUNIT_CASE(statsfd_debugfs_show_prints_histogram_on_one_line),
	KUNIT_CASE(statsfd_debugfs_show_computes_aggregates),
	KUNIT_CASE(statsfd_debugfs_show_of_a_snapshot_source_is_its_last_window),
	KUNIT_CASE(statsfd_source_debugfs_create_gives_only_a_copying_view_a_buffer),
	KUNIT_CASE(statsfd_source_debugfs_create_twice_is_ebusy),
	KUNIT_CASE(statsfd_source_debugfs_create_existing_name_fails_cleanly),
	KUNIT_CASE(statsfd_source_debugfs_create_replaces_slash),
	KUNIT_CASE(statsfd_source_debugfs_create_rejects_bad_names),
	KUNIT_CASE(statsfd_source_debugfs_remove_deletes_directory),
	KUNIT_CASE(statsfd_source_debugfs_dir_follows_the_view),
	KUNIT_CASE(statsfd_source_destroy_parent_first_removes_child_views),
	{}
};

STATSFD_KUNIT_SUITE(statsfd_debugfs, dfs_init);
