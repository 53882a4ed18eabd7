// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd stats fd: a read-only, pread-capable anon inode file on a source,
 * holding references on the source's owner and on every module whose code
 * the file may run until it is closed.
 */
#include <linux/anon_inodes.h>
#include <linux/err.h>
#include <linux/export.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/statsfd.h>

#include "internal.h"

static ssize_t statsfd_read(struct file *file, char __user *buf, size_t len,
			    loff_t *ppos)
{
	return statsfd_read_source(file->private_data, buf, len, ppos);
}

/*
 * SEEK_SET, SEEK_CUR and SEEK_END within [0, file size]; anything else,
 * or a position outside the file, is -EINVAL.  Only read() uses the
 * position; pread() ignores it.
 */
static loff_t statsfd_llseek(struct file *file, loff_t offset, int whence)
{
	struct statsfd_source *src = file->private_data;

	return fixed_size_llseek(file, offset, whence, src->schema->file_size);
}

static int statsfd_release(struct inode *inode, struct file *file)
{
	struct statsfd_source *src = file->private_data;
	const struct statsfd_source_ops *ops = src->ops;

	/* @src may be freed by ->put; @ops lives in the pinned module. */
	if (ops->put)
		ops->put(src);
	module_put(ops->owner);
	return 0;
}

static void statsfd_show_fdinfo(struct seq_file *m, struct file *file)
{
	struct statsfd_source *src = file->private_data;

	seq_printf(m, "statsfd-id:\t%s\n", src->id);
	seq_printf(m, "statsfd-schema:\t%s\n", src->schema->name);
}

/* No write, mmap or ioctl: those fail with EBADF, ENODEV and ENOTTY. */
static const struct file_operations statsfd_fops = {
	.owner		= THIS_MODULE,
	.read		= statsfd_read,
	.llseek		= statsfd_llseek,
	.release	= statsfd_release,
	.show_fdinfo	= statsfd_show_fdinfo,
};

/**
 * statsfd_source_getfile() - a stats file on @src, not yet in any fd table
 * @src: an initialized source
 *
 * On success the file owns one reference on @src's owner (ops->get) and
 * one on ops->owner's module; the core module is pinned through
 * statsfd_fops.owner.  Static unless KUnit is enabled, then exported so
 * the tests can drive the file without an fd table.
 *
 * Context: process context; the caller holds a reference on @src's owner.
 * Return: the file, or ERR_PTR(-ENODEV) if the owner module is going away,
 * or the error of creating the anon inode file.
 */
VISIBLE_IF_KUNIT struct file *statsfd_source_getfile(struct statsfd_source *src)
{
	const struct statsfd_source_ops *ops = src->ops;
	struct file *file;

	if (!try_module_get(ops->owner))
		return ERR_PTR(-ENODEV);
	if (ops->get)
		ops->get(src);

	file = statsfd_compat_anon_inode_getfile("statsfd", &statsfd_fops, src,
						 O_RDONLY);
	if (IS_ERR(file)) {
		if (ops->put)
			ops->put(src);
		module_put(ops->owner);
	}
	return file;
}
EXPORT_SYMBOL_IF_KUNIT(statsfd_source_getfile);

/**
 * statsfd_source_get_fd() - create a read-only binary stats fd for @src
 * @src: an initialized source
 *
 * The new fd is O_RDONLY and O_CLOEXEC, supports read(), pread() and
 * lseek(), and shows "statsfd-id:" and "statsfd-schema:" in its fdinfo.
 * Until it is closed it holds a reference on @src's owner (@src->ops->get)
 * and on the module @src->ops->owner, so it stays valid after every other
 * handle on the owner is gone and neither module can be unloaded under it.
 *
 * Context: process context; the caller holds a reference on @src's owner
 * for the duration of the call (the fd takes its own with @src->ops->get).
 * Installs the fd in current's file table as the last step, so nothing
 * can fail once the fd is visible.
 * Return: the fd; -EMFILE when out of fds; -ENOMEM; -ENODEV if the owner
 * module is going away.
 */
int statsfd_source_get_fd(struct statsfd_source *src)
{
	struct file *file;
	int fd;

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0)
		return fd;

	file = statsfd_source_getfile(src);
	if (IS_ERR(file)) {
		put_unused_fd(fd);
		return PTR_ERR(file);
	}

	fd_install(fd, file);
	return fd;
}
EXPORT_SYMBOL_GPL(statsfd_source_get_fd);
