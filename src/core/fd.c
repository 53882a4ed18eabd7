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
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/statsfd.h>

#include "internal.h"

static ssize_t statsfd_read(struct file *file, char __user *buf, size_t len,
			    loff_t *ppos)
{
	return statsfd_read_file(file->private_data, buf, len, ppos);
}

/* A view is read with pread: only the source's own fds map its values. */
static int statsfd_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct statsfd_file *sf = file->private_data;

	if (sf->view)
		return -ENODEV;
	return statsfd_area_mmap(sf->src, vma);
}

/*
 * Readable at any time.  EPOLLPRI | EPOLLERR while the source's set of
 * children changed since this file last returned bytes of its header or
 * data: a change is counted, never a level a waker could race with.
 * EPOLLPRI is the event; EPOLLERR comes with it as sysfs and kernfs
 * report a change, for pollers that only look at POLLERR.  EPOLLHUP once
 * the owner hung the source up.  Plain stats updates never wake anyone.
 */
static __poll_t statsfd_poll(struct file *file, poll_table *wait)
{
	struct statsfd_file *sf = file->private_data;
	struct statsfd_source *src = sf->src;
	__poll_t mask = EPOLLIN | EPOLLRDNORM;

	poll_wait(file, &src->priv->wq, wait);
	if (READ_ONCE(src->priv->children_gen) != READ_ONCE(sf->seen_gen))
		mask |= EPOLLPRI | EPOLLERR;
	if (READ_ONCE(src->priv->hung_up))
		mask |= EPOLLHUP;
	return mask;
}

static long statsfd_ioctl_view(struct statsfd_file *sf, void __user *uarg)
{
	struct statsfd_view_args args;
	struct statsfd_view *view;
	struct file *file;
	int fd;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	view = statsfd_view_create(sf->src, sf->view, &args);
	if (IS_ERR(view))
		return PTR_ERR(view);

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		statsfd_view_free(view);
		return fd;
	}
	/* The file owns @view from here, also when it fails. */
	file = statsfd_view_getfile(sf->src, view);
	if (IS_ERR(file)) {
		put_unused_fd(fd);
		return PTR_ERR(file);
	}
	fd_install(fd, file);
	return fd;
}

static long statsfd_ioctl(struct file *file, unsigned int cmd,
			  unsigned long arg)
{
	switch (cmd) {
	case STATSFD_IOC_VIEW:
		return statsfd_ioctl_view(file->private_data,
					  (void __user *)arg);
	default:
		return -ENOTTY;
	}
}

/*
 * SEEK_SET, SEEK_CUR and SEEK_END within [0, file size]; anything else,
 * or a position outside the file, is -EINVAL.  Only read() uses the
 * position; pread() ignores it.
 */
static loff_t statsfd_llseek(struct file *file, loff_t offset, int whence)
{
	struct statsfd_file *sf = file->private_data;

	return fixed_size_llseek(file, offset, whence,
				 sf->view ? sf->view->file_size :
					    sf->src->priv->schema->file_size);
}

static void statsfd_file_free(struct statsfd_file *sf)
{
	mutex_destroy(&sf->lock);
	statsfd_view_free(sf->view);
	kfree(sf->vbuf);
	kfree(sf->buf);
	kfree(sf);
}

static int statsfd_release(struct inode *inode, struct file *file)
{
	struct statsfd_file *sf = file->private_data;
	struct statsfd_source *src = sf->src;
	const struct statsfd_source_ops *ops = src->priv->ops;

	statsfd_file_free(sf);
	statsfd_source_file_closed(src);
	/* @src may be freed by ->put; @ops lives in the pinned module. */
	if (ops->put)
		ops->put(src);
	module_put(ops->owner);
	return 0;
}

static void statsfd_show_fdinfo(struct seq_file *m, struct file *file)
{
	struct statsfd_file *sf = file->private_data;
	struct statsfd_source *src = sf->src;

	seq_printf(m, "statsfd-id:\t%s\n", src->priv->id);
	seq_printf(m, "statsfd-schema:\t%s\n", src->priv->schema->def->name);
	if (sf->view)
		seq_printf(m, "statsfd-view:\t%u\n", sf->view->nr);
}

/*
 * No write: it fails with EBADF.  mmap fails with ENODEV for a schema
 * without STATSFD_SCHEMA_MMAP, as it would without the method, and for a
 * view.  Unknown ioctls fail with ENOTTY.
 */
static const struct file_operations statsfd_fops = {
	.owner		= THIS_MODULE,
	.read		= statsfd_read,
	.mmap		= statsfd_mmap,
	.poll		= statsfd_poll,
	.unlocked_ioctl	= statsfd_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= statsfd_llseek,
	.release	= statsfd_release,
	.show_fdinfo	= statsfd_show_fdinfo,
};

/*
 * The anon inode name of the core's own files and views: /proc/PID/fd
 * shows "anon_inode:statsfd" (Documentation/statsfd-abi.rst).
 */
#define STATSFD_ANON_NAME	"statsfd"

static struct file *statsfd_getfile(struct statsfd_source *src,
				    struct statsfd_view *view,
				    const char *name)
{
	const struct statsfd_source_ops *ops = src->priv->ops;
	struct statsfd_file *sf;
	struct file *file;

	sf = kzalloc(sizeof(*sf), GFP_KERNEL_ACCOUNT);
	if (!sf) {
		statsfd_view_free(view);
		return ERR_PTR(-ENOMEM);
	}
	sf->src = src;
	sf->view = view;
	mutex_init(&sf->lock);
	sf->seen_gen = READ_ONCE(src->priv->children_gen);
	sf->buf = kzalloc(src->priv->schema->data_size, GFP_KERNEL_ACCOUNT);
	if (view)
		sf->vbuf = kzalloc(view->data_size, GFP_KERNEL_ACCOUNT);
	if (!sf->buf || (view && !sf->vbuf)) {
		statsfd_file_free(sf);
		return ERR_PTR(-ENOMEM);
	}

	if (!try_module_get(ops->owner)) {
		statsfd_file_free(sf);
		return ERR_PTR(-ENODEV);
	}
	if (ops->tryget) {
		if (!ops->tryget(src)) {
			statsfd_file_free(sf);
			module_put(ops->owner);
			return ERR_PTR(-ENODEV);
		}
	} else if (ops->get) {
		ops->get(src);
	}

	file = statsfd_compat_anon_inode_getfile(name, &statsfd_fops, sf,
						 O_RDONLY);
	if (IS_ERR(file)) {
		statsfd_file_free(sf);
		if (ops->put)
			ops->put(src);
		module_put(ops->owner);
		return file;
	}
	statsfd_source_file_opened(src);
	return file;
}

/**
 * statsfd_source_getfile() - a stats file on @src, not yet in any fd table
 * @src: an initialized source
 *
 * statsfd_source_get_fd() without the fd: for a caller that must copy the
 * fd number to user space before the file becomes visible (an ioctl that
 * returns it inside a struct), and so reserves the fd itself
 * (get_unused_fd_flags()), copies the number out, and only then calls
 * fd_install(), or fput() and put_unused_fd() if the copy failed.  The
 * file is O_RDONLY and behaves exactly like one behind
 * statsfd_source_get_fd().
 *
 * On success the file owns one reference on @src's owner (@src->ops->get,
 * or a successful @src->ops->tryget) and one on @src->ops->owner's module;
 * the core module is pinned through the file's operations.  Its private
 * data is a struct statsfd_file with the buffer every read of the file
 * assembles its snapshot in, allocated here so that reads never allocate.
 *
 * Context: process context; the caller keeps @src alive for the duration
 * of the call (a reference on its owner, or the owner's lock).
 * Return: the file, or ERR_PTR(-ENODEV) if the owner module is going away
 * or @src->ops->tryget refused, ERR_PTR(-ENOMEM), or the error of creating
 * the anon inode file.
 */
struct file *statsfd_source_getfile(struct statsfd_source *src)
{
	return statsfd_getfile(src, NULL, STATSFD_ANON_NAME);
}
EXPORT_SYMBOL_NS_GPL(statsfd_source_getfile, STATSFD_NS);

/**
 * statsfd_source_getfile_named() - statsfd_source_getfile() under another name
 * @src: an initialized source
 * @name: the anon inode's name, which /proc/PID/fd shows as
 *	"anon_inode:@name" (the core's own files are "anon_inode:statsfd")
 *
 * For a provider whose stats files already have a name that tools look
 * for: KVM's are "kvm-vm-stats" and "kvm-vcpu-stats:N", and fd scanners
 * (statsfd-collector --discover-kvm among them) find them by it.  The
 * file is the same in every other way; its fdinfo still says statsfd.
 *
 * Context: as statsfd_source_getfile().
 * Return: as statsfd_source_getfile(); ERR_PTR(-EINVAL) for a NULL or
 * empty @name.
 */
struct file *statsfd_source_getfile_named(struct statsfd_source *src,
					  const char *name)
{
	if (!name || !*name)
		return ERR_PTR(-EINVAL);
	return statsfd_getfile(src, NULL, name);
}
EXPORT_SYMBOL_NS_GPL(statsfd_source_getfile_named, STATSFD_NS);

/**
 * statsfd_view_getfile() - a stats file showing @view of @src
 * @src: the source
 * @view: a view of @src built by statsfd_view_create(); owned by the file
 *	from now on, and freed here if the file cannot be made
 *
 * Like statsfd_source_getfile(): the file pins @src's owner and modules
 * exactly as a stats file of the whole source does, and carries its own
 * buffers, one data block of the source and one of the view.
 *
 * Context: process context; the caller holds a reference on @src's owner
 * (the stats file the view is made from).
 * Return: the file, or an ERR_PTR() as statsfd_source_getfile().
 */
struct file *statsfd_view_getfile(struct statsfd_source *src,
				  struct statsfd_view *view)
{
	return statsfd_getfile(src, view, STATSFD_ANON_NAME);
}

/**
 * statsfd_source_get_fd() - create a read-only binary stats fd for @src
 * @src: an initialized source
 *
 * The new fd is O_RDONLY and O_CLOEXEC, supports read(), pread(),
 * lseek() and, for a schema with STATSFD_SCHEMA_MMAP, a read-only
 * mmap() of the values, and shows "statsfd-id:" and "statsfd-schema:" in its fdinfo.
 * Until it is closed it holds a reference on @src's owner (@src->ops->get)
 * and on the module @src->ops->owner, so it stays valid after every other
 * handle on the owner is gone and neither module can be unloaded under it.
 *
 * Context: process context; the caller keeps @src alive for the duration
 * of the call (the fd takes its own reference with @src->ops->get or
 * @src->ops->tryget).
 * Installs the fd in current's file table as the last step, so nothing
 * can fail once the fd is visible.
 * Return: the fd; -EMFILE when out of fds; -ENOMEM; -ENODEV if the owner
 * module is going away or @src->ops->tryget refused.
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
EXPORT_SYMBOL_NS_GPL(statsfd_source_get_fd, STATSFD_NS);
