// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd KUnit suite statsfd_fd: the stats file's references, modes,
 * refused operations, lseek and fdinfo.
 */
#include <kunit/test.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/statsfd.h>

#include "statsfd_kunit.h"

struct fd_ctx {
	struct statsfd_kunit_child stats;
	struct statsfd_kunit_src *src;
};

static int fd_init(struct kunit *test)
{
	struct statsfd_schema *cs;
	struct fd_ctx *ctx;

	ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ctx);
	test->priv = ctx;
	cs = statsfd_kunit_schema(test, &statsfd_kunit_child_tmpl, NULL);
	ctx->src = statsfd_kunit_source(test, cs, &ctx->stats,
					"vm-1-0/vcpu-2");
	return 0;
}

static void statsfd_source_getfile_pins_owner_until_release(struct kunit *test)
{
	struct fd_ctx *ctx = test->priv;
	int mine = module_refcount(THIS_MODULE);
	struct module *core;
	struct file *file;
	int cores;

	file = statsfd_source_getfile(&ctx->src->src);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, file);
	core = file->f_op->owner;

	/* While open: one get, our module and the core module pinned. */
	KUNIT_EXPECT_EQ(test, atomic_read(&ctx->src->gets), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&ctx->src->puts), 0);
	KUNIT_EXPECT_EQ(test, module_refcount(THIS_MODULE), mine + 1);
	KUNIT_EXPECT_NOT_NULL(test, core);
	KUNIT_EXPECT_PTR_NE(test, core, THIS_MODULE);
	cores = module_refcount(core);

	__fput_sync(file);

	/* After the last close: one put, both module references dropped. */
	KUNIT_EXPECT_EQ(test, atomic_read(&ctx->src->gets), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&ctx->src->puts), 1);
	KUNIT_EXPECT_EQ(test, module_refcount(THIS_MODULE), mine);
	KUNIT_EXPECT_EQ(test, module_refcount(core), cores - 1);
}

static void statsfd_source_getfile_each_file_takes_its_own_reference(struct kunit *test)
{
	struct fd_ctx *ctx = test->priv;
	struct file *a, *b;

	a = statsfd_kunit_file(test, ctx->src);
	b = statsfd_kunit_file(test, ctx->src);
	KUNIT_EXPECT_PTR_NE(test, a, b);
	KUNIT_EXPECT_EQ(test, atomic_read(&ctx->src->gets), 2);
	KUNIT_EXPECT_EQ(test, atomic_read(&ctx->src->puts), 0);
}

static void statsfd_source_getfile_without_get_put_pins_module(struct kunit *test)
{
	static const struct statsfd_source_ops owner_only = {
		.owner = THIS_MODULE,
	};
	struct fd_ctx *ctx = test->priv;
	int mine = module_refcount(THIS_MODULE);
	struct statsfd_source src;
	struct file *file;

	KUNIT_ASSERT_EQ(test, statsfd_source_init(&src, ctx->src->src.priv->schema,
						  &ctx->stats, &owner_only,
						  "static"), 0);
	file = statsfd_source_getfile(&src);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, file);
	KUNIT_EXPECT_EQ(test, module_refcount(THIS_MODULE), mine + 1);
	__fput_sync(file);
	KUNIT_EXPECT_EQ(test, module_refcount(THIS_MODULE), mine);
	statsfd_source_destroy(&src);
}

static void statsfd_file_is_read_only_and_pread_capable(struct kunit *test)
{
	struct fd_ctx *ctx = test->priv;
	struct file *file = statsfd_kunit_file(test, ctx->src);

	KUNIT_EXPECT_EQ(test, file->f_flags & O_ACCMODE, O_RDONLY);
	KUNIT_EXPECT_TRUE(test, file->f_mode & FMODE_READ);
	KUNIT_EXPECT_TRUE(test, file->f_mode & FMODE_PREAD);
	KUNIT_EXPECT_TRUE(test, file->f_mode & FMODE_LSEEK);
	KUNIT_EXPECT_FALSE(test, file->f_mode & FMODE_WRITE);
	KUNIT_EXPECT_FALSE(test, file->f_mode & FMODE_CAN_WRITE);
	/* So pwrite() fails with EBADF like write(), not with ESPIPE. */
	KUNIT_EXPECT_TRUE(test, file->f_mode & FMODE_PWRITE);
	KUNIT_EXPECT_STREQ(test, file->f_path.dentry->d_name.name, "statsfd");
	KUNIT_EXPECT_PTR_EQ(test,
			    ((struct statsfd_file *)file->private_data)->src,
			    &ctx->src->src);
}

static void statsfd_file_has_no_write(struct kunit *test)
{
	struct fd_ctx *ctx = test->priv;
	const struct file_operations *fops =
		statsfd_kunit_file(test, ctx->src)->f_op;

	/*
	 * The VFS turns a missing write into EBADF; ->mmap says ENODEV
	 * itself for a schema that is not mappable (this one), ->unlocked_ioctl
	 * ENOTTY for anything but STATSFD_IOC_VIEW (statsfd_view suite).
	 */
	KUNIT_EXPECT_NOT_NULL(test, fops->read);
	KUNIT_EXPECT_NULL(test, fops->read_iter);
	KUNIT_EXPECT_NULL(test, fops->write);
	KUNIT_EXPECT_NULL(test, fops->write_iter);
	KUNIT_EXPECT_NOT_NULL(test, fops->mmap);
	KUNIT_EXPECT_NOT_NULL(test, fops->unlocked_ioctl);
	/* NULL without CONFIG_COMPAT, as the test kernel is. */
	KUNIT_EXPECT_PTR_EQ(test, fops->compat_ioctl, compat_ptr_ioctl);
	KUNIT_EXPECT_NOT_NULL(test, fops->poll);
}

static void statsfd_file_llseek_stays_within_file(struct kunit *test)
{
	struct fd_ctx *ctx = test->priv;
	struct file *file = statsfd_kunit_file(test, ctx->src);
	const loff_t size = SFK_CHILD_FILE_SIZE;

	KUNIT_EXPECT_EQ(test, vfs_llseek(file, 0, SEEK_END), size);
	KUNIT_EXPECT_EQ(test, vfs_llseek(file, -8, SEEK_END), size - 8);
	KUNIT_EXPECT_EQ(test, vfs_llseek(file, 4, SEEK_CUR), size - 4);
	KUNIT_EXPECT_EQ(test, file->f_pos, size - 4);
	KUNIT_EXPECT_EQ(test, vfs_llseek(file, SFK_DATA_OFFSET, SEEK_SET),
			SFK_DATA_OFFSET);
	KUNIT_EXPECT_EQ(test, vfs_llseek(file, size, SEEK_SET), size);

	/* Outside the file, or an unsupported whence: -EINVAL, no move. */
	KUNIT_EXPECT_EQ(test, vfs_llseek(file, size + 1, SEEK_SET), -EINVAL);
	KUNIT_EXPECT_EQ(test, vfs_llseek(file, -1, SEEK_SET), -EINVAL);
	KUNIT_EXPECT_EQ(test, vfs_llseek(file, 1, SEEK_END), -EINVAL);
	KUNIT_EXPECT_EQ(test, vfs_llseek(file, 0, SEEK_DATA), -EINVAL);
	KUNIT_EXPECT_EQ(test, file->f_pos, size);
}

static void statsfd_show_fdinfo_names_id_and_schema(struct kunit *test)
{
	struct fd_ctx *ctx = test->priv;
	struct file *file = statsfd_kunit_file(test, ctx->src);

	KUNIT_EXPECT_STREQ(test, statsfd_kunit_fdinfo(test, file),
			   "statsfd-id:\tvm-1-0/vcpu-2\n"
			   "statsfd-schema:\tkunit.child\n");
}

static struct kunit_case statsfd_fd_cases[] = {
	KUNIT_CASE(statsfd_source_getfile_pins_owner_until_release),
	KUNIT_CASE(statsfd_source_getfile_each_file_takes_its_own_reference),
	KUNIT_CASE(statsfd_source_getfile_without_get_put_pins_module),
	KUNIT_CASE(statsfd_file_is_read_only_and_pread_capable),
	KUNIT_CASE(statsfd_file_has_no_write),
	KUNIT_CASE(statsfd_file_llseek_stays_within_file),
	KUNIT_CASE(statsfd_show_fdinfo_names_id_and_schema),
	{}
};

STATSFD_KUNIT_SUITE(statsfd_fd, fd_init);
