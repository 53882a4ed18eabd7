// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd_host: /dev/statsfd_host and its one ioctl, which hands out stats
 * fds on the node, a CPU, a network interface or a disk
 * (Documentation/statsfd-host-api.rst).  Each kind lives in its own file;
 * this one checks the argument and installs the file they return.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/statsfd.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <uapi/linux/statsfd_host.h>

#include "internal.h"

/*
 * Every field that @kind does not use must be 0, as must flags and
 * reserved: a field given to the wrong kind is a caller's mistake, and
 * zero today leaves the fields free for tomorrow.
 */
static int statsfd_host_check_args(const struct statsfd_host_stats_fd *a)
{
	if (a->kind > STATSFD_HOST_KIND_MAX || a->flags ||
	    memchr_inv(a->reserved, 0, sizeof(a->reserved)))
		return -EINVAL;
	if (a->kind != STATSFD_HOST_CPU && a->cpu)
		return -EINVAL;
	if (a->kind != STATSFD_HOST_NETDEV && a->ifindex)
		return -EINVAL;
	if (a->kind != STATSFD_HOST_BLOCK && (a->major || a->minor))
		return -EINVAL;
	return 0;
}

static struct file *statsfd_host_file(const struct statsfd_host_stats_fd *a)
{
	switch (a->kind) {
	case STATSFD_HOST_NODE:
		return statsfd_host_node_file();
	case STATSFD_HOST_CPU:
		return statsfd_host_cpu_file(a->cpu);
	case STATSFD_HOST_NETDEV:
		return statsfd_host_net_file(a->ifindex);
	case STATSFD_HOST_BLOCK:
		return statsfd_host_block_file(a->major, a->minor);
	}
	return ERR_PTR(-EINVAL);
}

static long statsfd_host_get_stats_fd(const void __user *uarg)
{
	struct statsfd_host_stats_fd args;
	struct file *file;
	int fd, ret;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	ret = statsfd_host_check_args(&args);
	if (ret)
		return ret;
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0)
		return fd;
	file = statsfd_host_file(&args);
	if (IS_ERR(file)) {
		put_unused_fd(fd);
		return PTR_ERR(file);
	}
	fd_install(fd, file);
	return fd;
}

static long statsfd_host_ioctl(struct file *file, unsigned int cmd,
			       unsigned long arg)
{
	switch (cmd) {
	case STATSFD_HOST_GET_STATS_FD:
		return statsfd_host_get_stats_fd((const void __user *)arg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations statsfd_host_fops = {
	.owner = THIS_MODULE,
	.unlocked_ioctl = statsfd_host_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

/* World-readable like /proc/stat: the same numbers, as stats fds. */
static struct miscdevice statsfd_host_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "statsfd_host",
	.fops = &statsfd_host_fops,
	.mode = 0444,
};

/* The parts of the module in the order they start; they stop in reverse. */
static const struct {
	int (*init)(void);
	void (*exit)(void);
} statsfd_host_parts[] = {
	/* The CPUs' schema first: the node's names it as its child schema. */
	{ statsfd_host_cpu_schema_init, statsfd_host_cpu_schema_exit },
	{ statsfd_host_node_init, statsfd_host_node_exit },
	{ statsfd_host_cpu_init, statsfd_host_cpu_exit },
	{ statsfd_host_net_init, statsfd_host_net_exit },
	{ statsfd_host_block_init, statsfd_host_block_exit },
};

/* Stop the first @n parts, the last first. */
static void statsfd_host_stop(unsigned int n)
{
	while (n--)
		statsfd_host_parts[n].exit();
}

static int __init statsfd_host_init(void)
{
	unsigned int i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(statsfd_host_parts); i++) {
		ret = statsfd_host_parts[i].init();
		if (ret)
			goto out;
	}
	/* Last: no stats fd before every kind is ready. */
	ret = misc_register(&statsfd_host_misc);
	if (!ret)
		return 0;
out:
	statsfd_host_stop(i);
	return ret;
}

/* Every stats fd pins the module: none is open when this runs. */
static void __exit statsfd_host_exit(void)
{
	misc_deregister(&statsfd_host_misc);
	statsfd_host_stop(ARRAY_SIZE(statsfd_host_parts));
}

module_init(statsfd_host_init);
module_exit(statsfd_host_exit);

MODULE_DESCRIPTION("statsfd host provider: node, CPU, network and disk stats as stats fds");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(STATSFD_NS);
